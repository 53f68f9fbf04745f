"""Training on mirror images: reflect_batch by hand, each environment's reflection checked against
the environment's own dynamics from a state mirrored by hand, and the config field wired in."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _batches import capture_batches

from mz_jax.config.checks import check_reflection
from mz_jax.config.search import SearchConfig
from mz_jax.config.train import NetworkConfig, TrainConfig
from mz_jax.envs import Reflection, make_env
from mz_jax.training.augment import reflect_batch
from mz_jax.training.build import build
from mz_jax.training.train import make_train
from mz_jax.types import Batch

# A 3-cycle, not its own inverse, so a policy permuted the wrong way round is caught.
CYCLE = Reflection(observation=lambda o: jnp.stack([o[1], -o[0]]), actions=(1, 2, 0))


def _batch(next_observation=True):
    return Batch(
        observation=jnp.array([[1.0, 2.0], [7.0, 8.0]]),
        actions=jnp.array([[0, 2], [1, 1]]),
        target_value=jnp.array([[0.5, 0.6, 0.7], [1.5, 1.6, 1.7]]),
        target_reward=jnp.array([[0.0, 1.0, 2.0], [0.0, 3.0, 4.0]]),
        target_policy=jnp.array(
            [
                [[0.5, 0.3, 0.2], [0.1, 0.0, 0.9], [0.0, 0.0, 0.0]],
                [[0.6, 0.4, 0.0], [0.2, 0.2, 0.6], [0.3, 0.3, 0.4]],
            ]
        ),
        mask=jnp.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]),
        weight=jnp.array([0.25, 1.0]),
        next_observation=(
            jnp.array([[[3.0, 4.0], [5.0, 6.0]], [[9.0, 10.0], [11.0, 12.0]]])
            if next_observation
            else None
        ),
    )


def test_reflect_batch_by_hand():
    out = reflect_batch(_batch(), jnp.array([True, False]), CYCLE)
    # Sequence 0 mirrored: (a, b) -> (b, -a); actions 0 -> 1, 2 -> 0; the probability of action a
    # moves to its image: [p0, p1, p2] -> [p2, p0, p1].
    np.testing.assert_allclose(out.observation, [[2.0, -1.0], [7.0, 8.0]])
    np.testing.assert_allclose(
        out.next_observation, [[[4.0, -3.0], [6.0, -5.0]], [[9.0, 10.0], [11.0, 12.0]]]
    )
    np.testing.assert_array_equal(out.actions, [[1, 0], [1, 1]])
    np.testing.assert_allclose(
        out.target_policy[0], [[0.2, 0.5, 0.3], [0.9, 0.1, 0.0], [0.0, 0.0, 0.0]]
    )
    np.testing.assert_allclose(out.target_policy[1], _batch().target_policy[1])
    for field in ("target_value", "target_reward", "mask", "weight"):
        np.testing.assert_array_equal(getattr(out, field), getattr(_batch(), field), err_msg=field)


def test_reflect_batch_without_next_observations_and_twice_is_the_identity_for_an_involution():
    swap = Reflection(observation=lambda o: o[::-1], actions=(2, 1, 0))
    batch = _batch(next_observation=False)
    flip = jnp.array([True, True])
    once = reflect_batch(batch, flip, swap)
    assert once.next_observation is None
    np.testing.assert_allclose(once.observation, [[2.0, 1.0], [8.0, 7.0]])
    twice = reflect_batch(once, flip, swap)
    for a, b in zip(jax.tree.leaves(twice), jax.tree.leaves(batch), strict=True):
        np.testing.assert_array_equal(a, b)


def _mirror_cartpole(s):
    return s.replace(x=-s.x, x_dot=-s.x_dot, theta=-s.theta, theta_dot=-s.theta_dot)


def _mirror_acrobot(s):
    return s.replace(
        joint_angle1=-s.joint_angle1,
        joint_angle2=-s.joint_angle2,
        velocity_1=-s.velocity_1,
        velocity_2=-s.velocity_2,
    )


def _mirror_catch(s):  # 5 columns
    return s.replace(ball_x=4 - s.ball_x, paddle_x=4 - s.paddle_x)


@pytest.mark.parametrize(
    "name, mirror_state",
    [
        ("gymnax:CartPole-v1", _mirror_cartpole),
        ("gymnax:Acrobot-v1", _mirror_acrobot),
        ("gymnax:Catch-bsuite", _mirror_catch),
    ],
)
def test_a_gymnax_reflection_follows_the_dynamics_from_a_state_mirrored_by_hand(name, mirror_state):
    env = make_env(name)
    reflection = env.reflection
    state, timestep = env.reset(jax.random.key(3))
    mirrored = state._replace(backend=mirror_state(state.backend))
    rng = np.random.default_rng(0)
    step = jax.jit(env.step)
    for t in range(12):
        action = int(rng.integers(env.num_actions))
        key = jax.random.key(100 + t)
        state, timestep = step(key, state, jnp.int32(action))
        mirrored, mirrored_step = step(key, mirrored, jnp.int32(reflection.actions[action]))
        np.testing.assert_allclose(
            mirrored_step.final_observation,
            reflection.observation(timestep.final_observation),
            atol=1e-5,
        )
        assert float(mirrored_step.reward) == float(timestep.reward)
        assert bool(mirrored_step.terminated) == bool(timestep.terminated)
        if timestep.terminated or timestep.truncated:
            break


@pytest.mark.parametrize("name", ["pgx:connect_four", "pgx:tic_tac_toe"])
def test_a_board_reflection_follows_the_game_from_the_same_start(name):
    # The empty board is its own mirror image: play random legal moves and their mirror images.
    env = make_env(name)
    reflection = env.reflection
    images = np.asarray(reflection.actions)
    state, timestep = env.reset(jax.random.key(5))
    mirrored, mirrored_step = state, timestep
    rng = np.random.default_rng(1)
    step = jax.jit(env.step)
    for _ in range(42):
        legal = np.asarray(timestep.legal_action_mask)
        # The move a is legal where its image is legal in the mirrored game.
        np.testing.assert_array_equal(np.asarray(mirrored_step.legal_action_mask)[images], legal)
        action = int(rng.choice(np.flatnonzero(legal)))
        key = jax.random.key(0)
        state, timestep = step(key, state, jnp.int32(action))
        mirrored, mirrored_step = step(key, mirrored, jnp.int32(images[action]))
        np.testing.assert_array_equal(
            mirrored_step.final_observation, reflection.observation(timestep.final_observation)
        )
        assert float(mirrored_step.reward) == float(timestep.reward)
        assert int(mirrored_step.final_player) == int(timestep.final_player)
        if timestep.terminated:
            break
    assert bool(timestep.terminated)


def test_environments_without_a_symmetry_have_none():
    assert make_env("gymnax:MountainCar-v0").reflection is None
    assert make_env("gymnax:Catch-bsuite", columns=4).reflection is None


def test_the_config_is_refused_without_a_symmetry_and_a_bad_permutation_is_named():
    config = TrainConfig(env="gymnax:MountainCar-v0", augment_reflection=True)
    with pytest.raises(ValueError, match=r"'augment_reflection' = True is invalid.*MountainCar"):
        build(config)
    with pytest.raises(ValueError, match=r"custom:x's reflection.actions \(0, 0\) is invalid"):
        check_reflection(Reflection(observation=lambda o: o, actions=(0, 0)), 2, "custom:x")
    with pytest.raises(ValueError, match=r"allowed a permutation of range\(3\)"):
        check_reflection(Reflection(observation=lambda o: o, actions=(1, 0)), 3, "custom:x")


def test_training_mirrors_some_sequences_of_its_batches(monkeypatch):
    # The same seed with and without the reflection: nothing differs before the first update, so it
    # samples the same sequences in both runs, and its batch with the reflection is the one without
    # where each sequence is either kept or mirrored as by hand: CartPole's observations negated,
    # push left and push right swapped in the actions and the policy targets.
    batches = capture_batches(monkeypatch)
    config = TrainConfig(
        env="gymnax:CartPole-v1",
        num_envs=4,
        batch_size=8,
        rollout_length=4,
        updates_per_iteration=2,
        num_unroll_steps=2,
        td_steps=2,
        replay_capacity=64,
        warmup_updates=0,
        consistency_loss_weight=1.0,
        network=NetworkConfig(hidden_sizes=(16,), latent_size=8),
        search=SearchConfig(num_simulations=4),
    )
    first = {}
    for augment in (False, True):
        trainer = make_train(
            dataclasses.replace(config, augment_reflection=augment), devices=jax.devices()[:1]
        )
        state, updates = trainer.init(0), 0
        batches.clear()
        while not batches:
            state, record = trainer.step(state)
            updates += int(jax.device_get(record["optim"]["updates"])[0])
        assert len(batches) == updates == config.updates_per_iteration  # nothing else captured
        first[augment] = batches[0]
    plain, mirrored = first[False], first[True]
    kinds = []
    for i in range(config.batch_size):
        kept = np.array_equal(mirrored.observation[i], plain.observation[i])
        if kept:
            expected = (plain.observation[i], plain.next_observation[i], plain.actions[i])
            policy = plain.target_policy[i]
        else:
            expected = (-plain.observation[i], -plain.next_observation[i], 1 - plain.actions[i])
            policy = plain.target_policy[i][..., ::-1]
        np.testing.assert_array_equal(mirrored.observation[i], expected[0], err_msg=f"{i}")
        np.testing.assert_array_equal(mirrored.next_observation[i], expected[1], err_msg=f"{i}")
        np.testing.assert_array_equal(mirrored.actions[i], expected[2], err_msg=f"{i}")
        np.testing.assert_array_equal(mirrored.target_policy[i], policy, err_msg=f"{i}")
        kinds.append(kept)
    assert 0 < sum(kinds) < config.batch_size, kinds  # both kinds (each sequence flips at 1/2)
    for field in ("target_value", "target_reward", "mask", "weight"):
        np.testing.assert_array_equal(getattr(mirrored, field), getattr(plain, field), field)
