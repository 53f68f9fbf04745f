"""The host loop of a training run: step, log, evaluate, checkpoint, resume.

Everything heavy runs in the compiled step of :func:`mz_jax.training.train.make_train`; this loop only moves
scalars to the host, writes them, evaluates every so often, saves the whole state, and stops cleanly
on SIGTERM/SIGINT (preemption) after saving. Starting the same command again with the same workdir
carries on from the newest good checkpoint (:mod:`mz_jax.run.start` opens it).

Failures are reported by type, each with a one-line message naming what failed:
``ValueError`` for a configuration (or environment) that cannot run, before anything is written;
``OSError`` for a file that cannot be written (:class:`mz_jax.run.checkpoint.CheckpointSaveError`,
:class:`mz_jax.run.logger.MetricsWriteError`, an unwritable workdir), after which the newest complete
checkpoint is intact; :class:`NonFiniteError` (decided by :mod:`mz_jax.run.metrics`);
:class:`mz_jax.run.checkpoint.CheckpointError`. A start that fails before its first iteration removes
what it created (``config.json``, the workdir itself when it made it), so that it leaves no
half-begun run behind.
"""

from __future__ import annotations

import math
import signal
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.config.overrides import config_to_dict
from mz_jax.config.train import TrainConfig
from mz_jax.run import checkpoint as checkpoint_lib
from mz_jax.run import metrics as metrics_lib
from mz_jax.run.logger import MetricsLogger, Progress
from mz_jax.run.metrics import NonFiniteError as NonFiniteError  # what run_training raises
from mz_jax.run.metrics import nonfinite_error
from mz_jax.run.plots import plot_learning_curve
from mz_jax.run.records import forget_metrics_after
from mz_jax.run.start import close_quietly, open_run, print_start
from mz_jax.run.workdir import CONFIG_FILE, first_missing, remove_failed_start
from mz_jax.training.train import make_train

_WINDOW_SUMS = frozenset(
    {metrics_lib.EPISODES, metrics_lib.EPISODE_RETURN_SUM, metrics_lib.EPISODE_LENGTH_SUM}
)
"""Per-iteration sums the host turns into the means over its log window (``train/...``)."""


def _first(x: Any) -> int:
    """A counter of the run state as an int (the same for every seed of a multi-seed run)."""
    return int(np.asarray(jax.device_get(x)).reshape(-1)[0])


def _returns(eval_records: list[dict[str, float]]) -> list[float]:
    """Each seed's mean greedy return, from its evaluation record."""
    return [record[metrics_lib.EVAL_RETURN] for record in eval_records]


