"""The tic-tac-toe solver (mz_jax.suite.tic_tac_toe_solver): known counts, hand-solved positions, sampled games."""

import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mz_jax.envs import make_env
from mz_jax.suite import tic_tac_toe_solver


@pytest.fixture(scope="module")
def exact():
    return tic_tac_toe_solver


def board(picture: str) -> tuple[int, ...]:
    return tuple({".": 0, "X": 1, "O": 2}[c] for c in picture.replace(" ", ""))


def test_counts_match_the_known_numbers(exact):
    # 5,478 legal positions are reachable from the empty board, 958 of them final.
    boards = exact.positions_to_move()
    assert len(boards) == 4520
    assert len(set(boards)) == 4520
    assert not any(exact.is_final(b) for b in boards)


@pytest.mark.parametrize(
    ("picture", "expected"),
    [
        ("... ... ...", 0),  # the empty board is a draw
        ("XX. OO. ...", 1),  # X to move completes the top row
        ("X.. .O. ..X", 0),  # O to move: an edge holds the draw
        ("XO. ... ...", 1),  # X to move: O's edge next to the corner loses
        ("X.. OX. ..O", 1),  # X to move forks: X at 2 threatens 0-1-2 and 2-4-6
        ("XOO XX. ...", -1),  # O to move faces three threats (at 5, 6 and 8) and has none
    ],
)
def test_values_of_hand_solved_positions(exact, picture, expected):
    assert exact.value(board(picture)) == expected


def test_the_encoding_matches_pgx(exact):
    # A game played in pgx: its observation and legal moves are the solver's, cell for cell.
    env = make_env("pgx:tic_tac_toe")
    state, timestep = env.reset(jax.random.key(0))
    picture = board("... ... ...")
    for cell in (4, 0, 2, 6, 3):  # no line is completed before the last move
        np.testing.assert_array_equal(np.asarray(timestep.observation), exact.observation(picture))
        np.testing.assert_array_equal(
            np.asarray(timestep.legal_action_mask), np.array(picture) == exact.EMPTY
        )
        state, timestep = env.step(jax.random.key(0), state, jnp.int32(cell))
        picture = exact.play(picture, cell)


def test_exact_outcomes_match_sampled_games(exact):
    # A fixed agent: the lowest free cell. Its games against the uniformly random player are
    # sampled here with a loop of its own and must agree with the exact probabilities.
    boards = exact.positions_to_move()
    moves = {b: b.index(0) for b in boards}
    lines = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
    rng = random.Random(0)
    games = 20_000
    for seat in (1, 2):
        probabilities = exact.outcome_probabilities(moves, seat)
        assert sum(probabilities.values()) == 1
        counts = {"win": 0, "draw": 0, "loss": 0}
        for _ in range(games):
            cells, mover = [0] * 9, 1
            while True:
                free = [i for i in range(9) if cells[i] == 0]
                cells[free[0] if mover == seat else rng.choice(free)] = mover
                if any(cells[a] == cells[b] == cells[c] == mover for a, b, c in lines):
                    counts["win" if mover == seat else "loss"] += 1
                    break
                if 0 not in cells:
                    counts["draw"] += 1
                    break
                mover = 3 - mover
        for outcome, p in probabilities.items():
            sigma = (float(p) * (1 - float(p)) / games) ** 0.5
            assert abs(counts[outcome] / games - float(p)) <= 4 * sigma + 1e-9, (seat, outcome)


def test_worst_case_of_the_lowest_free_cell_by_hand(exact):
    # The lowest free cell loses in both seats to an opponent that knows it.
    # As X: X0 O4 X1 O2; X must block at 6 but plays 3, and O completes 2-4-6.
    # As O: X4 O0 X8; O must take a corner but plays 1, X blocks at 2 and threatens 5 and 6 at once.
    moves = {b: b.index(0) for b in exact.positions_to_move()}
    assert exact.worst_case(moves, 1) == -1
    assert exact.worst_case(moves, 2) == -1
    as_x, as_o = exact.exploitable_positions(moves, 1), exact.exploitable_positions(moves, 2)
    assert board("XXO .O. ...") in as_x
    assert board("O.. .X. ..X") in as_o
    # Already lost when O is to move there (two threats): not a move that lost it.
    assert board("OOX .X. ..X") not in as_o
    # Never reached: the agent as X opens in the corner, not the centre.
    assert board(".O. .X. ...") not in as_x


def perfect_moves(exact) -> dict:
    """A move keeping each position's game-theoretic value (the solver's negamax)."""
    return {
        b: max(exact.legal_moves(b), key=lambda c: -exact.value(exact.play(b, c)))
        for b in exact.positions_to_move()
    }


def test_a_perfect_player_cannot_be_beaten(exact):
    perfect = perfect_moves(exact)
    for seat in (1, 2):
        assert exact.worst_case(perfect, seat) == 0  # the game is a draw
        assert exact.exploitable_positions(perfect, seat) == []


def test_worst_case_and_exploitable_positions_agree(exact):
    # Two computations written differently: a minimax against the agent's moves, and a search of
    # the reachable positions for a losing move. The agent loses to a best reply exactly when it
    # can be steered into a losing move (from a position it could hold, every reply leaves one).
    perfect = perfect_moves(exact)
    rng = random.Random(1)
    for trial in range(30):
        # Perfect play with a few random moves mixed in: some of these lose, some cannot.
        moves = {
            b: rng.choice(exact.legal_moves(b)) if rng.random() < 0.02 * (trial % 5) else m
            for b, m in perfect.items()
        }
        for seat in (1, 2):
            lost = exact.worst_case(moves, seat) == -1
            assert lost == bool(exact.exploitable_positions(moves, seat)), (trial, seat)
