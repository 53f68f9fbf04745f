"""The pip-count opponent of pgx's backgammon (``pip_count``): pip counts and moves in hand-built
positions, legal moves only, a clear edge over random play, evaluation, and the environments it
refuses."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest
from pgx.backgammon import _legal_action_mask

from mz_jax import NetworkConfig, SearchConfig, TrainConfig
from mz_jax.cli.main import main
from mz_jax.envs import make_env
from mz_jax.envs.backgammon import pip_count_action, pip_counts
from mz_jax.mcts import baseline
from mz_jax.run.agent import Agent
from mz_jax.suite.opponent import check_opponent
from mz_jax.suite.runner import SuiteEntry
from mz_jax.training import evaluate as evaluate_lib
from mz_jax.training.build import build

BACKGAMMON = pgx.make("backgammon")
NO_OP = 0
INITIAL_POINTS = [2, 0, 0, 0, 0, -5, 0, -3, 0, 0, 0, 5, -5, 0, 0, 0, 3, 0, 5, 0, 0, 0, 0, -2]

act = jax.jit(pip_count_action)


def board_of(points, *, bar=0, off=0):
    """A ``[28]`` board from ``{point: count}`` (mover positive, opponent negative)."""
    board = np.zeros(28, np.int32)
    for point, count in points.items():
        board[point] = count
    board[24], board[26] = bar, off
    return jnp.asarray(board)


def position(board, dice):
    """One pgx position (batch of 1) with the mover's ``board`` and ``dice`` still to play, faces
    1-6; the legal moves are pgx's for them."""
    playable = jnp.asarray([face - 1 for face in dice] + [-1] * (4 - len(dice)), jnp.int32)
    state = BACKGAMMON.init(jax.random.key(0)).replace(
        _board=board,
        _playable_dice=playable,
        legal_action_mask=_legal_action_mask(board, playable),
    )
    return jax.tree.map(lambda leaf: leaf[None], state)


def action(point, die):
    """The action moving a checker from ``point`` (24: the bar) by ``die``."""
    return (1 if point == 24 else point + 2) * 6 + die - 1


def test_pip_counts_of_the_initial_board():
    # Mover: 2 checkers on point 0 (24 pips each), 5 on 11 (13), 3 on 16 (8), 5 on 18 (6):
    # 48 + 65 + 24 + 30 = 167. The opponent's mirror: 2 on 23 (24), 5 on 12 (13), 3 on 7 (8),
    # 5 on 5 (6): 167.
    board = jnp.asarray([*INITIAL_POINTS, 0, 0, 0, 0])  # bars and borne-off checkers empty
    np.testing.assert_array_equal(BACKGAMMON.init(jax.random.key(0))._board, board)
    assert [int(count) for count in pip_counts(board)] == [167, 167]
    # Bars count 25, borne-off checkers 0: a mover's checker on the bar and 14 off, the opponent's
    # on its bar and 14 off.
    board = (
        jnp.zeros(28, jnp.int32)
        .at[jnp.asarray([24, 25, 26, 27])]
        .set(jnp.asarray([1, -1, 14, -14]))
    )
    assert [int(count) for count in pip_counts(board)] == [25, 25]


# Opponent checkers on 21-23 that block the mover's home moves in several positions.
BLOCK = {21: -2, 22: -11, 23: -2}

POSITIONS = {
    # Pips before: own 2 * 24 + 13 * 6 = 126, opponent 1 * 3 + 14 * 21 = 297 (difference 171).
    # 0->2 hits the blot (2 pips, opponent +25 - 3): own 124, opponent 319, difference 195;
    # 0->6 (6 pips): own 120, opponent 297, difference 177. 18 + 2 lands on 20 (blocked), 18 + 6
    # bears off (not all home). The hit, action 2 * 6 + 1 = 13.
    "hit over a bigger move": (
        board_of({0: 2, 18: 13, 2: -1, 20: -14}),
        (2, 6),
        [action(0, 2), action(0, 6)],
        13,
    ),
    # Own 126 -> 123 (0->3) or 121 (0->5), two blots either way (18 + 3 and 18 + 5 are blocked):
    # the 5, action 2 * 6 + 4 = 16.
    "the bigger die": (
        board_of({0: 2, 18: 13, **BLOCK}),
        (3, 5),
        [action(0, 3), action(0, 5)],
        16,
    ),
    # Double 3s: every move is 3 pips. 0->3 leaves blots on 0 and 6, 6->9 on 3 and 9; 3->6 makes
    # 6 a point and leaves none: action (3 + 2) * 6 + 2 = 32 (not the lowest, 14).
    "no blot": (
        board_of({0: 2, 3: 1, 6: 1, 18: 11, **BLOCK}),
        (3, 3, 3, 3),
        [action(0, 3), action(3, 3), action(6, 3)],
        32,
    ),
    # On the bar against a closed 1 and 2: nothing but the no-op (pgx marks all six no-op
    # actions legal, the first is action 0).
    "only the no-op": (
        board_of({18: 14, 0: -2, 1: -2, 22: -11}, bar=1),
        (1, 2),
        list(range(6)),
        NO_OP,
    ),
    # All home, 10 off: own 2 * 1 + 3 * 4 = 14. 23 off by 1 -> 13, 20->21 by 1 -> 13, 20 off by
    # 4 -> 10 (the 4 cannot bear off from 23: a checker stands farther back). The 4 off from 20,
    # action (20 + 2) * 6 + 3 = 135.
    "bearing off": (
        board_of({20: 3, 23: 2, 0: -15}, off=10),
        (1, 4),
        [action(20, 1), action(20, 4), action(23, 1)],
        135,
    ),
}