def run_training(
    config: TrainConfig,
    workdir: str | Path,
    *,
    allow_config_change: bool = False,
    max_iterations: int | None = None,
) -> dict:
    """Trains until ``config.total_env_steps`` (or forever), resuming from ``workdir`` if possible.

    Crash-safe: the whole state is saved right after the first iteration of a new run, then every
    ``config.checkpoint_every_seconds`` (at iterations that are multiples of
    ``config.keep_checkpoint_every`` too, and at the end), and on SIGTERM or SIGINT the loop
    finishes its iteration, saves and returns (with ``stopped_by_signal``). Killed at any moment
    (``kill -9`` included), the same call resumes from the newest good checkpoint and, on the same
    machine and flags, ends with bit-identical parameters, optimiser state and replay contents.

    The fields of :data:`mz_jax.run.resume.RESUMABLE_FIELDS` may differ from the workdir's saved
    configuration: a larger ``total_env_steps`` extends a finished run, and the schedules given as
    fractions of the run (``temperature_schedule``, ``priority_beta``, ``random_action_anneal``)
    follow the new length.

    Args:
      config: the run's configuration.
      workdir: where config.json, metrics.jsonl, TensorBoard events, checkpoints and the learning
        curve go.
      allow_config_change: resume a workdir saved with a different configuration.
      max_iterations: stop after this many iterations of this call (for tests and profiling).

    Returns:
      A summary: environment steps, updates, wall time, the last evaluation's mean return
      (``eval_return``, averaged over the seeds) and each seed's (``eval_returns``), the last
      iteration's metrics (``metrics``, averaged over the seeds), whether a signal stopped it
      (``stopped_by_signal``, ``signal``) and the newest checkpoint saved (``checkpoint``).

    Raises:
      ValueError: a configuration that does not fit the devices, an unknown environment, or one that
        differs from the workdir's (all before anything is compiled; the first two before anything
        is written).
      OSError: an unwritable or full workdir, at the start or on the way
        (:class:`mz_jax.run.checkpoint.CheckpointSaveError`, :class:`mz_jax.run.logger.MetricsWriteError`);
        the newest complete checkpoint is intact and the same call resumes from it.
      NonFiniteError: the environment returned non-finite values, or
        ``config.max_consecutive_nonfinite`` updates in a row were not finite.
      mz_jax.run.checkpoint.CheckpointError: the workdir has checkpoints but none can be restored.
      KeyboardInterrupt: a second SIGTERM/SIGINT, which stops at once (the newest complete
        checkpoint stays good).
    """
    workdir = Path(workdir)
    is_main = jax.process_index() == 0
    # Checks the devices and the environment (compiling nothing) before anything is written.
    trainer = make_train(config)
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
            state = trainer.init(config.seed)
            wall_offset, next_eval = 0.0, config.eval_every_env_steps
        else:
            _, state, meta = restored
            wall_offset, next_eval = float(meta["wall_s"]), int(meta["next_eval_env_steps"])
    except BaseException:
        if checkpointer is not None:
            checkpointer.close()
        remove_failed_start(workdir, **created)
        raise
    iteration = _first(state.iteration)
    updates = _first(state.train.step)  # counted on the host from here on: no fetch per iteration
    per_iteration = trainer.env_steps_per_iteration
    env_steps = iteration * per_iteration
    forget_metrics_after(workdir, env_steps)

    if is_main:
        print_start(
            config,
            trainer,
            state.train.params,
            workdir,
            resumed=None if restored is None else (iteration, updates, env_steps),
            created_config=created["created_config"],
            changed=changed,
        )

    logger = MetricsLogger(workdir, enabled=is_main)
    progress = Progress(
        total_env_steps=config.total_env_steps, every_seconds=config.log_every_seconds
    )
    stop_signal: list[int] = []
    previous_handlers = {}

    def on_signal(signum, frame):
        if stop_signal:  # a second signal: stop now; the newest complete checkpoint stays good
            raise KeyboardInterrupt(f"signal {signum} received twice")
        stop_signal.append(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        previous_handlers[signum] = signal.signal(signum, on_signal)

    start = time.monotonic()
    wall = lambda: wall_offset + time.monotonic() - start
    # A new run saves right after its first iteration, then every checkpoint_every_seconds: a kill
    # in its first minutes (a long compile) loses no more than one iteration.
    last_checkpoint = -math.inf if restored is None else time.monotonic()
    last_saved = None if restored is None else iteration
    num_seeds = config.num_seeds
    seeds = [config.seed + i for i in range(num_seeds)]
    new_window = lambda: {k: np.zeros(num_seeds) for k in ("episodes", "return_sum", "length_sum")}
    window = new_window()
    last_eval_return = None  # per seed
    noted_unfinished = False
    last_eval_env_steps = None
    last_metrics: dict = {}

    def save():
        nonlocal last_saved
        # Keyed by iteration, not update: before the replay is ready, updates stand still.
        saved = checkpointer.save(
            iteration,
            state,
            meta={
                "iteration": iteration,
                "updates": _first(state.train.step),
                "env_steps": env_steps,
                "wall_s": wall(),
                "next_eval_env_steps": next_eval,
                "config": config_to_dict(config),
            },
        )
        if saved:
            last_saved = iteration

    def evaluate() -> list[dict[str, float]]:
        """Each seed's evaluation record: its mean greedy return, and the share of its episodes that
        ended within ``eval_max_steps`` (a note says so, once, when some did not)."""
        nonlocal noted_unfinished
        # Each seed's evaluation episodes are those of its plain run.
        keys = [jax.random.fold_in(jax.random.key(seed + 1), iteration) for seed in seeds]
        key = keys[0] if num_seeds == 1 else jnp.stack(keys)
        result = jax.device_get(trainer.evaluate(state.train.params, key))
        returns = np.asarray(result.episode_return, np.float64).reshape(num_seeds, -1)
        ended = np.asarray(result.completed, bool).reshape(num_seeds, -1)
        unfinished = int(ended.size - ended.sum())
        if unfinished and is_main and not noted_unfinished:
            noted_unfinished = True
            print(
                f"note: {unfinished} of {ended.size} evaluation episodes had not ended after "
                f"eval_max_steps={config.eval_max_steps} environment steps; their returns count "
                "the rewards until then (an unfinished board game counts 0). Raise "
                "--eval-max-steps to the environment's longest episode; eval/completed logs the "
                "share that ended.",
                flush=True,
            )
        return [
            {metrics_lib.EVAL_RETURN: float(r), metrics_lib.EVAL_COMPLETED: float(e)}
            for r, e in zip(returns.mean(axis=1), ended.mean(axis=1), strict=True)
        ]

    def write(records: list[dict], *, step: int) -> None:
        """One record per seed (with its ``seed`` when there are several)."""
        for seed, record in zip(seeds, records, strict=True):
            extra = {"seed": seed} if num_seeds > 1 else {}
            logger.write(step=step, env_steps=env_steps, wall_s=wall(), **extra, **record)

    iterations_this_call = 0
    per_call = config.iterations_per_call
    try:
        while config.total_env_steps is None or env_steps < config.total_env_steps:
            if max_iterations is not None and iterations_this_call >= max_iterations:
                break
            if stop_signal:
                print(f"signal {stop_signal[0]} received: saving and stopping", flush=True)
                break
            state, metrics = trainer.step(state)  # donates the previous state's buffers
            # One host fetch per call: every metric as [iterations_per_call, num_seeds].
            metrics = {
                name: np.asarray(value, np.float64).reshape(per_call, num_seeds)
                for name, value in metrics_lib.flatten(jax.device_get(metrics)).items()
            }
            failure = None
            for i in range(per_call):
                iteration += 1
                iterations_this_call += 1
                env_steps = iteration * per_iteration
                updates += int(metrics[metrics_lib.UPDATES][i, 0])  # the same for every seed
                of_iteration = {name: value[i] for name, value in metrics.items()}
                last_metrics = {k: float(v.mean()) for k, v in of_iteration.items()}
                failure = nonfinite_error(config, of_iteration, step=updates, env_steps=env_steps)
                window["episodes"] += of_iteration[metrics_lib.EPISODES]
                window["return_sum"] += of_iteration[metrics_lib.EPISODE_RETURN_SUM]
                window["length_sum"] += of_iteration[metrics_lib.EPISODE_LENGTH_SUM]
                last_of_call = i == per_call - 1
                eval_records = None
                if (
                    last_of_call
                    and failure is None
                    and config.eval_every_env_steps
                    and env_steps >= next_eval
                ):
                    eval_records = evaluate()
                    last_eval_return = _returns(eval_records)
                    last_eval_env_steps = env_steps
                    next_eval += config.eval_every_env_steps * max(
                        1, math.ceil((env_steps - next_eval + 1) / config.eval_every_env_steps)
                    )
                if progress.due() or eval_records is not None or failure is not None:
                    records = []
                    for seed_index in range(num_seeds):
                        episodes = float(window["episodes"][seed_index])
                        record: dict[str, Any] = {}
                        if eval_records is not None:
                            record.update(eval_records[seed_index])
                        record.update(
                            {
                                name: float(value[seed_index])
                                for name, value in of_iteration.items()
                                if name not in _WINDOW_SUMS
                            }
                        )
                        record[metrics_lib.TRAIN_EPISODES] = episodes
                        record[metrics_lib.TRAIN_RETURN] = (
                            window["return_sum"][seed_index] / episodes if episodes else None
                        )
                        record[metrics_lib.TRAIN_LENGTH] = (
                            window["length_sum"][seed_index] / episodes if episodes else None
                        )
                        records.append(record)
                    write(records, step=updates)
                    if is_main:
                        episodes = float(window["episodes"].sum())
                        progress.report(
                            env_steps=env_steps,
                            updates=updates,
                            wall_s=wall(),
                            loss=last_metrics[metrics_lib.LOSS]
                            if last_metrics[metrics_lib.UPDATES]
                            else None,
                            episode_return=window["return_sum"].sum() / episodes
                            if episodes
                            else None,
                            eval_return=None
                            if eval_records is None
                            else float(np.mean(last_eval_return)),
                        )
                    window = new_window()
                if failure is not None:
                    break
            if failure is not None:
                raise failure  # before any save: this state may hold non-finite data
            keep_every = config.keep_checkpoint_every
            if time.monotonic() - last_checkpoint >= config.checkpoint_every_seconds or (
                keep_every and iteration % keep_every < per_call
            ):
                save()
                last_checkpoint = time.monotonic()
        if (
            not stop_signal
            and config.eval_every_env_steps
            and (config.total_env_steps is not None and env_steps >= config.total_env_steps)
        ):
            if last_eval_env_steps != env_steps:  # not already evaluated at this iteration
                eval_records = evaluate()
                last_eval_return = _returns(eval_records)
                write(eval_records, step=_first(state.train.step))
            if is_main:
                per_seed = (
                    f" (seeds {', '.join(f'{r:.3g}' for r in last_eval_return)})"
                    if num_seeds > 1
                    else ""
                )
                print(
                    f"final greedy evaluation: mean return {np.mean(last_eval_return):.3g}{per_seed}",
                    flush=True,
                )
        save()
    except BaseException:
        if restored is None and iterations_this_call == 0 and last_saved is None:  # nothing yet
            close_quietly(checkpointer, logger)
            remove_failed_start(workdir, **created)
        raise
    finally:
        try:
            checkpointer.close()  # raises a failure of the last save, unless raised already
        finally:
            logger.close()
            for signum, handler in previous_handlers.items():
                signal.signal(signum, handler)
    if is_main:
        _plot(workdir, config)
    return {
        "env_steps": env_steps,
        "iterations": iteration,
        "updates": _first(state.train.step),
        "wall_s": wall(),
        "eval_return": None if last_eval_return is None else float(np.mean(last_eval_return)),
        "eval_returns": last_eval_return,
        "metrics": last_metrics,
        "stopped_by_signal": bool(stop_signal),
        "signal": stop_signal[0] if stop_signal else None,
        "checkpoint": last_saved,
    }


def _plot(workdir: Path, config: TrainConfig) -> None:
    """The learning curve; one that cannot be written is a warning, not a failed run (it is drawn
    from metrics.jsonl, which holds the same numbers)."""
    try:
        plot_learning_curve(workdir, title=config.env)
    except OSError as error:
        print(
            f"warning: the learning curve in {workdir} could not be written: "
            f"{checkpoint_lib.short_reason(error)}",
            file=sys.stderr,
            flush=True,
        )
