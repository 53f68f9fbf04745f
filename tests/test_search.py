"""Tests of mz_jax.mcts.policies: scripted networks with values worked out by hand, and legality over pgx games.

The scripted networks are plain ``jax.numpy`` functions; their value and reward heads emit the logits of
a known scalar (``log`` of its categorical target), so the decoded numbers are known exactly.

Compiling a search takes seconds on a CPU, so the tests share compiled searches: every call goes
through ``_search`` (one jit), and tests that only need another input reuse the static arguments and
shapes of an earlier one.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pgx
import pytest

from mz_jax.config.search import SearchConfig
from mz_jax.core import transforms
from mz_jax.mcts.model import make_recurrent_fn, make_root_fn
from mz_jax.mcts.policies import SearchOutput, search
from mz_jax.types import ModelOutput, MuZeroNetwork

SUPPORT = 3  # 7 bins: h(x) reaches 3 at |x| ≈ 15, far beyond the numbers used here.


def _scalar_logits(x):
    """``[B] -> [B, 2S + 1]``: logits whose softmax is the categorical target of ``x``."""
    return jnp.log(transforms.scalar_to_support(x, SUPPORT) + 1e-30)


def _output(value, reward, policy_logits) -> ModelOutput:
    return ModelOutput(_scalar_logits(value), _scalar_logits(reward), policy_logits)


@functools.partial(jax.jit, static_argnames=("network", "config", "greedy"))
def _search(params, key, observation, mask, temperature=1.0, *, network, config, greedy=False):
    return search(
        params,
        key,
        observation,
        mask,
        network=network,
        config=config,
        temperature=temperature,
        greedy=greedy,
    )


# --- A four-armed bandit ------------------------------------------------------------------------
# One decision: arm a pays ARM_REWARDS[a]; every later step pays 0 and every value is 0, so the search's
# Q-value of arm a is exactly ARM_REWARDS[a]. The prior favours the worst arm, 0, and ties the others.
ARM_REWARDS = jnp.array([0.1, 0.3, 0.9, 0.5])
BANDIT_PRIOR = jnp.array([1.0, 0.0, 0.0, 0.0])


def _bandit_initial(params, observation):
    del params
    batch = observation.shape[0]
    zeros = jnp.zeros(batch)
    # ``0 * observation`` lets a NaN observation poison the prior (test_non_finite_root_...).
    prior = BANDIT_PRIOR[None, :] + 0.0 * observation
    return _output(zeros, zeros, prior), jnp.zeros((batch, 1))  # hidden: the depth


def _bandit_recurrent(params, depth, action):
    del params
    reward = jnp.where(depth[:, 0] == 0, ARM_REWARDS[action], 0.0)
    zeros = jnp.zeros_like(reward)
    return _output(zeros, reward, jnp.zeros((reward.shape[0], 4))), depth + 1


BANDIT = MuZeroNetwork(_bandit_initial, _bandit_recurrent)
# Row 0: all arms legal. Row 1: the best arm (2) is illegal, so the best legal arm is 3.
BANDIT_MASK = jnp.array([[True, True, True, True], [True, True, False, True]])
BANDIT_OBS = jnp.zeros((2, 1))
# A direct call of search() names the MDP's discount and players (training derives them).
MDP = dict(discount=0.997, two_player=False)
BANDIT_MUZERO = SearchConfig(policy="muzero", num_simulations=32, value_bounds=(0.0, 1.0), **MDP)
BANDIT_GUMBEL = SearchConfig(policy="gumbel", num_simulations=16, **MDP)


def _bandit(config, key=0, observation=BANDIT_OBS):
    return _search(
        None,
        jax.random.key(key),
        observation,
        BANDIT_MASK,
        network=BANDIT,
        config=config,
        greedy=True,
    )


@pytest.mark.parametrize(
    "config",
    [
        # With known bounds an unvisited arm is worth the minimum, and 0.9 stands out at once.
        BANDIT_MUZERO,
        # Normalising Q by the parent and its siblings makes the first arm tried (the prior's, worth
        # 0.1) look best until pUCT's exploration term overtakes it: that takes many simulations.
        SearchConfig(policy="muzero", num_simulations=128, **MDP),
    ],
    ids=["value_bounds", "parent_and_siblings"],
)
def test_muzero_policy_finds_the_best_arm_greedily(config):
    out = _bandit(config)
    n = config.num_simulations
    assert isinstance(out, SearchOutput)
    np.testing.assert_array_equal(out.action, [2, 3])
    np.testing.assert_array_equal(out.has_legal_action, [True, True])
    policy = np.asarray(out.policy)
    assert policy[0, 2] > 0.5 and policy[1, 3] > 0.5, policy
    assert policy[1, 2] == 0.0
    np.testing.assert_allclose(policy.sum(-1), 1.0, rtol=1e-6)
    # The root value is the running mean of the root's own value (0) and the N returns, each the
    # reward of the arm that simulation took: (0 + sum_a n_a r_a) / (N + 1), with n_a = policy * N.
    visits = np.rint(policy * n)
    np.testing.assert_array_equal(visits.sum(-1), n)
    expected = (visits * np.asarray(ARM_REWARDS)).sum(-1) / (n + 1)
    np.testing.assert_allclose(out.root_value, expected, rtol=1e-5)
    # Most simulations go to the 0.9 arm: the value approaches (but cannot reach) 0.9 * N / (N + 1).
    assert 0.6 < float(out.root_value[0]) < 0.9 * n / (n + 1)


def test_gumbel_policy_matches_sequential_halving_by_hand():
    out = _bandit(BANDIT_GUMBEL)
    np.testing.assert_array_equal(out.action, [2, 3])
    # Row 0, Sequential Halving over 4 arms with 16 simulations (Danihelka et al. 2022, Sec. 3.2):
    # log2(4) = 2 phases of 8; phase 1 visits each arm 16 // (2 * 4) = 2 times; phase 2 keeps the two
    # best by prior + sigma(q) (arms 2 and 3, q 0.9 and 0.5) and visits each 16 // (2 * 2) = 4 times.
    # Visits (2, 2, 6, 6): root value (0 + 2*0.1 + 2*0.3 + 6*0.9 + 6*0.5) / 17 = 9.2 / 17.
    np.testing.assert_allclose(out.root_value[0], 9.2 / 17, rtol=1e-5)
    # The policy target is softmax(prior + sigma(q)); all arms are visited so the completed Q is the
    # arm's reward, rescaled to [0, 1] by (q - 0.1) / 0.8 = (0, 0.25, 1, 0.5), and
    # sigma = (maxvisit_init + max visits) * value_scale * q = (50 + 6) * 0.1 * q.
    logits = np.array([1.0, 0.0, 0.0, 0.0]) + 5.6 * np.array([0.0, 0.25, 1.0, 0.5])
    expected = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(out.policy[0], expected, rtol=1e-5)
    assert expected[2] > 0.9
    # Row 1: the illegal best arm gets no weight at all.
    assert float(out.policy[1, 2]) == 0.0
    np.testing.assert_allclose(out.policy[1].sum(), 1.0, rtol=1e-6)


@pytest.mark.parametrize("min_range", [0.4, 2.0])
def test_rescale_min_range_floors_the_range_the_gumbel_q_values_are_divided_by(min_range):
    # The bandit's Q-values span 0.9 - 0.1 = 0.8 in row 0. A floor of 0.4 lies below that range and
    # changes nothing; a floor of 2.0 divides by 2.0 instead of 0.8, so the arms' completed Q become
    # (q - 0.1) / 2 = (0, 0.1, 0.4, 0.2) rather than (0, 0.25, 1, 0.5). Sequential Halving keeps the
    # same arms either way (2 and 3 lead at every stage), so the visits and sigma's factor
    # (50 + 6) * 0.1 are those of test_gumbel_policy_matches_sequential_halving_by_hand.
    out = _bandit(dataclasses.replace(BANDIT_GUMBEL, rescale_min_range=min_range))
    np.testing.assert_array_equal(out.action, [2, 3])
    np.testing.assert_allclose(out.root_value[0], 9.2 / 17, rtol=1e-5)
    scaled = (np.array([0.1, 0.3, 0.9, 0.5]) - 0.1) / max(0.8, min_range)
    logits = np.array([1.0, 0.0, 0.0, 0.0]) + 5.6 * scaled
    expected = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(out.policy[0], expected, rtol=1e-5)
    if min_range > 0.8:  # a flatter target: the best arm's weight 0.61 rather than 0.93
        assert 0.55 < expected[2] < 0.65


def test_muzero_completed_q_target_is_gumbels_improved_policy_on_the_puct_tree():
    # The same pUCT search (greedy, so the same tree). Its visit counts, read off the visit-count
    # target, enter the completed-Q target only through the largest (sigma's factor below); which
    # of the tied arms mctx's tie-breaking noise sends the first visits to changes the others.
    visits = np.rint(np.asarray(_bandit(BANDIT_MUZERO).policy) * 32)
    np.testing.assert_array_equal(visits.sum(-1), [32, 32])
    assert visits[1, 2] == 0  # illegal
    np.testing.assert_array_equal(visits.argmax(-1), [2, 3])  # the best legal arms lead
    most = visits.max(-1)
    config = dataclasses.replace(BANDIT_MUZERO, policy_target="completed_q")
    out = _bandit(config)
    np.testing.assert_array_equal(out.action, [2, 3])  # acting still follows the visits
    prior = np.array([1.0, 0.0, 0.0, 0.0])
    softmax = lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    # Row 0: every arm visited, so the completed Q is the arm's reward, rescaled to [0, 1] by
    # (q - 0.1) / 0.8; sigma = (maxvisit_init + max visits) * value_scale * q.
    assert np.all(visits[0] > 0)
    row0 = softmax(prior + (50 + most[0]) * 0.1 * np.array([0.0, 0.25, 1.0, 0.5]))
    np.testing.assert_allclose(out.policy[0], row0, rtol=1e-5)
    # Row 1: arm 2 is illegal and unvisited. Its completed Q is the mixed value
    # (raw value 0 + N * sum_visited pi q / sum_visited pi) / (N + 1), with pi the prior over the
    # visited arms 0, 1, 3: (e, 1, 1) / (e + 2); it takes part in the rescaling, not in the target.
    pi = np.array([math.e, 1.0, 1.0]) / (math.e + 2)
    v_mix = 32 * (pi @ np.array([0.1, 0.3, 0.5])) / 33
    completed = np.array([0.1, 0.3, v_mix, 0.5])
    scaled = (completed - 0.1) / 0.4
    assert np.all(visits[1, [0, 1, 3]] > 0)
    logits = prior + (50 + most[1]) * 0.1 * scaled
    row1 = np.zeros(4)
    row1[[0, 1, 3]] = softmax(logits[[0, 1, 3]])
    np.testing.assert_allclose(out.policy[1], row1, rtol=1e-5, atol=1e-7)
    assert float(out.policy[1, 2]) == 0.0


def test_policy_target_is_checked():
    with pytest.raises(
        ValueError,
        match=r"search\.policy_target' = 'q' is invalid: allowed 'visits' or 'completed_q'",
    ):
        SearchConfig(policy_target="q")


@pytest.mark.parametrize("config", [BANDIT_MUZERO, BANDIT_GUMBEL], ids=["muzero", "gumbel"])
def test_greedy_is_deterministic_across_keys(config):
    # Arms 1..3 tie in the prior, so pUCT's random tie-breaking decides which is tried first: with
    # the caller's key the muzero visit counts differ from key to key (checked: (3, 1, 23, 5) with
    # key 0, (3, 1, 26, 2) with key 1).
    first = _bandit(config, key=0)
    for key in (1, 2):
        for a, b in zip(first, _bandit(config, key=key), strict=True):
            np.testing.assert_array_equal(a, b)


def test_non_finite_root_prediction_is_reported_not_hidden():
    observation = jnp.array([[0.0], [jnp.nan]])
    for config in (BANDIT_MUZERO, BANDIT_GUMBEL):
        out = _bandit(config, observation=observation)
        assert np.all(np.isfinite(out.policy[0])) and np.isfinite(out.root_value[0])
        assert np.all(np.isnan(out.policy[1])) and np.isnan(out.root_value[1])
        # The search itself ran on finite stand-ins: the action is still legal.
        assert bool(BANDIT_MASK[1, int(out.action[1])])


# --- A chain with one action: the search is deterministic and every return is known ------------------
# Depth d has value CHAIN_VALUES[d]; the transition into depth d pays CHAIN_REWARDS[d]. In a two-player
# game the players alternate: depth 1 is the opponent's state and the reward into depth 2 is the
# opponent's, so both count negatively for the root player.
CHAIN_VALUES = jnp.array([0.2, 0.4, -0.6, 0.8, 0.0])
CHAIN_REWARDS = jnp.array([0.0, 0.5, 1.0, 0.25, 0.0])


def _chain_initial(params, observation):
    del params
    depth = jnp.zeros(observation.shape[0], jnp.int32)
    return _output(
        CHAIN_VALUES[depth], jnp.zeros(depth.shape), jnp.zeros((depth.shape[0], 1))
    ), depth


def _chain_recurrent(params, depth, action):
    del params, action
    depth = jnp.minimum(depth + 1, 4)
    return _output(CHAIN_VALUES[depth], CHAIN_REWARDS[depth], jnp.zeros((depth.shape[0], 1))), depth


CHAIN = MuZeroNetwork(_chain_initial, _chain_recurrent)


@pytest.mark.parametrize(
    ("two_player", "expected"),
    [
        # d = 0.9. Simulation k expands depth k; its return is G_k = sum_{j<=k} d^(j-1) r_j + d^k v_k:
        # G1 = 0.5 + 0.9*0.4 = 0.86; G2 = 0.5 + 0.9*1 + 0.81*(-0.6) = 0.914;
        # G3 = 0.5 + 0.9 + 0.81*0.25 + 0.729*0.8 = 2.1857. Root: (0.2 + G1 + G2 + G3) / 4.
        (False, (0.2 + 0.86 + 0.914 + 2.1857) / 4),
        # d = -0.9: G1 = 0.5 - 0.36 = 0.14; G2 = 0.5 - 0.9 - 0.486 = -0.886;
        # G3 = 0.5 - 0.9 + 0.2025 - 0.5832 = -0.7807. Root: (0.2 + G1 + G2 + G3) / 4.
        (True, (0.2 + 0.14 - 0.886 - 0.7807) / 4),
    ],
)
def test_chain_root_value_uses_minus_discount_between_players(two_player, expected):
    # With one action both policies build the same chain; the Gumbel one compiles faster.
    config = SearchConfig(policy="gumbel", num_simulations=3, discount=0.9, two_player=two_player)
    out = _search(
        None,
        jax.random.key(1),
        jnp.zeros((1, 1)),
        jnp.ones((1, 1), bool),
        network=CHAIN,
        config=config,
    )
    np.testing.assert_allclose(out.root_value, [expected], rtol=1e-5)


def test_root_and_recurrent_fns_decode_and_sign_the_discount():
    @jax.jit
    def run(depth):
        key = jax.random.key(0)
        action = jnp.zeros(2, jnp.int32)
        two = make_recurrent_fn(CHAIN, discount=0.9, two_player=True)(None, key, action, depth)
        one = make_recurrent_fn(CHAIN, discount=0.9, two_player=False)(None, key, action, depth)
        return two, one, make_root_fn(CHAIN)(None, key, jnp.zeros((2, 1)))

    (step, next_depth), (single_step, _), root = run(jnp.array([0, 1]))
    np.testing.assert_array_equal(next_depth, [1, 2])
    np.testing.assert_allclose(step.discount, [-0.9, -0.9])
    np.testing.assert_allclose(single_step.discount, [0.9, 0.9])
    np.testing.assert_allclose(step.reward, [0.5, 1.0], rtol=1e-5)
    np.testing.assert_allclose(step.value, [0.4, -0.6], rtol=1e-5)
    np.testing.assert_allclose(root.value, [0.2, 0.2], rtol=1e-5)
    assert root.prior_logits.dtype == jnp.float32


# --- A two-ply game where the opponent's reply decides --------------------------------------------
# The root player moves (prior strongly favouring 0, reward 0); then the opponent moves: after root
# action 0 every reply pays the opponent 1, after root action 1 nothing. Every value is 0.
def _reply_initial(params, observation):
    del params
    batch = observation.shape[0]
    zeros = jnp.zeros(batch)
    prior = jnp.broadcast_to(jnp.array([2.0, 0.0]), (batch, 2))
    return _output(zeros, zeros, prior), jnp.zeros((batch, 2))  # hidden: (depth, first action)


def _reply_recurrent(params, hidden, action):
    del params
    depth, first = hidden[:, 0], hidden[:, 1]
    reward = jnp.where((depth == 1) & (first == 0), 1.0, 0.0)
    first = jnp.where(depth == 0, action.astype(jnp.float32), first)
    zeros = jnp.zeros_like(reward)
    prior = jnp.zeros((reward.shape[0], 2))
    return _output(zeros, reward, prior), jnp.stack([depth + 1, first], axis=-1)


REPLY = MuZeroNetwork(_reply_initial, _reply_recurrent)


def test_two_player_muzero_search_avoids_the_opponents_win():
    config = SearchConfig(policy="muzero", num_simulations=16, two_player=True, discount=1.0)
    out = _search(
        None,
        jax.random.key(0),
        jnp.zeros((1, 1)),
        jnp.ones((1, 2), bool),
        network=REPLY,
        config=config,
        greedy=True,
    )
    # The opponent's 1 is the root player's -1 (read as one player's rewards it would be a prize,
    # and 0 would be played): play 1, worth 0. Visits to 0 can only lower the root's mean.
    assert int(out.action[0]) == 1
    assert float(out.policy[0, 1]) > 0.5
    assert -1.0 <= float(out.root_value[0]) <= 0.0


# --- Shapes and config --------------------------------------------------------------------------------
def test_shape_mismatches_raise():
    # Raised while tracing: eval_shape traces without compiling or running anything.
    def trace(observation, mask, temperature=1.0):
        config = SearchConfig(num_simulations=2, **MDP)
        return jax.eval_shape(
            lambda: search(
                None,
                jax.random.key(0),
                observation,
                mask,
                network=BANDIT,
                config=config,
                temperature=temperature,
            )
        )

    with pytest.raises(ValueError, match="batch"):
        trace(jnp.zeros((3, 1)), BANDIT_MASK)
    with pytest.raises(ValueError, match="policy_logits"):
        trace(BANDIT_OBS, jnp.ones((2, 5), bool))
    with pytest.raises(ValueError, match=r"legal_action_mask must have shape \[B, A\]"):
        trace(BANDIT_OBS, jnp.ones(4, bool))
    with pytest.raises(ValueError, match="temperature"):
        trace(BANDIT_OBS, BANDIT_MASK, temperature=-1.0)
    assert trace(BANDIT_OBS, BANDIT_MASK).policy.shape == (2, 4)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("policy", "alphazero"),
        ("num_simulations", 0),
        ("num_simulations", 8.0),
        ("num_simulations", True),
        ("discount", 1.5),
        ("discount", -0.1),
        ("discount", math.nan),
        ("two_player", 1),
        ("dirichlet_alpha", 0.0),
        ("dirichlet_fraction", 1.5),
        ("pb_c_init", -1.0),
        ("pb_c_base", 0.0),
        ("max_depth", 0),
        ("max_num_considered_actions", 0),
        ("gumbel_scale", -1.0),
        ("value_scale", 0.0),
        ("maxvisit_init", -1.0),
        ("rescale_values", "yes"),
        ("rescale_min_range", 0.0),
        ("rescale_min_range", -0.1),
        ("value_bounds", (1.0, -1.0)),
        ("value_bounds", (0.0,)),
    ],
)
def test_bad_config_raises(field, value):
    with pytest.raises(ValueError, match=field) as info:
        SearchConfig(**{field: value})
    assert repr(value) in str(info.value)


def test_config_coerces_integral_floats():
    config = SearchConfig(dirichlet_alpha=1, discount=1, value_bounds=[-1, 1])
    assert isinstance(config.dirichlet_alpha, float) and isinstance(config.discount, float)
    assert config.value_bounds == (-1.0, 1.0)


# --- Legality over random positions of pgx games ------------------------------------------------------
# Three games padded to othello's 65 actions (the padding is never legal) and 128 board features, so
# that one compiled search per policy covers all of them.
GAMES = (("tic_tac_toe", 9), ("connect_four", 30), ("othello", 60))  # (env_id, most random moves)
STATES_PER_GAME = 1024
NUM_ACTIONS, BOARD_SIZE, HIDDEN = 65, 128, 16
POSITION_CONFIGS = {
    policy: SearchConfig(policy=policy, num_simulations=8, two_player=True, discount=0.997)
    for policy in ("muzero", "gumbel")
}


def _random_params(key):
    """Untrained, non-zero weights: priors are far from uniform."""
    keys = jax.random.split(key, 5)
    return {
        "embed": jax.random.normal(keys[0], (BOARD_SIZE, HIDDEN)) / math.sqrt(BOARD_SIZE),
        "dynamics": jax.random.normal(keys[1], (HIDDEN + NUM_ACTIONS, HIDDEN)) / math.sqrt(HIDDEN),
        "policy": 2.0 * jax.random.normal(keys[2], (HIDDEN, NUM_ACTIONS)),
        "value": jax.random.normal(keys[3], (HIDDEN, 2 * SUPPORT + 1)),
        "reward": jax.random.normal(keys[4], (HIDDEN, 2 * SUPPORT + 1)),
    }


def _heads(params, hidden):
    return hidden @ params["value"], hidden @ params["reward"], hidden @ params["policy"]


def _random_initial(params, observation):
    # The observation ends with the legal mask, and the prior adds 4 to every *illegal* action: an
    # action choice that leaked past the mask would show.
    board, legal = observation[:, :BOARD_SIZE], observation[:, BOARD_SIZE:]
    hidden = jnp.tanh(board @ params["embed"])
    value, reward, policy = _heads(params, hidden)
    return ModelOutput(value, reward, policy + 4.0 * (1.0 - legal)), hidden


def _random_recurrent(params, hidden, action):
    inputs = jnp.concatenate([hidden, jax.nn.one_hot(action, NUM_ACTIONS)], axis=-1)
    hidden = jnp.tanh(inputs @ params["dynamics"])
    return ModelOutput(*_heads(params, hidden)), hidden


RANDOM_NET = MuZeroNetwork(_random_initial, _random_recurrent)


def _random_positions(key, *, env_id, max_steps):
    # pgx builds some of a game's constant arrays on its first construction and keeps them: built
    # first under this jit, they would leak its tracers into every later use of the game.
    pgx.make(env_id)
    return _random_positions_traced(key, env_id=env_id, max_steps=max_steps)


@functools.partial(jax.jit, static_argnames=("env_id", "max_steps"))
def _random_positions_traced(key, *, env_id, max_steps):
    """States after a random number (0..max_steps) of uniformly random legal moves, padded.

    Returns ``(observation [N, 128 + 65] float32, legal mask [N, 65] bool, terminated [N] bool)``; a
    terminated game has no legal action (pgx marks all actions legal there; an actor would not).
    """
    env = pgx.make(env_id)
    init_key, steps_key, play_key = jax.random.split(key, 3)
    state = jax.vmap(env.init)(jax.random.split(init_key, STATES_PER_GAME))
    num_steps = jax.random.randint(steps_key, (STATES_PER_GAME,), 0, max_steps + 1)

    def play(t, carry):
        state, key = carry
        key, action_key = jax.random.split(key)
        logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(action_key, logits)
        moving = (t < num_steps) & ~state.terminated
        stepped = jax.vmap(env.step)(state, action)
        state = jax.tree.map(
            lambda new, old: jnp.where(moving.reshape((-1,) + (1,) * (new.ndim - 1)), new, old),
            stepped,
            state,
        )
        return state, key

    state, _ = jax.lax.fori_loop(0, max_steps, play, (state, play_key))
    legal = state.legal_action_mask & ~state.terminated[:, None]
    legal = jnp.pad(legal, ((0, 0), (0, NUM_ACTIONS - env.num_actions)))
    board = state.observation.reshape(STATES_PER_GAME, -1).astype(jnp.float32)
    board = jnp.pad(board, ((0, 0), (0, BOARD_SIZE - board.shape[-1])))
    observation = jnp.concatenate([board, legal.astype(jnp.float32)], axis=-1)
    return observation, legal, state.terminated


@pytest.fixture(scope="module")
def positions():
    """Random positions of three games: observation, legal mask, terminated, game index per row."""
    parts = [
        _random_positions(jax.random.key(i), env_id=env_id, max_steps=max_steps)
        for i, (env_id, max_steps) in enumerate(GAMES)
    ]
    observation, legal, terminated = (jnp.concatenate(p) for p in zip(*parts, strict=True))
    game = np.repeat(np.arange(len(GAMES)), STATES_PER_GAME)
    return observation, legal, np.asarray(terminated), game


@pytest.fixture(scope="module")
def random_params():
    return _random_params(jax.random.key(13))


def _search_positions(params, positions, policy, temperature, key=14):
    observation, legal, _, _ = positions
    return _search(
        params,
        jax.random.key(key),
        observation,
        legal,
        jnp.float32(temperature),
        network=RANDOM_NET,
        config=POSITION_CONFIGS[policy],
    )


def test_no_illegal_action_over_random_positions(positions, random_params):
    observation, legal, terminated, game = positions
    legal = np.asarray(legal)
    rows = np.arange(legal.shape[0])
    has_legal = legal.any(-1)
    np.testing.assert_array_equal(has_legal, ~terminated)
    assert has_legal.sum() > 2000
    # Finished games occur (tic-tac-toe and connect four end within their random moves).
    assert (~has_legal[game == 0]).sum() > 50 and (~has_legal[game == 1]).sum() > 50
    # The prior's favourite is illegal in most positions of every game, so the mask is exercised.
    favourite = np.asarray(
        jnp.argmax(_random_initial(random_params, observation)[0].policy_logits, -1)
    )
    for g in range(len(GAMES)):
        live = has_legal & (game == g)
        assert np.mean(~legal[rows, favourite][live]) > 0.5, GAMES[g]

    # A high temperature spreads the muzero action over everything it visited.
    for policy, temperature in (("muzero", 1.0), ("muzero", 50.0), ("gumbel", 1.0)):
        out = _search_positions(random_params, positions, policy, temperature)
        action, target = np.asarray(out.action), np.asarray(out.policy)
        np.testing.assert_array_equal(out.has_legal_action, has_legal)
        assert np.all(legal[rows, action][has_legal]), (policy, temperature)
        assert np.all(target[~legal & has_legal[:, None]] == 0.0)
        np.testing.assert_allclose(target[has_legal].sum(-1), 1.0, rtol=1e-5)
        # Finished games: flagged, zero policy, action 0, and no NaN anywhere.
        assert np.all(target[~has_legal] == 0.0)
        assert np.all(action[~has_legal] == 0)
        assert np.all(np.isfinite(out.root_value))
        assert np.all(np.asarray(out.root_value)[~has_legal] == 0.0)


def test_temperature_is_traced_and_shapes_the_action(positions, random_params):
    cold = _search_positions(random_params, positions, "muzero", 0.0)
    compiled = _search._cache_size()
    hot = _search_positions(random_params, positions, "muzero", 1e4)
    assert _search._cache_size() == compiled  # one compile serves every temperature
    # The same key gives the same Dirichlet noise, hence the same trees, at both temperatures.
    np.testing.assert_array_equal(cold.policy, hot.policy)
    visits = np.asarray(cold.policy)
    cold_action, hot_action = np.asarray(cold.action), np.asarray(hot.action)
    rows = np.arange(visits.shape[0])
    live = np.asarray(cold.has_legal_action)
    # Temperature 0: a most visited action.
    np.testing.assert_array_equal(visits[rows, cold_action][live], visits.max(-1)[live])
    # A huge temperature: nearly uniform over the visited actions, and never an unvisited one.
    assert np.all(visits[rows, hot_action][live] > 0)
    spread = live & ((visits > 0).sum(-1) >= 2)
    chose_fewer = visits[rows, hot_action] < visits.max(-1)
    assert spread.sum() > 1000 and np.mean(chose_fewer[spread]) > 0.3


def test_mctx_muzero_policy_alone_can_pick_an_unvisited_illegal_action():
    """The shortfall that search's own action sampling fixes: mctx samples from
    ``log(max(visit_probs, tiny)) / temperature``, so at a high temperature an illegal action (no
    visits, logit about -87 / T) gets real probability."""
    batch, num_actions = 64, 9
    prior = jnp.zeros((batch, num_actions))
    # Only actions 0 and 1 are legal.
    invalid = jnp.broadcast_to(jnp.arange(num_actions) >= 2, (batch, num_actions))
    root = mctx.RootFnOutput(
        prior_logits=prior, value=jnp.zeros(batch), embedding=jnp.zeros((batch, 1))
    )
    recurrent = make_recurrent_fn(
        MuZeroNetwork(
            None, lambda p, h, a: (_output(jnp.zeros(batch), jnp.zeros(batch), prior), h)
        ),
        discount=1.0,
        two_player=False,
    )
    policy = jax.jit(
        functools.partial(
            mctx.muzero_policy, recurrent_fn=recurrent, num_simulations=4, temperature=100.0
        )
    )
    out = policy(None, jax.random.key(0), root, invalid_actions=invalid)
    assert np.any(np.asarray(invalid)[np.arange(batch), np.asarray(out.action)])
