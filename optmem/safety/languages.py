def find(spoken: str) -> str | None:
    return None
