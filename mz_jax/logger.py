"""Metrics to the console, to ``metrics.jsonl`` and to TensorBoard.

Jitted code returns metrics as pytrees; only this host-side module writes them. In a multi-process run
only process 0 writes. Reading them back is :func:`mz_jax.workdir.read_metrics`; the learning-curve
PNG is :func:`mz_jax.plots.plot_learning_curve`.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from mz_jax.workdir import METRICS_FILE, TENSORBOARD_DIR


def _plain(value: Any) -> Any:
    value = float(value) if hasattr(value, "__float__") and not isinstance(value, int) else value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN/inf
    return value


class MetricsLogger:
    """Appends one JSON object per record to ``workdir/metrics.jsonl`` and mirrors it to TensorBoard.

    Every record has ``step`` (learner updates), ``env_steps`` and ``wall_s`` (seconds since the run
    started, summed over restarts) besides its metrics.
    """

    def __init__(self, workdir: str | Path, *, enabled: bool = True, tensorboard: bool = True):
        self.workdir = Path(workdir)
        self.enabled = enabled
        self._file: TextIO | None = None
        self._tb = None
        if not enabled:
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._file = open(self.workdir / METRICS_FILE, "a", buffering=1)
        if tensorboard:
            from tensorboardX import SummaryWriter

            self._tb = SummaryWriter(str(self.workdir / TENSORBOARD_DIR))

    def write(self, *, step: int, env_steps: int, wall_s: float, **metrics: Any) -> None:
        if not self.enabled:
            return
        record = {"step": int(step), "env_steps": int(env_steps), "wall_s": round(wall_s, 3)}
        record.update({k: _plain(v) for k, v in metrics.items()})
        self._file.write(json.dumps(record) + "\n")
        if self._tb is not None:
            for name, value in metrics.items():
                if isinstance(value, int | float) and math.isfinite(value):
                    self._tb.add_scalar(name, value, env_steps)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        if self._tb is not None:
            self._tb.close()


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
