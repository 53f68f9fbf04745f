"""A run's directory: the names of its files, its ``config.json`` round trip, its metrics records.

A training run's workdir holds::

    config.json              the configuration (written at start, compared when resuming)
    metrics.jsonl            one JSON record per log line (:mod:`mz_jax.run.metrics` names the fields)
    tensorboard/             the same records as TensorBoard events
    checkpoints/             orbax checkpoints (:mod:`mz_jax.run.checkpoint`)
    corrupted_checkpoints/   checkpoints that failed to restore, moved aside
    learning_curve.png       returns against environment steps (:mod:`mz_jax.run.plots`)
    errors.log               tracebacks of the failures ``mz-jax train`` reported in one line

and a suite's workdir holds ``results.json`` and one such directory per environment, named by
:func:`sanitise`. Nothing here imports :mod:`mz_jax.run.checkpoint` (it imports this module).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import typing
from pathlib import Path
from typing import Any

import jax

from mz_jax.config.train import TrainConfig

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
TENSORBOARD_DIR = "tensorboard"
CHECKPOINT_DIR = "checkpoints"
CORRUPTED_DIR = "corrupted_checkpoints"
LEARNING_CURVE_FILE = "learning_curve.png"
ERRORS_FILE = "errors.log"
RESULTS_FILE = "results.json"
"""A suite workdir's record of its environments and seeds (:mod:`mz_jax.suite.runner`)."""


def sanitise(name: str) -> str:
    """A file or directory name for a preset or environment name: ``:``, ``/`` and spaces made ``_``.

    ``"gymnax:CartPole-v1"`` -> ``"gymnax_CartPole-v1"``. The default workdirs (``runs/<name>``) and a
    suite's environment directories are named by it, so the pattern must not change: a changed name
    would start afresh beside an existing run instead of resuming it.
    """
    return re.sub(r"[^\w.-]", "_", name)


