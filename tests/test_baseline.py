"""The MCTS baseline opponent (``mcts:N``): legal moves only, one-move wins and blocks in hand-made
connect-four positions, signs that follow the player to move, the opponent string, evaluation."""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mz_jax import NetworkConfig, SearchConfig, TrainConfig
from mz_jax.cli.main import main
from mz_jax.envs import make_env
from mz_jax.envs.pgx_adapter import pgx_game
from mz_jax.mcts import baseline
from mz_jax.run.agent import Agent
from mz_jax.training.build import build

CONNECT_FOUR = pgx_game("pgx:connect_four")
COLUMNS = 7
# Compiled once: pgx's step run op by op takes a second.
init = jax.jit(CONNECT_FOUR.init)
step = jax.jit(CONNECT_FOUR.step)


def position(columns, first_player):
    """The connect-four position after the columns ``columns`` were played in turn, from the start
    where the player id ``first_player`` moves first (pgx draws it from the key)."""
    key = next(
        jax.random.key(seed)
        for seed in range(64)
        if int(init(jax.random.key(seed)).current_player) == first_player
    )
    state = init(key)
    for column in columns:
        assert not state.terminated and state.legal_action_mask[column]
        state = step(state, jnp.int32(column))
    return state


def winning_columns(state):
    """The columns that end the game at once with a win for the player to move (pgx's verdict)."""
    mover = int(state.current_player)
    wins = []
    for column in range(COLUMNS):
        if state.legal_action_mask[column]:
            reached = step(state, jnp.int32(column))
            if reached.terminated and reached.rewards[mover] == 1:
                wins.append(column)
    return wins


def stack(states):
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)


# Columns played in turn from the empty board, and the one column that wins (or blocks). Each is
# played from both starts (player id 0 or 1 moving first), so both ids are the player to move.
WINS = [
    ((0, 0, 1, 1, 2, 5), 3),  # first mover: three on the bottom row, column 3 completes it
    ((0, 0, 1, 1, 2, 2), 3),  # the same, while the other threatens column 3 too: win, not block
    ((6, 0, 6, 1, 5, 2, 5), 3),  # second mover: three on the bottom row
    ((1, 5, 2, 5, 1, 5, 6), 5),  # second mover: three stacked in column 5
]
BLOCKS = [
    ((6, 0, 6, 1, 5, 2), 3),  # the other threatens the bottom row's column 3
    ((0, 4, 0, 4, 6, 4), 4),  # the other has three stacked in column 4
    ((4, 0, 4, 6, 4), 4),  # the second mover must block the first mover's column 4
]


def test_hand_made_positions_are_what_they_claim():
    for columns, column in WINS:
        for first in (0, 1):
            assert winning_columns(position(columns, first)) == [column]
    for columns, column in BLOCKS:
        for first in (0, 1):
            state = position(columns, first)
            assert winning_columns(state) == []
            for reply in range(COLUMNS):
                answers = winning_columns(step(state, jnp.int32(reply)))
                assert (answers == []) == (reply == column), (columns, reply, answers)


def random_positions(game, key, *, batch, max_moves):
    """``batch`` unfinished positions after 0..max_moves uniformly random moves."""
    init_key, length_key, play_key = jax.random.split(key, 3)
    state = jax.vmap(game.init)(jax.random.split(init_key, batch))
    lengths = jax.random.randint(length_key, (batch,), 0, max_moves + 1)

    def play(state, inputs):
        t, key = inputs
        keys = jax.random.split(key, batch)
        action = jax.vmap(jax.random.categorical)(
            keys, jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        )
        reached = jax.vmap(game.step)(state, action)
        keep = (t >= lengths) | reached.terminated
        rows = lambda leaf: keep.reshape(keep.shape + (1,) * (leaf.ndim - 1))
        return jax.tree.map(lambda old, new: jnp.where(rows(old), old, new), state, reached), None

    steps = (jnp.arange(max_moves), jax.random.split(play_key, max_moves))
    return jax.lax.scan(play, state, steps)[0]


