"""The check every solver's options object runs on its values when it is made."""

from __future__ import annotations

from dataclasses import fields


def check_option_values(options, at_least_one: tuple[str, ...] = (),
                        positive: tuple[str, ...] = ()) -> None:
    """Raise on a value of the frozen dataclass ``options`` that its annotation or the
    solver cannot take: ``TypeError`` for a value not of its annotated type (``int``,
    ``float``: an ``int`` also serves; ``bool``), ``ValueError`` for a negative or NaN
    number, one below 1 among ``at_least_one``, or one not above 0 among ``positive``.
    A bad value is refused when the options are made, not deep inside a solve."""
    name = type(options).__name__
    for f in fields(options):
        value = getattr(options, f.name)
        if f.type == "bool":
            if not isinstance(value, bool):
                raise TypeError(f"{name}.{f.name} must be a bool, got {value!r}")
        elif isinstance(value, bool) or not isinstance(
                value, int if f.type == "int" else (int, float)):
            raise TypeError(f"{name}.{f.name} must be {f.type}, got {value!r}")
        elif not value >= 0:  # also rejects NaN
            raise ValueError(f"{name}.{f.name} must be >= 0, got {value!r}")
    for field_name in at_least_one:
        if getattr(options, field_name) < 1:
            raise ValueError(f"{name}.{field_name} must be >= 1, got "
                             f"{getattr(options, field_name)!r}")
    for field_name in positive:
        if not getattr(options, field_name) > 0:
            raise ValueError(f"{name}.{field_name} must be > 0, got "
                             f"{getattr(options, field_name)!r}")
