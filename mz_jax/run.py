"""The host loop of a training run: step, log, evaluate, checkpoint, resume.

Everything heavy runs in the compiled step of :func:`mz_jax.train.make_train`; this loop only moves
scalars to the host, writes them, evaluates every so often, saves the whole state, and stops cleanly
on SIGTERM/SIGINT (preemption) after saving. Starting the same command again with the same workdir
carries on from the newest good checkpoint.
"""

from __future__ import annotations

import json
import math
import signal
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax import checkpoint as checkpoint_lib
from mz_jax.config import TrainConfig
from mz_jax.logger import MetricsLogger, Progress, plot_learning_curve
from mz_jax.networks import count_params
from mz_jax.train import RunState, Trainer, make_train


class NonFiniteError(RuntimeError):
    """Training produced non-finite values for too long, or the environment did."""


def check_workdir(workdir: Path) -> None:
    """Fails early, with the path in the message, if ``workdir`` cannot be written."""
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        probe = workdir / ".write-test"
        probe.write_bytes(b"\0" * 4096)
        probe.unlink()
    except OSError as error:
        raise OSError(f"workdir {str(workdir)!r} is not writable: {error}") from error


def check_config(workdir: Path, config: TrainConfig, *, allow_config_change: bool) -> None:
    """Writes ``config.json``, or compares it with the one a previous run of this workdir saved."""
    path = workdir / checkpoint_lib.CONFIG_FILE
    current = checkpoint_lib.config_to_dict(config)
    if path.exists():
        saved = json.loads(path.read_text())
        differences = checkpoint_lib.config_differences(saved, current)
        if differences and not allow_config_change:
            raise ValueError(
                f"{path} was saved by a run with a different configuration; refusing to resume it "
                "with this one (pass --allow-config-change to resume anyway, or use another "
                "--workdir). Differences (saved -> now):\n  " + "\n  ".join(differences)
            )
    if jax.process_index() == 0:
        path.write_text(json.dumps(current, indent=2) + "\n")


def abstract_state(trainer: Trainer) -> Any:
    """The run state's shapes, dtypes and shardings, for restoring a checkpoint onto the mesh."""
    shapes = jax.eval_shape(trainer.init, 0)
    return jax.tree.map(
        lambda s, spec: jax.ShapeDtypeStruct(
            s.shape, s.dtype, sharding=jax.sharding.NamedSharding(trainer.mesh, spec)
        ),
        shapes,
        trainer.state_specs,
    )


def params_are_finite(state: RunState) -> bool:
    leaves = jax.tree.leaves(state.train.params)
    return bool(all(jnp.all(jnp.isfinite(x)) for x in leaves))


def _nonfinite_message(step: int, metrics: dict) -> str:
    terms = [
        name
        for name in ("loss", "value_loss", "reward_loss", "policy_loss", "grad_norm")
        if not math.isfinite(metrics[name])
    ]
    return (
        f"{int(metrics['nonfinite_updates_in_a_row'])} updates in a row had a non-finite loss or "
        f"gradient (last at update {step}; non-finite terms: {', '.join(terms) or 'gradient only'}); "
        "the last good parameters are in the newest checkpoint"
    )


def run_training(
    config: TrainConfig,
    workdir: str | Path,
    *,
    allow_config_change: bool = False,
    max_iterations: int | None = None,
) -> dict:
    """Trains until ``config.total_env_steps`` (or forever), resuming from ``workdir`` if possible.

    Args:
      config: the run's configuration.
      workdir: where config.json, metrics.jsonl, TensorBoard events, checkpoints and the learning
        curve go.
      allow_config_change: resume a workdir saved with a different configuration.
      max_iterations: stop after this many iterations of this call (for tests and profiling).

    Returns:
      A summary: environment steps, updates, wall time and the last evaluation's mean return.
    """
    workdir = Path(workdir)
    is_main = jax.process_index() == 0
    check_workdir(workdir)
    check_config(workdir, config, allow_config_change=allow_config_change)
    trainer = make_train(config)
    checkpointer = checkpoint_lib.Checkpointer(
        workdir, keep_last=config.keep_checkpoints, keep_every=config.keep_checkpoint_every
    )
    restored = checkpointer.restore_latest(abstract_state(trainer))
    if restored is None:
        state = trainer.init(config.seed)
        wall_offset, next_eval = 0.0, config.eval_every_env_steps
    else:
        _, state, meta = restored
        wall_offset, next_eval = float(meta["wall_s"]), int(meta["next_eval_env_steps"])
    iteration = int(state.iteration)
    per_iteration = trainer.env_steps_per_iteration
    env_steps = iteration * per_iteration

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
                f"resumed from checkpoint at update {int(state.train.step)}, env step {env_steps:,}"
            )

    logger = MetricsLogger(workdir, enabled=is_main)
    progress = Progress(
        total_env_steps=config.total_env_steps, every_seconds=config.log_every_seconds
    )
    stop_signal: list[int] = []
    previous_handlers = {}

    def on_signal(signum, frame):
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
        if not params_are_finite(state):
            print("not saving a checkpoint: the parameters are not finite", flush=True)
            return
        checkpointer.save(
            int(state.train.step),
            state,
            meta={"wall_s": wall(), "env_steps": env_steps, "next_eval_env_steps": next_eval},
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
            state, metrics = trainer.step(state)
            iteration += 1
            iterations_this_call += 1
            env_steps = iteration * per_iteration
            metrics = {k: float(v) for k, v in jax.device_get(metrics)._asdict().items()}
            last_metrics = metrics
            if metrics["nonfinite_env_steps"] > 0:
                raise NonFiniteError(
                    f"the environment {config.env} returned a non-finite observation or reward "
                    f"({int(metrics['nonfinite_env_steps'])} steps) before env step {env_steps}"
                )
            if metrics["nonfinite_updates_in_a_row"] >= config.max_consecutive_nonfinite:
                raise NonFiniteError(_nonfinite_message(int(state.train.step), metrics))
            window["episodes"] += metrics["episodes"]
            window["return_sum"] += metrics["episode_return_sum"]
            window["length_sum"] += metrics["episode_length_sum"]

            record: dict[str, Any] = {}
            if config.eval_every_env_steps and env_steps >= next_eval:
                last_eval_return = evaluate()
                record["eval/episode_return"] = last_eval_return
                next_eval += config.eval_every_env_steps * max(
                    1, math.ceil((env_steps - next_eval + 1) / config.eval_every_env_steps)
                )
            if progress.due() or record:
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
            if time.monotonic() - last_checkpoint >= config.checkpoint_every_seconds:
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
        "updates": int(state.train.step),
        "wall_s": wall(),
        "eval_return": last_eval_return,
        "metrics": last_metrics,
        "stopped_by_signal": bool(stop_signal),
    }
