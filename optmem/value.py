"""`Value`: a small immutable record type that costs nothing to declare.

A `typing.NamedTuple` compiles its `__new__` from source when its class is made (`eval` of a
lambda naming every field) and checks each field's type: ~0.3 ms a class, in every process —
the few dozen a command loads cost it several milliseconds before it does anything. A `Value`
class is a plain class: its fields are its annotated attributes (with their defaults, if any;
a name starting with _ is no field, as in a NamedTuple), read once from its annotations. Its
instances are made by position or by keyword, compared, hashed and printed by value, and
read-only; `_replace`, `_asdict`, `_fields` and `_field_defaults` are a NamedTuple's.

It is no tuple: a value is not unpacked, indexed or bound as SQL parameters, and JSON does not
write it as a list (mypy checks the first two). Making one is slower than a NamedTuple's (~1 µs
against ~0.3 µs): a type made thousands of times a command stays a NamedTuple.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing on a search's path)
if TYPE_CHECKING:
    from typing import Any, ClassVar, Self, dataclass_transform

    _TupleBase = tuple[Any, ...]
else:
    _TupleBase = tuple

    def dataclass_transform(**_: object) -> object:  # (what mypy reads; nothing at run time)
        return lambda cls: cls


__all__ = ["Annotated", "NamedTuple", "Value"]


@dataclass_transform(frozen_default=True)
class Value:
    if TYPE_CHECKING:  # (no annotation at run time: `get_type_hints` of a subclass reads its fields alone)
        _fields: ClassVar[tuple[str, ...]]
        _field_defaults: ClassVar[dict[str, Any]]
        _required: ClassVar[tuple[str, ...]]
    _fields = ()
    _field_defaults = {}
    _required = ()

    def __init_subclass__(cls) -> None:
        own = tuple(name for name in cls.__dict__.get("__annotations__", ()) if not name.startswith("_"))
        cls._fields = (*cls._fields, *(name for name in own if name not in cls._fields))
        cls._field_defaults = {
            **cls._field_defaults,
            **{name: cls.__dict__[name] for name in own if name in cls.__dict__},
        }
        cls._required = tuple(name for name in cls._fields if name not in cls._field_defaults)

    def __init__(self, *args: Any, **values: Any) -> None:
        if args:
            if len(args) > len(self._fields):
                raise TypeError(f"{type(self).__name__} takes {len(self._fields)} values, not {len(args)}")
            for name, value in zip(self._fields, args):
                if name in values:
                    raise TypeError(f"{type(self).__name__} got two values for {name!r}")
                values[name] = value
        for name in values:
            if name not in self._fields:
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
        for name in self._required:
            if name not in values:
                raise TypeError(f"{type(self).__name__} needs a value for {name!r}")
        self.__dict__.update(values)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only: make a new one with _replace")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def _asdict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._fields}

    def _replace(self, **values: Any) -> Self:
        return type(self)(**{**self.__dict__, **values})

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._asdict() == self._asdict()

    def __hash__(self) -> int:
        return hash((type(self), *self._asdict().values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._asdict().items())})"


# -- NamedTuple: the tuple types made for every row, record and hit -------------------------------
# `typing.NamedTuple` builds its class with `collections.namedtuple`, which compiles a `__new__`
# from source naming every field (the index's `Row` has 43) and checks each annotation's type:
# 3–6M instructions a process for optmem's ten. The same class statement made here compiles
# nothing: its instances are tuples made by one shared `__new__`, their fields read by position
# as a namedtuple's are. mypy sees `typing.NamedTuple` (the same class statements, the same checks).


try:  # (what `collections.namedtuple` reads its fields with)
    from _collections import _tuplegetter  # type: ignore[import-not-found]  # (no stub)
except ImportError:  # pragma: no cover - CPython has it

    def _tuplegetter(index: int, doc: str) -> Any:
        from operator import itemgetter

        return property(itemgetter(index), doc=doc)


_NEEDED = object()  # (in a class's template: a field without a default)
# Made by keyword or with defaults this many times, a class gets a compiled `__new__` (a search
# makes a few such values, never that many: it compiles none; an index build makes thousands)
COMPILE_AFTER = 64


class _Tuple(_TupleBase):
    """What every such class shares: made by position or keyword, `_make`, `_replace`,
    `_asdict`, printed as a namedtuple prints."""

    __slots__ = ()
    if TYPE_CHECKING:  # (set on each class: no annotation here, which `get_type_hints` would read)
        _fields: ClassVar[tuple[str, ...]]
        _field_defaults: ClassVar[dict[str, Any]]
        _template: ClassVar[tuple[Any, ...]]
        _places: ClassVar[dict[str, int]]
        _slow_calls: ClassVar[int]

    def __new__(cls, *args: Any, **values: Any) -> Self:
        if values or len(args) != len(cls._fields):
            args = cls._filled(args, values)
        return tuple.__new__(cls, args)

    @classmethod
    def _filled(cls, args: tuple[Any, ...], values: dict[str, Any]) -> tuple[Any, ...]:
        """The values by position, given by keyword or left to their defaults (the class's
        template: its defaults in field order, a marker where a value is needed)."""
        cls._slow_calls += 1
        if cls._slow_calls == COMPILE_AFTER:
            cls._compile_new()
        name = cls.__name__
        if len(args) > len(cls._fields):
            raise TypeError(f"{name} takes {len(cls._fields)} values, not {len(args)}")
        out = [*args, *cls._template[len(args) :]]
        for field, value in values.items():
            at = cls._places.get(field)
            if at is None or at < len(args):
                said = "has no field" if at is None else "got two values for"
                raise TypeError(f"{name} {said} {field!r}")
            out[at] = value
        if _NEEDED in out:
            raise TypeError(f"{name} needs a value for {cls._fields[out.index(_NEEDED)]!r}")
        return tuple(out)

    @classmethod
    def _compile_new(cls) -> None:
        """The `__new__` a namedtuple compiles, for a class made by keyword or with defaults
        often (an index build makes a `Row` by keyword for every line): compiled once it is."""
        names = ", ".join(cls._fields) + ("," if len(cls._fields) == 1 else "")
        new = eval(f"lambda _cls, {names}: _tuple_new(_cls, ({names}))", {"_tuple_new": tuple.__new__})  # noqa: S307
        new.__defaults__ = tuple(cls._field_defaults[f] for f in cls._fields if f in cls._field_defaults) or None
        cls.__new__ = staticmethod(new)  # type: ignore[method-assign]

    @classmethod
    def _make(cls, iterable: Any) -> Self:
        made = tuple.__new__(cls, iterable)
        if len(made) != len(cls._fields):
            raise TypeError(f"Expected {len(cls._fields)} arguments, got {len(made)}")
        return made

    def _replace(self, **values: Any) -> Self:
        made = self._make(map(values.pop, self._fields, self))
        if values:
            raise ValueError(f"Got unexpected field names: {list(values)!r}")
        return made

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self))

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in zip(self._fields, self))})"


class _TupleMaker(type):
    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> type:
        fields = tuple(ns.get("__annotations__", {}))
        defaults = {field: ns[field] for field in fields if field in ns}
        if any(field not in defaults for field in fields[len(fields) - len(defaults) :]):
            raise TypeError(f"{name}: a field without a default follows one with a default")
        body = {k: v for k, v in ns.items() if k not in defaults}
        body.update(__slots__=(), _fields=fields, _field_defaults=defaults, __match_args__=fields)
        body.update(
            _slow_calls=0,
            _template=tuple(defaults.get(f, _NEEDED) for f in fields),
            _places={f: i for i, f in enumerate(fields)},
        )
        for i, field in enumerate(fields):
            body[field] = _tuplegetter(i, f"Alias for field number {i}")
        return type(name, (_Tuple,), body)


if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    NamedTuple = type.__new__(_TupleMaker, "NamedTuple", (), {})


# -- Annotated: a type with what it means, read at run time without typing --------------------
# `schema.Row`'s columns and the settings' constraints are written `Annotated[type, meaning]`.
# `typing` (~13M instructions, ~4 ms a process) is no module a search needs: at run time this
# `Annotated[T, x, …]` is a plain value whose `__origin__` is T and `__metadata__` (x, …), as
# `typing.Annotated`'s are (and `typing.get_type_hints(…, include_extras=True)` returns it so).
# mypy reads `typing.Annotated`.


class _Annotated:
    __slots__ = ("__origin__", "__metadata__")

    def __init__(self, origin: Any, metadata: tuple[Any, ...]) -> None:
        self.__origin__ = origin
        self.__metadata__ = metadata

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Annotated) and (self.__origin__, self.__metadata__) == (
            other.__origin__,
            other.__metadata__,
        )

    def __hash__(self) -> int:
        return hash((self.__origin__, self.__metadata__))

    def __repr__(self) -> str:
        return f"Annotated[{self.__origin__!r}, {', '.join(map(repr, self.__metadata__))}]"


if TYPE_CHECKING:
    from typing import Annotated as Annotated
else:

    class Annotated:
        def __class_getitem__(cls, params: tuple[Any, ...]) -> _Annotated:
            if not isinstance(params, tuple) or len(params) < 2:
                raise TypeError("Annotated[…] takes a type and at least one annotation")
            return _Annotated(params[0], params[1:])
