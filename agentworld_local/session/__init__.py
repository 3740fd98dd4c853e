"""The session core every face drives: events, the script language, the file policy, `Session`.

No UI here (no typer, rich, textual): the CLI, a TUI or a server print or send these events.
"""