def write_atomically(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` so that a reader (or a later run) never sees half of it.

    Raises:
      OSError: naming ``path`` (a full disk, an unwritable directory); ``path`` is then unchanged.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        if error.strerror:  # "[Errno 28] writing .../config.json failed: No space left on device"
            raise OSError(error.errno, f"writing {path} failed: {error.strerror}") from error
        raise OSError(f"writing {path} failed: {error}") from error


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


RESUMABLE_FIELDS = frozenset(
    {
        "total_env_steps",
        "log_every_seconds",
        "checkpoint_every_seconds",
        "keep_checkpoints",
        "keep_checkpoint_every",
        "unroll_learner",
    }
)
"""Fields a run may be resumed with a different value of, without ``--allow-config-change``: the
run's length and its bookkeeping, which change no computed value of the iterations already run,
and ``unroll_learner``, which changes how the learner is traced, not what it computes (to float
rounding).
A longer ``total_env_steps`` extends a finished run. The schedules given as fractions of the run
(``temperature_schedule``, the ``priority_beta`` and ``random_action_anneal`` annealing) follow the
new length from the resumed iteration on: they are functions of ``env_steps / total_env_steps``."""

BOOKKEEPING_FIELDS = RESUMABLE_FIELDS - {"total_env_steps"}
"""The fields that change no computed value at all: how often a run logs and saves, what it
keeps, and how its learner is traced."""

CHANCE_ONLY_FIELDS = frozenset(
    {"commitment_loss_weight", "code_usage_weight", "chance_straight_through", "chance_codes"}
)
"""Loss settings that only Stochastic MuZero's loss reads (``network.num_chance_outcomes`` set)."""


def inert_fields(config: TrainConfig) -> frozenset[str]:
    """The fields whose value changes nothing ``config`` computes: :data:`CHANCE_ONLY_FIELDS` for
    a deterministic network. A run saved with another value of them (a default that changed since,
    say) is resumed, and reported by a suite, as if saved with this one."""
    return CHANCE_ONLY_FIELDS if config.network.num_chance_outcomes is None else frozenset()


def check_config(workdir: Path, config: TrainConfig, *, allow_config_change: bool) -> list[str]:
    """Writes ``config.json``, or compares it with the one a previous run of this workdir saved.

    Returns:
      The fields that differ from the saved configuration (``name: saved -> now``), all of them
      :data:`RESUMABLE_FIELDS` or :func:`inert_fields` unless ``allow_config_change``;
      ``config.json`` then holds ``config``.

    Raises:
      ValueError: listing every differing field (``name: saved -> now``) if the saved configuration
        differs in a field outside :data:`RESUMABLE_FIELDS` and :func:`inert_fields` and
        ``allow_config_change`` is False;
        nothing is written then.
    """
    path = workdir / CONFIG_FILE
    current = config_to_dict(config)
    if path.exists():
        saved = _read_saved_config(
            path, "restore it, or remove it to resume with this configuration"
        )
        differences = config_differences(_with_defaults(saved), current)
        refused = _outside(differences, RESUMABLE_FIELDS | inert_fields(config))
        if refused and not allow_config_change:
            raise ValueError(
                f"{path} was saved by a run with a different configuration; refusing to resume it "
                "with this one (pass --allow-config-change to resume anyway, or use another "
                "--workdir). Differences (saved -> now): " + "; ".join(refused)
            )
    else:
        differences = []
    if jax.process_index() == 0:
        write_atomically(path, json.dumps(current, indent=2) + "\n")
    return differences


def check_finished_run(run_dir: Path, config: TrainConfig, *, name: str) -> None:
    """Checks that the finished run in ``run_dir`` (``name`` in messages) used ``config``, but for
    :data:`BOOKKEEPING_FIELDS` and :func:`inert_fields`: its results are then ``config``'s (a
    suite reports such a run again rather than training it).

    Raises:
      ValueError: if its ``config.json`` cannot be read, or differs, listing every differing field.
    """
    saved = _read_saved_config(
        run_dir / CONFIG_FILE, f"{name} is done in the suite's results: use another --workdir"
    )
    changed = _outside(
        config_differences(_with_defaults(saved), config_to_dict(config)),
        BOOKKEEPING_FIELDS | inert_fields(config),
    )
    if changed:
        raise ValueError(
            f"{name} was run with another configuration than its preset and overrides give now "
            f"(saved -> now: {'; '.join(changed)}), so its results are not this configuration's; "
            "use another --workdir"
        )


def _read_saved_config(path: Path, remedy: str) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} cannot be read ({error}); {remedy}") from error


def _outside(differences: list[str], fields: frozenset[str]) -> list[str]:
    """The ``field: saved -> now`` differences whose field is not one of ``fields``."""
    return [d for d in differences if d.split(":")[0] not in fields]


def _with_defaults(saved: dict) -> dict:
    """``saved`` with the fields it lacks at their defaults: a run saved before a field existed ran
    as that field's default does, so resuming it with the default changes nothing. A file with a
    field this version does not know is compared as it stands (the field is then a difference)."""
    try:
        return config_to_dict(config_from_dict(saved))
    except (TypeError, ValueError):
        return saved


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
    iterations (and write them again). Also drops a line torn by a kill in mid-write; a file left
    with no record is removed."""
    if not (workdir / METRICS_FILE).exists() or jax.process_index() != 0:
        return
    kept = [
        line + "\n" for line, r in _metrics_lines(workdir) if r.get("env_steps", 0) <= env_steps
    ]
    if not kept:  # no empty file: a start that fails before its first record leaves none
        (workdir / METRICS_FILE).unlink()
        return
    write_atomically(workdir / METRICS_FILE, "".join(kept))


# ---------------------------------------------------------------------------------------------------
# After a failure


def first_missing(path: Path) -> Path | None:
    """The outermost of ``path`` and its parents that does not exist (what ``mkdir(parents=True)``
    would create first), or None if ``path`` exists."""
    missing = None
    for candidate in (path, *path.absolute().parents):
        if candidate.exists():
            break
        missing = candidate
    return missing


def remove_failed_start(workdir: Path, *, created: Path | None, created_config: bool) -> None:
    """Removes what a start that failed before it trained anything wrote, and nothing else.

    ``config.json`` goes if this start wrote it (``created_config``), then ``workdir`` and its
    parents up to ``created`` (the outermost directory this start created, :func:`first_missing`)
    where they are empty: a failed first start leaves no empty directory or half-begun run behind,
    and a directory that existed before keeps everything it held.
    """
    if jax.process_index() != 0:
        return
    # Best effort: this runs while the start's own error is on its way up, which it must not hide.
    with contextlib.suppress(OSError):
        if created_config:
            (workdir / CONFIG_FILE).unlink(missing_ok=True)
        if created is not None:
            directory = workdir.absolute()
            while True:
                directory.rmdir()  # only if empty: never a tree
                if directory == created.absolute():
                    break
                directory = directory.parent


def append_error_log(workdir: str | Path, text: str) -> Path | None:
    """Appends ``text`` (a traceback) to ``workdir/errors.log``; returns the file, or None if
    ``workdir`` does not exist or cannot be written (a full disk: the caller says so instead)."""
    path = Path(workdir) / ERRORS_FILE
    if not Path(workdir).is_dir():
        return None
    existed = path.exists()
    try:
        with open(path, "a") as log:
            log.write(text if text.endswith("\n") else text + "\n")
    except OSError:
        if not existed:  # no empty or torn log left behind by a full disk
            with contextlib.suppress(OSError):
                path.unlink()
        return None
    return path
