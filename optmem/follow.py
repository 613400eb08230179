"""Reads follow the hot files: what Hermes, a person or git changed in MEMORY.md, USER.md or a
project block is journalled into LOG.jsonl before a command reads the effective view, so
`search`, `get`, `history`, `stats` and `context` see the files as they are (an entry added by
hand is current, one dropped by hand is removed) — and so is a person's edit of a HANDOFF.md (the
handoff it replaced is superseded).

The check is a few `stat` calls against what the index last noted; only a change loads the
hot-memory module (`memory.follow`) to journal it.
"""

from optmem.index import Index, hot_state, open_index
from optmem.ingest import Progress
from optmem.vault import Vault


def follow_hot(vault: Vault) -> list[str]:
    """Journal the hot files' outside edits when they changed since last noted (the journal ids)."""
    if not vault.exists():
        return []
    with open_index(vault) as idx:
        if _noted(vault, idx):
            return []
    return _journal_edits(vault)


def _journal_edits(vault: Vault) -> list[str]:
    """Journal the outside edits: each HANDOFF.md a person changed (`handoff.follow`), then the
    hot files (`memory.follow`, which notes the state)."""
    from optmem import memory

    if not vault.handoff_paths():  # (no project has a HANDOFF.md: the handoff module stays unloaded)
        return memory.follow(vault)
    from optmem import handoff

    # the files' state is taken before any is read: a HANDOFF.md saved while the handoffs are
    # looked at is then not noted as seen, and the next read journals it
    state = hot_state(vault)
    return handoff.follow(vault) + memory.follow(vault, state)


def open_followed(vault: Vault, progress: Progress | None = None) -> Index:
    """The index, open and in step with the log once the hot files' outside edits are journalled
    (`follow_hot`): what a read of the view opens. When the files did not change (the common
    case) the index the check opened is the one returned — opening it is a share of a search."""
    idx = open_index(vault, progress)
    try:
        if _noted(vault, idx):
            return idx
    except BaseException:
        idx.close()
        raise
    idx.close()
    _journal_edits(vault)
    return open_index(vault, progress)


def _noted(vault: Vault, idx: Index) -> bool:
    """Whether the index has noted the hot files as they stand (nothing to journal)."""
    state = hot_state(vault)
    if idx.hot_noted() == state:
        return True
    if state == "[]" and not idx.has_journal():  # no hot memory, now or ever
        idx.note_hot(state)
        return True
    return False
