"""Configurations as plain JSON values and back: ``config.json``'s round trip and its differences."""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any

from mz_jax.config.train import TrainConfig


def config_to_dict(config: Any) -> dict:
    """A configuration dataclass as plain JSON values (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(config)))


def config_differences(saved: dict, current: dict, prefix: str = "") -> list[str]:
    """``field: saved -> current`` for every field that differs (nested fields dotted)."""
    differences = []
    for name in sorted(set(saved) | set(current)):
        old, new = saved.get(name), current.get(name)
        if isinstance(old, dict) and isinstance(new, dict):
            differences += config_differences(old, new, prefix=f"{prefix}{name}.")
        elif old != new:
            differences.append(f"{prefix}{name}: {old!r} -> {new!r}")
    return differences


def config_from_dict(d: dict[str, Any]) -> TrainConfig:
    """The :class:`TrainConfig` that :func:`config_to_dict` turned into ``d``.

    JSON has no tuples and no dataclasses: nested dicts become the field's dataclass
    (``search``, ``network``) and lists become tuples, at any depth (``temperature_schedule`` is a
    tuple of pairs). Fields missing from ``d`` take their defaults (a config saved before the field
    existed); an unknown field is an error, since silently dropping it would change the run.

    Raises:
      ValueError: for an unknown field (naming it) or an invalid value (the config's own message).
    """
    return _dataclass_from_dict(TrainConfig, d, prefix="")


def _dataclass_from_dict(cls: type, d: Any, *, prefix: str) -> Any:
    if not isinstance(d, dict):
        raise ValueError(
            f"config field {prefix.rstrip('.') or '<root>'!r} = {d!r} is invalid: allowed a JSON "
            f"object with the fields of {cls.__name__}"
        )
    fields = {field.name for field in dataclasses.fields(cls)}
    unknown = sorted(set(d) - fields)
    if unknown:
        raise ValueError(
            f"unknown config field(s) {', '.join(prefix + name for name in unknown)} for "
            f"{cls.__name__}; allowed: {', '.join(sorted(fields))}"
        )
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, value in d.items():
        if dataclasses.is_dataclass(hints[name]):
            kwargs[name] = _dataclass_from_dict(hints[name], value, prefix=f"{prefix}{name}.")
        else:
            kwargs[name] = _tuples(value)
    return cls(**kwargs)


def _tuples(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_tuples(v) for v in value)
    return value
