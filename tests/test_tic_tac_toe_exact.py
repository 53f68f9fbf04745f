"""The tic-tac-toe solver (mz_jax.tic_tac_toe_solver): known counts, hand-solved positions, sampled games."""

import random

import pytest

from mz_jax import tic_tac_toe_solver


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
    exact.check_encoding()  # raises on any difference


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
