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
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.config.overrides import config_to_dict
from mz_jax.config.train import TrainConfig
from mz_jax.envs.host import host_failures
from mz_jax.run import checkpoint as checkpoint_lib
from mz_jax.run import metrics as metrics_lib
from mz_jax.run.logger import MetricsLogger, Progress
from mz_jax.run.metrics import NonFiniteError as NonFiniteError  # what run_training raises
from mz_jax.run.metrics import nonfinite_error
from mz_jax.run.plots import plot_learning_curve
from mz_jax.run.records import evaluation_curves, forget_metrics_after
from mz_jax.run.start import RunStart, close_quietly, print_start, start_run
from mz_jax.run.workdir import remove_failed_start
from mz_jax.training.train import Trainer, make_train

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
      (``stopped_by_signal``, ``signal``), the newest checkpoint saved (``checkpoint``), and
      whether the workdir's run had already reached ``total_env_steps`` (``already_finished``:
      then this call said so in one line and wrote nothing).

    Raises:
      ValueError: a configuration that does not fit the devices, an unknown environment, or one that
        differs from the workdir's (all before anything is compiled; the first two before anything
        is written); an environment stepped on the host that raised
        (:class:`mz_jax.envs.host.HostEnvError`, naming it and the step; nothing is saved after
        it).
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
    # Checks the devices and the environment (compiling nothing) before anything is written.
    trainer = make_train(config)
    with host_failures():  # an environment stepped on the host that fails: its own error
        return _run_training(config, trainer, workdir, allow_config_change, max_iterations)


def _run_training(
    config: TrainConfig,
    trainer: Trainer,
    workdir: Path,
    allow_config_change: bool,
    max_iterations: int | None,
) -> dict:
    start = start_run(config, trainer, workdir, allow_config_change)
    if start.finished:
        start.checkpointer.close()
        return _finished_summary(config, trainer, workdir, start)
    run = _Run(config, trainer, workdir, start)
    stop = _StopSignals()
    try:
        run.train(stop, max_iterations=max_iterations)
        run.finish(stop)
    except BaseException:
        run.remove_if_nothing_yet()
        raise
    finally:
        try:
            trainer.close()  # the actor thread of an overlapped step
            run.checkpointer.close()  # raises a failure of the last save, unless raised already
        finally:
            run.logger.close()
            stop.restore()
    if run.is_main:
        _plot(workdir, config)
    return run.summary(stop)


class _StopSignals:
    """The SIGTERM/SIGINT handler of a run, installed while it lives: the first signal is
    recorded (``received``: its number, or None) for the loop to save and stop at the end of its
    iteration; a second raises ``KeyboardInterrupt`` at once (the newest complete checkpoint
    stays good). :meth:`restore` puts back the handlers it replaced.

    Python runs a signal handler only between bytecodes of the main thread, so not while that
    thread waits for the compiled step. The first signal is acknowledged at once all the same
    ("stopping: ..."): the C-level handler writes its number to a pipe
    (:func:`signal.set_wakeup_fd`), which a thread of this object reads.
    """

    ACKNOWLEDGEMENT = (
        "stopping: saving a checkpoint after this iteration (a second signal stops without saving)"
    )

    def __init__(self, *, stream: TextIO | None = None) -> None:
        self.received: int | None = None
        self._stream = stream
        self._acknowledging = threading.Lock()
        self._acknowledged = False
        self._previous = {
            signum: signal.signal(signum, self._handle)
            for signum in (signal.SIGTERM, signal.SIGINT)
        }
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)  # set_wakeup_fd's requirement
        self._previous_wakeup_fd = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        self._watcher = threading.Thread(target=self._acknowledge, name="stop-signals", daemon=True)
        self._watcher.start()

    def _handle(self, signum, frame) -> None:
        if self.received is not None:
            raise KeyboardInterrupt(f"signal {signum} received twice")
        self.received = signum

    def _acknowledge(self) -> None:
        """Prints the acknowledgement at the first SIGTERM/SIGINT the pipe brings; returns when the
        pipe is closed."""
        while data := os.read(self._read_fd, 64):
            if {signal.SIGTERM, signal.SIGINT} & set(data):
                self.acknowledge()
                break
        while os.read(self._read_fd, 64):  # drains the pipe until it is closed
            pass

    def acknowledge(self) -> None:
        """Prints the acknowledgement, once whoever calls first: the watcher thread, or the loop
        about to stop (when it saw the signal before the thread ran), so that it always comes
        before the loop's own lines about stopping."""
        with self._acknowledging:  # the loop waits while the thread is printing it
            if self._acknowledged:
                return
            self._acknowledged = True
            try:
                print(self.ACKNOWLEDGEMENT, file=self._stream or sys.stdout, flush=True)
            except (OSError, ValueError):  # the console went away; the loop still stops
                pass

    def restore(self) -> None:
        signal.set_wakeup_fd(self._previous_wakeup_fd)
        os.close(self._write_fd)  # ends the watcher
        self._watcher.join()
        os.close(self._read_fd)
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


