"""Stochastic MuZero in the training program: what it is built from, what it refuses, and a few
compiled iterations that train every term, with reanalysed values and policies."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from mz_jax import build, metrics
from mz_jax.config import NetworkConfig, TrainConfig
from mz_jax.mcts import SearchConfig
from mz_jax.train import make_train
from mz_jax.types import StochasticMuZeroNetwork

CONFIG = TrainConfig(
    env="gymnax:CartPole-v1",
    num_envs=8,
    batch_size=8,
    rollout_length=2,
    updates_per_iteration=1,
    num_unroll_steps=2,
    td_steps=2,
    replay_capacity=8 * 6,
    warmup_updates=2,
    reanalyse_policy_fraction=0.5,
    network=NetworkConfig(hidden_sizes=(16,), latent_size=16, num_chance_outcomes=4),
    search=SearchConfig(policy="muzero", num_simulations=3),
)


def test_builds_the_stochastic_network_and_loss():
    components = build(CONFIG)
    assert isinstance(components.network, StochasticMuZeroNetwork)
    assert components.network.num_chance_outcomes == 4


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"network": dataclasses.replace(CONFIG.network, value_prefix_horizon=5)},
            r"'network.value_prefix_horizon' = 5 is invalid: allowed None",
        ),
        (
            # A Stochastic MuZero ResNet (tests/test_chance_resnet.py) needs images, as MuZero's.
            {"network": dataclasses.replace(CONFIG.network, kind="resnet")},
            r"'network.kind' = 'resnet' is invalid: allowed 'mlp' for gymnax:CartPole-v1: 'resnet' "
            r"needs image observations",
        ),
    ],
)
def test_refuses_what_it_does_not_combine_with(change, message):
    with pytest.raises(ValueError, match=message):
        build(dataclasses.replace(CONFIG, **change))


def test_num_chance_outcomes_is_checked():
    with pytest.raises(ValueError, match=r"'network.num_chance_outcomes' = 0 is invalid"):
        NetworkConfig(num_chance_outcomes=0)


@pytest.mark.parametrize("policy", ["muzero", "gumbel"])
def test_iterations_train_every_term_and_stay_finite(policy):
    # With the consistency term: the states the chance dynamics reach are pulled towards the
    # representations of the observations that followed. Acting and the reanalysed policies search
    # with chance nodes by pUCT or by Sequential Halving.
    search = dataclasses.replace(CONFIG.search, policy=policy)
    config = dataclasses.replace(CONFIG, consistency_loss_weight=1.0, search=search)
    trainer = make_train(config, devices=jax.devices()[:1])
    state = trainer.init(0)
    params_0 = jax.device_get(state.train.params)
    records = []
    for _ in range(4):
        state, record = trainer.step(state)
        records.append(metrics.flatten(jax.device_get(record)))
    for term in ("q", "chance", "commitment", "consistency", "value", "reward", "policy", "total"):
        values = np.array([r[f"loss/{term}"] for r in records]).ravel()
        assert np.all(np.isfinite(values)), term
    assert np.array([r["loss/chance"] for r in records]).max() > 0
    moved = jax.tree.map(
        lambda a, b: bool(np.any(np.asarray(a) != np.asarray(b))),
        params_0,
        jax.device_get(state.train.params),
    )
    # The encoder, sigma and Q heads all moved: their terms reach them.
    for name in (
        "encoder_out",
        "chance_head",
        "q_head",
        "afterstate_dynamics",
        "chance_dynamics",
        "projection_head",
    ):
        assert any(jax.tree.leaves(moved[name])), name
