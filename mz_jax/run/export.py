"""One agent of a training run as a small run directory: its configuration and one checkpoint,
without the replay, for sharing, committing, evaluating and playing (``mz-jax export``).

A run's checkpoints hold everything it continues from, the replay included (``replay_capacity``
transitions, often hundreds of MB). The exported directory holds one seed's parameters, optimiser
state and counters in a run state whose replay and self-play environments are as small as the
configuration allows: ``num_envs`` 1 per device and a replay of one sequence and one rollout per
environment. So ``mz-jax eval --workdir``, :meth:`mz_jax.Agent.restore` and the suite's opponents
read it as they read the run, and the agent acts exactly as the run's did.

The directory is an agent, not a run to go on training: ``mz-jax train`` on it would continue with
the one environment and the smallest replay that its configuration records.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import jax

from mz_jax.config.train import TrainConfig
from mz_jax.run import checkpoint as checkpoint_lib
from mz_jax.run.agent import restore_run_state
from mz_jax.run.resume import CONFIG_FILE, save_config
from mz_jax.training.build import build
from mz_jax.training.train import run_init

EXPORTED_FROM_KEY = "exported_from"
"""The checkpoint's meta entry naming the run, seed and checkpoint an export came from."""


def small_config(config: TrainConfig, *, seed_index: int = 0) -> TrainConfig:
    """``config`` of seed ``config.seed + seed_index`` as one run, with the fewest environments
    (one per device) and the smallest replay its checks allow: one sequence and one rollout per
    environment stream (``max(num_unroll_steps + td_steps + 1, rollout_length)`` steps), and
    ``min_replay_steps`` at most that. Nothing that shapes the network or the search changes."""
    num_envs = jax.device_count()
    slots = max(config.window_length, config.rollout_length)
    return config.replace(
        seed=config.seed + seed_index,
        num_seeds=1,
        num_envs=num_envs,
        replay_capacity=num_envs * slots,
        min_replay_steps=min(config.min_replay_steps, slots),
    )


def export_agent(
    workdir: str | Path,
    destination: str | Path,
    *,
    seed_index: int = 0,
    step: int | None = None,
) -> Path:
    """Writes seed ``seed_index`` of the run in ``workdir`` (its checkpoint ``step``, default the
    newest that restores) to ``destination`` as a small run directory; returns ``destination``.

    ``destination/config.json`` is :func:`small_config` of the run's configuration and
    ``destination/checkpoints/<step>`` a run state with the seed's ``train`` (parameters, optimiser
    state, update count), ``target_params`` and ``iteration``, a fresh actor and an empty replay of
    that configuration; the checkpoint's meta is the run's (``env_steps``, ``updates``, ...) with
    :data:`EXPORTED_FROM_KEY` added.

    Raises:
      FileExistsError: if ``destination`` exists and is not empty (nothing is overwritten).
      FileNotFoundError, ValueError, mz_jax.run.checkpoint.CheckpointError: as
        :func:`mz_jax.run.agent.restore_run_state` (no run, no such step, no checkpoint restores),
        or ``seed_index`` outside ``[0, num_seeds)``.
    """
    workdir, destination = Path(workdir), Path(destination)
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise FileExistsError(
            f"{str(destination)!r} exists and is not an empty directory; an export writes a new one"
        )
    run = restore_run_state(workdir, step=step)
    seed_state = run.seed_state(seed_index)  # checks seed_index
    config = small_config(run.config, seed_index=seed_index)
    fresh = jax.jit(run_init(build(config)))(config.seed)
    state = fresh._replace(
        train=seed_state.train,
        target_params=seed_state.target_params,
        iteration=seed_state.iteration,
    )
    meta = dict(run.meta)
    meta[EXPORTED_FROM_KEY] = {
        "workdir": str(workdir.absolute()),
        "seed_index": seed_index,
        "seed": config.seed,
        "checkpoint": run.step,
    }
    created = not destination.exists()
    destination.mkdir(parents=True, exist_ok=True)
    try:
        save_config(destination, config)
        checkpointer = checkpoint_lib.Checkpointer(destination, keep_last=1)
        try:
            if not checkpointer.save(run.step, state, meta=meta):
                raise ValueError(f"checkpoint {run.step} of {str(workdir)!r} is not finite")
        finally:
            checkpointer.close()
    except BaseException:
        if created:
            shutil.rmtree(destination, ignore_errors=True)
        else:
            (destination / CONFIG_FILE).unlink(missing_ok=True)
            shutil.rmtree(destination / checkpoint_lib.CHECKPOINT_DIR, ignore_errors=True)
        raise
    return destination


def directory_bytes(directory: str | Path) -> int:
    """The bytes of the files under ``directory``."""
    return sum(p.stat().st_size for p in Path(directory).rglob("*") if p.is_file())
