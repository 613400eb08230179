"""Reads follow the hot files: what Hermes, a person or git changed in MEMORY.md, USER.md or a
project block is journalled into LOG.jsonl before a command reads the effective view, so
`search`, `get`, `history`, `stats` and `context` see the files as they are (an entry added by
hand is current, one dropped by hand is removed).

The check is a few `stat` calls against what the index last noted; only a change loads the
hot-memory module (`memory.follow`) to journal it.
"""

from optmem.index import hot_state, open_index
from optmem.vault import Vault


def follow_hot(vault: Vault) -> list[str]:
    """Journal the hot files' outside edits when they changed since last noted (the journal ids)."""
    if not vault.exists():
        return []
    with open_index(vault) as idx:  # (the read that follows opens it too: built once either way)
        state = hot_state(vault)
        if idx.hot_noted() == state:
            return []
        if state == "[]" and not idx.has_journal():  # no hot memory, now or ever
            idx.note_hot(state)
            return []
    from optmem import memory

    return memory.follow(vault)
