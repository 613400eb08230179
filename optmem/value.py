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

from typing import Any, ClassVar, Self, dataclass_transform

__all__ = ["Value"]


@dataclass_transform(frozen_default=True)
class Value:
    _fields: ClassVar[tuple[str, ...]] = ()
    _field_defaults: ClassVar[dict[str, Any]] = {}
    _required: ClassVar[tuple[str, ...]] = ()

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
