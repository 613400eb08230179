"""Print the table of error codes docs/files.md shows, from `optmem.errors.CODES` — or, with
`--write`, put it in docs/files.md between its two markers (tests/test_error_codes.py checks the
page holds what this prints, so the list cannot drift from the code)."""

from __future__ import annotations

import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "docs" / "files.md"
BEGIN = "<!-- error codes: written by scripts/error_codes.py from optmem/errors.py -->"
END = "<!-- end of error codes -->"


def table() -> str:
    from optmem.errors import CODES

    rows = ["| code | exit | when |", "| --- | --- | --- |"]
    for code, c in CODES.items():
        rows.append(f"| `{code}` | {'—' if c.exit_code is None else c.exit_code} | {c.meaning} |")
    return "\n".join(rows) + "\n"


def placed(page: str) -> str:
    """`page` with the generated table between its markers."""
    head, begin, rest = page.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"{PAGE}: the markers {BEGIN!r} and {END!r} are missing")
    return f"{head}{BEGIN}\n{table()}{END}{tail}"


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        PAGE.write_text(placed(PAGE.read_text("utf-8")), "utf-8")
    elif argv:
        print("usage: python scripts/error_codes.py [--write]", file=sys.stderr)
        return 2
    else:
        sys.stdout.write(table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
