"""Playing in the terminal: boards drawn by hand-checked text, moves parsed, scripted games."""

import io
import re
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_agent import tiny_tic_tac_toe

from mz_jax.envs.pgx_adapter import pgx_game
from mz_jax.run.agent import Agent
from mz_jax.show.play import (
    SUPPORTED_GAMES,
    GameAbandoned,
    board_text,
    parse_move,
    play_in_terminal,
)
from mz_jax.training.build import build

TIC_TAC_TOE = "pgx:tic_tac_toe"
CELLS = ["a1", "b1", "c1", "a2", "b2", "c2", "a3", "b3", "c3"]  # actions 0..8
LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


@pytest.fixture(scope="module")
def agent():
    """An untrained agent: its moves depend on the parameters, so the tests never assume them."""
    config = tiny_tic_tac_toe()
    return Agent(config, build(config).init_params(jax.random.key(0)))


class ScriptedAgent:
    """Stands in for an Agent: plays ``choose(legal_action_mask [A]) -> action`` and records the
    observations it was shown."""

    def __init__(self, env_name, choose):
        self.env = SimpleNamespace(name=env_name)
        self.choose = choose
        self.observations = []

    def act(self, key, observation, legal_action_mask):
        del key
        self.observations.append(observation)
        return jnp.asarray([self.choose(np.asarray(legal_action_mask[0]))], jnp.int32)


def played(env_name, actions):
    """The pgx state after ``actions`` from the start (pgx's init with key 0)."""
    game = pgx_game(env_name)
    state = game.init(jax.random.key(0))
    for action in actions:
        state = game.step(state, jnp.int32(action))
    return state


def assert_one_line_error(call, *args, match):
    with pytest.raises(ValueError, match=match) as info:
        call(*args)
    assert "\n" not in str(info.value)
    return str(info.value)


# --- boards -----------------------------------------------------------------------------------


def test_tic_tac_toe_board_shows_each_stone_in_its_cell():
    # X (first mover) b2, O a1, X c3, O c1.
    state = played(TIC_TAC_TOE, [4, 0, 8, 2])
    first = int(state.current_player)  # four moves made: the first mover is to move again
    assert board_text(TIC_TAC_TOE, state).split("\n") == [
        "  a b c",
        "1 O . O",
        "2 . X .",
        "3 . . X",
    ]
    assert board_text(TIC_TAC_TOE, state, person=first).split("\n")[-1] == "X you, O agent"
    assert board_text(TIC_TAC_TOE, state, person=1 - first).split("\n")[-1] == "O you, X agent"


def test_connect_four_board_stacks_stones_from_the_bottom():
    # X d, O d, X e, O a.
    state = played("pgx:connect_four", [3, 3, 4, 0])
    assert board_text("pgx:connect_four", state).split("\n") == [
        "a b c d e f g",
        ". . . . . . .",
        ". . . . . . .",
        ". . . . . . .",
        ". . . . . . .",
        ". . . O . . .",
        "O . . X X . .",
    ]


def test_othello_board_is_drawn_in_absolute_colours():
    # pgx keeps the board of the player to move; X (first mover) d3 flips d4, O then c3 flips d4.
    start = played("pgx:othello", [])
    after_two = played("pgx:othello", [19, 18])
    middle = lambda state: board_text("pgx:othello", state).split("\n")[2:7]
    assert board_text("pgx:othello", start).split("\n")[0] == "  a b c d e f g h"
    assert middle(start) == [
        "2 . . . . . . . .",
        "3 . . . . . . . .",
        "4 . . . O X . . .",
        "5 . . . X O . . .",
        "6 . . . . . . . .",
    ]
    assert middle(after_two) == [
        "2 . . . . . . . .",
        "3 . . O X . . . .",
        "4 . . . O X . . .",
        "5 . . . X O . . .",
        "6 . . . . . . . .",
    ]


def test_go_board_marks_black_x_and_white_o():
    state = played("pgx:go_9x9", [0, 80, 10])  # black a1, white i9, black b2
    lines = board_text("pgx:go_9x9", state).split("\n")
    assert len(lines) == 10
    assert lines[:3] == ["  a b c d e f g h i", "1 X . . . . . . . .", "2 . X . . . . . . ."]
    assert lines[3:9] == [f"{row} . . . . . . . . ." for row in range(3, 9)]
    assert lines[9] == "9 . . . . . . . . O"


