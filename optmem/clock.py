"""Time: the only place that reads the clock (and OPTMEM_NOW), plus ISO parsing/formatting."""

from __future__ import annotations

import os

from optmem.errors import UsageError, quote
from optmem.patterns import lazy
from optmem.stdlib import UTC, datetime, timedelta

_DATE_ONLY = lazy(r"^\d{4}-\d{2}-\d{2}$")
_TTL = lazy(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_TTL_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
FUTURE_SLACK = 86400.0  # a time further ahead of now than this is no clock skew: it is wrong


def now() -> datetime:
    """Current UTC time, or OPTMEM_NOW when set (tests, evaluations, replays)."""
    fixed = os.environ.get("OPTMEM_NOW")
    if fixed:
        try:
            return parse_time(fixed)
        except ValueError as exc:
            raise UsageError(
                f"OPTMEM_NOW={quote(fixed)} is not an ISO time; use e.g. 2026-11-29T18:55:30Z",
            ) from exc
    return datetime.now(UTC)


def ahead() -> float:
    """Seconds OPTMEM_NOW puts the clock ahead of the machine's (0 when it is unset or behind):
    what the automatic sweep asks before it acts on the vault as of that time (`lifecycle.auto_sweep`)."""
    if not os.environ.get("OPTMEM_NOW"):
        return 0.0
    return max(0.0, (now() - datetime.now(UTC)).total_seconds())


def parse_time(text: str) -> datetime:
    """Parse an ISO-8601 time (Z, ±hh:mm, fractional seconds) or a bare date; naive means UTC.

    Raises ValueError on anything else, a time outside the years 1–9999 in UTC included.
    """
    try:
        return _parse_time(text)
    except OverflowError as exc:
        raise ValueError(f"{quote(text)} is outside the years 1–9999") from exc


def _parse_time(text: str) -> datetime:
    try:  # the canonical form, fast (3.11's fromisoformat reads Z, offsets and fractions)
        dt = datetime.fromisoformat(text)
        if "T" in text or " " in text:
            return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).astimezone(UTC)
    except ValueError:
        pass
    s = text.strip()
    if _DATE_ONLY.match(s):
        return datetime.fromisoformat(s).replace(tzinfo=UTC)
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    dt = datetime.fromisoformat(s)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def to_epoch(text: str | None) -> float | None:
    """Epoch seconds of an ISO time, or None when missing or unparseable (tolerant reading)."""
    if not text or not isinstance(text, str):
        return None
    try:  # the form every record is written in (…T…Z) is UTC already: nothing to convert
        dt = datetime.fromisoformat(text)
        if dt.tzinfo is UTC and "T" in text:
            return dt.timestamp()
    except ValueError:
        pass
    try:
        return parse_time(text).timestamp()
    except ValueError:
        return None


def from_epoch(epoch: float) -> datetime:
    """The UTC time of a Unix time."""
    return datetime.fromtimestamp(epoch, UTC)


def format_ts(dt: datetime) -> str:
    """`2026-11-29T18:55:30Z` — the canonical form written to files."""
    u = dt.astimezone(UTC)  # not strftime: its %Y writes year 4 as "4", unreadable back
    return f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}Z"


def parse_ttl(text: str) -> timedelta:
    """`7d`, `12h`, `30m`, `45s`, `2w` → timedelta; anything else is a usage error."""
    m = _TTL.fullmatch(text or "")
    if m and float(m.group(1)) <= 0:
        raise UsageError(
            f"--ttl {quote(text)} is no time at all: a lifetime must be longer than zero (e.g. 7d, 12h); "
            "to end a record now, `optmem forget` it",
        )
    if not m:
        raise UsageError(
            f"--ttl {quote(text)} is not a duration; use a positive number with s, m, h, d or w (e.g. 7d)",
        )
    try:
        return timedelta(seconds=float(m.group(1)) * _TTL_UNITS[m.group(2)])
    except OverflowError as exc:
        raise UsageError(f"--ttl {quote(text)} is too long; give at most a few thousand years") from exc


def later(moment: datetime, ttl: str) -> datetime:
    """`moment` plus a --ttl, or a usage error when that falls past the year 9999."""
    try:
        return moment + parse_ttl(ttl)
    except OverflowError as exc:
        raise UsageError(
            f"--ttl {quote(ttl)} from {format_ts(moment)} ends after the year 9999; give a shorter one"
        ) from exc


def parse_bound(text: str, *, end: bool) -> float:
    """A --since/--until value (date or ISO time) as epoch seconds; a date's --until is inclusive."""
    try:
        dt = parse_time(text)
    except ValueError as exc:
        raise UsageError(
            f"{'--until' if end else '--since'} {quote(text)} is not a date or time; use 2026-11-29 or "
            "2026-11-29T18:55:30Z",
        ) from exc
    if end and _DATE_ONLY.match(text.strip()):
        try:
            dt = dt + timedelta(days=1) - timedelta(microseconds=1)
        except OverflowError:
            pass  # the last day there is: its end is as far as time goes
    return dt.timestamp()


def age_of(ts: str | None, now: float) -> str:
    """How long ago a stored time was (`age`), or "?" when it is missing or unreadable: a
    hand-typed "2026-02-30" is shown, never a crash (doctor reports it)."""
    epoch = to_epoch(ts)
    return "?" if epoch is None else age(now - epoch)


def age(seconds: float) -> str:
    """A short human age: `now`, `5m ago`, `3h ago`, `3d ago`, `5mo ago`, `2y ago`."""
    s = max(0.0, seconds)
    if s < 60:
        return "now"
    for limit, unit, div in (
        (3600, "m", 60),
        (86400, "h", 3600),
        (86400 * 60, "d", 86400),
        (86400 * 730, "mo", 86400 * 30),
    ):
        if s < limit:
            return f"{int(s // div)}{unit} ago"
    return f"{int(s // (86400 * 365))}y ago"
