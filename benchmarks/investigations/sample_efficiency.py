"""What EfficientZero's terms cost in throughput: the training step with each switched on.

    python benchmarks/investigations/sample_efficiency.py            # every variant, 3 timed blocks each
    python benchmarks/investigations/sample_efficiency.py --quick    # one short block each, for a smoke test

On the ``cartpole_sample_efficient`` preset with its EfficientZero terms and mirrored batches
switched off (MuZero), then each one switched on alone, then all of those the preset uses:
``make_train(config).step`` (act, store, ``updates_per_iteration`` learner updates with reanalyse,
targets and mirroring), compiled, warmed up
until every iteration updates, then timed (``benchmarks/training.py``'s loop). Milliseconds per
learner update are the step's time divided by its updates, so they include the iteration's small
share of acting; compile seconds are those of the step alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

from common import machine_description, print_table
from training import time_training_loop

from mz_jax.config.presets import load_preset

PRESET = "cartpole_sample_efficient"


def variants(preset):
    """(name, config) pairs: MuZero, each term alone, the preset."""
    muzero = dataclasses.replace(
        preset,
        consistency_loss_weight=0.0,
        consistency_target_params=False,
        target_ema_decay=0.0,
        reanalyse_values=False,
        reanalyse_values_by_search=False,
        reanalyse_policy_fraction=0.0,
        off_policy_correction_steps=None,
        augment_reflection=False,
        network=dataclasses.replace(preset.network, value_prefix_horizon=None),
    )
    yield "MuZero (all off)", muzero
    yield "consistency loss", dataclasses.replace(muzero, consistency_loss_weight=2.0)
    yield (
        "consistency loss, momentum encoder",
        dataclasses.replace(
            muzero,
            consistency_loss_weight=2.0,
            reanalyse_values=True,
            target_ema_decay=0.99,
            consistency_target_params=True,
        ),
    )
    yield (
        "value prefix (H = 5)",
        dataclasses.replace(
            muzero, network=dataclasses.replace(muzero.network, value_prefix_horizon=5)
        ),
    )
    yield "reanalysed values", dataclasses.replace(muzero, reanalyse_values=True)
    yield (
        "reanalysed values by search",
        dataclasses.replace(muzero, reanalyse_values=True, reanalyse_values_by_search=True),
    )
    yield "reanalysed policy, 25%", dataclasses.replace(muzero, reanalyse_policy_fraction=0.25)
    yield "reanalysed policy, 100%", dataclasses.replace(muzero, reanalyse_policy_fraction=1.0)
    yield "off-policy correction", dataclasses.replace(muzero, off_policy_correction_steps=1000)
    yield "mirrored batches", dataclasses.replace(muzero, augment_reflection=True)
    yield f"the preset ({PRESET})", preset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short block per variant")
    args = parser.parse_args()
    iterations, blocks = (10, 1) if args.quick else (50, 3)
    preset = load_preset(PRESET)
    rows, baseline = [], None
    for name, config in variants(preset):
        timing = time_training_loop(
            config, seeds=[0], iterations=iterations, blocks_per_seed=blocks
        )
        ms = 1000.0 / timing.updates_per_second
        baseline = baseline or ms
        rows.append([name, f"{ms:.1f}", f"{ms / baseline:.2f}x", f"{timing.compile_seconds:.0f}"])
        print(f"  {name}: {ms:.1f} ms per update", flush=True)
    print(
        f"\n{machine_description()}; {PRESET}: batch {preset.batch_size}, K "
        f"{preset.num_unroll_steps}, {preset.updates_per_iteration} updates per iteration\n"
    )
    print_table(["variant", "ms per update", "vs MuZero", "compile s"], rows)


if __name__ == "__main__":
    main()