class _Run:
    """One call of :func:`run_training` on the host: the run state, its counters, its log window
    and its files, from the start to the summary.

    Every iteration advances ``iteration`` (and ``env_steps``, ``updates``), adds its episodes to
    the log window, and may evaluate, log and checkpoint; the compiled step does the rest.
    """

    def __init__(self, config: TrainConfig, trainer: Trainer, workdir: Path, start: RunStart):
        self.config, self.trainer, self.workdir = config, trainer, workdir
        self.is_main = jax.process_index() == 0
        self.checkpointer, self.state = start.checkpointer, start.state
        self.resumed, self.created = start.resumed, start.created
        self.iteration = _first(self.state.iteration)
        # Counted on the host from here on: no fetch per iteration.
        self.updates = _first(self.state.train.step)
        self.env_steps = self.iteration * trainer.env_steps_per_iteration
        forget_metrics_after(workdir, self.env_steps)
        if self.is_main:
            print_start(
                config,
                workdir,
                resumed=(self.iteration, self.updates, self.env_steps) if self.resumed else None,
                created_config=start.created["created_config"],
                changed=start.changed,
            )
        self.logger = MetricsLogger(workdir, enabled=self.is_main, start_env_steps=self.env_steps)
        self.progress = Progress(
            total_env_steps=config.total_env_steps, every_seconds=config.log_every_seconds
        )
        self.seeds = [config.seed + i for i in range(config.num_seeds)]
        self.wall_offset, self.start_time = start.wall_offset, time.monotonic()
        self.next_eval = start.next_eval
        # A new run saves right after its first iteration, then every checkpoint_every_seconds: a
        # kill in its first minutes (a long compile) loses no more than one iteration.
        self.last_checkpoint = time.monotonic() if self.resumed else -math.inf
        self.last_saved = self.iteration if self.resumed else None
        self.window = self._new_window()
        self.last_eval_return: list[float] | None = None  # per seed
        self.last_eval_env_steps: int | None = None
        self.noted_unfinished = False
        self.last_metrics: dict = {}
        self.iterations_this_call = 0

    def wall(self) -> float:
        """Seconds of the run so far, those of the calls before this one included."""
        return self.wall_offset + time.monotonic() - self.start_time

    def _new_window(self) -> dict[str, np.ndarray]:
        """Zero episode sums, ``[num_seeds]`` each, for the next log window."""
        return {k: np.zeros(len(self.seeds)) for k in ("episodes", "return_sum", "length_sum")}

    def _done(self) -> bool:
        total = self.config.total_env_steps
        return total is not None and self.env_steps >= total

    def train(self, stop: _StopSignals, *, max_iterations: int | None) -> None:
        """Calls the compiled step until the run is done, ``max_iterations`` iterations of this
        call are done, or a signal came; checkpoints when one is due after each call."""
        while not self._done():
            if max_iterations is not None and self.iterations_this_call >= max_iterations:
                break
            if stop.received is not None:
                stop.acknowledge()
                print(f"signal {stop.received} received: saving and stopping", flush=True)
                break
            self._step()
            keep_every = self.config.keep_checkpoint_every
            if time.monotonic() - self.last_checkpoint >= self.config.checkpoint_every_seconds or (
                keep_every and self.iteration % keep_every < self.config.iterations_per_call
            ):
                self._save()
                self.last_checkpoint = time.monotonic()

    def _step(self) -> None:
        """One call of the compiled step (``iterations_per_call`` iterations), then each
        iteration's bookkeeping; raises the :class:`NonFiniteError` of the first iteration that
        calls for one, before any save (its state may hold non-finite data)."""
        per_call, num_seeds = self.config.iterations_per_call, len(self.seeds)
        if self.iterations_this_call == 0:
            self._compile()
        self.state, metrics = self.trainer.step(self.state)  # donates the previous state's buffers
        # One host fetch per call: every metric as [iterations_per_call, num_seeds].
        metrics = {
            name: np.asarray(value, np.float64).reshape(per_call, num_seeds)
            for name, value in metrics_lib.flatten(jax.device_get(metrics)).items()
        }
        for i in range(per_call):
            of_iteration = {name: value[i] for name, value in metrics.items()}
            failure = self._after_iteration(of_iteration, last_of_call=i == per_call - 1)
            if failure is not None:
                raise failure

    def _compile(self) -> None:
        """Compiles the step (the longest silence of a start) between two lines."""
        if self.is_main:
            print("compiling the training step ...", flush=True)
        started = time.monotonic()
        self.trainer.compile_step(self.state)
        if self.is_main:
            print(f"compiled the training step in {time.monotonic() - started:.1f}s", flush=True)

    def _after_iteration(
        self, of_iteration: dict[str, np.ndarray], *, last_of_call: bool
    ) -> NonFiniteError | None:
        """Counts one iteration (its metrics ``[num_seeds]`` each), evaluates at the end of a call
        once ``next_eval`` env steps are reached, and logs when the console report is due, on an
        evaluation, or on a failure; returns the iteration's :class:`NonFiniteError` or None."""
        self.iteration += 1
        self.iterations_this_call += 1
        self.env_steps = self.iteration * self.trainer.env_steps_per_iteration
        self.updates += int(of_iteration[metrics_lib.UPDATES][0])  # the same for every seed
        self.last_metrics = {k: float(v.mean()) for k, v in of_iteration.items()}
        failure = nonfinite_error(
            self.config, of_iteration, step=self.updates, env_steps=self.env_steps
        )
        self.window["episodes"] += of_iteration[metrics_lib.EPISODES]
        self.window["return_sum"] += of_iteration[metrics_lib.EPISODE_RETURN_SUM]
        self.window["length_sum"] += of_iteration[metrics_lib.EPISODE_LENGTH_SUM]
        eval_records = None
        every = self.config.eval_every_env_steps
        if last_of_call and failure is None and every and self.env_steps >= self.next_eval:
            eval_records = self._evaluate()
            self.last_eval_return = _returns(eval_records)
            self.last_eval_env_steps = self.env_steps
            self.next_eval += every * max(
                1, math.ceil((self.env_steps - self.next_eval + 1) / every)
            )
        if self.progress.due() or eval_records is not None or failure is not None:
            self._log(of_iteration, eval_records)
        return failure

    def _log(
        self, of_iteration: dict[str, np.ndarray], eval_records: list[dict[str, float]] | None
    ) -> None:
        """Writes each seed's record (the iteration's metrics, the log window's episode means,
        the evaluation's if any), prints the console report, and starts a new window."""
        window = self.window
        records = []
        for seed_index in range(len(self.seeds)):
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
        self._write(records, step=self.updates)
        if self.is_main:
            episodes = float(window["episodes"].sum())
            last = self.last_metrics
            self.progress.report(
                env_steps=self.env_steps,
                updates=self.updates,
                wall_s=self.wall(),
                loss=last[metrics_lib.LOSS] if last[metrics_lib.UPDATES] else None,
                episode_return=window["return_sum"].sum() / episodes if episodes else None,
                eval_return=None if eval_records is None else float(np.mean(self.last_eval_return)),
            )
        self.window = self._new_window()

    def _write(self, records: list[dict], *, step: int) -> None:
        """One record per seed (with its ``seed`` when there are several)."""
        for seed, record in zip(self.seeds, records, strict=True):
            self.logger.write(
                step=step,
                env_steps=self.env_steps,
                wall_s=self.wall(),
                seed=seed if len(self.seeds) > 1 else None,
                **record,
            )

    def _evaluate(self) -> list[dict[str, float]]:
        """Each seed's evaluation record: its mean greedy return, and the share of its episodes that
        ended within ``eval_max_steps`` (a note says so, once, when some did not)."""
        num_seeds = len(self.seeds)
        # Each seed's evaluation episodes are those of its plain run.
        keys = [jax.random.fold_in(jax.random.key(seed + 1), self.iteration) for seed in self.seeds]
        key = keys[0] if num_seeds == 1 else jnp.stack(keys)
        result = jax.device_get(self.trainer.evaluate(self.state.train.params, key))
        returns = np.asarray(result.episode_return, np.float64).reshape(num_seeds, -1)
        ended = np.asarray(result.completed, bool).reshape(num_seeds, -1)
        unfinished = int(ended.size - ended.sum())
        if unfinished and self.is_main and not self.noted_unfinished:
            self.noted_unfinished = True
            print(
                f"note: {unfinished} of {ended.size} evaluation episodes had not ended after "
                f"eval_max_steps={self.config.eval_max_steps} environment steps; their returns "
                "count the rewards until then (an unfinished board game counts 0). Raise "
                "--eval-max-steps to the environment's longest episode; eval/completed logs the "
                "share that ended.",
                flush=True,
            )
        return [
            {metrics_lib.EVAL_RETURN: float(r), metrics_lib.EVAL_COMPLETED: float(e)}
            for r, e in zip(returns.mean(axis=1), ended.mean(axis=1), strict=True)
        ]

    def _save(self) -> None:
        """Saves the whole state, keyed by iteration (before the replay is ready, updates stand
        still), with what a resume needs in its meta."""
        saved = self.checkpointer.save(
            self.iteration,
            self.state,
            meta={
                "iteration": self.iteration,
                "updates": _first(self.state.train.step),
                "env_steps": self.env_steps,
                "wall_s": self.wall(),
                "next_eval_env_steps": self.next_eval,
                "config": config_to_dict(self.config),
            },
        )
        if saved:
            self.last_saved = self.iteration

    def finish(self, stop: _StopSignals) -> None:
        """At the end of a finished run, the final greedy evaluation (unless the last iteration
        had one) and its line; then, finished or not, the last save."""
        if stop.received is None and self.config.eval_every_env_steps and self._done():
            if self.last_eval_env_steps != self.env_steps:  # not already evaluated here
                eval_records = self._evaluate()
                self.last_eval_return = _returns(eval_records)
                self._write(eval_records, step=_first(self.state.train.step))
            if self.is_main:
                per_seed = (
                    f" (seeds {', '.join(f'{r:.3g}' for r in self.last_eval_return)})"
                    if len(self.seeds) > 1
                    else ""
                )
                print(
                    "final greedy evaluation: mean return "
                    f"{np.mean(self.last_eval_return):.3g}{per_seed}",
                    flush=True,
                )
        self._save()

    def remove_if_nothing_yet(self) -> None:
        """After a failure: a new run that had not finished an iteration nor saved leaves nothing
        behind (its files closed quietly, what its start created removed)."""
        if not self.resumed and self.iterations_this_call == 0 and self.last_saved is None:
            close_quietly(self.checkpointer, self.logger)
            remove_failed_start(self.workdir, **self.created)

    def summary(self, stop: _StopSignals) -> dict:
        """What :func:`run_training` returns."""
        last_eval_return = self.last_eval_return
        return {
            "env_steps": self.env_steps,
            "iterations": self.iteration,
            "updates": _first(self.state.train.step),
            "wall_s": self.wall(),
            "eval_return": None if last_eval_return is None else float(np.mean(last_eval_return)),
            "eval_returns": last_eval_return,
            "metrics": self.last_metrics,
            "stopped_by_signal": stop.received is not None,
            "signal": stop.received,
            "checkpoint": self.last_saved,
            "already_finished": False,
        }


