"""One record as every surface sees it (`optmem get`): its status, the values it conflicts
with, the write gate's guesses about it (named as such), and what happened to it since.

Above the log, the facts and the hot-file follower it reads through; the log itself only writes.
"""

from __future__ import annotations

from typing import Any

from optmem import clock, lifecycle, log, memory, view
from optmem.follow import open_followed
from optmem.index import Index, Row
from optmem.record import CONFIRM, FORGET, RELEASE, RESTORE, SEEN, VERIFY
from optmem.value import NamedTuple
from optmem.vault import Vault


class Got(NamedTuple):
    record: dict[str, Any]
    warnings: list[str]


def get(vault: Vault, ref: str, *, show_unsafe: bool = False) -> Got:
    """One record as every surface sees it: its status (current / pending / superseded by … /
    expired / forgotten / cold), the values it is in conflict with, the records the write gate
    guessed it may update or be updated by (guesses, named as such), what it was written as, and
    what happened to it since (`events`)."""
    now = clock.now().timestamp()
    with open_followed(vault) as idx:  # hot files edited outside optmem: journalled before the view is read
        row = log.resolve_one(idx, ref)
        rivals = memory.hot_rivals(idx, row)  # (a hot entry edited two ways: `conflicts` reads it so too)
        seen = idx.view_of(row, now, rivals=rivals)
        record = seen.full(show_unsafe=show_unsafe)
        rule = None if row.held else seen.blocked()  # a line no gate held, blocked on read: reviewable
        if rule is not None:
            from optmem.review import blocked_because

            record["blocked_because"] = blocked_because(rule, row.id)
        # what other lines say of it (stored text too, shown as the record is): what forgot it, …
        more: dict[str, Any] = idx.forgetting(row)
        more["conflict_with"] = idx.conflict_with(row, now, rivals)
        more["may_be_updated_by"] = record.get("may_be_updated_by", [])  # (what the view found: `Index.guesses`)
        more["events"] = _events(idx, row)
        record.update(more if show_unsafe else view.shown(more))
        if record.get("superseded_by"):  # a chain's older link: the end of it named too, not only the next
            end = idx.current_version(row)
            if end.id not in (row.id, record["superseded_by"]):
                record["latest_version"] = end.id
        record["life"] = lifecycle.describe(vault.settings.lifecycle, row, now)
        if record["pending"]:
            record["life"]["restated"] = idx.restatements(row)
        return Got(record, idx.warnings())


def _events(idx: Index, row: Row) -> list[dict[str, Any]]:
    """What happened to a record since it was written, in log order: said again (`seen`),
    confirmed, verified (with its note), released from quarantine (or `release_ignored`: a release
    line not a person's, or another clone's, which lets nothing out here), forgotten, restored,
    corrected — each with the line's id
    and time. (A release acts only if this clone wrote it: `Vault.own_releases`.)"""
    from optmem.quarantine import release_honoured

    out: list[dict[str, Any]] = []
    listed = idx.vault.own_releases()
    for other in sorted(
        [
            *idx.rows(
                "r.ref = ? AND r.kind IN (?, ?, ?, ?, ?, ?)",
                (row.id.upper(), SEEN, CONFIRM, FORGET, RESTORE, VERIFY, RELEASE),
            ),
            *idx.correcting(row),
        ],
        key=lambda r: r.n,
    ):
        what = {
            SEEN: "said_again",
            CONFIRM: "confirmed",
            FORGET: "forgotten",
            RESTORE: "restored",
            VERIFY: "verified",
            RELEASE: "released",  # from quarantine, by a person
        }.get(other.kind, "corrected")
        if what == "released" and not release_honoured(other.origin, other.id.upper() in listed):
            what = "release_ignored"  # (a line not a person's, or another clone's: it let nothing out here)
        event: dict[str, Any] = {
            "event": what,
            "id": other.id,
            "ts": view.iso(other.ts) if other.ts is not None else None,
        }
        if what == "said_again":
            event.update(session=other.session, pending=bool(other.pending))
        if what == "confirmed":  # whose word made it current: the user's, or an agent's own statement
            event.update(origin=other.origin)
        if what == "verified":
            checked = idx.record(other)
            event.update(note=checked.extra.get("note"), source=checked.source)
        out.append(event)
    return out
