"""The build step and the compiled step around the per-device iteration: N iterations per call equal
N calls, pmap runs the same function, derived search fields are derived (or refused), the logged
learning rate is the one applied, and one rule checks a field wherever it appears."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from mz_jax import networks
from mz_jax.config.search import SearchConfig
from mz_jax.config.train import NetworkConfig, TrainConfig
from mz_jax.mcts.policies import search
from mz_jax.run import metrics
from mz_jax.training import iteration, learner
from mz_jax.training.build import build
from mz_jax.training.train import make_train

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
    reanalyse_values=True,
    target_update_every=2,
    network=NetworkConfig(hidden_sizes=(16,), latent_size=16),
    search=SearchConfig(num_simulations=2),
)


def _plain(tree):
    as_data = lambda x: (
        jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x
    )
    return jax.tree.map(lambda x: np.asarray(as_data(x)), jax.device_get(tree))


def _run(config: TrainConfig, calls: int, *, pmap: bool = False):
    trainer = make_train(config, devices=jax.devices()[:2])
    state = trainer.init(3)
    all_metrics = []
    for _ in range(calls):
        state, m = (trainer.pmap_step if pmap else trainer.step)(state)
        all_metrics.append(_plain(m))
    stacked = jax.tree.map(lambda *xs: np.concatenate(xs), *all_metrics)
    return _plain(state), stacked


def test_a_restored_state_lowers_to_the_program_of_a_fresh_one():
    # gymnax's CartPole state starts with a weakly typed `time = 0`, and a checkpoint restores every
    # leaf strongly typed (as numpy arrays are). Were the types to differ, a resumed run's step
    # would be a second program: compiled again, and cached under another key.
    trainer = make_train(CONFIG, devices=jax.devices()[:1])
    state = trainer.init(0)
    restored = jax.tree.map(
        lambda x: (
            x
            if jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
            else jax.device_put(np.asarray(x), x.sharding)
        ),
        state,
    )
    assert trainer.step.lower(state).as_text() == trainer.step.lower(restored).as_text()
    after, _ = jax.eval_shape(trainer.step, state)
    paths = jax.tree_util.tree_leaves_with_path(after)
    assert not [jax.tree_util.keystr(path) for path, x in paths if x.weak_type]


def test_sampling_the_newest_steps_starts_the_updates_sooner():
    # Two steps a stream each iteration, windows of K + td + 1 = 5 steps. Waiting for whole windows,
    # the first update is in the third iteration (6 steps written); with sample_newest_steps a
    # window needs its K + 1 = 3 unrolled steps only, so the second (4 written) updates too, and
    # its returns stop at the newest step with finite losses.
    _, waiting = _run(CONFIG, calls=4)
    _, newest = _run(CONFIG.replace(sample_newest_steps=True), calls=4)
    np.testing.assert_array_equal(waiting["optim"]["updates"], [0, 0, 1, 1])
    np.testing.assert_array_equal(newest["optim"]["updates"], [0, 1, 1, 1])
    assert np.all(np.isfinite(newest["loss"]["total"][1:]))
    assert np.all(newest["loss"]["value"][1:] > 0)


def test_n_iterations_per_call_equal_n_calls_of_one():
    # Windows of K + td + 1 = 5 steps: updates start in the third iteration, so both the skip and
    # the learn branch run inside the scan.
    one_state, one_metrics = _run(CONFIG, calls=6)
    many_state, many_metrics = _run(CONFIG.replace(iterations_per_call=3), calls=2)
    assert one_metrics["optim"]["updates"].tolist() == [0, 0, 1, 1, 1, 1]
    assert int(many_state.iteration) == 6
    jax.tree.map(np.testing.assert_array_equal, many_state, one_state)
    jax.tree.map(np.testing.assert_array_equal, many_metrics, one_metrics)


def test_pmap_runs_the_same_iterations_per_call():
    config = CONFIG.replace(iterations_per_call=3)
    sharded_state, sharded_metrics = _run(config, calls=2)
    pmap_state, pmap_metrics = _run(config, calls=2, pmap=True)
    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    jax.tree.map(close, pmap_state.train, sharded_state.train)
    jax.tree.map(close, pmap_state.replay, sharded_state.replay)
    jax.tree.map(close, pmap_metrics, sharded_metrics)


def test_metrics_are_one_nested_record_with_every_loss_term():
    _, record = _run(CONFIG, calls=3)
    names = metrics.flatten(record)
    for term in ("total", "value", "reward", "policy", "weight_decay"):
        assert f"loss/{term}" in names
    assert {metrics.LEARNING_RATE, metrics.UPDATES, metrics.NONFINITE_IN_A_ROW} <= set(names)
    assert metrics.NONFINITE_ENV_STEPS in names
    assert metrics.flatten({"a": {"b": 1, "c": {"d": 2}}, "e": 3}) == {"a/b": 1, "a/c/d": 2, "e": 3}


def _scalar_walk(*, max_episode_steps=None):
    """A walk on -2..2 from 0 whose observation is the position as a scalar (shape ()); action 1
    steps right, 0 left; reaching +-2 pays +-1 and ends the episode."""
    from mz_jax.envs import Env, EnvState, TimeStep
    from mz_jax.envs.base import restart

    mask, player = jnp.ones(2, jnp.bool_), jnp.int32(0)

    def reset(key):
        return EnvState(jnp.int32(0), jnp.int32(0)), restart(jnp.float32(0.0), mask, player)

    def step(key, state, action):
        position = state.backend + 2 * action - 1
        done = jnp.abs(position) >= 2
        after = jnp.where(done, 0, position)
        timestep = TimeStep(
            observation=after.astype(jnp.float32),
            legal_action_mask=mask,
            player=player,
            reward=jnp.where(done, jnp.sign(position), 0).astype(jnp.float32),
            terminated=done,
            truncated=jnp.bool_(False),
            final_observation=position.astype(jnp.float32),
            final_player=player,
        )
        return EnvState(after, jnp.where(done, 0, state.episode_step + 1)), timestep

    return Env(
        name="custom:scalar_walk",
        num_actions=2,
        observation_shape=(),
        num_players=1,
        max_episode_steps=max_episode_steps,
        reward_bound=1.0,
        reset=reset,
        step=step,
    )


def test_an_environment_with_scalar_observations_trains(monkeypatch):
    # An observation of shape () reaches the network as one feature: [B] observations, flattened
    # to [B, 1] (the network was once built for [B, 1] and refused the [B] it was given).
    from mz_jax import envs

    monkeypatch.setattr(envs, "_REGISTERED", {})
    envs.register_env("custom:scalar_walk", _scalar_walk)
    config = dataclasses.replace(CONFIG, env="custom:scalar_walk")
    _, record = _run(config, calls=3)
    flat = metrics.flatten(record)
    assert np.all(np.isfinite(flat["loss/total"]))
    assert flat[metrics.UPDATES][-1] > 0  # the learner ran on scalar observations


def test_an_environment_that_states_no_bounds_trains_on_muzeros_wide_supports(monkeypatch):
    # No reward_bound and no support sizes set: MuZero's Atari supports, 601 bins each (Appendix F),
    # rather than a refusal. A stated bound still sizes them tight: 10, the smallest allowed.
    from mz_jax import envs

    unbounded = lambda **kw: dataclasses.replace(_scalar_walk(**kw), reward_bound=None)
    monkeypatch.setattr(envs, "_REGISTERED", {})
    envs.register_env("custom:scalar_walk", _scalar_walk)
    envs.register_env("custom:unbounded_walk", unbounded)
    bounded = build(dataclasses.replace(CONFIG, env="custom:scalar_walk")).network_config
    assert (bounded.value_support_size, bounded.reward_support_size) == (10, 10)
    config = dataclasses.replace(CONFIG, env="custom:unbounded_walk")
    network = build(config).network_config
    assert (network.value_support_size, network.reward_support_size) == (300, 300)
    state, record = _run(config, calls=3)
    widths = {x.shape[-1] for x in jax.tree.leaves(state.train.params)}
    assert 601 in widths
    flat = metrics.flatten(record)
    assert np.all(np.isfinite(flat["loss/total"])) and flat[metrics.UPDATES][-1] > 0


def test_logged_learning_rate_is_the_rate_applied_after_skipped_updates():
    # Linear warm-up 0, 0.5, 1.0, ... of the applied updates. Two non-finite batches are skipped:
    # they must not advance the schedule, so the next good update applies (and reports) rate 0.
    schedule = learner.make_schedule(learning_rate=1.0, warmup_updates=2, decay_updates=None)
    optimizer = learner.make_optimizer(
        optimizer="sgd", learning_rate=schedule, momentum=0.0, max_grad_norm=100.0
    )
    loss_fn = lambda params, batch: (jnp.sum(params["w"] * batch), (None,))

    def step(state, batch):
        (_, _), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, batch)
        rate = schedule(learner.applied_updates(state.opt_state))
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        return learner.TrainState(
            optax.apply_updates(state.params, updates), opt_state, state.step + 1
        ), rate

    state = learner.init_train_state({"w": jnp.ones(2)}, optimizer)
    rates = []
    for batch in (jnp.full(2, jnp.nan), jnp.full(2, jnp.nan), jnp.ones(2), jnp.ones(2)):
        state, rate = step(state, batch)
        rates.append(float(rate))
    assert rates == [0.0, 0.0, 0.0, 0.5]  # step counts 0, 1, 2, 3 would say 0, 0.5, 1, 1
    assert int(state.step) == 4
    np.testing.assert_allclose(state.params["w"], [0.5, 0.5])  # 1 - 0 * 1 - 0.5 * 1


def test_build_derives_the_search_fields_and_draws_parameters_once_called():
    components = build(CONFIG)
    assert components.search_config.discount == CONFIG.discount
    assert components.search_config.two_player is False
    ttt = build(
        CONFIG.replace(env="pgx:tic_tac_toe", discount=1.0, search=SearchConfig(num_simulations=2))
    )
    assert ttt.search_config.two_player is True
    params = components.init_params(jax.random.key(0))
    again = components.init_params(jax.random.key(0))
    jax.tree.map(np.testing.assert_array_equal, params, again)
    assert networks.count_params(params) > 0


def test_a_search_field_that_disagrees_is_refused_not_replaced():
    with pytest.raises(ValueError, match=r"'search.discount' = 0.5 is invalid.*discount \(0.99\)"):
        TrainConfig(discount=0.99, search=SearchConfig(discount=0.5))
    TrainConfig(discount=0.99, search=SearchConfig(discount=0.99))  # agreeing is fine
    with pytest.raises(ValueError, match=r"'search.two_player' = True is invalid.*1 player"):
        build(CONFIG.replace(search=SearchConfig(num_simulations=2, two_player=True)))


def test_a_direct_search_needs_the_derived_fields_set():
    network, init = networks.mlp_network(
        observation_shape=(3,),
        num_actions=2,
        hidden_sizes=(8,),
        latent_size=8,
        value_support_size=2,
        reward_support_size=2,
    )
    params = init(jax.random.key(0))
    args = (params, jax.random.key(1), jnp.zeros((1, 3)), jnp.ones((1, 2), bool))
    with pytest.raises(ValueError, match=r"SearchConfig\.discount is None"):
        search(*args, network=network, config=SearchConfig(num_simulations=2))
    config = SearchConfig(num_simulations=2, discount=0.9, two_player=False)
    direct = jax.jit(functools.partial(search, network=network, config=config))
    assert direct(*args).action.shape == (1,)


@pytest.mark.parametrize(
    "field, value, in_config, in_factory",
    [
        ("latent_size", 1, lambda v: NetworkConfig(latent_size=v), {"latent_size": 1}),
        ("num_blocks", -1, lambda v: NetworkConfig(num_blocks=v), {"num_blocks": -1}),
        ("discount", 0.0, lambda v: SearchConfig(discount=v), None),
    ],
)
def test_one_rule_per_field_wherever_it_appears(field, value, in_config, in_factory):
    with pytest.raises(ValueError) as from_config:
        in_config(value)
    allowed = str(from_config.value).split("allowed ", 1)[1]
    if field == "discount":  # the training discount: the same rule, the same words
        with pytest.raises(ValueError) as from_training:
            TrainConfig(discount=value)
        assert str(from_training.value).endswith(allowed)
        return
    factory = networks.make_mlp_network if field == "latent_size" else networks.make_resnet_network
    shape = (3,) if field == "latent_size" else (4, 4, 1)
    with pytest.raises(ValueError) as from_factory:
        factory(jax.random.key(0), observation_shape=shape, num_actions=2, **in_factory)
    assert f"'{field}' = {value!r} is invalid" in str(from_factory.value)
    assert str(from_factory.value).endswith(allowed)
    # The boundary value is accepted by both.
    in_config(value + 1)


def test_random_action_anneal_reaches_its_final_probability_at_its_fraction_of_the_run():
    # 6 iterations of 8 envs x 2 steps = 96 env steps. ε falls from 1 to 0 over the first half:
    # at the start of iterations 0..5 (progress i/6) it is 1, 2/3, 1/3, 0, 0, 0.
    config = CONFIG.replace(
        total_env_steps=96,
        replay_capacity=8 * 12,
        random_action_probability=1.0,
        random_action_anneal=(0.0, 0.5),
    )
    state, _ = _run(config, calls=6)
    exploratory = state.replay.data.exploratory  # [12 slots, 8 envs], written in order
    per_iteration = exploratory.reshape(6, 2 * 8).mean(axis=1)
    # ε = 1 plays a uniform random action: it differs from the search's in about half the steps.
    assert 0.2 < per_iteration[0] < 0.8
    np.testing.assert_array_equal(per_iteration[3:], 0.0)
    # The same run without the anneal keeps exploring to the end.
    state, _ = _run(config.replace(random_action_anneal=None), calls=6)
    assert state.replay.data.exploratory[6:].mean() > 0.2


@pytest.mark.parametrize(
    "progress, expected", [(0.0, 0.3), (0.25, 0.175), (0.5, 0.05), (0.9, 0.05)]
)
def test_random_action_probability_is_a_straight_line_then_flat(progress, expected):
    # From 0.3 to 0.05 over the first half of the run: 0.3 - 0.25 * progress / 0.5, by hand.
    epsilon = iteration.random_action_probability_at(0.3, (0.05, 0.5), jnp.float32(progress))
    np.testing.assert_allclose(float(epsilon), expected, rtol=1e-6)
    assert iteration.random_action_probability_at(0.3, None, jnp.float32(progress)) == 0.3
