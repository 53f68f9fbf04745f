"""Metrics to the console, to ``metrics.jsonl`` and to TensorBoard.

Jitted code returns metrics as pytrees; only this host-side module writes them. In a multi-process run
only process 0 writes. Reading them back is :func:`mz_jax.run.records.read_metrics`; the learning-curve
PNG is :func:`mz_jax.run.plots.plot_learning_curve`.
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from mz_jax.run.workdir import METRICS_FILE, TENSORBOARD_DIR


def _plain(value: Any) -> Any:
    value = float(value) if hasattr(value, "__float__") and not isinstance(value, int) else value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN/inf
    return value


class MetricsWriteError(OSError):
    """A metrics record could not be written (``metrics.jsonl`` or the TensorBoard events); the
    message names the file and the reason (a full disk, for example)."""


class MetricsLogger:
    """Appends one JSON object per record to ``workdir/metrics.jsonl`` and mirrors it to TensorBoard.

    Every record has ``step`` (learner updates), ``env_steps`` and ``wall_s`` (seconds since the run
    started, summed over restarts) besides its metrics (the schema: :mod:`mz_jax.run.metrics`); a
    record of one seed of a multi-seed run has its ``seed`` too. TensorBoard's step is ``env_steps``;
    each seed of a multi-seed run has its own events directory, ``tensorboard/seed_<seed>`` (one
    TensorBoard run per seed), a plain run ``tensorboard/`` itself.

    Both files are opened at the first record and written through at every record (the events file
    flushed, the JSON lines line-buffered), so a run killed at any moment leaves complete records
    and a start that fails before its first record leaves no empty file behind. TensorBoard events
    are written synchronously, without tensorboardX's background thread, so that a failed write
    (a full disk) surfaces here as one :class:`MetricsWriteError` naming the file.

    A run that starts from env step ``start_env_steps`` (a resumed run: its checkpoint's) begins
    each events file it opens with a ``SessionLog.START`` event at step ``start_env_steps + 1``, on
    which TensorBoard drops the events of every tag at that step or later that earlier files hold:
    those of iterations after the checkpoint, which this run does again. TensorBoard then shows each
    tag once per step, as :func:`mz_jax.run.records.forget_metrics_after` leaves ``metrics.jsonl``.
    """

    def __init__(
        self,
        workdir: str | Path,
        *,
        enabled: bool = True,
        tensorboard: bool = True,
        start_env_steps: int = 0,
    ):
        self.workdir = Path(workdir)
        self.enabled = enabled
        self.tensorboard = tensorboard
        self.start_env_steps = int(start_env_steps)
        self._file: TextIO | None = None
        self._events: dict[int | None, Any] = {}  # seed -> tensorboardX EventsWriter

    def write(
        self, *, step: int, env_steps: int, wall_s: float, seed: int | None = None, **metrics: Any
    ) -> None:
        """Appends one record (of ``seed``, in a multi-seed run).

        Raises:
          MetricsWriteError: if either file cannot be written.
        """
        if not self.enabled:
            return
        record = {"step": int(step), "env_steps": int(env_steps), "wall_s": round(wall_s, 3)}
        if seed is not None:
            record["seed"] = int(seed)
        record.update({k: _plain(v) for k, v in metrics.items()})
        path = self.workdir / METRICS_FILE
        try:
            if self._file is None:
                self._file = open(path, "a", buffering=1)
            self._file.write(json.dumps(record) + "\n")
        except OSError as error:
            raise MetricsWriteError(
                f"writing metrics to {path} failed: {_reason(error)}"
            ) from error
        if self.tensorboard:
            self._write_events(env_steps, metrics, seed)

    def _write_events(self, env_steps: int, metrics: dict[str, Any], seed: int | None) -> None:
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.summary import scalar

        directory = self.workdir / TENSORBOARD_DIR
        if seed is not None:
            directory = directory / f"seed_{seed}"
        try:
            events = self._events.get(seed)
            if events is None:
                events = self._events[seed] = self._open_events(directory)
            wall_time = time.time()
            for name, value in metrics.items():
                if isinstance(value, int | float) and math.isfinite(value):
                    summary = scalar(name, value)
                    events.write_event(
                        Event(wall_time=wall_time, step=int(env_steps), summary=summary)
                    )
            events.flush()
        except OSError as error:
            raise MetricsWriteError(
                f"writing TensorBoard events to {directory} failed: {_reason(error)}"
            ) from error

    def _open_events(self, directory: Path):
        """A new events file in ``directory``, its first event after the file version the
        ``SessionLog.START`` of this run's start. TensorBoard reads a directory's files in the order
        of their names, ``events.out.tfevents.<seconds>.<host>``: a second file of the same second
        (which tensorboardX would overwrite) gets the suffix ``.1``, ``.2``, ..."""
        from tensorboardX.event_file_writer import EventsWriter
        from tensorboardX.proto.event_pb2 import Event, SessionLog

        directory.mkdir(parents=True, exist_ok=True)
        prefix = str(directory / "events")
        name = f"events.out.tfevents.{str(time.time())[:10]}.{socket.gethostname()}"
        suffix, count = "", 0
        while (directory / (name + suffix)).exists():
            count += 1
            suffix = f".{count}"
        events = EventsWriter(prefix, filename_suffix=suffix)
        start = SessionLog(status=SessionLog.START)
        events.write_event(
            Event(wall_time=time.time(), step=self.start_env_steps + 1, session_log=start)
        )
        return events

    def close(self) -> None:
        """Closes both files; safe to call after a failed write (a second failure is not raised)."""
        file, events = self._file, list(self._events.values())
        self._file, self._events = None, {}
        for close in (file and file.close, *(writer.close for writer in events)):
            if close:
                with contextlib.suppress(OSError):
                    close()


def _reason(error: OSError) -> str:
    """``[Errno 28] No space left on device``: the reason without the (already named) file."""
    if error.errno is not None and error.strerror:
        return f"[Errno {error.errno}] {error.strerror}"
    return str(error)


class Progress:
    """A one-line console report at most every ``every_seconds``."""

    def __init__(self, *, total_env_steps: int | None, every_seconds: float, stream=None):
        self.total = total_env_steps
        self.every = every_seconds
        self.stream = stream
        self._last = -math.inf

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.every

    def report(self, *, env_steps: int, updates: int, wall_s: float, **values: float) -> None:
        self._last = time.monotonic()
        done = f"{env_steps:,}" + (
            f"/{self.total:,} ({100 * env_steps / self.total:.0f}%)" if self.total else ""
        )
        parts = [f"[{wall_s:7.1f}s] env steps {done}", f"updates {updates:,}"]
        parts += [f"{name} {value:.3g}" for name, value in values.items() if value is not None]
        print(" | ".join(parts), file=self.stream or sys.stdout, flush=True)
