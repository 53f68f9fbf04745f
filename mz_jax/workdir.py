"""A run's directory: the names of its files, its ``config.json`` round trip, its metrics records.

A training run's workdir holds::

    config.json              the configuration (written at start, compared when resuming)
    metrics.jsonl            one JSON record per log line (:mod:`mz_jax.metrics` names the fields)
    tensorboard/             the same records as TensorBoard events
    checkpoints/             orbax checkpoints (:mod:`mz_jax.checkpoint`)
    corrupted_checkpoints/   checkpoints that failed to restore, moved aside
    learning_curve.png       returns against environment steps (:mod:`mz_jax.plots`)

and a suite's workdir holds ``results.json`` and one such directory per environment, named by
:func:`sanitise`. Nothing here imports :mod:`mz_jax.checkpoint` (it imports this module).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import typing
from pathlib import Path
from typing import Any

import jax

from mz_jax.config import TrainConfig

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
TENSORBOARD_DIR = "tensorboard"
CHECKPOINT_DIR = "checkpoints"
CORRUPTED_DIR = "corrupted_checkpoints"
LEARNING_CURVE_FILE = "learning_curve.png"
RESULTS_FILE = "results.json"
"""A suite workdir's record of its environments and seeds (:mod:`mz_jax.suite`)."""


def sanitise(name: str) -> str:
    """A file or directory name for a preset or environment name: ``:``, ``/`` and spaces made ``_``.

    ``"gymnax:CartPole-v1"`` -> ``"gymnax_CartPole-v1"``. The default workdirs (``runs/<name>``) and a
    suite's environment directories are named by it, so the pattern must not change: a changed name
    would start afresh beside an existing run instead of resuming it.
    """
    return re.sub(r"[^\w.-]", "_", name)


def write_atomically(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` so that a reader (or a later run) never sees half of it."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


# ---------------------------------------------------------------------------------------------------
# config.json


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


def read_config(workdir: str | Path) -> TrainConfig:
    """The configuration a run saved in ``workdir/config.json``.

    Raises:
      FileNotFoundError: if ``workdir`` holds no ``config.json`` (not a run's directory).
    """
    path = Path(workdir) / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{str(path)!r} does not exist: {str(workdir)!r} is not the workdir of a training run "
            "(`mz-jax train --workdir ...` writes it)"
        )
    return config_from_dict(json.loads(path.read_text()))


def check_config(workdir: Path, config: TrainConfig, *, allow_config_change: bool) -> None:
    """Writes ``config.json``, or compares it with the one a previous run of this workdir saved.

    Raises:
      ValueError: listing every differing field (``name: saved -> now``) if the saved configuration
        differs and ``allow_config_change`` is False; nothing is written then.
    """
    path = workdir / CONFIG_FILE
    current = config_to_dict(config)
    if path.exists():
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise ValueError(
                f"{path} cannot be read ({error}); restore it, or remove it to resume with this "
                "configuration"
            ) from error
        differences = config_differences(saved, current)
        if differences and not allow_config_change:
            raise ValueError(
                f"{path} was saved by a run with a different configuration; refusing to resume it "
                "with this one (pass --allow-config-change to resume anyway, or use another "
                "--workdir). Differences (saved -> now):\n  " + "\n  ".join(differences)
            )
    if jax.process_index() == 0:
        write_atomically(path, json.dumps(current, indent=2) + "\n")


# ---------------------------------------------------------------------------------------------------
# The directory itself and metrics.jsonl


def check_workdir(workdir: Path, *, required_bytes: int = 0) -> None:
    """Fails early, with the path in the message, if ``workdir`` cannot be written or has less than
    ``required_bytes`` free (room for one checkpoint)."""
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        # One probe per process: processes of a multi-host run share the workdir.
        probe = workdir / f".write-test-{jax.process_index()}"
        probe.write_bytes(b"\0" * 4096)
        probe.unlink(missing_ok=True)
    except OSError as error:
        raise OSError(f"workdir {str(workdir)!r} is not writable: {error}") from error
    free = shutil.disk_usage(workdir).free
    if free < required_bytes:
        raise OSError(
            f"workdir {str(workdir)!r} has {free / 2**20:.1f} MiB free; a checkpoint of this run "
            f"needs up to {required_bytes / 2**20:.1f} MiB (free some space, use another --workdir, "
            "or shrink replay_capacity)"
        )


def _metrics_lines(workdir: str | Path) -> list[tuple[str, dict]]:
    """``(line, record)`` for each complete record of ``workdir/metrics.jsonl``; a line torn by a
    kill in mid-write (or anything else that is not a JSON object) is skipped."""
    path = Path(workdir) / METRICS_FILE
    if not path.exists():
        return []
    lines = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            lines.append((line, record))
    return lines


def read_metrics(workdir: str | Path) -> list[dict]:
    """The records of ``workdir/metrics.jsonl`` (a line torn by a kill in mid-write is skipped)."""
    return [record for _, record in _metrics_lines(workdir)]


def forget_metrics_after(workdir: Path, env_steps: int) -> None:
    """Drops the records of ``metrics.jsonl`` past ``env_steps``: a resumed run is about to redo those
    iterations (and write them again). Also drops a line torn by a kill in mid-write."""
    if not (workdir / METRICS_FILE).exists() or jax.process_index() != 0:
        return
    kept = [
        line + "\n" for line, r in _metrics_lines(workdir) if r.get("env_steps", 0) <= env_steps
    ]
    write_atomically(workdir / METRICS_FILE, "".join(kept))
