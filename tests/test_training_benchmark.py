"""``benchmarks/training.py``: the learner update it times is the one a preset trains."""

import sys
from pathlib import Path

import pytest

from mz_jax import NetworkConfig, TrainConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
training = pytest.importorskip("training")


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
