"""The host loop of a training run: step, log, evaluate, checkpoint, resume.

Everything heavy runs in the compiled step of :func:`mz_jax.train.make_train`; this loop only moves
scalars to the host, writes them, evaluates every so often, saves the whole state, and stops cleanly
on SIGTERM/SIGINT (preemption) after saving. Starting the same command again with the same workdir
carries on from the newest good checkpoint.
"""

from __future__ import annotations

import json
import math
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from mz_jax import checkpoint as checkpoint_lib
from mz_jax.config import TrainConfig
from mz_jax.logger import MetricsLogger, Progress, plot_learning_curve
from mz_jax.networks import count_params
from mz_jax.train import make_train

METRICS_FILE = "metrics.jsonl"


class NonFiniteError(RuntimeError):
    """Training produced non-finite values for too long, or the environment did."""


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


def check_config(workdir: Path, config: TrainConfig, *, allow_config_change: bool) -> None:
    """Writes ``config.json``, or compares it with the one a previous run of this workdir saved.

    Raises:
      ValueError: listing every differing field (``name: saved -> now``) if the saved configuration
        differs and ``allow_config_change`` is False; nothing is written then.
    """
    path = workdir / checkpoint_lib.CONFIG_FILE
    current = checkpoint_lib.config_to_dict(config)
    if path.exists():
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise ValueError(
                f"{path} cannot be read ({error}); restore it, or remove it to resume with this "
                "configuration"
            ) from error
        differences = checkpoint_lib.config_differences(saved, current)
        if differences and not allow_config_change:
            raise ValueError(
                f"{path} was saved by a run with a different configuration; refusing to resume it "
                "with this one (pass --allow-config-change to resume anyway, or use another "
                "--workdir). Differences (saved -> now):\n  " + "\n  ".join(differences)
            )
    if jax.process_index() == 0:
        checkpoint_lib.write_atomically(path, json.dumps(current, indent=2) + "\n")


def forget_metrics_after(workdir: Path, env_steps: int) -> None:
    """Drops the records of ``metrics.jsonl`` past ``env_steps``: a resumed run is about to redo those
    iterations (and write them again). Also drops a line torn by a kill in mid-write."""
    path = workdir / METRICS_FILE
    if not path.exists() or jax.process_index() != 0:
        return
    kept = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("env_steps", 0) <= env_steps:
            kept.append(line + "\n")
    checkpoint_lib.write_atomically(path, "".join(kept))


def _nonfinite_message(step: int, metrics: dict) -> str:
    terms = [
        name
        for name in ("loss", "value_loss", "reward_loss", "policy_loss", "grad_norm")
        if not math.isfinite(metrics[name])
    ]
    return (
        f"{int(metrics['nonfinite_updates_in_a_row'])} updates in a row had a non-finite loss or "
        f"gradient (the last at update {step}; non-finite terms: "
        f"{', '.join(terms) or 'gradient only'}); these updates were skipped, and the last good "
        "parameters are in the newest checkpoint"
    )


def _nonfinite_error(config: TrainConfig, metrics: dict, *, step: int, env_steps: int):
    """The :class:`NonFiniteError` this iteration's metrics call for, or None."""
    if metrics["nonfinite_env_steps"] > 0:
        return NonFiniteError(
            f"the environment {config.env} returned a non-finite observation or reward "
            f"({int(metrics['nonfinite_env_steps'])} steps) before env step {env_steps}"
        )
    if metrics["nonfinite_updates_in_a_row"] >= config.max_consecutive_nonfinite:
        return NonFiniteError(_nonfinite_message(step, metrics))
    return None


