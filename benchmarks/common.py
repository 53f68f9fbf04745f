"""Shared helpers for the benchmark scripts: the machine's description, a careful timer, tables and
the commit measured."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import jax

REPO = Path(__file__).resolve().parent.parent
"""The repository's root."""


def cpu_model(cpuinfo: str) -> str | None:
    """The first ``model name`` in the text of Linux's ``/proc/cpuinfo``, or None without one."""
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "model name" and value.strip():
            return value.strip()
    return None


def machine_description() -> str:
    """One line naming the machine, so a table is never quoted without it.

    It names the CPU model where Linux tells it: two machines of one kind (2 cores, x86_64) can
    differ threefold in the seconds of a run."""
    devices = jax.devices()
    kinds = sorted({d.device_kind for d in devices})
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = cpu_model(f.read())
    except OSError:
        model = None
    if model is not None:
        cpu = f"{cpu} ({model})"
    return (
        f"{platform.node()} | {cpu} | {os.cpu_count()} CPU cores | "
        f"jax {jax.__version__} on {len(devices)} x {', '.join(kinds)} ({jax.default_backend()})"
    )


def median_seconds(fn: Callable[[], object], *, repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` (which must block until its result is ready)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def percent(fraction: float) -> str:
    """A fraction as a percentage with three significant digits, so small shares (a small network
    on a GPU) do not print as 0.0%."""
    return f"{100 * fraction:.3g}%"


def format_table(headers: list[str], rows: list[list[object]]) -> str:
    """A GitHub-flavoured markdown table, columns padded to line up."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    for row in cells:
        lines.append("| " + " | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " |")
    return "\n".join(lines)


def print_table(headers: list[str], rows: list[list[object]]) -> None:
    """Prints :func:`format_table`."""
    print(format_table(headers, rows))


def git_revision() -> str:
    """The repository's commit, with '+ uncommitted changes' if the working tree differs from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{commit} + uncommitted changes" if dirty else commit


def package_versions(names) -> dict[str, str | None]:
    """The installed version of each package of ``names``, None for one that is not installed."""
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found