NUM_RANDOM = 50  # random connect-four positions searched with the hand-made ones, 64 in all


@pytest.fixture(scope="module")
def connect_four():
    """The baseline's moves in the hand-made positions (WINS, then BLOCKS, each from both starts)
    and in random ones: ``(states, actions)``, one compiled search for all (compiling takes ~15 s).

    One rollout per leaf is noisy: with 4 a forced block is certain (see mz_jax.mcts.baseline)."""
    hand_made = [position(columns, first) for columns, _ in WINS + BLOCKS for first in (0, 1)]
    random = random_positions(CONNECT_FOUR, jax.random.key(1), batch=NUM_RANDOM, max_moves=40)
    states = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), stack(hand_made), random)
    act = jax.jit(
        functools.partial(
            baseline.mcts_action, game=CONNECT_FOUR, num_simulations=100, num_rollouts=4
        )
    )
    return jax.device_get(states), np.asarray(act(jax.random.key(0), states))


def test_finds_a_one_move_win(connect_four):
    _, actions = connect_four
    expected = [column for _, column in WINS for _ in (0, 1)]
    np.testing.assert_array_equal(actions[: len(expected)], expected)


def test_blocks_a_one_move_loss(connect_four):
    _, actions = connect_four
    expected = [column for _, column in BLOCKS for _ in (0, 1)]
    np.testing.assert_array_equal(actions[2 * len(WINS) : -NUM_RANDOM], expected)


def test_plays_legal_moves_only(connect_four):
    states, actions = connect_four
    legal = states.legal_action_mask[-NUM_RANDOM:]
    assert not np.any(states.terminated)
    assert np.any(legal.sum(-1) < COLUMNS)  # some columns are full
    np.testing.assert_array_equal(legal[np.arange(NUM_RANDOM), actions[-NUM_RANDOM:]], True)

    game = pgx_game("pgx:tic_tac_toe")
    states = random_positions(game, jax.random.key(1), batch=64, max_moves=8)
    legal = np.asarray(states.legal_action_mask)
    assert not np.any(states.terminated)
    assert np.any(legal.sum(-1) == 1)  # some positions have a single legal move
    act = jax.jit(functools.partial(baseline.mcts_action, game=game, num_simulations=8))
    for seed in range(3):
        action = np.asarray(act(jax.random.key(seed), states))
        np.testing.assert_array_equal(legal[np.arange(64), action], True)


class TwoMoves(NamedTuple):
    """A position of a game of two moves of two actions each (see :func:`two_moves_step`)."""

    current_player: jax.Array
    legal_action_mask: jax.Array
    rewards: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    first_move: jax.Array
    second_mover: jax.Array


def two_moves_start(second_mover: int) -> TwoMoves:
    return TwoMoves(
        current_player=jnp.int32(0),
        legal_action_mask=jnp.ones(2, bool),
        rewards=jnp.zeros(2),
        terminated=jnp.bool_(False),
        truncated=jnp.bool_(False),
        first_move=jnp.int32(-1),
        second_mover=jnp.int32(second_mover),
    )


def two_moves_step(state: TwoMoves, action, key=None) -> TwoMoves:
    """Player 0 moves first, then ``second_mover``; the second move ends the game, won by player 0
    if its first move was 0 and by player 1 otherwise. A finished game stays as it is, as in pgx."""
    del key
    second = state._replace(current_player=state.second_mover, first_move=action)
    won_by_0 = state.first_move == 0
    ended = state._replace(
        rewards=jnp.where(won_by_0, jnp.array([1.0, -1.0]), jnp.array([-1.0, 1.0])),
        terminated=jnp.bool_(True),
    )
    over = state._replace(rewards=jnp.zeros(2))
    first = state.first_move < 0
    return jax.tree.map(
        lambda a, b, c: jnp.where(state.terminated, c, jnp.where(first, a, b)), second, ended, over
    )


class TwoMovesGame(NamedTuple):
    step: object = two_moves_step


