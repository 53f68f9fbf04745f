"""Compiled self-play: rollout shapes, auto-reset across episode boundaries, truncation bootstrap values,
episode statistics and determinism; greedy evaluation against a random player."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mz_jax import networks
from mz_jax.config.search import SearchConfig
from mz_jax.envs import make_env
from mz_jax.training import actor
from mz_jax.training import evaluate as evaluate_lib

TIME_LIMIT, NUM_ENVS, NUM_STEPS = 5, 3, 12


@pytest.fixture(scope="module")
def setup():
    # CartPole cannot fail within 5 steps of a reset (|x| < 2.4 and |theta| < 12 degrees need more),
    # so every episode here ends by truncation at exactly the time limit.
    env = make_env("gymnax:CartPole-v1", max_episode_steps=TIME_LIMIT)
    network, params = networks.make_mlp_network(
        jax.random.key(0),
        observation_shape=(4,),
        num_actions=2,
        hidden_sizes=(8,),
        latent_size=8,
        value_support_size=3,
        reward_support_size=3,
    )
    # Move the zero-initialised heads off zero, so values (and bootstrap values) are not all 0.
    leaves, treedef = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.key(1), len(leaves))
    params = jax.tree.unflatten(
        treedef,
        [x + 0.3 * jax.random.normal(k, x.shape) for x, k in zip(leaves, keys, strict=True)],
    )
    config = SearchConfig(
        policy="gumbel",
        num_simulations=2,
        max_num_considered_actions=2,
        discount=0.997,
        two_player=False,
    )

    @jax.jit
    def run(key):
        state = actor.init_actor(env, jax.random.key(7), num_envs=NUM_ENVS)
        return actor.rollout(
            params, key, state, env=env, network=network, search_config=config, num_steps=NUM_STEPS
        )

    return env, network, params, config, run


def test_rollout_shapes_and_dtypes(setup):
    _, _, _, _, run = setup
    _, trajectory, _ = run(jax.random.key(0))
    t, e = NUM_STEPS, NUM_ENVS
    expected = {
        "observation": ((t, e, 4), jnp.float32),
        "action": ((t, e), jnp.int32),
        "reward": ((t, e), jnp.float32),
        "terminated": ((t, e), jnp.bool_),
        "truncated": ((t, e), jnp.bool_),
        "policy": ((t, e, 2), jnp.float32),
        "root_value": ((t, e), jnp.float32),
        "player": ((t, e), jnp.int32),
        "legal_action_mask": ((t, e, 2), jnp.bool_),
        "bootstrap_value": ((t, e), jnp.float32),
    }
    for name, (shape, dtype) in expected.items():
        leaf = getattr(trajectory, name)
        assert leaf.shape == shape and leaf.dtype == dtype, name
    np.testing.assert_allclose(trajectory.policy.sum(-1), 1.0, rtol=1e-5)
    assert np.all(trajectory.player == 0) and np.all(trajectory.legal_action_mask)


def test_episodes_reset_themselves_at_the_time_limit(setup):
    _, _, _, _, run = setup
    state, trajectory, stats = run(jax.random.key(0))
    steps = np.arange(NUM_STEPS)[:, None]
    truncated = np.asarray(trajectory.truncated)
    # Transitions 4 and 9 end the 5-step episodes (rows t where t % 5 == 4).
    np.testing.assert_array_equal(truncated, np.broadcast_to(steps % 5 == 4, truncated.shape))
    assert not np.any(trajectory.terminated)
    np.testing.assert_array_equal(trajectory.reward, 1.0)  # CartPole pays 1 per step
    # The row after each ending is a fresh start: CartPole resets every component in [-0.05, 0.05].
    fresh = np.asarray(trajectory.observation)[[5, 10]]
    assert np.all(np.abs(fresh) <= 0.05)
    # Two episodes of 5 steps in each of 3 environments; 2 steps into the third.
    assert (int(stats.episodes), float(stats.return_sum), int(stats.length_sum)) == (6, 30.0, 30)
    np.testing.assert_array_equal(state.episode_length, 2)
    np.testing.assert_array_equal(state.episode_return, 2.0)
    assert int(stats.nonfinite) == 0


def test_truncation_carries_a_bootstrap_value_and_nothing_else_does(setup):
    _, _, _, _, run = setup
    _, trajectory, _ = run(jax.random.key(0))
    bootstrap = np.asarray(trajectory.bootstrap_value)
    truncated = np.asarray(trajectory.truncated)
    assert np.all(bootstrap[~truncated] == 0.0)
    assert np.all(bootstrap[truncated] != 0.0)  # the (perturbed) network's value of the final state


def test_rollout_is_deterministic_for_a_key(setup):
    _, _, _, _, run = setup
    first = run(jax.random.key(3))
    again = run(jax.random.key(3))
    jax.tree.map(np.testing.assert_array_equal, first, again)
    other = run(jax.random.key(4))
    assert not np.array_equal(first[1].observation, other[1].observation)


def test_evaluation_plays_one_greedy_episode_per_environment(setup):
    env, network, params, config, _ = setup
    result = jax.jit(
        lambda key: evaluate_lib.evaluate(
            params,
            key,
            env=env,
            network=network,
            search_config=config,
            num_episodes=4,
            max_steps=TIME_LIMIT + 3,
        )
    )(jax.random.key(0))
    # Each first episode ends at the time limit; steps after it are not counted.
    np.testing.assert_array_equal(result.episode_length, TIME_LIMIT)
    np.testing.assert_array_equal(result.episode_return, float(TIME_LIMIT))
    assert np.all(result.completed)


def test_evaluation_stops_stepping_once_every_episode_has_ended(setup):
    env, network, params, config, _ = setup
    steps = []

    def counted_step(key, state, action):
        jax.debug.callback(lambda: steps.append(1))
        return env.step(key, state, action)

    counting_env = dataclasses.replace(env, step=counted_step)

    def evaluate(max_steps):
        steps.clear()
        result = evaluate_lib.evaluate(
            params,
            jax.random.key(0),
            env=counting_env,
            network=network,
            search_config=config,
            num_episodes=3,
            max_steps=max_steps,
        )
        jax.block_until_ready(result)
        return jax.device_get(result), len(steps)

    # Every episode is truncated after TIME_LIMIT steps: a budget 100 times longer takes no more steps
    # (the callback runs once per episode and step under vmap, or once per step).
    result, calls = evaluate(100 * TIME_LIMIT)
    assert calls in (TIME_LIMIT, 3 * TIME_LIMIT)
    np.testing.assert_array_equal(result.episode_length, TIME_LIMIT)
    assert np.all(result.completed)
    # A budget shorter than the episodes stops them unfinished, after exactly that many steps.
    result, calls = evaluate(TIME_LIMIT - 2)
    assert calls in (TIME_LIMIT - 2, 3 * (TIME_LIMIT - 2))
    np.testing.assert_array_equal(result.episode_length, TIME_LIMIT - 2)
    np.testing.assert_array_equal(result.episode_return, float(TIME_LIMIT - 2))
    assert not np.any(result.completed)


def test_evaluation_against_a_random_player_in_both_seats():
    env = make_env("pgx:tic_tac_toe")
    network, params = networks.make_mlp_network(
        jax.random.key(0),
        observation_shape=env.observation_shape,
        num_actions=9,
        hidden_sizes=(8,),
        latent_size=8,
        value_support_size=3,
        reward_support_size=3,
    )
    config = SearchConfig(num_simulations=2, two_player=True, discount=1.0)
    result = evaluate_lib.evaluate(
        params,
        jax.random.key(1),
        env=env,
        network=network,
        search_config=config,
        num_episodes=8,
        max_steps=9,
        opponent="random",
    )
    assert np.all(result.completed)  # tic-tac-toe ends within 9 moves
    assert set(np.unique(result.episode_return)) <= {-1.0, 0.0, 1.0}
    assert np.all((result.episode_length >= 5) & (result.episode_length <= 9))
    with pytest.raises(ValueError, match="two-player"):
        evaluate_lib.evaluate(
            params,
            jax.random.key(1),
            env=make_env("gymnax:CartPole-v1"),
            network=network,
            search_config=config,
            num_episodes=2,
            max_steps=2,
            opponent="random",
        )


def test_random_action_probability_explores_uniformly_over_legal_moves():
    env = make_env("pgx:tic_tac_toe")
    network, params = networks.make_mlp_network(
        jax.random.key(0),
        observation_shape=(3, 3, 2),
        num_actions=9,
        hidden_sizes=(8,),
        latent_size=8,
    )
    config = SearchConfig(policy="gumbel", num_simulations=2, two_player=True, discount=1.0)
    num_envs = 900

    @jax.jit
    def first_moves(key, probability_key_case):
        state = actor.init_actor(env, jax.random.key(3), num_envs=num_envs)
        # After one move per environment, the second move has 8 legal cells.
        state, _, _ = actor.rollout(
            params,
            jax.random.key(4),
            state,
            env=env,
            network=network,
            search_config=config,
            num_steps=1,
        )
        results = []
        for probability in probability_key_case:
            _, trajectory, _ = actor.rollout(
                params,
                key,
                state,
                env=env,
                network=network,
                search_config=config,
                num_steps=1,
                random_action_probability=probability,
            )
            results.append(
                (trajectory.action[0], trajectory.legal_action_mask[0], trajectory.policy[0])
            )
        return results

    (plain, legal, policy), (all_random, _, policy_1), (half, _, _) = jax.device_get(
        first_moves(jax.random.key(5), (0.0, 1.0, 0.5))
    )
    rows = np.arange(num_envs)
    assert legal.sum(axis=1).min() == 8
    for actions in (plain, all_random, half):
        assert legal[rows, actions].all()
    # p = 1: uniform over the 8 legal cells. Count each action's rank among its row's legal cells.
    ranks = np.array([np.flatnonzero(legal[i]).tolist().index(a) for i, a in enumerate(all_random)])
    counts = np.bincount(ranks, minlength=8)
    expected = num_envs / 8
    chi_square = float(((counts - expected) ** 2 / expected).sum())
    assert chi_square < 24.3, counts  # 7 degrees of freedom, p = 0.001
    # The policy target stays the search's.
    np.testing.assert_array_equal(policy_1, policy)
    # p = 0.5: an environment differs from the search's move when it explores (1/2) and the random
    # move is another cell (7/8): 7/16 of them.
    changed = float(np.mean(half != plain))
    assert abs(changed - 7 / 16) < 0.06, changed


def test_zeta_durations_follow_n_to_the_minus_exponent():
    draws = np.asarray(actor.zeta_durations(jax.random.key(0), 2.0, (200_000,)))
    assert draws.min() >= 1 and draws.max() <= actor.MAX_EXPLORATION_REPEAT
    # P(n) = n^-2 / sum_{m <= 10^4} m^-2; the sum is pi^2 / 6 less a tail of about 1 / 10^4.
    normaliser = np.pi**2 / 6 - 1e-4
    for n in (1, 2, 3):
        expected = n**-2.0 / normaliser  # 0.608, 0.152, 0.068
        observed = float(np.mean(draws == n))
        assert abs(observed - expected) < 4 * np.sqrt(expected / 200_000), (n, observed)


def test_exploratory_actions_are_repeated_for_their_drawn_durations():
    """εz-greedy, stepped one step at a time: a repeated action is played until its steps run out
    (or the episode ends), and the durations of fresh draws follow the zeta distribution."""
    env = make_env("gymnax:CartPole-v1")
    network, params = networks.make_mlp_network(
        jax.random.key(0), observation_shape=(4,), num_actions=2, hidden_sizes=(8,), latent_size=8
    )
    config = SearchConfig(
        policy="gumbel",
        num_simulations=2,
        max_num_considered_actions=2,
        discount=0.99,
        two_player=False,
    )
    num_envs, epsilon, exponent = 512, 0.3, 2.0

    @jax.jit
    def step(state, key):
        return actor.rollout(
            params,
            key,
            state,
            env=env,
            network=network,
            search_config=config,
            num_steps=1,
            random_action_probability=epsilon,
            exploration_repeat_exponent=exponent,
        )

    state = actor.init_actor(env, jax.random.key(1), num_envs=num_envs, repeat_exploration=True)
    fresh_long, free_steps, lengths = 0, 0, []
    for i in range(40):
        before = jax.device_get(state)
        state, trajectory, _ = step(state, jax.random.key(100 + i))
        after, data = jax.device_get((state, trajectory))
        action = data.action[0]
        done = data.terminated[0] | data.truncated[0]
        repeating = before.explore_steps_left > 0
        # A repeated action is played (CartPole's actions are always legal) and counts down.
        np.testing.assert_array_equal(action[repeating], before.explore_action[repeating])
        expected_left = np.where(done, 0, before.explore_steps_left - 1)
        np.testing.assert_array_equal(after.explore_steps_left[repeating], expected_left[repeating])
        # No episode carries a repetition into the next one.
        assert (after.explore_steps_left[done] == 0).all()
        # Where nothing was repeated, a fresh draw lasting n >= 2 steps leaves n - 1 > 0 steps.
        free = ~repeating & ~done
        free_steps += int(free.sum())
        started = free & (after.explore_steps_left > 0)
        fresh_long += int(started.sum())
        lengths += (after.explore_steps_left[started] + 1).tolist()
        np.testing.assert_array_equal(action[started], after.explore_action[started])
    # P(a draw) * P(n >= 2) = 0.3 * (1 - 0.608) = 0.118 of the free steps.
    p_long = epsilon * (1 - 6 / np.pi**2)
    rate = fresh_long / free_steps
    assert abs(rate - p_long) < 4 * np.sqrt(p_long / free_steps), rate
    # Given n >= 2: P(n = 2) = (1/4) / (pi^2/6 - 1) = 0.388.
    share_two = float(np.mean(np.asarray(lengths) == 2))
    expected_two = 0.25 / (np.pi**2 / 6 - 1)
    assert abs(share_two - expected_two) < 4 * np.sqrt(expected_two / len(lengths)), share_two


@pytest.mark.parametrize(
    "exponent, repeat_exploration, message",
    [
        (1.0, True, r"'exploration_repeat_exponent' = 1.0 .* \(1.0, 100.0\]"),
        (2.0, False, "repeat_exploration=True"),
    ],
    ids=["exponent of 1", "state without the carry"],
)
def test_repeated_exploration_is_refused_with_a_message(
    setup, exponent, repeat_exploration, message
):
    env, network, params, config, _ = setup
    state = actor.init_actor(
        env, jax.random.key(7), num_envs=NUM_ENVS, repeat_exploration=repeat_exploration
    )
    with pytest.raises(ValueError, match=message):
        actor.rollout(
            params,
            jax.random.key(0),
            state,
            env=env,
            network=network,
            search_config=config,
            num_steps=1,
            random_action_probability=0.1,
            exploration_repeat_exponent=exponent,
        )


def test_only_repeated_exploration_adds_to_the_actor_state(setup):
    env = setup[0]
    plain = actor.init_actor(env, jax.random.key(7), num_envs=NUM_ENVS)
    # Without repetition the state has exactly the leaves it had before εz-greedy (checkpoints of
    # older runs keep restoring); with it, two [E] int32 arrays more.
    carrying = actor.init_actor(env, jax.random.key(7), num_envs=NUM_ENVS, repeat_exploration=True)
    assert len(jax.tree.leaves(carrying)) == len(jax.tree.leaves(plain)) + 2
    assert plain.explore_action is None and plain.explore_steps_left is None
    assert carrying.explore_steps_left.shape == (NUM_ENVS,)
    assert carrying.explore_steps_left.dtype == jnp.int32
