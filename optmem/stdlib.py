"""`sqlite3` and `datetime` as their C modules, without the Python files that wrap them.

`import sqlite3` runs `sqlite3/dbapi2.py`, which imports `datetime` for default adapters of
dates (a date bound as a parameter is written as its ISO text) and a few DB-API constructors;
`import datetime` runs `datetime.py`, ~2,600 lines of a pure-Python implementation — its classes
made, then replaced by the C module's (`from _datetime import *` at its end). Together ~6M
instructions, ~2 ms of CPU, in every process, for nothing optmem uses: it binds times as epoch
floats or ISO text it formats itself, and its `datetime`, `date`, `timedelta` and `UTC` are the C
module's in either case. The modules a search loads import both from here: the same classes,
functions and exceptions (`_sqlite3` is what `sqlite3` re-exports). Where the C modules are
missing (an interpreter other than CPython), the standard modules are imported instead.

No optmem module imports `sqlite3` itself (a test runs doctor and search to check): its Python
part registers its date adapters in the C module's one table, so a process that imported it
would bind a `date` or `datetime` that every other refuses (`ProgrammingError`) — what a
statement can bind would depend on which module was imported first.
"""

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    import sqlite3
    from datetime import UTC, date, datetime, timedelta
else:
    try:
        import _sqlite3 as sqlite3
    except ImportError:  # pragma: no cover - CPython has it wherever it has sqlite3
        import sqlite3
    try:
        from _datetime import UTC, date, datetime, timedelta
    except ImportError:  # pragma: no cover - CPython has it
        from datetime import UTC, date, datetime, timedelta

__all__ = ["UTC", "date", "datetime", "sqlite3", "timedelta"]
