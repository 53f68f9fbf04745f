"""Which of the sample-efficient preset's terms matter: environment steps to a target, each one off
or, for the terms it leaves out, each one on.

    python benchmarks/ablation.py                                   # 3 seeds (100, 101, 102)
    python benchmarks/ablation.py --seeds 3 --first-seed 200 --only "consistency loss off"
    python benchmarks/ablation.py --seeds 5 --first-seed 200 --total-env-steps 4000 --only preset \
        --variant "search.value_scale=0.02" --variant "td_steps=10 search.value_scale=0.005"

Trains the preset once as is, once with each term it uses switched off (the consistency loss, SPR's
momentum encoder, the value prefix, reanalysed policies, reanalysed values, the off-policy
correction, the mirrored batches, the windows past the newest step, the observation scale, the
learning-rate decay; and the representation's first LayerNorm put back where the preset leaves it
out), then once with each term it does not use switched on
(``--no-additions`` skips these), then once per ``--variant`` (space-separated ``FIELD=VALUE``
changes, as ``learning.py --set`` takes them; ``--only`` does not filter these), and prints, per
variant, the environment steps at each seed's first greedy evaluation reaching --target, their
median, how many of the next ten evaluations also reach it, and the mean of every evaluation of
every seed (the area under the learning curves over their length, which weighs speed and steadiness
together: the seeds of one CartPole configuration first reach 475 anywhere from 1,000 to beyond
4,000 steps, so the first column alone separates variants only with many seeds). The seeds of one
variant run as one program (``num_seeds``): environment steps per seed are those of separate runs,
but wall times are not, so none are shown (``benchmarks/learning.py`` times single runs;
``benchmarks/investigations/sample_efficiency.py`` gives each term's cost in milliseconds per update). The default
seeds are not the README's 0-4.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

from common import machine_description, print_table
from learning import LAST_WINDOW, STABILITY_WINDOW, first_on_target, last_mean, with_overrides

from mz_jax import TrainConfig
from mz_jax.config.presets import load_preset
from mz_jax.run.loop import run_training
from mz_jax.run.records import evaluation_curves
from mz_jax.training.build import make_run_env


def _valid(config: TrainConfig, **changes) -> TrainConfig:
    """``config`` with ``changes``, and without what they leave nothing for: the momentum encoder
    (``consistency_target_params``) without the consistency loss, the target parameters' average
    (``target_ema_decay``) without target parameters (:attr:`TrainConfig.uses_target_params`),
    values by search without reanalysed values."""
    by_search = config.reanalyse_values_by_search and changes.get("reanalyse_values", True)
    bare = dataclasses.replace(
        config,
        **changes,
        target_ema_decay=0.0,
        consistency_target_params=False,
        reanalyse_values_by_search=by_search,
    )
    if not bare.uses_target_params:
        return bare
    return dataclasses.replace(
        bare,
        target_ema_decay=config.target_ema_decay,
        consistency_target_params=config.consistency_target_params
        and bare.consistency_loss_weight > 0,
    )


def ablations(preset: TrainConfig, *, additions: bool = True):
    """(name, config) pairs: the preset, each term it uses switched off alone, then (``additions``)
    each term it does not use switched on alone. Switching off the consistency loss switches off
    its momentum encoder too, and switching off the last use of target parameters their average."""
    yield "preset", preset
    network = preset.network
    if preset.consistency_loss_weight > 0:
        yield "consistency loss off", _valid(preset, consistency_loss_weight=0.0)
    if preset.consistency_target_params or preset.target_ema_decay > 0:
        yield (
            "momentum encoder off",
            dataclasses.replace(preset, target_ema_decay=0.0, consistency_target_params=False),
        )
    if network.value_prefix_horizon is not None:
        yield (
            "value prefix off",
            dataclasses.replace(
                preset, network=dataclasses.replace(network, value_prefix_horizon=None)
            ),
        )
    if preset.reanalyse_policy_fraction > 0:
        yield "reanalysed policy off", _valid(preset, reanalyse_policy_fraction=0.0)
    if preset.reanalyse_values:
        yield "reanalysed values off", _valid(preset, reanalyse_values=False)
    if preset.reanalyse_values_by_search:
        yield (
            "values by search off",
            dataclasses.replace(preset, reanalyse_values_by_search=False),
        )
    if preset.off_policy_correction_steps is not None:
        yield (
            "off-policy correction off",
            dataclasses.replace(preset, off_policy_correction_steps=None),
        )
    if preset.augment_reflection:
        yield "reflection off", dataclasses.replace(preset, augment_reflection=False)
    if preset.sample_newest_steps:
        yield "newest steps off", dataclasses.replace(preset, sample_newest_steps=False)
    if not network.observation_layer_norm:
        yield (
            "observation LayerNorm on",
            dataclasses.replace(
                preset, network=dataclasses.replace(network, observation_layer_norm=True)
            ),
        )
    if network.observation_scale is not None:
        yield (
            "observation scale off",
            dataclasses.replace(
                preset, network=dataclasses.replace(network, observation_scale=None)
            ),
        )
    if preset.decay_updates is not None:
        yield "learning-rate decay off", dataclasses.replace(preset, lr_decay_updates=None)
    if preset.value_target_sigma > 0:
        yield "HL-Gauss value targets off", dataclasses.replace(preset, value_target_sigma=0.0)
    if not additions:
        return
    if network.value_prefix_horizon is None:
        yield (
            "+ value prefix (H = 5)",
            dataclasses.replace(
                preset, network=dataclasses.replace(network, value_prefix_horizon=5)
            ),
        )
    if preset.off_policy_correction_steps is None:
        yield (
            "+ off-policy correction (1,000 steps)",
            dataclasses.replace(preset, off_policy_correction_steps=1000),
        )
    if preset.reanalyse_policy_fraction == 0:
        yield (
            "+ reanalysed policy (25%)",
            dataclasses.replace(preset, reanalyse_policy_fraction=0.25),
        )
    if preset.reanalyse_values and not preset.reanalyse_values_by_search:
        yield (
            "+ values by search",
            dataclasses.replace(preset, reanalyse_values_by_search=True),
        )
    if preset.value_target_sigma == 0:
        yield (
            "+ HL-Gauss value targets (0.75)",
            dataclasses.replace(preset, value_target_sigma=0.75),
        )
    if not preset.sample_newest_steps:
        yield "+ newest steps", dataclasses.replace(preset, sample_newest_steps=True)
    if preset.consistency_loss_weight == 0:
        yield "+ consistency loss (2)", dataclasses.replace(preset, consistency_loss_weight=2.0)
    if not preset.augment_reflection and make_run_env(preset).reflection is not None:
        yield "+ reflection", dataclasses.replace(preset, augment_reflection=True)


def steps_on_target(curve, target: float) -> tuple[int | None, str]:
    """Env steps at a seed's first evaluation >= target (None if none), and ``k/n`` of the next
    ten (:func:`learning.first_on_target`)."""
    hit, stable = first_on_target(curve.returns, target)
    return (None if hit is None else int(curve.env_steps[hit])), stable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="cartpole_sample_efficient")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per variant")
    parser.add_argument("--first-seed", type=int, default=100)
    parser.add_argument("--target", type=float, default=475.0)
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--total-env-steps", type=int, default=None)
    parser.add_argument("--only", nargs="+", default=None, help="run only these variants")
    parser.add_argument(
        "--no-additions", action="store_true", help="skip the variants that switch a term on"
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar='"FIELD=VALUE ..."',
        help="also run the preset with these changes (repeatable; network. and search. nest)",
    )
    parser.add_argument("--workdir", default="runs/benchmark_ablation")
    args = parser.parse_args()

    preset = load_preset(args.config)
    preset = dataclasses.replace(
        preset,
        seed=args.first_seed,
        num_seeds=args.seeds,
        eval_every_env_steps=args.eval_every,
        total_env_steps=args.total_env_steps or preset.total_env_steps,
        log_every_seconds=60.0,
    )
    print(f"machine: {machine_description()}")
    print(
        f"preset {args.config}: {preset.env}, seeds {args.first_seed}..{args.first_seed + args.seeds - 1}"
        f" as one program, {preset.total_env_steps:,} env steps, {preset.eval_episodes} greedy "
        f"episodes every {args.eval_every:,} env steps, target {args.target:g}\n"
    )
    chosen = [
        (name, config)
        for name, config in ablations(preset, additions=not args.no_additions)
        if not args.only or name in args.only
    ]
    chosen += [(changes, with_overrides(preset, changes.split())) for changes in args.variant]
    rows = []
    for name, config in chosen:
        workdir = Path(args.workdir) / re.sub(r"\W+", "_", name).strip("_")
        shutil.rmtree(workdir, ignore_errors=True)
        start = time.perf_counter()
        run_training(config, workdir)
        print(f"{name}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        curves = evaluation_curves(workdir, default_seed=config.seed)
        results = [steps_on_target(curves[seed], args.target) for seed in sorted(curves)]
        reached = [steps for steps, _ in results if steps is not None]
        # A seed that never reached the target counts as infinitely many steps.
        median = statistics.median([math.inf if s is None else s for s, _ in results])
        rows.append(
            [
                name,
                ", ".join("-" if steps is None else f"{steps:,}" for steps, _ in results),
                f"{median:,.0f}" if math.isfinite(median) else "not reached",
                f"{len(reached)}/{len(results)}",
                ", ".join(stable for _, stable in results),
                ", ".join(f"{last_mean(curves[seed].returns):.4g}" for seed in sorted(curves)),
                f"{statistics.mean(float(r) for c in curves.values() for r in c.returns):.4g}",
            ]
        )
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    print_table(
        [
            "variant",
            f"env steps to >= {args.target:g}, by seed",
            "median",
            "seeds reaching",
            f"next {STABILITY_WINDOW} >= {args.target:g}",
            f"mean of the last {LAST_WINDOW}, by seed",
            "mean of every evaluation",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