# --- parsing ----------------------------------------------------------------------------------


def test_parse_move_reads_cells_and_indices():
    all_legal = np.ones(9, bool)
    for action, cell in enumerate(CELLS):
        assert parse_move(TIC_TAC_TOE, cell, all_legal) == action
        assert parse_move(TIC_TAC_TOE, str(action), all_legal) == action
    assert parse_move(TIC_TAC_TOE, "  B2 \n", all_legal) == 4
    assert parse_move("pgx:connect_four", "d", np.ones(7, bool)) == 3
    assert parse_move("pgx:connect_four", "6", np.ones(7, bool)) == 6
    assert parse_move("pgx:othello", "c4", np.ones(65, bool)) == 26
    assert parse_move("pgx:othello", "pass", np.ones(65, bool)) == 64
    assert parse_move("pgx:go_9x9", "i9", np.ones(82, bool)) == 80
    assert parse_move("pgx:go_9x9", "PASS", np.ones(82, bool)) == 81


def test_parse_move_refuses_in_one_line_what_is_not_a_legal_move():
    legal = np.zeros(9, bool)
    legal[[0, 1, 8]] = True  # a1 b1 c3
    message = assert_one_line_error(parse_move, TIC_TAC_TOE, "z9", legal, match="not a move")
    assert message == (
        "'z9' is not a move: type a cell such as b2 or an index 0-8; legal now: a1 b1 c3"
    )
    for text in ["d1", "a4", "a0", "9", "-1", "", "b", "pass", "b2b", "xyz"]:
        assert_one_line_error(parse_move, TIC_TAC_TOE, text, legal, match="is not a move")
    message = assert_one_line_error(parse_move, TIC_TAC_TOE, "b2", legal, match="not legal")
    assert message == "'b2' is not legal now; legal now: a1 b1 c3"
    message = assert_one_line_error(parse_move, TIC_TAC_TOE, "4", legal, match="not legal")
    assert message == "'4' (b2) is not legal now; legal now: a1 b1 c3"
    full_d = np.ones(7, bool)
    full_d[3] = False
    message = assert_one_line_error(parse_move, "pgx:connect_four", "d", full_d, match="legal")
    assert message == "'d' is not legal now; legal now: a b c e f g"
    assert_one_line_error(parse_move, "pgx:connect_four", "h", full_d, match="column letter")
    assert_one_line_error(parse_move, "pgx:connect_four", "d1", full_d, match="is not a move")


def test_parse_move_names_at_most_twelve_legal_moves():
    message = assert_one_line_error(
        parse_move, "pgx:go_9x9", "j1", np.ones(82, bool), match="is not a move"
    )
    assert message.endswith("legal now: a1 b1 c1 d1 e1 f1 g1 h1 i1 a2 b2 c2 and 70 more")
    assert "or pass or an index 0-81" in message


# --- games ------------------------------------------------------------------------------------


def winner(board):
    """The symbol with three in a row on a 9-cell board, or None."""
    for line in LINES:
        symbols = {board[cell] for cell in line}
        if len(symbols) == 1 and symbols != {"."}:
            return symbols.pop()
    return None


