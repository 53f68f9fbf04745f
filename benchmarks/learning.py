"""Learning benchmarks: does a preset reach its target, and how fast in wall time and environment steps?

    python benchmarks/learning.py --config cartpole --seeds 0 1 2 --target 475 --budget-s 120
    python benchmarks/learning.py --config tic_tac_toe --seeds 0 --target 1.0
    python benchmarks/learning.py --config defaults --seeds 0 1 2   # `mz-jax train`, no flags
    python benchmarks/learning.py --config cartpole_sample_efficient --eval-every 500 \
        --set consistency_loss_weight=0   # an ablation: one field changed

For each seed, trains the preset (in a fresh workdir under --workdir) and reads its metrics.jsonl: the
first greedy evaluation whose mean return reaches --target, the wall time until then (measured from
before the run starts, so compilation is included) and the environment steps, how many of the next
ten evaluations also reach the target (the run must last that long for all ten to count), the
best and last evaluations, and the mean of the last five (less noisy than the last alone). Prints a
markdown table with the machine named; ``--plot curves.png`` also draws the seeds' evaluation curves
(``mz_jax.run.plots.save_curve``).

``--set FIELD=VALUE`` changes one field of the preset (repeatable; ``network.FIELD`` and
``search.FIELD`` reach the nested configs; VALUE is a Python literal, else a string).

``--reuse`` reads the runs already in --workdir instead of training (each must hold a finished run of
the preset with that seed: its config.json is checked, all but how often it logged and saved); times
then count from the run's own start, so they leave out the seconds before its first step (start-up
and the first compilation).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import shutil
import sys
import time
from pathlib import Path

from common import machine_description, print_table

from mz_jax import TrainConfig
from mz_jax.cli import compilation_cache
from mz_jax.config.presets import load_preset
from mz_jax.run.loop import run_training
from mz_jax.run.metrics import EVAL_RETURN
from mz_jax.run.plots import save_curve
from mz_jax.run.records import evaluation_curves, read_metrics
from mz_jax.run.resume import read_config

STABILITY_WINDOW = 10
"""Evaluations after the first one on target that the stability column counts."""
LAST_WINDOW = 5
"""Evaluations at the end of a run that the last column averages."""

BOOKKEEPING_FIELDS = (
    "log_every_seconds",
    "checkpoint_every_seconds",
    "keep_checkpoints",
    "keep_checkpoint_every",
)


def with_overrides(config, assignments: list[str]):
    """``config`` with each ``FIELD=VALUE`` of ``assignments`` applied (``network.`` and ``search.``
    prefixes reach the nested configs; VALUE is a Python literal, else taken as a string)."""
    nested: dict[str, dict] = {"": {}, "network": {}, "search": {}}
    for assignment in assignments:
        name, sep, text = assignment.partition("=")
        if not sep:
            raise SystemExit(f"--set {assignment!r}: expected FIELD=VALUE")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        prefix, _, field = name.rpartition(".")
        if prefix not in nested:
            raise SystemExit(f"--set {assignment!r}: only network. and search. fields are nested")
        nested[prefix][field] = value
    changes = nested[""]
    for prefix in ("network", "search"):
        if nested[prefix]:
            changes[prefix] = dataclasses.replace(getattr(config, prefix), **nested[prefix])
    try:
        return dataclasses.replace(config, **changes)
    except (TypeError, ValueError) as error:
        raise SystemExit(f"--set: {error}") from error


def first_on_target(returns, target: float) -> tuple[int | None, str]:
    """The index of the first of ``returns`` (evaluations in order) that reaches ``target`` (None
    if none), and ``k/n``: of the (at most ten) evaluations after it, how many reach it too."""
    hit = next((i for i, value in enumerate(returns) if value >= target), None)
    if hit is None:
        return None, "-"
    after = list(returns[hit + 1 :])[:STABILITY_WINDOW]
    return hit, f"{sum(value >= target for value in after)}/{len(after)}"


def last_mean(returns) -> float:
    """The mean of the last (at most) ``LAST_WINDOW`` of ``returns``, evaluations in order."""
    last = list(returns)[-LAST_WINDOW:]
    return sum(last) / len(last)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--config",
        default="cartpole",
        help="a preset, or 'defaults': TrainConfig() as `mz-jax train` runs it without flags",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--target", type=float, default=475.0)
    parser.add_argument("--budget-s", type=float, default=120.0, help="wall-time budget per seed")
    parser.add_argument("--total-env-steps", type=int, default=None)
    parser.add_argument(
        "--eval-every", type=int, default=None, help="evaluate every this many env steps"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="change a field of the preset (repeatable), e.g. network.value_prefix_horizon=None",
    )
    parser.add_argument(
        "--compilation-cache",
        action="store_true",
        help="use mz-jax's persistent compilation cache (times then leave out what it holds)",
    )
    parser.add_argument("--workdir", default="runs/benchmark_learning")
    parser.add_argument(
        "--plot", default=None, help="write the seeds' evaluation curves to this PNG"
    )
    parser.add_argument(
        "--reuse", action="store_true", help="read the finished runs in --workdir, train nothing"
    )
    args = parser.parse_args()

    base = TrainConfig() if args.config == "defaults" else load_preset(args.config)
    cache = compilation_cache.enable() if args.compilation_cache else None
    if args.total_env_steps is not None:
        base = dataclasses.replace(base, total_env_steps=args.total_env_steps)
    if args.eval_every is not None:
        base = dataclasses.replace(base, eval_every_env_steps=args.eval_every)
    base = with_overrides(base, args.overrides)
    print(f"machine: {machine_description()}")
    if args.compilation_cache:
        print(f"persistent compilation cache: {cache} (times leave out what it already held)")
    changed = f" with {', '.join(args.overrides)}" if args.overrides else ""
    print(
        f"preset {args.config}{changed}: {base.env}, target mean greedy return >= {args.target}, "
        f"{base.eval_episodes} greedy episodes every {base.eval_every_env_steps:,} env steps\n"
    )
    rows, curves = [], {}
    for seed in args.seeds:
        workdir = Path(args.workdir) / f"{args.config}_seed{seed}"
        config = dataclasses.replace(base, seed=seed)
        if args.reuse:
            found = read_config(workdir)
            # How often a run logs or checkpoints does not change what it learns.
            bookkeeping = {name: getattr(config, name) for name in BOOKKEEPING_FIELDS}
            if dataclasses.replace(found, **bookkeeping) != config:
                raise SystemExit(f"{workdir} is not a run of preset {args.config} with seed {seed}")
            records = read_metrics(workdir)
            summary = {"env_steps": records[-1]["env_steps"], "wall_s": records[-1]["wall_s"]}
            elapsed, offset = summary["wall_s"], 0.0
        else:
            shutil.rmtree(workdir, ignore_errors=True)
            start = time.perf_counter()
            summary = run_training(config, workdir)
            elapsed = time.perf_counter() - start
            # wall_s in the metrics starts after set-up; shift it so times count from before the run.
            offset = elapsed - summary["wall_s"]
        curves.update(evaluation_curves(workdir, default_seed=seed))
        evals = [r for r in read_metrics(workdir) if EVAL_RETURN in r]
        returns = [r[EVAL_RETURN] for r in evals]
        hit, stable = first_on_target(returns, args.target)
        reached = None if hit is None else evals[hit]
        best = max(evals, key=lambda r: r[EVAL_RETURN]) if evals else None
        rows.append(
            [
                seed,
                f"{reached['wall_s'] + offset:.0f}" if reached else "not reached",
                f"{reached['env_steps']:,}" if reached else "-",
                "yes" if reached and reached["wall_s"] + offset <= args.budget_s else "no",
                stable,
                f"{best[EVAL_RETURN]:.4g} @ {best['env_steps']:,}" if best else "-",
                f"{evals[-1][EVAL_RETURN]:.4g}" if evals else "-",
                f"{last_mean(returns):.4g}" if evals else "-",
                f"{summary['env_steps']:,}",
                f"{elapsed:.0f}",
            ]
        )
        print(f"seed {seed}: {elapsed:.0f} s", file=sys.stderr, flush=True)
    print_table(
        [
            "seed",
            f"s to >= {args.target:g}",
            "env steps then",
            f"within {args.budget_s:g} s",
            f"next {STABILITY_WINDOW} >= {args.target:g}",
            "best eval",
            "last eval",
            f"mean of last {LAST_WINDOW}",
            "env steps",
            "run s",
        ],
        rows,
    )
    if args.plot:
        save_curve(args.plot, curves, f"{args.config} ({base.env}), seeds {args.seeds}")
        print(f"\ncurves: {args.plot}")


if __name__ == "__main__":
    main()
