"""OptMem: memory for AI agents that lives in plain, human-editable files."""

__version__ = "0.1.0"


def _pathlib_without_urllib() -> None:
    """Import `pathlib` without `urllib.parse` (and the `ipaddress` it imports): ~17M
    instructions, ~3 ms of every optmem process, for `Path.as_uri` alone — which optmem never
    calls. While pathlib is imported, `urllib.parse` is a stand-in holding the one function
    pathlib takes from it, which imports the real one when called; the stand-in is gone from
    `sys.modules` right after, so any later `import urllib.parse` imports the real module. A
    pathlib that wants more of it (another Python) is imported the usual way."""
    import sys

    if "pathlib" in sys.modules or "urllib.parse" in sys.modules:
        return

    def quote_from_bytes(bs: bytes, safe: str = "/") -> str:
        from urllib.parse import quote_from_bytes as real

        return real(bs, safe)

    stand_in = type(sys)("urllib.parse")
    stand_in.quote_from_bytes = quote_from_bytes  # type: ignore[attr-defined]
    sys.modules["urllib.parse"] = stand_in
    try:
        import pathlib  # noqa: F401
    except ImportError:
        pass  # (imported the usual way below, by whoever needs it)
    finally:
        if sys.modules.get("urllib.parse") is stand_in:
            del sys.modules["urllib.parse"]


_pathlib_without_urllib()
