"""Every benchmark except the learning runs, as one markdown report: ``benchmarks/RESULTS.md``.

    python benchmarks/run_all.py                              # the report (~10 min on 2 CPU cores)
    python benchmarks/run_all.py --quick --output /tmp/q.md   # small sizes, few repeats: a smoke run
    python benchmarks/run_all.py --sections training search    # some sections, in that order

Runs the measurements of ``investigations/loss_unroll.py``, ``search.py``, ``selfplay.py`` and ``training.py`` (by
calling their functions, one after another in this process) and writes the machine, the package
versions, the command and one table per figure. Progress goes to stderr; the report is also printed.
The report file is rewritten after each section, so a run stopped part-way keeps what it finished.
``learning.py`` (minutes per seed) is not part of it.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib.metadata
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import search
import selfplay
import training
from common import format_table, machine_description, percent
from investigations import loss_unroll

PACKAGES = ("jax", "jaxlib", "flax", "optax", "mctx", "gymnax", "pgx", "mz_jax")
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "RESULTS.md"


@dataclasses.dataclass(frozen=True)
class Plan:
    """Sizes and repeats of every section of the report."""

    unroll_lengths: tuple[int, ...] = (5, 10, 20, 50)
    loss_batch_size: int = 256
    loss_repeats: int = 10
    search_batch_sizes: tuple[int, ...] = (1, 64, 256)
    search_action_counts: tuple[int, ...] = (2, 9, 18)
    search_simulations: int = 32
    search_repeats: int = 5
    selfplay_envs: tuple[str, ...] = selfplay.ENVS
    selfplay_env_counts: tuple[int, ...] = (16, 64, 256)
    selfplay_simulations: tuple[int, ...] = (8,)
    selfplay_steps: int = 16
    selfplay_repeats: int = 5
    training: training.Settings = dataclasses.field(default_factory=training.Settings)

    @classmethod
    def quick(cls) -> Plan:
        return cls(
            unroll_lengths=(5,),
            loss_repeats=3,
            search_batch_sizes=(64,),
            search_action_counts=(9,),
            search_repeats=3,
            selfplay_envs=("gymnax:CartPole-v1",),
            selfplay_env_counts=(64,),
            selfplay_repeats=3,
            training=training.Settings.quick(),
        )


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def versions() -> list[list[str]]:
    rows = [["python", platform.python_version()]]
    for name in PACKAGES:
        try:
            rows.append([name, importlib.metadata.version(name)])
        except importlib.metadata.PackageNotFoundError:
            rows.append([name, "not installed"])
    return rows


def git_revision() -> str:
    """The repository's commit, with '+ changes' if the working tree differs from it."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"{commit} + uncommitted changes" if dirty else commit


# ---------------------------------------------------------------------------------------------------
# Sections: each returns its markdown.


def loss_section(plan: Plan) -> str:
    rows = loss_unroll.unroll_rows(
        plan.unroll_lengths, batch_size=plan.loss_batch_size, repeats=plan.loss_repeats
    )
    return "\n".join(
        [
            "## Loss: `lax.scan` unroll against a Python-loop unroll",
            "",
            f"`jax.jit(jax.value_and_grad(loss))` of the MuZero loss, MLP 128×128 (latent 128), "
            f"batch {plan.loss_batch_size}, the model unrolled K steps by `lax.scan` (as "
            "`mz_jax.make_loss_fn` does) and by a Python for-loop (traced K times). Milliseconds: "
            "trace, XLA compile, and one step after compilation (median of "
            f"{plan.loss_repeats}). The scan's program does not grow with K, so its compile time "
            "stays flat while the loop's grows; `step scan/loop` above 1 is the scan's "
            "per-step cost.",
            "",
            format_table(loss_unroll.UNROLL_HEADERS, rows),
        ]
    )