def run_training(
    config: TrainConfig,
    workdir: str | Path,
    *,
    allow_config_change: bool = False,
    max_iterations: int | None = None,
) -> dict:
    """Trains until ``config.total_env_steps`` (or forever), resuming from ``workdir`` if possible.

    Crash-safe: the whole state is saved every ``config.checkpoint_every_seconds`` (at iterations
    that are multiples of ``config.keep_checkpoint_every`` too, and at the end), and on SIGTERM or
    SIGINT the loop finishes its iteration, saves and returns. Killed at any moment (``kill -9``
    included), the same call resumes from the newest good checkpoint and, on the same machine and
    flags, ends with bit-identical parameters, optimiser state and replay contents.

    Args:
      config: the run's configuration.
      workdir: where config.json, metrics.jsonl, TensorBoard events, checkpoints and the learning
        curve go.
      allow_config_change: resume a workdir saved with a different configuration.
      max_iterations: stop after this many iterations of this call (for tests and profiling).

    Returns:
      A summary: environment steps, updates, wall time and the last evaluation's mean return.

    Raises:
      ValueError: a configuration that does not fit the devices, an unknown environment, or one that
        differs from the workdir's (all before anything is compiled).
      OSError: an unwritable or full workdir.
      NonFiniteError: the environment returned non-finite values, or
        ``config.max_consecutive_nonfinite`` updates in a row were not finite.
      mz_jax.checkpoint.CheckpointError: the workdir has checkpoints but none can be restored.
    """
    workdir = Path(workdir)
    is_main = jax.process_index() == 0
    check_workdir(workdir)
    trainer = make_train(config)  # checks the devices and the environment; compiles nothing yet
    target = trainer.abstract_state
    check_workdir(workdir, required_bytes=checkpoint_lib.state_nbytes(target))
    check_config(workdir, config, allow_config_change=allow_config_change)
    checkpointer = checkpoint_lib.Checkpointer(
        workdir, keep_last=config.keep_checkpoints, keep_every=config.keep_checkpoint_every
    )
    try:
        restored = checkpointer.restore_latest(target)
    except BaseException:
        checkpointer.close()
        raise
    if restored is None:
        state = trainer.init(config.seed)
        wall_offset, next_eval = 0.0, config.eval_every_env_steps
    else:
        _, state, meta = restored
        wall_offset, next_eval = float(meta["wall_s"]), int(meta["next_eval_env_steps"])
    iteration = int(state.iteration)
    per_iteration = trainer.env_steps_per_iteration
    env_steps = iteration * per_iteration
    forget_metrics_after(workdir, env_steps)

    if is_main:
        num_params = count_params(state.train.params)
        replay_mb = trainer.bytes_per_transition * config.replay_capacity / 2**20
        print(
            f"mz_jax: {config.env} | {len(trainer.mesh.devices.flat)} device(s) "
            f"({jax.default_backend()}, {jax.process_count()} process(es)) | network "
            f"{num_params:,} parameters | replay {config.replay_capacity:,} transitions x "
            f"{trainer.bytes_per_transition} bytes = {replay_mb:.1f} MiB | search "
            f"{trainer.search_config.policy} x {trainer.search_config.num_simulations} simulations",
            flush=True,
        )
        if restored is not None:
            print(
                f"resumed from checkpoint {iteration} (iteration {iteration}, update "
                f"{int(state.train.step)}, env step {env_steps:,})",
                flush=True,
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
    last_checkpoint = time.monotonic()
    window = {"episodes": 0.0, "return_sum": 0.0, "length_sum": 0.0}
    last_eval_return = None
    last_metrics: dict = {}

    def save():
        # Keyed by iteration, not update: before the replay is ready, updates stand still.
        checkpointer.save(
            iteration,
            state,
            meta={
                "iteration": iteration,
                "updates": int(state.train.step),
                "env_steps": env_steps,
                "wall_s": wall(),
                "next_eval_env_steps": next_eval,
                "config": checkpoint_lib.config_to_dict(config),
            },
        )

    def evaluate():
        key = jax.random.fold_in(jax.random.key(config.seed + 1), iteration)
        result = jax.device_get(trainer.evaluate(state.train.params, key))
        return float(np.mean(result.episode_return))

    iterations_this_call = 0
    try:
        while config.total_env_steps is None or env_steps < config.total_env_steps:
            if max_iterations is not None and iterations_this_call >= max_iterations:
                break
            if stop_signal:
                print(f"signal {stop_signal[0]} received: saving and stopping", flush=True)
                break
            state, metrics = trainer.step(state)  # donates the previous state's buffers
            iteration += 1
            iterations_this_call += 1
            env_steps = iteration * per_iteration
            metrics = {k: float(v) for k, v in jax.device_get(metrics)._asdict().items()}
            last_metrics = metrics
            failure = _nonfinite_error(
                config, metrics, step=int(state.train.step), env_steps=env_steps
            )
            window["episodes"] += metrics["episodes"]
            window["return_sum"] += metrics["episode_return_sum"]
            window["length_sum"] += metrics["episode_length_sum"]

            record: dict[str, Any] = {}
            if failure is None and config.eval_every_env_steps and env_steps >= next_eval:
                last_eval_return = evaluate()
                record["eval/episode_return"] = last_eval_return
                next_eval += config.eval_every_env_steps * max(
                    1, math.ceil((env_steps - next_eval + 1) / config.eval_every_env_steps)
                )
            if progress.due() or record or failure is not None:
                episodes = window["episodes"]
                train_return = window["return_sum"] / episodes if episodes else None
                record.update(
                    {k: v for k, v in metrics.items() if k not in ("episodes",)},
                    episode_return=train_return,
                    episode_length=window["length_sum"] / episodes if episodes else None,
                    episodes=episodes,
                )
                logger.write(
                    step=int(state.train.step), env_steps=env_steps, wall_s=wall(), **record
                )
                if is_main:
                    progress.report(
                        env_steps=env_steps,
                        updates=int(state.train.step),
                        wall_s=wall(),
                        loss=metrics["loss"] if metrics["updates"] else None,
                        episode_return=train_return,
                        eval_return=record.get("eval/episode_return"),
                    )
                window = {"episodes": 0.0, "return_sum": 0.0, "length_sum": 0.0}
            if failure is not None:
                raise failure  # before any save: this state may hold non-finite data
            keep_every = config.keep_checkpoint_every
            if time.monotonic() - last_checkpoint >= config.checkpoint_every_seconds or (
                keep_every and iteration % keep_every == 0
            ):
                save()
                last_checkpoint = time.monotonic()
        if (
            not stop_signal
            and config.eval_every_env_steps
            and (config.total_env_steps is not None and env_steps >= config.total_env_steps)
        ):
            last_eval_return = evaluate()
            logger.write(
                step=int(state.train.step),
                env_steps=env_steps,
                wall_s=wall(),
                **{"eval/episode_return": last_eval_return},
            )
            if is_main:
                print(f"final greedy evaluation: mean return {last_eval_return:.3g}", flush=True)
        save()
    finally:
        checkpointer.close()
        logger.close()
        for signum, handler in previous_handlers.items():
            signal.signal(signum, handler)
    if is_main:
        plot_learning_curve(workdir, title=config.env)
    return {
        "env_steps": env_steps,
        "iterations": iteration,
        "updates": int(state.train.step),
        "wall_s": wall(),
        "eval_return": last_eval_return,
        "metrics": last_metrics,
        "stopped_by_signal": bool(stop_signal),
    }
