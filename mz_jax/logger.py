"""Metrics to the console, to ``metrics.jsonl`` and to TensorBoard; a learning-curve PNG at the end.

Jitted code returns metrics as pytrees; only this host-side module writes them. In a multi-process run
only process 0 writes.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any, TextIO


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
        self._file = open(self.workdir / "metrics.jsonl", "a", buffering=1)
        if tensorboard:
            from tensorboardX import SummaryWriter

            self._tb = SummaryWriter(str(self.workdir / "tensorboard"))

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


def read_metrics(workdir: str | Path) -> list[dict]:
    """The records of ``workdir/metrics.jsonl``."""
    path = Path(workdir) / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plot_learning_curve(workdir: str | Path, *, title: str = "") -> Path | None:
    """Saves ``learning_curve.png``: training and evaluation returns against environment steps (one
    pair of lines per seed in a multi-seed run)."""
    by_seed: dict[Any, dict[str, list]] = {}
    for r in read_metrics(workdir):
        curves = by_seed.setdefault(r.get("seed"), {"train": [], "eval": []})
        if _finite(r.get("episode_return")):
            curves["train"].append((r["env_steps"], r["episode_return"]))
        if _finite(r.get("eval/episode_return")):
            curves["eval"].append((r["env_steps"], r["eval/episode_return"]))
    if not any(c["train"] or c["eval"] for c in by_seed.values()):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for index, (seed, curves) in enumerate(sorted(by_seed.items(), key=lambda kv: str(kv[0]))):
        of_seed = "" if seed is None else f" (seed {seed})"
        color = f"C{index % 10}"
        if curves["train"]:
            ax.plot(
                *zip(*curves["train"], strict=True),
                color=color,
                alpha=0.35,
                label=f"training episodes{of_seed}",
            )
        if curves["eval"]:
            ax.plot(
                *zip(*curves["eval"], strict=True),
                "o-",
                color=color,
                label=f"greedy evaluation{of_seed}",
            )
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    path = Path(workdir) / "learning_curve.png"
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)
