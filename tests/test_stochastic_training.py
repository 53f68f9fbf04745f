"""Stochastic MuZero in the training program: what it is built from, what it refuses, and a few
compiled iterations that train every term, with reanalysed values and policies."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from mz_jax import Batch
from mz_jax.config.overrides import override
from mz_jax.config.search import SearchConfig
from mz_jax.config.train import NetworkConfig, TrainConfig
from mz_jax.run import metrics
from mz_jax.training.build import build
from mz_jax.training.train import make_train
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


@pytest.mark.parametrize("straight_through", ["softmax", "logits"])
def test_the_config_chooses_what_the_commitment_term_compares_with_the_code(straight_through):
    # The logged commitment term is ||one_hot(argmax) - c^e||^2 with c^e the encoder's logits or
    # their softmax, computed here from the network's own encoder output.
    config = override(
        CONFIG,
        {
            "stochastic.commitment_loss_weight": 1.0,
            "stochastic.chance_straight_through": straight_through,
        },
    )
    components = build(config)
    params = components.init_params(jax.random.key(0))
    rng = np.random.default_rng(0)
    b, k = 4, config.num_unroll_steps
    observations = rng.normal(size=(b, k + 1, 4)).astype(np.float32)
    batch = Batch(
        observation=observations[:, 0],
        actions=rng.integers(0, 2, size=(b, k)).astype(np.int32),
        target_value=np.zeros((b, k + 1), np.float32),
        target_reward=np.zeros((b, k + 1), np.float32),
        target_policy=np.full((b, k + 1, 2), 0.5, np.float32),
        mask=np.ones((b, k + 1), np.float32),
        weight=np.ones(b, np.float32),
        next_observation=observations[:, 1:],
    )
    _, aux = jax.jit(components.loss_fn)(params, batch)
    logits = np.asarray(
        components.network.encode_chance(
            params, observations[:, :-1].reshape(b * k, 4), observations[:, 1:].reshape(b * k, 4)
        ),
        np.float64,
    )
    encoding = logits
    if straight_through == "softmax":
        encoding = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    one_hot = np.eye(logits.shape[-1])[logits.argmax(-1)]
    # The batch mean of each example's sum over its k steps.
    expected = ((one_hot - encoding) ** 2).sum(-1).reshape(b, k).sum(1).mean()
    np.testing.assert_allclose(aux.losses["commitment"], expected, rtol=1e-5)


def test_num_chance_outcomes_is_checked():
    with pytest.raises(ValueError, match=r"'network.num_chance_outcomes' = 0 is invalid"):
        NetworkConfig(num_chance_outcomes=0)


@pytest.mark.parametrize("policy, momentum_encoder", [("muzero", False), ("gumbel", True)])
def test_iterations_train_every_term_and_stay_finite(policy, momentum_encoder):
    # With the consistency term: the states the chance dynamics reach are pulled towards the
    # representations of the observations that followed, encoded with the current parameters or
    # with a moving average of them (SPR's momentum encoder). Acting and the reanalysed policies
    # search with chance nodes by pUCT or by Sequential Halving.
    search = dataclasses.replace(CONFIG.search, policy=policy)
    config = dataclasses.replace(
        CONFIG,
        consistency_loss_weight=1.0,
        search=search,
        target_ema_decay=0.9 if momentum_encoder else 0.0,
        consistency_target_params=momentum_encoder,
    )
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


def test_chance_codes_from_the_environment_are_checked_and_train_on_2048():
    with pytest.raises(
        ValueError,
        match=r"'stochastic.chance_codes' = 'environment' is invalid: allowed "
        r"'learned' for gymnax:CartPole-v1, which does not name",
    ):
        build(override(CONFIG, {"stochastic.chance_codes": "environment"}))
    game = override(CONFIG, {"stochastic.chance_codes": "environment"}).replace(
        env="pgx:2048",
        reanalyse_policy_fraction=0.0,
        network=dataclasses.replace(
            CONFIG.network,
            kind="mlp",
            num_chance_outcomes=32,
            value_support_size=5,
            reward_support_size=5,
        ),
    )
    with pytest.raises(
        ValueError,
        match=r"'network.num_chance_outcomes' = 16 is invalid: allowed "
        r"an integer >= 32",
    ):
        build(game.replace(network=dataclasses.replace(game.network, num_chance_outcomes=16)))
    with pytest.raises(ValueError, match=r"'stochastic.chance_codes' = 'environment' is invalid"):
        build(game.replace(action_repeat=2))
    trainer = make_train(game, devices=jax.devices()[:1])
    state = trainer.init(0)
    params_0 = jax.device_get(state.train.params)
    for _ in range(5):
        state, record = trainer.step(state)
    record = metrics.flatten(jax.device_get(record))
    params = jax.device_get(state.train.params)
    assert np.isfinite(record["loss/total"]).all() and np.all(record["loss/chance"] > 0)
    assert np.all(record["loss/commitment"] == 0)
    # The encoder is not run: its gradient is zero, so AdamW's step is only the decoupled decay,
    # theta <- (1 - lr_t * weight_decay) * theta per update, lr_t <= learning_rate: every weight
    # shrinks toward 0 by a factor in [(1 - learning_rate * weight_decay)^n, 1] after n updates
    # (about 1.5e-6 here), while a gradient step would move it by about learning_rate.
    changed = lambda a, b: bool(np.any(np.asarray(a) != np.asarray(b)))
    assert any(
        jax.tree.leaves(jax.tree.map(changed, params_0["chance_head"], params["chance_head"]))
    )
    updates = int(np.asarray(jax.device_get(state.train.step)).reshape(-1)[0])  # all of them
    assert updates > 0
    least = (1 - game.learning_rate * game.weight_decay) ** updates - 1e-7  # float32 rounding
    for before, after in zip(
        jax.tree.leaves(params_0["encoder_out"]),
        jax.tree.leaves(params["encoder_out"]),
        strict=True,
    ):
        before, after = np.asarray(before, np.float64), np.asarray(after, np.float64)
        nonzero = before != 0
        ratio = after[nonzero] / before[nonzero]
        assert np.all(after[~nonzero] == 0)
        assert np.all((least <= ratio) & (ratio <= 1 + 1e-7)), (ratio.min(), ratio.max(), least)
