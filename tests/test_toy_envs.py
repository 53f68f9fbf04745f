"""``toy:gamble``: transitions played by hand, and the returns of three policies worked out by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mz_jax.envs import list_envs, make_env


@pytest.fixture(scope="module")
def gamble():
    return make_env("toy:gamble")


def one_hot(i):
    return np.eye(5, dtype=np.float32)[i]


START, SAFE, HEADS, TAILS, END = range(5)  # the order the module documents


def test_is_listed_and_has_its_attributes(gamble):
    assert "toy:gamble" in list_envs()
    assert (gamble.num_actions, gamble.observation_shape, gamble.num_players) == (2, (5,), 1)
    assert (gamble.max_episode_steps, gamble.reward_bound, gamble.return_bound) == (2, 1.0, 1.0)


def test_the_safe_branch_pays_its_payoff_and_restarts(gamble):
    state, ts = gamble.reset(jax.random.key(0))
    np.testing.assert_array_equal(ts.observation, one_hot(START))
    state, ts = gamble.step(jax.random.key(1), state, jnp.int32(0))
    np.testing.assert_array_equal(ts.observation, one_hot(SAFE))
    assert (float(ts.reward), bool(ts.terminated), bool(ts.truncated)) == (0.0, False, False)
    for action in (0, 1):
        _, end = gamble.step(jax.random.key(2), state, jnp.int32(action))
        assert float(end.reward) == pytest.approx(0.75)
        assert bool(end.terminated) and not bool(end.truncated)
        np.testing.assert_array_equal(end.final_observation, one_hot(END))
        np.testing.assert_array_equal(end.observation, one_hot(START))  # already restarted


def test_the_coin_is_seen_and_only_the_matching_move_pays(gamble):
    state, _ = gamble.reset(jax.random.key(0))
    seen = {}
    for k in range(40):
        after, ts = gamble.step(jax.random.key(k), state, jnp.int32(1))
        side = int(np.argmax(ts.observation))
        assert side in (HEADS, TAILS) and float(ts.reward) == 0.0
        for action in (0, 1):
            _, end = gamble.step(jax.random.key(99), after, jnp.int32(action))
            pays = (side == HEADS and action == 0) or (side == TAILS and action == 1)
            seen[side, action] = float(end.reward)
            assert float(end.reward) == (1.0 if pays else 0.0)
    assert {side for side, _ in seen} == {HEADS, TAILS}


@pytest.mark.parametrize(
    "policy, expected",
    [
        # Safe: 0.75. Gamble then match the coin: 1. Gamble then always action 0 (what a plan made
        # before seeing the coin can do): 1/2. Uniformly random: (0.75 + 1/2) / 2 = 0.625.
        ("safe", 0.75),
        ("match", 1.0),
        ("open_loop", 0.5),
        ("random", 0.625),
    ],
)
def test_returns_of_policies_worked_out_by_hand(gamble, policy, expected):
    n = 8000

    def episode(key):
        k_reset, k1, k2, k3, k4 = jax.random.split(key, 5)
        state, _ = gamble.reset(k_reset)
        first = {"safe": 0, "match": 1, "open_loop": 1, "random": None}[policy]
        a1 = jax.random.randint(k3, (), 0, 2) if first is None else jnp.int32(first)
        state, ts1 = gamble.step(k1, state, a1)
        heads = ts1.observation[HEADS] > 0
        a2 = {
            "safe": jnp.int32(0),
            "match": jnp.where(heads, 0, 1).astype(jnp.int32),
            "open_loop": jnp.int32(0),
            "random": jax.random.randint(k4, (), 0, 2),
        }[policy]
        _, ts2 = gamble.step(k2, state, a2)
        return ts1.reward + ts2.reward, ts2.terminated

    returns, ended = jax.jit(jax.vmap(episode))(jax.random.split(jax.random.key(7), n))
    assert bool(jnp.all(ended))
    # Each return is in [0, 1], so its standard deviation is at most 1/2: 5 standard errors.
    assert float(returns.mean()) == pytest.approx(expected, abs=5 * 0.5 / np.sqrt(n))


def test_a_time_limit_of_one_truncates_after_the_first_move():
    env = make_env("toy:gamble", max_episode_steps=1)
    state, _ = env.reset(jax.random.key(0))
    _, ts = env.step(jax.random.key(1), state, jnp.int32(0))
    assert bool(ts.truncated) and not bool(ts.terminated)
    np.testing.assert_array_equal(ts.final_observation, one_hot(SAFE))
    np.testing.assert_array_equal(ts.observation, one_hot(START))


def test_safe_payoff_sets_the_sure_branch_and_is_checked():
    env = make_env("toy:gamble", safe_payoff=0.9)
    state, _ = env.reset(jax.random.key(0))
    state, _ = env.step(jax.random.key(1), state, jnp.int32(0))
    assert float(env.step(jax.random.key(2), state, jnp.int32(1))[1].reward) == pytest.approx(0.9)
    with pytest.raises(ValueError, match=r"safe_payoff must be in \[0, 1\], got 1.5"):
        make_env("toy:gamble", safe_payoff=1.5)
    with pytest.raises(ValueError, match="Bad keyword arguments \\['payoff'\\] for 'toy:gamble'"):
        make_env("toy:gamble", payoff=0.7)
    with pytest.raises(ValueError, match=r"Unknown environment name 'toy:gambel'.*toy:gamble"):
        make_env("toy:gambel")


def _walk(env, actions):
    """Plays ``actions`` from a reset; returns the time steps."""
    state, _ = env.reset(jax.random.key(0))
    steps = []
    for a in actions:
        state, ts = env.step(jax.random.key(1), state, jnp.int32(a))
        steps.append(ts)
    return steps


def test_detour_pays_only_at_the_door_with_the_key():
    env = make_env("toy:detour", length=5)  # cells 0..4, start 2, door 4, limit 20
    assert (env.num_actions, env.observation_shape, env.max_episode_steps) == (2, (6,), 20)
    assert (env.reward_bound, env.return_bound) == (1.0, 1.0)
    _, first = env.reset(jax.random.key(0))
    np.testing.assert_array_equal(first.observation, [0, 0, 1, 0, 0, 0])
    # Straight to the door without the key: the door stays shut, a move into the wall stays put.
    straight = _walk(env, [1, 1, 1])
    np.testing.assert_array_equal(straight[1].observation, [0, 0, 0, 0, 1, 0])
    np.testing.assert_array_equal(straight[2].observation, [0, 0, 0, 0, 1, 0])
    assert [float(t.reward) for t in straight] == [0, 0, 0]
    assert not any(bool(t.terminated) for t in straight)
    # The shortest solution: 2 left (the key in cell 0), then 4 right; 2 * 5 - 4 = 6 moves.
    solved = _walk(env, [0, 0, 1, 1, 1, 1])
    np.testing.assert_array_equal(solved[1].observation, [1, 0, 0, 0, 0, 1])  # key held
    np.testing.assert_array_equal(solved[4].observation, [0, 0, 0, 1, 0, 1])
    assert [float(t.reward) for t in solved] == [0, 0, 0, 0, 0, 1]
    assert bool(solved[-1].terminated) and not bool(solved[-1].truncated)
    np.testing.assert_array_equal(solved[-1].final_observation, [0, 0, 0, 0, 1, 1])
    np.testing.assert_array_equal(solved[-1].observation, [0, 0, 1, 0, 0, 0])  # restarted


def test_detour_truncates_at_its_limit_and_can_state_no_bounds():
    env = make_env("toy:detour", length=4, max_episode_steps=3)
    steps = _walk(env, [0, 0, 0, 0])
    assert [bool(t.truncated) for t in steps] == [False, False, True, False]
    np.testing.assert_array_equal(steps[2].final_observation, [1, 0, 0, 0, 1])
    np.testing.assert_array_equal(steps[2].observation, [0, 1, 0, 0, 0])  # start, no key
    quiet = make_env("toy:detour", state_bounds=False)
    assert (quiet.reward_bound, quiet.return_bound, quiet.observation_shape) == (None, None, (11,))
    with pytest.raises(ValueError, match="length must be an integer >= 4, got 3"):
        make_env("toy:detour", length=3)
