"""Every benchmark but the learning runs, as the tables of ``benchmarks/results/performance.json``.

    python benchmarks/run_all.py                                  # every section (~10 min, 2 cores)
    python benchmarks/run_all.py --quick --out /tmp/perf.json     # a smoke run: about a minute
    python benchmarks/run_all.py --sections training search       # some sections, in that order

Runs the measurements of ``investigations/loss_unroll.py``, ``search.py``, ``selfplay.py`` and
``training.py`` (by calling their functions, one after another in this process) and adds their
tables to the result file, each dated and naming the machine and the command, then a table of the
seconds each section took whose note gives the versions, the commit and the machine's load. A file
already there keeps its older tables. The file is rewritten after each section, so a run stopped
part-way keeps what it finished; ``python benchmarks/results.py`` then writes RESULTS.md from it.
Progress goes to stderr.

``--quick`` measures small sizes once, with one search policy, and leaves out the training
sections (each compiles whole training steps: minutes on two busy cores) unless ``--sections``
names them. ``learning.py`` (minutes per seed) is not part of it.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import numbers
import os
import platform
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import results
import search
import selfplay
import training
from common import git_revision, machine_description, package_versions, percent
from investigations import loss_unroll

from mz_jax import SearchConfig

PACKAGES = ("jax", "jaxlib", "flax", "optax", "mctx", "gymnax", "pgx", "mz_jax")
DEFAULT_OUT = results.RESULTS_DIR / "performance.json"
TITLE = "Throughput on one machine: the loss's unroll, the search, self-play and training"
CAVEAT = (
    "Times are wall-clock medians after compilation unless a note says otherwise. Other processes "
    "on the machine slow every figure; compare tables from the same machine, quiet."
)


@dataclasses.dataclass(frozen=True)
class Plan:
    """Sizes and repeats of every section."""

    unroll_lengths: tuple[int, ...] = (5, 10, 20, 50)
    loss_batch_size: int = 256
    loss_repeats: int = 10
    search_policies: tuple[str, ...] = ("muzero", "gumbel")
    search_batch_sizes: tuple[int, ...] = (1, 64, 256)
    search_action_counts: tuple[int, ...] = (2, 9, 18)
    search_simulations: int = 32
    search_repeats: int = 5
    selfplay_envs: tuple[str, ...] = selfplay.ENVS
    selfplay_policies: tuple[str, ...] = ("muzero", "gumbel")
    selfplay_env_counts: tuple[int, ...] = (16, 64, 256)
    selfplay_simulations: tuple[int, ...] = (8,)
    selfplay_steps: int = 16
    selfplay_repeats: int = 5
    training: training.Settings = dataclasses.field(default_factory=training.Settings)

    @classmethod
    def quick(cls) -> Plan:
        """One small configuration of each, timed once: every compile is of a small program."""
        return cls(
            unroll_lengths=(2,),
            loss_batch_size=8,
            loss_repeats=1,
            search_policies=("gumbel",),
            search_batch_sizes=(4,),
            search_action_counts=(2,),
            search_simulations=4,
            search_repeats=1,
            selfplay_envs=("gymnax:CartPole-v1",),
            selfplay_policies=("gumbel",),
            selfplay_env_counts=(4,),
            selfplay_simulations=(2,),
            selfplay_steps=2,
            selfplay_repeats=1,
            training=training.Settings.quick(),
        )


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cell_value(cell: object) -> str | int | float:
    """A table cell as a result file holds it: numbers as numbers (``"1,310,537"`` -> 1310537,
    ``"12.24"`` -> 12.24, numpy scalars as Python's); other text (``"1.67x"``, ``"8.5%"``) as is."""
    if isinstance(cell, numbers.Integral):
        return int(cell)
    if isinstance(cell, numbers.Real):
        return float(cell)
    text = str(cell)
    if re.fullmatch(r"-?(\d{1,3}(,\d{3})+|\d+)", text):
        return int(text.replace(",", ""))
    if re.fullmatch(r"-?\d+\.\d+", text):
        return float(text)
    return text


def table(columns: list[str], rows: list[list[object]], note: str) -> dict:
    """One table of a result file, less its date, machine and command."""
    return {
        "columns": list(columns),
        "rows": [[cell_value(c) for c in row] for row in rows],
        "note": note,
    }


# ---------------------------------------------------------------------------------------------------
# Sections: each returns its tables.


def loss_tables(plan: Plan) -> list[dict]:
    rows = loss_unroll.unroll_rows(
        plan.unroll_lengths, batch_size=plan.loss_batch_size, repeats=plan.loss_repeats
    )
    note = (
        "Loss: `lax.scan` unroll against a Python-loop unroll. "
        "`jax.jit(jax.value_and_grad(loss))` of the MuZero loss, MLP 128×128 (latent 128), "
        f"batch {plan.loss_batch_size}, the model unrolled K steps by `lax.scan` (as "
        "`mz_jax.make_loss_fn` does) and by a Python for-loop (traced K times). Milliseconds: "
        f"trace, XLA compile, and one step after compilation (median of {plan.loss_repeats}). The "
        "scan's program does not grow with K, so its compile time stays flat while the loop's "
        "grows; `step scan/loop` above 1 is the scan's per-step cost."
    )
    return [table(loss_unroll.UNROLL_HEADERS, rows, note)]


def search_tables(plan: Plan) -> list[dict]:
    n = plan.search_simulations
    rows = []
    for policy in plan.search_policies:
        config = SearchConfig(policy=policy, num_simulations=n, discount=0.997, two_player=False)
        for actions in plan.search_action_counts:
            for batch in plan.search_batch_sizes:
                seconds = search.time_search(config, batch, actions, plan.search_repeats)
                rows.append(
                    [policy, batch, actions, round(1e3 * seconds, 2), round(batch * n / seconds)]
                )
    note = (
        f"Search: simulations per second. One jitted `mz_jax.search` call with {n} simulations on "
        f"a batch of roots, untrained two-layer MLP (hidden {search.HIDDEN_SIZE}); median of "
        f"{plan.search_repeats} calls after compilation. Simulations per second = batch × "
        "simulations / seconds per call."
    )
    return [table(["policy", "batch", "actions", "ms/call", "simulations/s"], rows, note)]


def selfplay_tables(plan: Plan) -> list[dict]:
    rows = []
    for env_name in plan.selfplay_envs:
        for policy in plan.selfplay_policies:
            for sims in plan.selfplay_simulations:
                for envs in plan.selfplay_env_counts:
                    seconds = selfplay.time_rollout(
                        env_name,
                        policy=policy,
                        num_envs=envs,
                        num_simulations=sims,
                        num_steps=plan.selfplay_steps,
                        repeats=plan.selfplay_repeats,
                    )
                    steps = plan.selfplay_steps * envs
                    rate = steps / seconds
                    rows.append(
                        [
                            env_name,
                            policy,
                            sims,
                            envs,
                            round(1e3 * seconds, 1),
                            round(rate),
                            round(rate * sims),
                        ]
                    )
    note = (
        "Self-play: environment steps per second. `mz_jax.training.actor.rollout` under "
        f"`jax.jit`: {plan.selfplay_steps} steps of [search, act, step every environment] as one "
        "`lax.scan`, untrained MLP (64, 64; latent 64); median of "
        f"{plan.selfplay_repeats} calls after compilation. Environment steps per second = steps × "
        "environments / seconds per rollout; no learning."
    )
    return [table(selfplay.SELFPLAY_HEADERS, rows, note)]


def training_tables(measured: training.Results, settings: training.Settings) -> list[dict]:
    """The learner update, end-to-end, seeds and iterations-per-call tables of one measurement."""
    update, peak, seeds = measured.update, measured.peak, measured.seeds
    num_seeds = seeds.vmapped.num_seeds
    update_note = (
        "Learner updates per second and the fraction of the matmul peak. "
        f"{training.description(measured, settings)}. `mz_jax.training.learner.update` (loss, "
        "gradient, clipping, Adam) jitted on one device, on a fixed batch of the preset's shapes; "
        f"median of {settings.update_repeats} updates after compilation. The peak is a jitted "
        f"float32 `a @ b` of {peak.size}×{peak.size} matrices (2n³ FLOPs, the fastest of "
        f"{settings.matmul_repeats} products: {1e3 * peak.seconds:.0f} ms); the update's FLOPs are "
        "XLA's cost analysis of its program with the unroll fully unrolled. How to read: the update "
        f"runs at {percent(update.flops_per_second / peak.flops_per_second)} of the rate of one "
        f"large product. Its matrices are small (batch {update.batch_size} by width "
        f"{max(measured.config.network.hidden_sizes)}) next to the peak's {peak.size}×{peak.size}, "
        "so for a network this size the fraction says more about the network than about the code."
    )
    end_to_end_note = (
        "End to end: environment steps per second of training. `trainer = make_train(config)` for "
        "the CartPole preset; the time of `trainer.step(state)` (self-play, replay, learner "
        f"updates: one compiled program per iteration), {settings.iterations} iterations "
        f"dispatched back to back after the replay warmed up, median over {settings.num_seeds} "
        "seeds. Compile time is lowering and compiling the step. Evaluation, logging and "
        "checkpoints of `mz-jax train` are not included."
    )
    seeds_note = (
        f"Seeds: {num_seeds} vmapped seeds against sequential seeds. Vmapped: "
        f"`config.replace(num_seeds={num_seeds})`, one program advancing every seed per step "
        f"(every state leaf has a leading seed axis); median of {settings.vmapped_blocks} blocks "
        f"of {settings.iterations} iterations. Sequential: the single-seed runs above, one after "
        "another (one compilation, reused: the seed is data). Throughput counts the environment "
        f"steps of all seeds. How to read: the ratio {seeds.ratio:.2f}× is vmapped over "
        "sequential throughput. Above 1, one program for all seeds gets more out of the machine "
        "than the seeds one after another; at or below 1, one seed already keeps the machine "
        "busy. The projected column adds one compilation to the time the measured throughput "
        "needs for every seed's full run (separate processes would compile once each)."
    )
    per_call_note = (
        f"Iterations per host call: `iterations_per_call` 1 and {settings.iterations_per_call} "
        "(a `lax.scan` of iterations inside the jit, results equal to single calls) on the "
        "CartPole preset, with the metrics fetched to the host after every call as `mz-jax train` "
        f"does; median of {settings.vmapped_blocks} blocks of {settings.iterations} iterations."
    )
    return [
        table(*training.update_table(measured), update_note),
        table(*training.end_to_end_table(measured), end_to_end_note),
        table(*training.seeds_table(measured), seeds_note),
        table(*training.per_call_table(measured), per_call_note),
    ]


SECTIONS: dict[str, tuple[str, Callable[[Plan], list[dict]]]] = {
    "loss": ("loss unroll", loss_tables),
    "search": ("search", search_tables),
    "selfplay": ("self-play", selfplay_tables),
    "training": (
        "training",
        lambda plan: training_tables(training.measure(plan.training, log=log), plan.training),
    ),
}
QUICK_SECTIONS = ("loss", "search", "selfplay")


# ---------------------------------------------------------------------------------------------------
# The run: what it ran on, and the result file.


def versions() -> str:
    found = [f"python {platform.python_version()}"]
    for name, version in package_versions(PACKAGES).items():
        found.append(f"{name} {version or 'not installed'}")
    return ", ".join(found)


def load_average() -> str:
    """The 1-minute load average over the CPU count: how busy other processes kept the machine."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return "unknown"
    return f"{load:.1f} on {os.cpu_count()} cores"


def time_table(durations: list[tuple[str, float]], missing: list[str], load_before: str) -> dict:
    """Seconds per section, and in the note what the run ran on."""
    device = jax.devices()[0]
    total = sum(seconds for _, seconds in durations)
    rows = [[name, round(seconds)] for name, seconds in durations] + [["total", round(total)]]
    unfinished = f" Not finished: {', '.join(missing)} still to run." if missing else ""
    note = (
        f"Time spent per section.{unfinished} Timed on `{device}` ({device.device_kind}); commit "
        f"{git_revision()}; load average (1 min) {load_before} before the run, {load_average()} "
        f"after it. Versions: {versions()}. {CAVEAT}"
    )
    return table(["section", "seconds"], rows, note)


def run(plan: Plan, sections: list[str], *, on_tables: Callable[[list[dict]], None]) -> list[dict]:
    """The tables of ``sections`` (keys of ``SECTIONS``), in that order, then the time table;
    ``on_tables`` receives the tables so far after each section."""
    load_before = load_average()
    tables, durations = [], []
    for i, key in enumerate(sections):
        name, measure = SECTIONS[key]
        log(f"{name} ...")
        start = time.perf_counter()
        tables += measure(plan)
        durations.append((name, time.perf_counter() - start))
        log(f"{name}: {durations[-1][1]:.0f} s")
        missing = [SECTIONS[k][0] for k in sections[i + 1 :]]
        on_tables([*tables, time_table(durations, missing, load_before)])
    return [*tables, time_table(durations, [], load_before)]


def earlier_result(path: Path) -> dict:
    """The result file at ``path`` (checked), or a new one named after it."""
    if not path.exists():
        return {"name": path.stem, "title": TITLE, "tables": []}
    return results.validate(json.loads(path.read_text()), path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes timed once, one search policy, no training sections unless named",
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="the result file to add the tables to"
    )
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=list(SECTIONS),
        help="which sections to run, in this order (default: all; with --quick: "
        f"{' '.join(QUICK_SECTIONS)})",
    )
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    sections = args.sections or list(QUICK_SECTIONS if args.quick else SECTIONS)
    stamp = {
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "machine": machine_description(),
        "command": shlex.join(["python", "benchmarks/run_all.py", *argv]),
    }
    earlier = earlier_result(args.out)

    def write(tables: list[dict]) -> None:
        result = {**earlier, "tables": earlier["tables"] + [{**stamp, **t} for t in tables]}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(results.dumps(results.validate(result, args.out)))

    write(run(Plan.quick() if args.quick else Plan(), sections, on_tables=write))
    log(f"wrote {args.out}; `python benchmarks/results.py` writes RESULTS.md from it")


if __name__ == "__main__":
    main()
