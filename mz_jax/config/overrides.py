"""Changing a configuration by dotted field names, and configurations as plain JSON values and back.

:func:`override` is the one way a configuration is changed by name: the presets build on
:class:`~mz_jax.TrainConfig` or on each other with it, a suite file's ``overrides`` table goes
through it, and the command line's flags are the same dotted names (``--search.num-simulations 8``
sets ``search.num_simulations``). :func:`config_to_dict` and :func:`config_from_dict` are the
``config.json`` round trip; :func:`config_differences` lists what two of them differ in.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from typing import Any

from mz_jax.config.train import TrainConfig


def override(config: TrainConfig, changes: Mapping[str, Any]) -> TrainConfig:
    """A copy of ``config`` with each field named in ``changes`` set to its value.

    Nested fields are named with dots, as on the command line: ``{"num_envs": 32,
    "search.num_simulations": 8, "network.hidden_sizes": (128, 128)}``. Lists become tuples at any
    depth, so values read from TOML or JSON fit. The copy is validated as a whole, as every
    :class:`~mz_jax.TrainConfig` is.

    Raises:
      ValueError: for an unknown field (naming it and the fields allowed there), a field below one
        that is not a dataclass, or an invalid value (the configuration's own message).
    """
    values = config_to_dict(config)
    for dotted, value in changes.items():
        *parents, name = dotted.split(".")
        node = values
        for parent in parents:
            if not isinstance(node.get(parent), dict):
                raise ValueError(f"unknown config field {dotted!r}")
            node = node[parent]
        node[name] = _json_value(value)  # an unknown name is refused below, with the known ones
    return config_from_dict(values)


def _json_value(value: Any) -> Any:
    """``value`` as :func:`config_to_dict` would hold it (tuples as lists), so one path builds the
    copy."""
    return json.loads(json.dumps(value))


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
    existed), and the Stochastic MuZero fields saved at the top level before they were grouped move
    into ``stochastic``; an unknown field is an error, since silently dropping it would change the
    run.

    Raises:
      ValueError: for an unknown field (naming it) or an invalid value (the config's own message).
    """
    return _dataclass_from_dict(TrainConfig, _grouped(d), prefix="")


_STOCHASTIC_FIELDS = (
    "commitment_loss_weight",
    "code_usage_weight",
    "chance_straight_through",
    "chance_codes",
)
"""Fields of ``stochastic`` that a ``config.json`` written before the group existed holds at the
top level."""


def _grouped(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` with the Stochastic MuZero fields it holds at the top level (as a ``config.json``
    saved before they were grouped does) moved into its ``stochastic`` table."""
    flat = {name: d[name] for name in _STOCHASTIC_FIELDS if name in d}
    if not flat:
        return d
    grouped = {name: value for name, value in d.items() if name not in flat}
    grouped["stochastic"] = {**flat, **(d.get("stochastic") or {})}
    return grouped


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
