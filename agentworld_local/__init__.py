"""agentworld-local: a local sandbox for language world models."""

__version__ = "0.1.0"
