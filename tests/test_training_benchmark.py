"""``benchmarks/training.py``: the learner update it times is the one a preset trains."""

import sys
from pathlib import Path

import pytest

from mz_jax import NetworkConfig, TrainConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import training


def test_learner_update_times_the_consistency_loss_with_its_targets():
    # The synthetic batch must carry the next observations the consistency loss encodes (without
    # them the update refuses the batch); its FLOPs then exceed those of the same update without it.
    config = TrainConfig(
        env="gymnax:CartPole-v1",
        batch_size=8,
        num_unroll_steps=2,
        network=NetworkConfig(hidden_sizes=(16,), latent_size=8),
    )
    plain = training.time_learner_update(config, repeats=1)
    consistent = training.time_learner_update(
        config.replace(consistency_loss_weight=2.0), repeats=1
    )
    assert plain.flops > 0 and consistent.seconds > 0
    assert consistent.flops > plain.flops
    assert consistent.num_params > plain.num_params  # the projection and prediction heads


@pytest.mark.parametrize(("discount", "value_max"), [(0.9, 10.0), (1.0, 1.0)])
def test_synthetic_value_targets_stay_within_the_discounted_horizon(discount, value_max):
    # A board game's discount of 1 has no horizon: its values are the end-of-game result, up to 1
    # (the batch once divided by 1 - discount there).
    config = TrainConfig(
        env="pgx:tic_tac_toe", batch_size=64, num_unroll_steps=2, discount=discount
    )
    batch = training.synthetic_batch(config, (3, 3, 2), 9)
    values = batch.target_value
    assert values.shape == (64, 3)
    assert float(values.min()) >= 0.0 and float(values.max()) <= value_max
    assert float(values.max()) > value_max / 2  # drawn over the range, not squeezed into a corner