def search_section(plan: Plan) -> str:
    n = plan.search_simulations
    rows = [
        [policy, batch, actions, f"{1e3 * seconds:.2f}", f"{batch * n / seconds:,.0f}"]
        for policy, batch, actions, seconds in search.time_policies(
            plan.search_batch_sizes,
            plan.search_action_counts,
            num_simulations=n,
            repeats=plan.search_repeats,
        )
    ]
    return "\n".join(
        [
            "## Search: simulations per second",
            "",
            f"One jitted `mz_jax.search` call with {n} simulations on a batch of roots, "
            f"untrained two-layer MLP (hidden {search.HIDDEN_SIZE}); median of "
            f"{plan.search_repeats} calls after compilation. Simulations per second = batch × "
            "simulations / seconds per call.",
            "",
            format_table(["policy", "batch", "actions", "ms/call", "simulations/s"], rows),
        ]
    )


def selfplay_section(plan: Plan) -> str:
    rows = selfplay.selfplay_rows(
        plan.selfplay_envs,
        plan.selfplay_env_counts,
        plan.selfplay_simulations,
        num_steps=plan.selfplay_steps,
        repeats=plan.selfplay_repeats,
    )
    return "\n".join(
        [
            "## Self-play: environment steps per second",
            "",
            f"`mz_jax.training.actor.rollout` under `jax.jit`: {plan.selfplay_steps} steps of [search, act, "
            "step every environment] as one `lax.scan`, untrained MLP (64, 64; latent 64); median "
            f"of {plan.selfplay_repeats} calls after compilation. Environment steps per second = "
            "steps × environments / seconds per rollout; no learning.",
            "",
            format_table(selfplay.SELFPLAY_HEADERS, rows),
        ]
    )


def training_sections(plan: Plan) -> str:
    """The learner update, end-to-end and seeds sections: one set of measurements, three tables."""
    results = training.measure(plan.training, log=log)
    return "\n\n".join(
        [
            update_section(results, plan.training),
            end_to_end_section(results, plan.training),
            seeds_section(results, plan.training),
            per_call_section(results, plan.training),
        ]
    )


def per_call_section(results: training.Results, settings: training.Settings) -> str:
    return "\n".join(
        [
            "## Iterations per host call",
            "",
            f"`iterations_per_call` 1 and {settings.iterations_per_call} (a `lax.scan` of "
            "iterations inside the jit, results equal to single calls) on the CartPole preset, "
            "with the metrics fetched to the host after every call as `mz-jax train` does; median "
            f"of {settings.vmapped_blocks} blocks of {settings.iterations} iterations.",
            "",
            format_table(*training.per_call_table(results)),
        ]
    )


def update_section(results: training.Results, settings: training.Settings) -> str:
    update, peak = results.update, results.peak
    fraction = update.flops_per_second / peak.flops_per_second
    return "\n".join(
        [
            "## Learner updates per second and the fraction of the matmul peak",
            "",
            training.description(results, settings) + ".",
            "",
            "`mz_jax.training.learner.update` (loss, gradient, clipping, Adam) jitted on one device, on a "
            f"fixed batch of the preset's shapes; median of {settings.update_repeats} updates "
            "after compilation. The peak is a jitted float32 "
            f"`a @ b` of {peak.size}×{peak.size} matrices (2n³ FLOPs, the fastest of "
            f"{settings.matmul_repeats} products: {1e3 * peak.seconds:.0f} ms); the update's FLOPs "
            "are XLA's cost analysis of its program with the unroll fully unrolled.",
            "",
            format_table(*training.update_table(results)),
            "",
            f"How to read: the update runs at {percent(fraction)} of the rate of one large product. "
            f"Its matrices are small (batch {update.batch_size} by width "
            f"{max(results.config.network.hidden_sizes)}) next to the peak's "
            f"{peak.size}×{peak.size}, so for a network this size the fraction says more about the "
            "network than about the code.",
        ]
    )


def end_to_end_section(results: training.Results, settings: training.Settings) -> str:
    return "\n".join(
        [
            "## End to end: environment steps per second of training",
            "",
            "`trainer = make_train(config)` for the CartPole preset; the time of "
            "`trainer.step(state)` (self-play, replay, learner updates: one compiled program per "
            f"iteration), {settings.iterations} iterations dispatched back to back after the "
            f"replay warmed up, median over {settings.num_seeds} seeds. Compile time is lowering "
            "and compiling the step. Evaluation, logging and checkpoints of `mz-jax train` are "
            "not included.",
            "",
            format_table(*training.end_to_end_table(results)),
        ]
    )