@pytest.mark.parametrize("name", POSITIONS)
def test_moves_in_hand_built_positions(name):
    board, dice, legal, expected = POSITIONS[name]
    state = position(board, dice)
    assert np.flatnonzero(state.legal_action_mask[0]).tolist() == legal
    assert act(state).tolist() == [expected]
    assert pip_count_action(state).tolist() == [expected]  # un-jitted too


def test_positions_are_batched():
    states = [position(board, dice) for board, dice, _, _ in POSITIONS.values()]
    batch = jax.tree.map(lambda *leaves: jnp.concatenate(leaves), *states)
    assert act(batch).tolist() == [expected for *_, expected in POSITIONS.values()]


def _random_action(key, legal_action_mask):
    return jax.random.categorical(key, jnp.where(legal_action_mask, 0.0, -jnp.inf), axis=-1)


@functools.partial(jax.jit, static_argnames=("num_games", "max_steps"))
def _play(key, *, num_games, max_steps):
    """``num_games`` games of pip_count against the uniformly random player, pip_count taking the
    first move in the first half; returns pip_count's total reward of each game ``[num_games]``,
    whether each ended, and whether its every move was legal."""
    init_key, loop_key = jax.random.split(key)
    state = jax.vmap(BACKGAMMON.init)(jax.random.split(init_key, num_games))
    first = jnp.arange(num_games) < num_games // 2
    pip_player = jnp.where(first, state.current_player, 1 - state.current_player)

    def unfinished(carry):
        t, state, _, _ = carry
        return (t < max_steps) & ~jnp.all(state.terminated)

    def body(carry):
        t, state, total, legal = carry
        random_key, step_key = jax.random.split(jax.random.fold_in(loop_key, t))
        heuristic = pip_count_action(state)
        moves = jnp.where(
            state.current_player == pip_player,
            heuristic,
            _random_action(random_key, state.legal_action_mask),
        )
        chose_legal = jnp.take_along_axis(state.legal_action_mask, heuristic[:, None], axis=1)[:, 0]
        legal = legal & (chose_legal | state.terminated)
        state = jax.vmap(BACKGAMMON.step)(state, moves, jax.random.split(step_key, num_games))
        reward = jnp.take_along_axis(state.rewards, pip_player[:, None], axis=1)[:, 0]
        return t + 1, state, total + reward, legal

    carry = (0, state, jnp.zeros(num_games), jnp.ones(num_games, bool))
    _, state, total, legal = jax.lax.while_loop(unfinished, body, carry)
    return total, state.terminated, legal


def test_pip_count_beats_random_and_always_moves_legally():
    # Games of random play reach all kinds of positions (hits, the bar, bearing off); the
    # heuristic's move must be legal in every one it meets, in either seat.
    total, ended, legal = jax.device_get(_play(jax.random.key(0), num_games=64, max_steps=1000))
    assert np.all(legal)
    assert np.all(ended)
    # 62 of these 64 games won (62-64 of 64 with keys 0-3): 0.75 leaves room for other jax builds.
    win_rate = np.mean(total > 0)
    assert win_rate >= 0.75, win_rate


BACKGAMMON_CONFIG = TrainConfig(
    env="pgx:backgammon",
    discount=1.0,
    eval_max_steps=50,
    search=SearchConfig(policy="gumbel", num_simulations=2),
    network=NetworkConfig(kind="mlp", hidden_sizes=(16,), latent_size=16),
)


def test_an_untrained_agent_plays_pip_count():
    config = BACKGAMMON_CONFIG
    agent = Agent(config, build(config).init_params(jax.random.key(0)))
    result = jax.device_get(
        agent.evaluate(jax.random.key(1), num_episodes=4, max_steps=50, opponent="pip_count")
    )
    for leaf in result:
        assert np.shape(leaf) == (4,)
    assert np.all(result.completed | (result.episode_length == 50))
    assert np.all(np.abs(result.episode_return) <= 3)  # a backgammon win scores 1, 2 or 3


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        (
            "pgx:connect_four",
            "the pip-count heuristic plays pgx:backgammon only, not pgx:connect_four",
        ),
        ("gymnax:CartPole-v1", "gymnax:CartPole-v1 is a single-player environment; an opponent"),
    ],
)
def test_pip_count_refuses_other_environments(env, reason):
    assert baseline.parse_opponent("pip_count") is None
    baseline.check_opponent_env(make_env("pgx:backgammon"), "pip_count")
    with pytest.raises(ValueError, match=f"^opponent 'pip_count': {reason}"):
        baseline.check_opponent_env(make_env(env), "pip_count")
    # A suite entry and the evaluation itself are refused in the same words.
    with pytest.raises(ValueError, match=f"^{env}: 'opponent' = 'pip_count': {reason}"):
        check_opponent(SuiteEntry(env, opponent="pip_count"))
    agent_env = make_env(env)
    with pytest.raises(ValueError, match=f"^opponent 'pip_count': {reason}"):
        evaluate_lib.evaluate(
            None,
            jax.random.key(0),
            env=agent_env,
            network=None,
            search_config=None,
            num_episodes=2,
            max_steps=1,
            opponent="pip_count",
        )


def test_cli_refuses_pip_count_for_connect_four(tmp_path, monkeypatch, capsys):
    # Checked before any checkpoint is read: a connect-four run's config is all it needs.
    config = TrainConfig(env="pgx:connect_four", network=NetworkConfig(kind="mlp"))
    monkeypatch.setattr("mz_jax.run.resume.read_config", lambda workdir: config)
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--workdir", str(tmp_path), "--opponent", "pip_count"])
    assert exit_info.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "--opponent 'pip_count': the pip-count heuristic plays pgx:backgammon only" in lines[0]
