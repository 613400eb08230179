"""What a process pays before its command runs: the record types it creates, the code it compiles.

Counted, not timed: an audit hook sees every source text compiled at run time (`compile`, and
the `__new__` that `collections.namedtuple` — so `typing.NamedTuple` — compiles for each class)."""

import subprocess
import sys

from conftest import HANG

COUNT = (
    "import sys\n"
    "import typing, optmem.errors\n"  # (what every command imports first)
    "compiled = []\n"
    "sys.addaudithook(lambda event, args: compiled.append(event) if event == 'compile' else None)\n"
    "{body}\n"
    "print('COMPILED', len(compiled))\n"
)


def compiled(body: str) -> int:
    res = subprocess.run([sys.executable, "-c", COUNT.format(body=body)], capture_output=True, text=True, timeout=HANG)
    assert "COMPILED" in res.stdout, res.stdout + res.stderr
    return int(res.stdout.split("COMPILED")[1])


def test_the_settings_sections_are_made_without_compiling_code():
    """A settings section is a plain class: a NamedTuple compiled its `__new__` from source and
    evaluated each field's `Annotated[…]` in every process (~5 ms for the ten sections)."""
    assert compiled("import optmem.settings\nfrom optmem.settings import Settings\nSettings()") == 0