@pytest.mark.parametrize("agent_first", [False, True])
def test_scripted_tic_tac_toe_game_against_the_agent(agent, agent_first):
    # Each turn the person tries "zz" (not a move), then every cell in order: taken ones are
    # answered and skipped, so the person always takes the lowest free cell, whatever the agent.
    script = "".join("zz\n" + "\n".join(CELLS) + "\n" for _ in range(6))
    stdout = io.StringIO()
    result = play_in_terminal(
        agent,
        agent_first=agent_first,
        key=jax.random.key(3),
        stdin=io.StringIO(script),
        stdout=stdout,
    )
    output = stdout.getvalue()
    agent_moves = [
        (name, int(index)) for name, index in re.findall(r"agent plays (\w+) \((\d)\)", output)
    ]
    assert len(agent_moves) >= 2 and all(CELLS[index] == name for name, index in agent_moves)

    # Replays the game by hand: players alternate, the first one X.
    person, machine = ("O", "X") if agent_first else ("X", "O")
    board = ["."] * 9
    turn = machine if agent_first else person
    moves = iter(agent_moves)
    while winner(board) is None and "." in board:
        if turn == person:
            board[board.index(".")] = person
        else:
            _, cell = next(moves)
            assert board[cell] == ".", f"the agent played the taken cell {CELLS[cell]}"
            board[cell] = machine
        turn = machine if turn == person else person
    assert next(moves, None) is None  # the agent played no move after the end

    won = winner(board)
    expected = 0 if won is None else (1 if won == person else -1)
    assert result == expected
    final = ["  a b c"] + [
        f"{row + 1} " + " ".join(board[3 * row : 3 * row + 3]) for row in range(3)
    ]
    ending = {1: "You win.", 0: "Draw.", -1: "The agent wins."}[expected]
    assert output.endswith("\n".join([*final, f"{person} you, {machine} agent", ending]) + "\n")
    assert "'zz' is not a move: type a cell such as b2 or an index 0-8; legal now:" in output
    if not agent_first:  # the empty board is drawn before the person's first move
        empty = "  a b c\n1 . . .\n2 . . .\n3 . . .\nX you, O agent\nyour move: "
        assert empty in output
    assert output.startswith(f"You play {person} and move {'second' if agent_first else 'first'}")


def test_connect_four_game_against_a_scripted_agent():
    # The person drops every stone in d, the agent in the leftmost open column: four in d wins.
    agent = ScriptedAgent("pgx:connect_four", lambda legal: int(np.argmax(legal)))
    stdout = io.StringIO()
    result = play_in_terminal(agent, stdin=io.StringIO("d\n" * 10), stdout=stdout)
    assert result == 1
    assert [o.shape for o in agent.observations] == [(1, 6, 7, 2)] * 3
    assert all(o.dtype == jnp.float32 for o in agent.observations)
    output = stdout.getvalue()
    assert output.count("agent plays a (0)") == 3
    assert output.endswith(
        "\n".join(
            [
                "a b c d e f g",
                ". . . . . . .",
                ". . . . . . .",
                ". . . X . . .",
                "O . . X . . .",
                "O . . X . . .",
                "O . . X . . .",
                "X you, O agent",
                "You win.",
            ]
        )
        + "\n"
    )


@pytest.mark.parametrize(("agent_first", "expected"), [(False, -1), (True, 1)])
def test_go_game_of_two_passes_goes_to_white_by_komi(agent_first, expected):
    agent = ScriptedAgent("pgx:go_9x9", lambda legal: 81)
    stdout = io.StringIO()
    result = play_in_terminal(
        agent, agent_first=agent_first, stdin=io.StringIO("pass\n"), stdout=stdout
    )
    assert result == expected
    assert "agent plays pass (81)" in stdout.getvalue()


def test_end_of_input_or_q_abandons_the_game(agent, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # the defaults are read at the call
    with pytest.raises(GameAbandoned):
        play_in_terminal(agent)
    assert capsys.readouterr().out.startswith("You play X and move first")
    stdout = io.StringIO()
    with pytest.raises(GameAbandoned):
        play_in_terminal(agent, stdin=io.StringIO(""), stdout=stdout)
    stdout = io.StringIO()
    with pytest.raises(GameAbandoned):
        play_in_terminal(agent, stdin=io.StringIO("zz\nq\n"), stdout=stdout)
    assert "'zz' is not a move" in stdout.getvalue()


def test_unsupported_env_is_refused_in_one_line():
    cartpole = SimpleNamespace(env=SimpleNamespace(name="gymnax:CartPole-v1"))
    message = assert_one_line_error(
        play_in_terminal, cartpole, match="'gymnax:CartPole-v1' cannot be played"
    )
    assert all(name in message for name in SUPPORTED_GAMES)
    assert_one_line_error(board_text, "pgx:chess", None, match="supported: pgx:tic_tac_toe")
    assert_one_line_error(parse_move, "pgx:chess", "e4", np.ones(4672, bool), match="supported")