def _finished_summary(
    config: TrainConfig, trainer: Trainer, workdir: Path, start: RunStart
) -> dict:
    """What :func:`run_training` says and returns for a run whose newest checkpoint already
    reached ``total_env_steps``: one line, and the summary of that checkpoint (its last
    evaluation read back from ``metrics.jsonl``)."""
    iteration = _first(start.state.iteration)
    env_steps = iteration * trainer.env_steps_per_iteration
    if jax.process_index() == 0:
        print(
            f"{workdir} holds a finished run: checkpoint {start.checkpoint} reached "
            f"{env_steps:,} of total_env_steps={config.total_env_steps:,} environment steps; "
            "nothing to do (a larger --total-env-steps continues it)",
            flush=True,
        )
    evaluations = evaluation_curves(workdir, default_seed=config.seed)
    seeds = [config.seed + i for i in range(config.num_seeds)]
    last = [float(evaluations[s].returns[-1]) for s in seeds if s in evaluations]
    last_eval_return = last if len(last) == len(seeds) else None
    return {
        "env_steps": env_steps,
        "iterations": iteration,
        "updates": _first(start.state.train.step),
        "wall_s": start.wall_offset,
        "eval_return": None if last_eval_return is None else float(np.mean(last_eval_return)),
        "eval_returns": last_eval_return,
        "metrics": {},
        "stopped_by_signal": False,
        "signal": None,
        "checkpoint": start.checkpoint,
        "already_finished": True,
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
