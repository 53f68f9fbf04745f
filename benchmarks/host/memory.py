"""Resident memory of a training run over time: does it hold flat once the replay has filled?

Runs ``mz-jax train --workdir W ARGS`` in a child process for ``--minutes``, samples the child's
resident memory (``VmRSS`` of Linux's ``/proc/<pid>/status``) every ``--interval-s`` seconds beside
the run's environment steps (the newest record of ``metrics.jsonl``), then stops it with SIGINT (it
checkpoints and exits). The replay holds ``replay_capacity`` transitions (``config.json``); once the
run has taken that many environment steps, resident memory should stay flat: the table gives the
first and last sample after that point and the spread of all of them, ``(max - min) / first``.

    python benchmarks/host/memory.py --minutes 30 -- --env gymnasium:CartPole-v1 --preset cartpole
    python benchmarks/host/memory.py --minutes 1 --out /tmp/m.json -- --env gymnax:CartPole-v1

Linux only (``/proc``). Progress goes to stderr; the table (with the machine named) to stdout, and
with ``--out`` every sample as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

from common import machine_description, print_table  # noqa: E402

FLAT_WITHIN = 0.05
"""The spread after the replay has filled that counts as flat (the issue's 5%)."""


def resident_bytes(pid: int) -> int | None:
    """``VmRSS`` of process ``pid`` in bytes, or None once it has exited."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def newest_env_steps(workdir: Path) -> int:
    """The ``env_steps`` of the last complete record of ``workdir/metrics.jsonl`` (0 before one)."""
    try:
        lines = (workdir / "metrics.jsonl").read_text().splitlines()
    except OSError:
        return 0
    for line in reversed(lines):
        try:
            return int(json.loads(line)["env_steps"])
        except (ValueError, KeyError):
            continue
    return 0


def summarize(samples: list[dict], capacity: int) -> dict:
    """What the samples say: resident memory at the first and last sample taken once the run had
    stepped ``capacity`` environment steps, and the spread of those samples over the first."""
    full = [s for s in samples if s["env_steps"] >= capacity]
    if len(full) < 2:
        return {"filled_samples": len(full)}
    first, last = full[0]["rss_bytes"], full[-1]["rss_bytes"]
    values = [s["rss_bytes"] for s in full]
    spread = (max(values) - min(values)) / first
    return {
        "filled_samples": len(full),
        "filled_at_s": full[0]["seconds"],
        "first_bytes": first,
        "last_bytes": last,
        "growth": (last - first) / first,
        "spread": spread,
        "flat": spread <= FLAT_WITHIN,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=30.0, help="how long the run trains")
    parser.add_argument("--interval-s", type=float, default=15.0, help="seconds between samples")
    parser.add_argument(
        "--workdir", type=Path, help="the run's workdir (default: a new temporary one)"
    )
    parser.add_argument("--out", type=Path, help="write the samples and the summary here as JSON")
    parser.add_argument("train_args", nargs="*", help="`mz-jax train` arguments, after --")
    args = parser.parse_args(argv)

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mz_memory_"))
    command = [
        sys.executable,
        "-m",
        "mz_jax.cli.main",
        "train",
        "--workdir",
        str(workdir),
        *args.train_args,
    ]
    print(f"memory: {' '.join(command)}", file=sys.stderr)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    log = open(workdir.parent / f"{workdir.name}.log", "w")
    child = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    start = time.monotonic()
    samples = []
    try:
        while child.poll() is None and time.monotonic() - start < args.minutes * 60:
            rss = resident_bytes(child.pid)
            if rss is not None:
                sample = {
                    "seconds": round(time.monotonic() - start, 1),
                    "env_steps": newest_env_steps(workdir),
                    "rss_bytes": rss,
                }
                samples.append(sample)
                print(
                    f"memory: {sample['seconds']:7.0f} s  {sample['env_steps']:>9} env steps  "
                    f"{rss / 2**20:8.1f} MiB",
                    file=sys.stderr,
                )
            time.sleep(args.interval_s)
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
            child.wait()
        log.close()
    if not (workdir / "config.json").exists():
        print(f"memory: the run failed (exit {child.returncode}); see {log.name}", file=sys.stderr)
        return 1
    capacity = json.loads((workdir / "config.json").read_text())["replay_capacity"]
    summary = summarize(samples, capacity)
    print(f"machine: {machine_description()}")
    print(f"command: mz-jax train {' '.join(args.train_args)}  ({args.minutes:g} min)")
    if summary["filled_samples"] < 2:
        print(f"the replay ({capacity} transitions) did not fill in {args.minutes:g} min")
    else:
        mib = lambda b: f"{b / 2**20:.1f}"
        print_table(
            [
                "replay full at (s)",
                "RSS then (MiB)",
                "RSS at end (MiB)",
                "growth",
                "spread",
                "flat within 5%",
            ],
            [
                [
                    f"{summary['filled_at_s']:.0f}",
                    mib(summary["first_bytes"]),
                    mib(summary["last_bytes"]),
                    f"{100 * summary['growth']:+.1f}%",
                    f"{100 * summary['spread']:.1f}%",
                    "yes" if summary["flat"] else "no",
                ]
            ],
        )
    if args.out:
        args.out.write_text(json.dumps({"samples": samples, "summary": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
