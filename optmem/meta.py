"""Front matter of the Markdown files optmem writes (handoffs, tree nodes).

Written as `key: <JSON value>` lines — valid YAML that a person can read and edit — so reading
our own files needs no YAML parser; anything else (a hand edit in YAML style) falls back to one.
"""

from __future__ import annotations

import json
import re

from optmem.errors import BadFrontMatter

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on `context`'s path)
if TYPE_CHECKING:
    from typing import Any

# a first line `---`, the fields, a line `---`; LF or CRLF line ends (a file saved by a Windows
# editor), as a hot file's front matter is read (`memory._FRONT`)
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def render(fields: dict[str, Any], body: str) -> str:
    """Front matter (None values left out) followed by the body."""
    lines = [f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items() if v is not None]
    return "---\n" + "\n".join(lines) + "\n---\n" + body


def edited(digest: Any, body: str) -> bool:
    """Whether `body` is no longer the body whose `digest` the file holds (a person edited it);
    line ends alone changed (CRLF, as a Windows editor or git saves it) are no edit. False when
    the file holds no digest."""
    from optmem.text import digest as digest_of

    if not digest:
        return False
    return digest not in {digest_of(body.encode("utf-8")), digest_of(body.replace("\r\n", "\n").encode("utf-8"))}


def split(text: str) -> tuple[dict[str, Any] | None, str]:
    """(front matter fields, body); None fields when the text has no front matter.

    Raises UsageError (`bad_front_matter` for doctor) when the block is not a YAML mapping.
    """
    m = _FRONT.match(text)
    if not m:
        return None, text
    fields: dict[str, Any] = {}
    for line in m.group(1).splitlines():
        key, sep, raw = line.partition(": ")
        try:
            if not sep or not key or key != key.strip():
                raise ValueError
            fields[key] = json.loads(raw)
        except ValueError:
            return _yaml(m.group(1)), text[m.end() :]
    return fields, text[m.end() :]


def _yaml(block: str) -> dict[str, Any]:
    import yaml

    try:
        loaded = yaml.safe_load(block)
    except yaml.YAMLError as exc:
        raise BadFrontMatter(f"front matter is not valid YAML: {exc}") from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise BadFrontMatter("front matter is not a mapping of keys to values")
    return loaded