def seeds_section(results: training.Results, settings: training.Settings) -> str:
    seeds = results.seeds
    num_seeds = seeds.vmapped.num_seeds
    return "\n".join(
        [
            f"## Seeds: {num_seeds} vmapped seeds against sequential seeds",
            "",
            f"Vmapped: `config.replace(num_seeds={num_seeds})`, one program advancing every seed "
            "per step (every state leaf has a leading seed axis); median of "
            f"{settings.vmapped_blocks} blocks of {settings.iterations} iterations. Sequential: "
            "the single-seed runs of the previous section, one after another (one compilation, "
            "reused: the seed is data). Throughput counts the environment steps of all seeds.",
            "",
            format_table(*training.seeds_table(results)),
            "",
            f"How to read: the ratio {seeds.ratio:.2f}× is vmapped over sequential throughput. "
            "Above 1, one program for all seeds gets more out of the machine than the seeds one "
            "after another; at or below 1, one seed already keeps the machine busy. The projected "
            "column adds one compilation to the time the measured throughput needs for every "
            "seed's full run (separate processes would compile once each).",
        ]
    )


SECTIONS = {
    "loss": ("loss unroll", loss_section),
    "search": ("search", search_section),
    "selfplay": ("self-play", selfplay_section),
    "training": ("training", training_sections),
}


def load_average() -> str:
    """The 1-minute load average over the CPU count: how busy other processes kept the machine."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return "unknown"
    return f"{load:.1f} on {os.cpu_count()} cores"


def report(
    plan: Plan,
    *,
    command: str,
    sections: list[str] | None = None,
    on_section: Callable[[str], None] | None = None,
) -> str:
    """The report of ``sections`` (keys of ``SECTIONS``; all by default), in that order.
    ``on_section`` receives the report so far after each section, so a run stopped part-way
    (a time limit on a lent machine, say) keeps the sections it finished."""
    sections = list(SECTIONS) if sections is None else sections
    load_before = load_average()
    started = time.perf_counter()
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    bodies, durations = [], []

    def render() -> str:
        total = time.perf_counter() - started
        device = jax.devices()[0]
        done = f"in {total / 60:.1f} min"
        if len(bodies) < len(sections):
            missing = ", ".join(SECTIONS[key][0] for key in sections[len(bodies) :])
            done += f"; not finished: {missing} still to run"
        header = [
            "# mz_jax performance report",
            "",
            f"Generated {date} by `{command}` {done}.",
            "",
            f"- Machine: `{machine_description()}`",
            f"- Timed on: `{device}` ({device.device_kind}); commit {git_revision()}",
            f"- Load average (1 min): {load_before} before the run, {load_average()} after it",
            "- Versions: " + ", ".join(f"{name} {version}" for name, version in versions()),
            "",
            "Times are wall-clock medians after compilation unless the text says otherwise. Other "
            "processes on the machine slow every figure; compare reports from the same machine, "
            "quiet.",
        ]
        footer = [
            "## Time spent per section",
            "",
            format_table(["section", "seconds"], [*durations, ["total", f"{total:.0f}"]]),
        ]
        return "\n\n".join(["\n".join(header), *bodies, "\n".join(footer)]) + "\n"

    for key in sections:
        name, section = SECTIONS[key]
        log(f"{name} ...")
        start = time.perf_counter()
        bodies.append(section(plan))
        durations.append([name, f"{time.perf_counter() - start:.0f}"])
        log(f"{name}: {durations[-1][1]} s")
        if on_section is not None:
            on_section(render())
    return render()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument(
        "--output", type=Path, default=DEFAULT_OUTPUT, help="where to write the report"
    )
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=list(SECTIONS),
        default=list(SECTIONS),
        help="which sections to run, in this order (default: all)",
    )
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    command = shlex.join(["python", "benchmarks/run_all.py", *argv])
    args.output.parent.mkdir(parents=True, exist_ok=True)
    text = report(
        Plan.quick() if args.quick else Plan(),
        command=command,
        sections=args.sections,
        on_section=args.output.write_text,
    )
    print(text)
    log(f"wrote {args.output}")


if __name__ == "__main__":
    main()