def test_signs_follow_the_player_to_move():
    # First move 0 wins for player 0 whoever moves second. Were the players assumed to alternate,
    # the search would read player 0's own win after its second move as the other's, and play 1.
    states = stack([two_moves_start(0), two_moves_start(1)])
    act = jax.jit(functools.partial(baseline.mcts_action, game=TwoMovesGame(), num_simulations=8))
    for seed in range(3):
        assert act(jax.random.key(seed), states).tolist() == [0, 0]


def test_parse_opponent():
    assert baseline.parse_opponent("random") is None
    assert baseline.parse_opponent("mcts:1") == 1
    assert baseline.parse_opponent("mcts:200") == 200
    for bad in ("mcts:0", "mcts:-3", "mcts:", "mcts", "mcts:2.5", "mcts: 4", "MCTS:4", "self", 4):
        with pytest.raises(ValueError, match="is invalid: allowed 'random' or 'mcts:N' with N an"):
            baseline.parse_opponent(bad)
    with pytest.raises(ValueError, match=r"opponent 'mcts:0' is invalid"):
        baseline.parse_opponent("mcts:0")
    with pytest.raises(ValueError, match="two-player pgx game"):
        baseline.game_of(make_env("gymnax:CartPole-v1"), "mcts:4")
    with pytest.raises(ValueError, match="num_simulations must be an integer >= 1; got 0"):
        baseline.mcts_action(
            jax.random.key(0), init(jax.random.key(0)), game=CONNECT_FOUR, num_simulations=0
        )


def test_cli_rejects_a_bad_opponent(tmp_path, capsys):
    # The value is checked as the command line is read, before the workdir is.
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--workdir", str(tmp_path), "--opponent", "mcts:0"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--opponent: opponent 'mcts:0' is invalid: allowed 'self', 'random' or 'mcts:N'" in err


TIC_TAC_TOE = TrainConfig(
    env="pgx:tic_tac_toe",
    discount=1.0,
    eval_max_steps=9,
    search=SearchConfig(policy="gumbel", num_simulations=4),
    network=NetworkConfig(kind="mlp", hidden_sizes=(16,), latent_size=16),
)


@pytest.fixture(scope="module")
def untrained_agent():
    agent = Agent(TIC_TAC_TOE, build(TIC_TAC_TOE).init_params(jax.random.key(0)))
    agent.checkpoint_step, agent.updates, agent.env_steps = 0, 0, 0
    return agent


def test_an_untrained_agent_loses_to_mcts(untrained_agent):
    episodes = 8
    result = jax.device_get(
        untrained_agent.evaluate(jax.random.key(2), num_episodes=episodes, opponent="mcts:200")
    )
    assert np.all(result.completed)
    assert set(np.unique(result.episode_return)) <= {-1.0, 0.0, 1.0}
    # An untrained network does not beat a search on the true game: it loses most games, in
    # either seat (it moves first in the first half of the episodes).
    assert np.sum(result.episode_return == 1.0) == 0
    for seat in (slice(0, episodes // 2), slice(episodes // 2, None)):
        assert np.sum(result.episode_return[seat] == -1.0) >= 3
    with pytest.raises(ValueError, match="'mcts:x' is invalid"):
        untrained_agent.evaluate(jax.random.key(2), num_episodes=episodes, opponent="mcts:x")


def test_cli_evaluates_against_mcts(untrained_agent, tmp_path, monkeypatch, capsys):
    # The agent stands in for a restored run; its compiled evaluation is the test above's.
    monkeypatch.setattr("mz_jax.run.resume.read_config", lambda workdir: TIC_TAC_TOE)
    monkeypatch.setattr(Agent, "restore", lambda *args, **kwargs: untrained_agent)
    argv = ["eval", "--workdir", str(tmp_path), "--episodes", "8", "--opponent", "mcts:200"]
    assert main([*argv, "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "8 greedy episodes against mcts:200, 8 finished within 9 steps" in out
    assert "total: wins 0," in out
