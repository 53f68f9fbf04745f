"""The start of a training run (:func:`mz_jax.run.loop.run_training`), before its first iteration.

:func:`start_run` opens the workdir and restores its newest good checkpoint or makes a new run's
state, through :func:`open_run`, which checks the workdir (free space, the configuration it saved);
:func:`print_header` says what the run is, :func:`print_start` how it starts (afresh, resumed, with
a changed configuration); :func:`close_quietly` closes what a start that failed had opened, without hiding its
error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import jax

from mz_jax.config.train import TrainConfig
from mz_jax.networks import count_params
from mz_jax.run import checkpoint as checkpoint_lib
from mz_jax.run.resume import check_config, save_config
from mz_jax.run.workdir import CONFIG_FILE, check_workdir, first_missing, remove_failed_start
from mz_jax.training.network_for_env import network_kind
from mz_jax.training.train import Trainer


def open_run(
    config: TrainConfig, trainer: Trainer, workdir: Path, *, allow_config_change: bool
) -> tuple[checkpoint_lib.Checkpointer, tuple | None, list[str]]:
    """Checks the workdir and ``config`` against the one it saved (writing nothing yet), and
    restores the newest checkpoint: ``(checkpointer, restored or None, changed fields)``."""
    check_workdir(workdir, required_bytes=checkpoint_lib.state_nbytes(trainer.abstract_state))
    changed = check_config(workdir, config, allow_config_change=allow_config_change, write=False)
    checkpointer = checkpoint_lib.Checkpointer(
        workdir, keep_last=config.keep_checkpoints, keep_every=config.keep_checkpoint_every
    )
    try:
        restored = checkpointer.restore_latest(trainer.abstract_state)
    except BaseException:
        checkpointer.close()
        raise
    return checkpointer, restored, changed


def print_header(config: TrainConfig, trainer: Trainer) -> None:
    """Prints the run's environment, devices, network, replay and search, in one line (a note
    follows for a ResNet on a CPU); from the abstract state, so before anything is compiled."""
    num_params = count_params(trainer.abstract_state.train.params) // config.num_seeds
    components = trainer.components
    kind = network_kind(components.network_config, components.env)
    replay_mb = trainer.bytes_per_transition * config.replay_capacity * config.num_seeds / 2**20
    seeds_times = f" x {config.num_seeds} seeds" if config.num_seeds > 1 else ""
    compute_dtype = components.network_config.compute_dtype
    dtype = f" computing in {compute_dtype}" if compute_dtype != "float32" else ""
    print(
        f"mz_jax: {config.env} | {len(trainer.mesh.devices.flat)} device(s) "
        f"({jax.default_backend()}, {jax.process_count()} process(es)) | network {kind} "
        f"{num_params:,} parameters{dtype} | replay {config.replay_capacity:,} transitions x "
        f"{trainer.bytes_per_transition} bytes{seeds_times} = {replay_mb:.1f} MiB | search "
        f"{trainer.search_config.policy} x {trainer.search_config.num_simulations} simulations"
        + (f" | {config.num_seeds} seeds in one program" if config.num_seeds > 1 else ""),
        flush=True,
    )
    if kind == "resnet" and jax.default_backend() == "cpu":
        print(
            "note: a ResNet is slow on a CPU (network.kind 'auto' picks one for image "
            "observations): the breakout_minatar preset takes about 9 hours per 1M env steps on "
            "two cores, its MLP version breakout_minatar_mlp 21 to 42 minutes; --network.kind "
            "mlp trains on the flattened image",
            flush=True,
        )


def print_start(
    config: TrainConfig,
    workdir: Path,
    *,
    resumed: tuple[int, int, int] | None,
    created_config: bool,
    changed: list[str],
) -> None:
    """Prints how the run starts: resumed from a checkpoint (``resumed``: its iteration, update and
    env step), afresh over a config.json a stopped start left (not ``created_config``), with the
    ``changed`` fields."""
    if resumed is not None:
        iteration, updates, env_steps = resumed
        print(
            f"resumed from checkpoint {iteration} (iteration {iteration}, update "
            f"{updates}, env step {env_steps:,})",
            flush=True,
        )
    elif not created_config:
        print(
            f"{workdir} holds a config.json but no checkpoint (a start stopped before its "
            "first checkpoint): starting from the beginning",
            flush=True,
        )
    if changed:
        print(_changes_message(config, changed), flush=True)


def _changes_message(config: TrainConfig, changed: list[str]) -> str:
    """What a resume with a changed configuration changes, in one line."""
    message = f"resuming with a changed configuration: {'; '.join(changed)}"
    length_changed = any(change.startswith("total_env_steps:") for change in changed)
    temperatures = {t for _, t in config.temperature_schedule}
    beta_start, beta_end = config.priority_beta
    if length_changed and (
        len(temperatures) > 1 or beta_start != beta_end or config.random_action_anneal is not None
    ):
        message += (
            " (temperature_schedule and the priority_beta and random_action_anneal annealing are "
            "fractions of total_env_steps: they follow the new length from here on)"
        )
    return message


def close_quietly(*resources) -> None:
    """Closes ``resources`` while another error is on its way up (which theirs must not hide)."""
    for resource in resources:
        try:
            resource.close()
        except Exception:
            pass


class RunStart(NamedTuple):
    """Where a call of :func:`mz_jax.run.loop.run_training` starts: its open checkpointer, the run
    state, the wall time and next evaluation (env steps) it carries on from, the checkpoint it
    resumed (None: a new run), whether that checkpoint ends the run (``finished``: it reached
    ``total_env_steps``), the configuration fields that changed, and what the start created (the
    arguments of :func:`mz_jax.run.workdir.remove_failed_start`)."""

    checkpointer: checkpoint_lib.Checkpointer
    state: Any
    wall_offset: float
    next_eval: int
    checkpoint: int | None
    finished: bool
    changed: list[str]
    created: dict[str, Any]

    @property
    def resumed(self) -> bool:
        return self.checkpoint is not None


def start_run(
    config: TrainConfig, trainer: Trainer, workdir: Path, allow_config_change: bool
) -> RunStart:
    """Opens ``workdir`` and restores its newest checkpoint, or makes a new run's state.

    Unless the restored checkpoint finished the run (its env steps reached ``total_env_steps``:
    then nothing is written), ``config.json`` is written and process 0 prints the run's header
    (:func:`print_header`), before the compile of a new run's state. A failure here (a changed configuration, an unrestorable
    checkpoint, a failed compile) closes the checkpointer and removes what the start created
    before it propagates."""
    created = {
        "created": first_missing(workdir),
        "created_config": not (workdir / CONFIG_FILE).exists(),
    }
    checkpointer = None
    try:
        checkpointer, restored, changed = open_run(
            config, trainer, workdir, allow_config_change=allow_config_change
        )
        if restored is None:
            checkpoint, finished = None, False
            wall_offset, next_eval = 0.0, config.eval_every_env_steps
        else:
            checkpoint, state, meta = restored
            wall_offset, next_eval = float(meta["wall_s"]), int(meta["next_eval_env_steps"])
            total = config.total_env_steps
            env_steps = int(meta["iteration"]) * trainer.env_steps_per_iteration
            finished = total is not None and env_steps >= total
        if not finished:
            save_config(workdir, config)
            if jax.process_index() == 0:
                print_header(config, trainer)
        if restored is None:
            state = trainer.init(config.seed)
        elif trainer.env.host is not None and not finished:
            # Its environments live in the process that saved the checkpoint: new episodes.
            state = trainer.restart_actors(state)
    except BaseException:
        if checkpointer is not None:
            checkpointer.close()
        remove_failed_start(workdir, **created)
        raise
    return RunStart(
        checkpointer, state, wall_offset, next_eval, checkpoint, finished, changed, created
    )
