"""Decoupled weight decay in :func:`mz_jax.training.learner.make_optimizer`, and ``Env.reward_bound``.

Expected optimiser updates are computed here in numpy from the published update rules: AdamW
(Loshchilov & Hutter 2019, Algorithm 2, with Adam's bias-corrected moments of Kingma & Ba 2015) and
SGDW (the same paper's Algorithm 1: momentum on the gradient, the decay added outside it). The
reward bounds are checked against random play and against hand-built states that reach them.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from mz_jax import envs
from mz_jax.envs import Env, gymnax_adapter, list_envs, make_env, pgx_adapter
from mz_jax.training import learner

PARAMS = {"b": np.array([0.3], np.float32), "w": np.array([0.5, -1.0, 2.0], np.float32)}
GRADS = [
    {"b": np.array([0.05], np.float32), "w": np.array([0.1, -0.2, 0.3], np.float32)},
    {"b": np.array([-0.4], np.float32), "w": np.array([0.02, 0.5, -0.1], np.float32)},
]
BIG_NORM = 1e6  # no clipping


def _run(optimizer, grads_seq, params=PARAMS):
    """Applies ``optimizer`` to ``grads_seq``; returns the updates and the final state."""
    params = jax.tree.map(jnp.asarray, params)
    state = optimizer.init(params)
    all_updates = []
    for grads in grads_seq:
        updates, state = optimizer.update(jax.tree.map(jnp.asarray, grads), state, params)
        params = optax.apply_updates(params, updates)
        all_updates.append(jax.tree.map(np.asarray, updates))
    return all_updates, state


def _schedule(count):
    return 0.1 * (count + 1.0)  # 0.1 at the first update, 0.2 at the second


# --- decoupled weight decay -------------------------------------------------------------------


def test_adamw_matches_hand_computed_steps_and_decay_follows_the_schedule():
    wd, b1, b2, eps = 0.05, 0.9, 0.999, 1e-8
    optimizer = learner.make_optimizer(
        optimizer="adam", learning_rate=_schedule, max_grad_norm=BIG_NORM, weight_decay=wd
    )
    updates, state = _run(optimizer, GRADS)

    theta = {k: v.astype(np.float64) for k, v in PARAMS.items()}
    m = {k: np.zeros_like(v) for k, v in theta.items()}
    v = {k: np.zeros_like(x) for k, x in theta.items()}
    for t, grads in enumerate(GRADS, start=1):
        lr = 0.1 * t
        for k in theta:
            g = grads[k].astype(np.float64)
            m[k] = b1 * m[k] + (1 - b1) * g
            v[k] = b2 * v[k] + (1 - b2) * g**2
            m_hat = m[k] / (1 - b1**t)
            v_hat = v[k] / (1 - b2**t)
            expected = -lr * (m_hat / (np.sqrt(v_hat) + eps) + wd * theta[k])
            np.testing.assert_allclose(updates[t - 1][k], expected, rtol=2e-5, atol=1e-7)
            theta[k] = theta[k] + expected
    assert int(learner.applied_updates(state)) == 2


def test_sgdw_matches_hand_computed_momentum_steps_with_decay_outside_the_momentum():
    lr, mu, wd = 0.1, 0.9, 0.2
    optimizer = learner.make_optimizer(
        optimizer="sgd", learning_rate=lr, momentum=mu, max_grad_norm=BIG_NORM, weight_decay=wd
    )
    updates, _ = _run(optimizer, GRADS)

    for k in PARAMS:
        theta0 = PARAMS[k].astype(np.float64)
        g1, g2 = (g[k].astype(np.float64) for g in GRADS)
        trace1 = g1
        u1 = -lr * (trace1 + wd * theta0)
        theta1 = theta0 + u1
        trace2 = g2 + mu * trace1  # optax.trace: g + mu * previous trace
        u2 = -lr * (trace2 + wd * theta1)
        np.testing.assert_allclose(updates[0][k], u1, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(updates[1][k], u2, rtol=1e-5, atol=1e-7)
        # Coupled L2 (decay fed through the momentum) would differ by -lr * mu * wd * theta0.
        coupled = -lr * ((g2 + wd * theta1) + mu * (g1 + wd * theta0))
        assert not np.allclose(updates[1][k], coupled, rtol=1e-3, atol=1e-6)


def test_clipping_applies_to_the_gradient_not_to_the_decay():
    lr, wd = 1.0, 0.1
    grads = {
        "b": np.array([0.0], np.float32),
        "w": np.array([1.0, -2.0, 2.0], np.float32),
    }  # norm 3
    optimizer = learner.make_optimizer(
        optimizer="sgd", learning_rate=lr, momentum=0.0, max_grad_norm=1.5, weight_decay=wd
    )
    (updates,), _ = _run(optimizer, [grads])
    for k in PARAMS:
        np.testing.assert_allclose(
            updates[k], -lr * (grads[k] / 2.0 + wd * PARAMS[k]), rtol=1e-6, atol=1e-7
        )


@pytest.mark.parametrize("kind", ["adam", "sgd"])
def test_zero_weight_decay_is_exactly_the_optimizer_of_before(kind):
    lr, clip, mu = 3e-3, 5.0, 0.9
    base = optax.adam(lr) if kind == "adam" else optax.sgd(lr, momentum=mu)
    reference = optax.apply_if_finite(
        optax.chain(optax.clip_by_global_norm(clip), base),
        max_consecutive_errors=jnp.iinfo(jnp.int32).max,
    )
    ours = learner.make_optimizer(
        optimizer=kind, learning_rate=lr, momentum=mu, max_grad_norm=clip, weight_decay=0.0
    )
    default = learner.make_optimizer(
        optimizer=kind, learning_rate=lr, momentum=mu, max_grad_norm=clip
    )
    params = jax.tree.map(jnp.asarray, PARAMS)
    ref_updates, ref_state = _run(reference, GRADS)
    for optimizer in (ours, default):
        assert jax.tree.structure(optimizer.init(params)) == jax.tree.structure(
            reference.init(params)
        )
        ours_updates, ours_state = _run(optimizer, GRADS)
        for got, want in zip(ours_updates, ref_updates, strict=True):
            jax.tree.map(np.testing.assert_array_equal, got, want)
        jax.tree.map(np.testing.assert_array_equal, ours_state, ref_state)


@pytest.mark.parametrize("kind", ["adam", "sgd"])
@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
def test_applied_updates_counts_for_every_variant(kind, weight_decay):
    optimizer = learner.make_optimizer(
        optimizer=kind, learning_rate=_schedule, max_grad_norm=BIG_NORM, weight_decay=weight_decay
    )
    params = jax.tree.map(jnp.asarray, PARAMS)
    state = optimizer.init(params)
    assert int(learner.applied_updates(state)) == 0
    nan_grads = jax.tree.map(lambda g: jnp.full_like(g, jnp.nan), params)
    for grads in (GRADS[0], nan_grads, GRADS[1]):  # the non-finite one is skipped, not counted
        _, state = optimizer.update(jax.tree.map(jnp.asarray, grads), state, params)
    assert int(learner.applied_updates(state)) == 2
    assert int(learner.nonfinite_counts(state)[1]) == 1
    schedule_states = [
        s
        for s in jax.tree.leaves(state, is_leaf=lambda x: isinstance(x, optax.ScaleByScheduleState))
        if isinstance(s, optax.ScaleByScheduleState)
    ]
    assert len(schedule_states) == 1  # applied_updates reads the one and only count


@pytest.mark.parametrize("bad", [-1e-4, math.nan, math.inf, -math.inf, True, "0.1", None])
def test_weight_decay_must_be_a_finite_nonnegative_float(bad):
    with pytest.raises(ValueError, match=r"weight_decay.*\[0, inf\)") as info:
        learner.make_optimizer(optimizer="adam", weight_decay=bad)
    assert repr(bad) in str(info.value)


# --- reward bounds ----------------------------------------------------------------------------


def test_cartpole_reward_bound_is_one():
    assert make_env("gymnax:CartPole-v1").reward_bound == 1.0


def test_reward_bound_is_keyword_only_and_defaults_to_none():
    def reset(key):
        return None

    def step(key, state, action):
        return None

    positional = Env("custom:x", 2, (3,), 1, None, reset, step)  # as written before the field
    assert positional.reward_bound is None and positional.step is step
    bounded = Env("custom:x", 2, (3,), 1, None, reset, step, reward_bound=2.5)
    assert bounded.reward_bound == 2.5


def test_a_registered_factory_keeps_its_reward_bound(monkeypatch):
    def factory(*, max_episode_steps=None):
        return Env(
            name="custom:bounded",
            num_actions=2,
            observation_shape=(1,),
            num_players=1,
            max_episode_steps=max_episode_steps,
            reset=lambda key: None,
            step=lambda key, state, action: None,
            reward_bound=7.0,
        )

    monkeypatch.setitem(envs._REGISTERED, "custom:bounded", factory)
    assert make_env("custom:bounded", max_episode_steps=3).reward_bound == 7.0


def test_frozen_lake_bound_follows_its_reward_schedule():
    assert make_env("gymnax:FrozenLake-misc").reward_bound == 1.0
    env = make_env("gymnax:FrozenLake-misc", reward_schedule=(2.0, -3.0, 0.0))
    assert env.reward_bound == 3.0


def test_every_listed_environment_has_a_deliberate_entry():
    """A new gymnax id or pgx game gets None silently; the tables must name every listed one."""
    for name in list_envs():
        backend, _, env_id = name.partition(":")
        table = {"gymnax": gymnax_adapter.REWARD_BOUNDS, "pgx": pgx_adapter.REWARD_BOUNDS}.get(
            backend
        )
        if table is not None:
            assert env_id in table, name
            bound = table[env_id]
            assert bound is None or (math.isfinite(bound) and bound > 0), name


# Compiling a rollout costs seconds per environment (minutes for all of list_envs()), so random play
# checks a cheap subset (gymnax classic control, bsuite and misc, pgx card games) including bounds
# above 1 that random play reaches (leduc_holdem and MetaMaze reach theirs exactly); the others
# were read off the sources (see the REWARD_BOUNDS tables).
QUICK = (
    "gymnax:MountainCar-v0",
    "gymnax:DeepSea-bsuite",
    "gymnax:MetaMaze-misc",
    "pgx:kuhn_poker",
    "pgx:leduc_holdem",
)


def _max_abs_reward(env, key, num_envs=4, steps=200):
    def one(key):
        reset_key, steps_key = jax.random.split(key)
        state, timestep = env.reset(reset_key)

        def body(carry, key):
            state, timestep = carry
            action_key, step_key = jax.random.split(key)
            logits = jnp.where(timestep.legal_action_mask, 0.0, -jnp.inf)
            action = jax.random.categorical(action_key, logits).astype(jnp.int32)
            state, timestep = env.step(step_key, state, action)
            return (state, timestep), jnp.abs(timestep.reward)

        _, rewards = jax.lax.scan(body, (state, timestep), jax.random.split(steps_key, steps))
        return rewards.max()

    return float(jax.jit(jax.vmap(one))(jax.random.split(key, num_envs)).max())


@pytest.mark.parametrize("name", QUICK)
def test_random_play_stays_within_the_bound(name):
    env = make_env(name, max_episode_steps=50 if name.startswith("pgx:") else None)
    assert env.reward_bound is not None
    assert _max_abs_reward(env, jax.random.key(0)) <= env.reward_bound


def test_space_invaders_bound_two_is_reached():
    """One alien hit a step, except in the step whose border move wraps row 9 to row 0 (terminal):
    then a shot at the top row and one lower down can both hit."""
    import gymnax

    env, params = gymnax.make("SpaceInvaders-MinAtar")
    _, state = env.reset_env(jax.random.key(0), params)
    aliens = jnp.zeros((10, 10)).at[6:10, 0:6].set(1.0).at[8, 4].set(0.0)
    shots = jnp.zeros((10, 10)).at[1, 3].set(1.0).at[8, 4].set(1.0)  # move up a row first
    state = state.replace(
        alien_map=aliens, f_bullet_map=shots, alien_dir=-1, alien_move_timer=0, pos=9, shot_timer=3
    )
    _, _, reward, done, _ = jax.jit(env.step_env)(jax.random.key(1), state, 0, params)
    assert float(reward) == 2.0 and bool(done)
    assert make_env("gymnax:SpaceInvaders-MinAtar").reward_bound == 2.0
