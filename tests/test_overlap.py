"""Acting overlapped with learning (``overlap_acting``): the same run as in turn where the
parameters do not change, rollouts played with the parameters one iteration older where they do,
and the wait shares in the run's records."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_host_envs import CORRIDOR, tiny

from mz_jax.config.overrides import override
from mz_jax.training.overlap import OverlappedStep
from mz_jax.training.train import make_train

CARTPOLE = "gymnax:CartPole-v1"


def copy(tree):
    return jax.tree.map(jnp.copy, tree)


def assert_trees_equal(a, b, *, what: str):
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(leaves_a) == len(leaves_b), what
    for x, y in zip(leaves_a, leaves_b, strict=True):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        x, y = np.asarray(x), np.asarray(y)
        if np.issubdtype(x.dtype, np.floating):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6, err_msg=what)
        else:
            np.testing.assert_array_equal(x, y, err_msg=what)


def run(config, iterations: int):
    trainer = make_train(config)
    state = trainer.init(config.seed)
    records = []
    try:
        for _ in range(iterations):
            state, metrics = trainer.step(state)
            records.append(jax.device_get(metrics))
    finally:
        trainer.close()
    return state, records


@pytest.mark.parametrize("env", [CARTPOLE, CORRIDOR])
def test_without_updates_the_overlapped_run_is_the_run_in_turn(env):
    """With no updates the parameters never change, so a rollout one iteration behind plays as
    the in-turn one: same replay, actors, keys and records (the actor thread and the environment's
    callbacks from it included)."""
    config = tiny(env, updates_per_iteration=0, total_env_steps=None)
    in_turn, turn_records = run(override(config, {"overlap_acting": False}), 5)
    overlapped, overlap_records = run(override(config, {"overlap_acting": True}), 5)
    assert_trees_equal(overlapped, in_turn, what="run state")
    for turn, over in zip(turn_records, overlap_records, strict=True):
        shares = over.pop("overlap")
        for share in shares.values():
            assert np.all((share >= 0) & (share <= 1))
        assert_trees_equal(over, turn, what="records")


def test_a_rollout_plays_with_the_parameters_from_before_the_last_updates():
    """Overlapped, iteration 3's rollout is played with iteration 1's parameters: the actors and the
    replay rows it wrote are those of the in-turn iteration from state 2 given state 1's
    parameters."""
    config = tiny(CARTPOLE, total_env_steps=None, replay_capacity=64, min_replay_steps=0)
    trainer = make_train(override(config, {"overlap_acting": True}))
    assert isinstance(trainer.step, OverlappedStep)
    in_turn = make_train(override(config, {"overlap_acting": False}))
    try:
        state = trainer.init(3)
        states = [copy(state)]
        for _ in range(3):
            state, metrics = trainer.step(state)
            states.append(copy(state))
    finally:
        trainer.close()
    assert np.all(metrics["optim"]["updates"] == 1)
    params_1, params_2 = states[1].train.params, states[2].train.params
    changed = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), params_1, params_2)
    assert any(jax.tree.leaves(changed)), "iteration 2 must change the parameters"

    stale = states[2]._replace(train=states[2].train._replace(params=params_1))
    expected, _ = in_turn.step(stale)
    assert_trees_equal(states[3].actor, expected.actor, what="actors")
    rows = slice(2 * config.rollout_length, 3 * config.rollout_length)
    for name in ("observation", "action", "reward", "policy"):
        got = getattr(states[3].replay.data, name)
        want = getattr(expected.replay.data, name)
        assert_trees_equal(got[rows], want[rows], what=name)
