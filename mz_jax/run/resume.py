"""Resuming a run: its saved ``config.json`` against the configuration it is started with.

A run is resumed only with the configuration it was saved with, but for the fields that change no
computed value of the iterations already run (:data:`RESUMABLE_FIELDS`) and those the configuration
does not read (:func:`inert_fields`); a suite reports a finished run again only if it used the
configuration its entry gives now (:func:`check_finished_run`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax

from mz_jax.config.overrides import config_differences, config_from_dict, config_to_dict
from mz_jax.config.stochastic import StochasticConfig
from mz_jax.config.train import TrainConfig
from mz_jax.run.workdir import CONFIG_FILE, write_atomically


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
    f"stochastic.{field.name}" for field in dataclasses.fields(StochasticConfig)
)
"""The fields of ``stochastic``: only Stochastic MuZero's loss reads them (``network.num_chance_outcomes``
set)."""


def inert_fields(config: TrainConfig) -> frozenset[str]:
    """The fields whose value changes nothing ``config`` computes: :data:`CHANCE_ONLY_FIELDS` for
    a deterministic network. A run saved with another value of them (a default that changed since,
    say) is resumed, and reported by a suite, as if saved with this one."""
    return CHANCE_ONLY_FIELDS if config.network.num_chance_outcomes is None else frozenset()


def check_config(
    workdir: Path, config: TrainConfig, *, allow_config_change: bool, write: bool = True
) -> list[str]:
    """Compares ``config`` with the ``config.json`` a previous run of this workdir saved, and
    writes it there (:func:`save_config`) unless not ``write``.

    Returns:
      The fields that differ from the saved configuration (``name: saved -> now``), all of them
      :data:`RESUMABLE_FIELDS` or :func:`inert_fields` unless ``allow_config_change``;
      ``config.json`` then holds ``config`` (if ``write``).

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
    if write:
        save_config(workdir, config)
    return differences


def save_config(workdir: Path, config: TrainConfig) -> None:
    """Writes ``config`` to ``workdir/config.json`` (from process 0), unless it holds it already."""
    path = workdir / CONFIG_FILE
    text = json.dumps(config_to_dict(config), indent=2) + "\n"
    if jax.process_index() == 0 and not (path.exists() and path.read_text() == text):
        write_atomically(path, text)


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
