"""AgentWorldBench, the official benchmark format: its rows, export to it, and re-simulating a row."""
