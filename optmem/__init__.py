"""OptMem: memory for AI agents that lives in plain, human-editable files."""

__version__ = "0.1.0"
