"""The rating ladder: Elo fits checked against closed forms and the likelihood equations, seats and
signs of a match on a hand-made game, baselines of known strength in their order, and the ladder of
tiny tic-tac-toe and toy:gamble runs end to end."""

import json
import math
import re
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_agent import tiny_tic_tac_toe as agent_run_config

from mz_jax import NetworkConfig, SearchConfig, TrainConfig
from mz_jax.cli.main import main
from mz_jax.envs import Env, make_env
from mz_jax.envs.base import EnvState, TimeStep, restart, select_tree
from mz_jax.run.agent import Agent
from mz_jax.run.loop import run_training
from mz_jax.show.elo import elo_ratings
from mz_jax.show.ladder import kept_steps, plot_ladder, run_ladder
from mz_jax.show.match import compile_match, play_match

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def elo_gap(points: float, games: int) -> float:
    """R_a - R_b of two players alone, with the ladder's one virtual draw: ``P(a) = (w + 1/2) /
    (n + 1)`` solved for the rating gap of ``P = 1 / (1 + 10 ** (-gap / 400))``."""
    p = (points + 0.5) / (games + 1)
    return 400 * math.log10(p / (1 - p))


# Elo ratings.


def test_two_players_match_the_closed_form():
    ratings = elo_ratings(["a", "b"], {("a", "b"): np.array([1, 1, 1, -1])})
    assert ratings["a"] - ratings["b"] == pytest.approx(400 * math.log10(3.5 / 1.5), abs=1e-6)
    assert ratings["a"] - ratings["b"] == pytest.approx(elo_gap(3, 4), abs=1e-6)
    assert ratings["a"] + ratings["b"] == pytest.approx(0.0, abs=1e-9)  # no 'random': mean 0


def test_a_clean_sweep_is_finite_and_draws_are_half_wins():
    sweep = elo_ratings(["a", "b"], {("a", "b"): [1, 1, 1, 1]})
    assert sweep["a"] - sweep["b"] == pytest.approx(400 * math.log10(9), abs=1e-6)
    # 1 win, 2 draws, 1 loss of a, listed in both orders: 2 points of 4 each way, equal ratings.
    even = elo_ratings(["a", "b"], {("a", "b"): [1, 0, -1], ("b", "a"): [0]})
    assert even["a"] == pytest.approx(even["b"], abs=1e-9)
    drawn = elo_ratings(["a", "b"], {("a", "b"): [1, 0, 0, 0]})  # 2.5 points of 4
    assert drawn["a"] - drawn["b"] == pytest.approx(elo_gap(2.5, 4), abs=1e-6)


def test_random_is_the_anchor():
    ratings = elo_ratings(["b", "random"], {("random", "b"): [-1, -1, -1, 1]})
    assert ratings["random"] == 0.0
    assert ratings["b"] == pytest.approx(elo_gap(3, 4), abs=1e-6)


def test_symmetric_results_give_equal_ratings():
    cycle = {("a", "b"): [1, 1, 1, -1], ("b", "c"): [1, 1, 1, -1], ("c", "a"): [1, 1, 1, -1]}
    ratings = elo_ratings(["a", "b", "c"], cycle)
    for name in "abc":
        assert ratings[name] == pytest.approx(0.0, abs=1e-6)


def test_three_players_keep_their_order_and_solve_the_likelihood_equations():
    scores = {
        ("a", "b"): np.array([1, 1, 1, 0]),
        ("b", "c"): np.array([1, 1, -1, 0]),
        ("a", "c"): np.array([1, 1, 1, 1]),
    }
    ratings = elo_ratings(["c", "b", "a"], scores)
    assert ratings["a"] > ratings["b"] > ratings["c"]
    # At the maximum of the likelihood each player's expected points equal its points (virtual
    # draws included): sum_j n_ij P(i beats j) = w_i.
    points = {"a": 3.5 + 4 + 1, "b": 0.5 + 2.5 + 1, "c": 1.5 + 0 + 1}
    expected = {name: 0.0 for name in points}
    for a, b in scores:
        p = 1 / (1 + 10 ** ((ratings[b] - ratings[a]) / 400))
        expected[a] += 5 * p
        expected[b] += 5 * (1 - p)
    for name in points:
        assert expected[name] == pytest.approx(points[name], abs=1e-6)


@pytest.mark.parametrize(
    "names, scores, message",
    [
        (["a", "b"], {("a", "x"): [1]}, "'x', which is not one of names"),
        (["a", "b"], {("a", "b"): [2]}, "allowed results"),
        (["a", "a"], {}, "distinct names"),
        (["a", "b", "c"], {("a", "b"): [1]}, "do not link every player"),
        (["a", "b"], {("a", "a"): [1]}, "against itself"),
    ],
)
def test_elo_ratings_refuse_bad_input(names, scores, message):
    with pytest.raises(ValueError, match=message):
        elo_ratings(names, scores)


# Matches.


def kth_mover_wins(moves: int) -> Env:
    """A two-player game of ``moves`` moves, either action alike, won by whoever makes the last;
    the player to move first is drawn at reset."""

    def reset(key):
        player = jax.random.bernoulli(key).astype(jnp.int32)
        backend = {"moves": jnp.int32(0), "player": player}
        return EnvState(backend, jnp.int32(0)), restart(jnp.zeros(1), jnp.ones(2, bool), player)

    def step(key, state, action):
        del action
        moves_made = state.backend["moves"] + 1
        ended = moves_made >= moves
        next_player = 1 - state.backend["player"]
        going = EnvState({"moves": moves_made, "player": next_player}, state.episode_step + 1)
        fresh, fresh_timestep = reset(key)
        env_state = select_tree(ended, fresh, going)
        timestep = TimeStep(
            observation=jnp.zeros(1),
            legal_action_mask=jnp.ones(2, bool),
            player=jnp.where(ended, fresh_timestep.player, next_player),
            reward=jnp.where(ended, 1.0, 0.0),
            terminated=ended,
            truncated=jnp.bool_(False),
            final_observation=jnp.zeros(1),
            final_player=next_player,
        )
        return env_state, timestep

    return Env(f"test:mover_{moves}_wins", 2, (1,), 2, None, reset=reset, step=step)


@pytest.mark.parametrize("moves, first_half", [(1, 1), (2, -1), (4, -1)])
def test_scores_follow_the_seats(moves, first_half):
    # The game is decided by the seat: a's score is fixed by whether a moved first.
    scores = play_match(
        jax.random.key(moves),
        env=kth_mover_wins(moves),
        player_a="random",
        player_b="random",
        num_games=6,
        max_steps=8,
    )
    assert scores.shape == (6,)
    np.testing.assert_array_equal(scores, [first_half] * 3 + [-first_half] * 3)


def test_an_unfinished_game_is_a_draw():
    scores = play_match(
        jax.random.key(0),
        env=kth_mover_wins(3),
        player_a="random",
        player_b="random",
        num_games=4,
        max_steps=2,
    )
    np.testing.assert_array_equal(scores, [0, 0, 0, 0])


def test_random_against_random_is_even_over_both_seats():
    # Random tic-tac-toe: the first mover wins 58.5%, the second 28.8% (exact enumeration).
    scores = play_match(
        jax.random.key(7),
        env=make_env("pgx:tic_tac_toe"),
        player_a="random",
        player_b="random",
        num_games=200,
        max_steps=9,
    )
    assert set(np.unique(scores)) <= {-1, 0, 1}
    assert abs(scores.mean()) < 0.2
    assert scores[:100].mean() > 0.1  # a moved first
    assert scores[100:].mean() < -0.1


def test_baselines_of_known_strength_are_rated_in_order():
    # Measured (32 games a pair): mcts:4 beats random 22-10, mcts:64 beats mcts:4 30-2 and random
    # 29-0 with 3 draws; mcts:400 against mcts:50 draws most tic-tac-toe games.
    env = make_env("pgx:tic_tac_toe")
    players = ["random", "mcts:4", "mcts:64"]
    scores = {}
    for k, (a, b) in enumerate([(0, 1), (1, 2), (0, 2)]):
        scores[players[a], players[b]] = play_match(
            jax.random.key(k),
            env=env,
            player_a=players[a],
            player_b=players[b],
            num_games=32,
            max_steps=9,
        )
    ratings = elo_ratings(players, scores)
    assert ratings["random"] == 0.0
    assert 0.0 < ratings["mcts:4"] < ratings["mcts:64"], (ratings, scores)


@pytest.mark.parametrize(
    "player, num_games, message",
    [
        ("mcts:0", 2, r"player 'mcts:0' is invalid: allowed 'random' or 'mcts:N'"),
        ("mcts:4", 2, r"player 'mcts:4': .* needs a two-player pgx game"),
        (3, 2, r"player 3 is invalid: allowed an Agent or 'random'"),
        ("random", 3, r"num_games 3 is invalid: allowed an even integer >= 2"),
        ("random", 0, r"num_games 0 is invalid"),
    ],
)
def test_play_match_refuses_bad_input(player, num_games, message):
    with pytest.raises(ValueError, match=message):
        play_match(
            jax.random.key(0),
            env=kth_mover_wins(1),
            player_a="random",
            player_b=player,
            num_games=num_games,
            max_steps=4,
        )


# The ladder of a run.


def tiny_tic_tac_toe() -> TrainConfig:
    # tests/test_agent.py's run, keeping the checkpoints of iterations 2 and 4 (of 4).
    return agent_run_config().replace(keep_checkpoints=1, keep_checkpoint_every=2)


@pytest.fixture(scope="module")
def tic_tac_toe_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("ladder") / "ttt"
    run_training(tiny_tic_tac_toe(), workdir)
    assert kept_steps(workdir) == [2, 4]
    return workdir


@pytest.fixture(scope="module")
def ladder(tic_tac_toe_run):
    lines = []
    ladder = run_ladder(
        tic_tac_toe_run, players=("random", "mcts:2"), games=4, progress=lines.append
    )
    return ladder, lines


def test_the_ladder_plays_every_pair_of_checkpoints_and_baselines(ladder):
    ladder, lines = ladder
    names = ("step:2", "step:4", "random", "mcts:2")
    assert ladder.kind == "elo"
    assert ladder.env == "pgx:tic_tac_toe"
    assert ladder.players == names
    assert ladder.env_steps == (64, 128, None, None)  # 32 env steps an iteration
    assert ladder.games_per_pair == 4
    pairs = {(p.player_a, p.player_b) for p in ladder.pairs}
    assert pairs == {(a, b) for i, a in enumerate(names) for b in names[i + 1 :]}
    for pair in ladder.pairs:
        assert pair.wins + pair.draws + pair.losses == 4
        assert pair.unfinished == 0  # tic-tac-toe ends within 9 moves
    assert len(lines) == 6 and all(" vs " in line for line in lines)
    assert ladder.ratings[names.index("random")] == 0.0
    assert all(np.isfinite(ladder.ratings))


def test_the_table_lists_every_player_with_its_games(ladder):
    ladder, _ = ladder
    rows = ladder.table().splitlines()[1:]
    assert len(rows) == 4
    listed = {}
    for row in rows:
        _, name, steps, rating, wins, draws, losses = row.split()
        listed[name] = (steps, float(rating), int(wins) + int(draws) + int(losses))
    assert listed.keys() == {"step:2", "step:4", "random", "mcts:2"}
    assert listed["step:2"][0] == "64" and listed["step:4"][0] == "128"
    assert listed["random"][0] == "-" and listed["random"][1] == 0.0
    assert all(games == 3 * 4 for _, _, games in listed.values())  # 3 opponents, 4 games each
    ratings = [rating for _, rating, _ in (listed[row.split()[1]] for row in rows)]
    assert ratings == sorted(ratings, reverse=True)


def test_the_ladder_is_written_as_json_and_plotted(ladder, tmp_path):
    ladder, _ = ladder
    data = json.loads(ladder.to_json())
    assert [p["name"] for p in data["players"]] == list(ladder.players)
    assert data["kind"] == "elo" and len(data["pairs"]) == 6
    assert all(p["wins"] + p["draws"] + p["losses"] == 12 for p in data["players"])
    path = tmp_path / "ladder.png"
    plot_ladder(ladder, path)
    assert path.read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"games": 3}, r"games 3 is invalid: allowed an even integer >= 2"),
        ({"games": 0}, r"games 0 is invalid"),
        ({"players": ("mcts:x",)}, r"players 'mcts:x' is invalid: allowed 'random' or 'mcts:N'"),
        ({"players": ("random", "random")}, r"players \['random', 'random'\] are invalid"),
        ({"max_steps": 0}, r"max_steps 0 is invalid: allowed an integer >= 1"),
    ],
)
def test_run_ladder_refuses_bad_input(tic_tac_toe_run, kwargs, message):
    with pytest.raises(ValueError, match=message):
        run_ladder(tic_tac_toe_run, **kwargs)


def test_an_agent_against_itself_wins_or_loses_by_its_seat(tic_tac_toe_run):
    # Greedy play is deterministic and every game starts from the empty board: the games of one
    # seat are the same game.
    agent = Agent.restore(tic_tac_toe_run, step=2)
    scores = play_match(
        jax.random.key(3), env=agent.env, player_a=agent, player_b=agent, num_games=4, max_steps=9
    )
    assert scores[0] == scores[1] and scores[2] == scores[3] == -scores[0]


def test_an_agent_scores_as_the_evaluation_against_the_same_opponent_plays(tic_tac_toe_run):
    # mz_jax.training.evaluate plays the same seats and draws its keys in the same order.
    agent = Agent.restore(tic_tac_toe_run, step=4)
    key = jax.random.key(11)
    scores = play_match(
        key, env=agent.env, player_a=agent, player_b="random", num_games=8, max_steps=9
    )
    expected = agent.evaluate(key, num_episodes=8, max_steps=9, opponent="random")
    assert np.asarray(expected.completed).all()
    np.testing.assert_array_equal(scores, np.sign(np.asarray(expected.episode_return)))


def tiny_gamble() -> TrainConfig:
    return TrainConfig(
        env="toy:gamble",
        discount=1.0,
        td_steps=2,
        num_unroll_steps=1,
        num_envs=4,
        rollout_length=2,
        updates_per_iteration=1,
        batch_size=4,
        total_env_steps=16,  # 2 iterations, both kept
        replay_capacity=64,
        warmup_updates=0,
        eval_every_env_steps=0,
        eval_max_steps=2,
        log_every_seconds=1000.0,
        checkpoint_every_seconds=1000.0,
        keep_checkpoint_every=1,
        search=SearchConfig(policy="gumbel", num_simulations=2),
        network=NetworkConfig(kind="mlp", hidden_sizes=(8,), latent_size=8),
    )


def test_a_single_player_ladder_is_each_checkpoints_greedy_return(tmp_path):
    workdir = tmp_path / "gamble"
    run_training(tiny_gamble(), workdir)
    assert kept_steps(workdir) == [1, 2]
    with pytest.raises(ValueError, match=r"players 'random': toy:gamble is a single-player"):
        run_ladder(workdir, players=("random",))
    key = jax.random.key(5)
    lines = []
    ladder = run_ladder(workdir, games=6, key=key, progress=lines.append)
    assert ladder.kind == "return"
    assert ladder.players == ("step:1", "step:2")
    assert ladder.env_steps == (8, 16)
    assert ladder.pairs == ()
    for i, step in enumerate((1, 2)):
        agent = Agent.restore(workdir, step=step)
        result = agent.evaluate(jax.random.fold_in(key, i), num_episodes=6)
        expected = float(np.mean(result.episode_return))
        assert ladder.ratings[i] == pytest.approx(expected, abs=1e-6)
    assert len(lines) == 2
    rows = ladder.table().splitlines()
    assert "return" in rows[0] and len(rows) == 3
    assert re.search(r"step:1\s+8\s", ladder.table())
    path = tmp_path / "ladder.png"
    plot_ladder(ladder, path)
    assert path.read_bytes().startswith(PNG_MAGIC)


def test_the_ladder_command_prints_the_table_and_writes_json_and_plot(
    tic_tac_toe_run, tmp_path, capsys
):
    out = tmp_path / "ladder"
    argv = ["ladder", "--workdir", str(tic_tac_toe_run), "--games", "2", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for player in ("step:2", "step:4", "random"):
        assert re.search(rf"^ +\d+  {re.escape(player)} ", printed, re.M), printed
    ratings = json.loads((out / "ladder.json").read_text())
    assert [p["name"] for p in ratings["players"]] == ["step:2", "step:4", "random"]
    assert all(p["wins"] + p["draws"] + p["losses"] == 2 * 2 for p in ratings["players"])
    assert (out / "ladder.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit) as exit_info:
        main(["ladder", "--workdir", str(tic_tac_toe_run), "--games", "3"])
    assert exit_info.value.code == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            "games 3 is invalid: allowed an even integer >= 2 (each player moves first in half of "
            "the games)"
        )
    )


def test_opening_moves_are_random_and_vary_the_games_of_deterministic_players():
    # Two copies of one "first legal cell" player replay one game a seat without openings.
    env = make_env("pgx:tic_tac_toe")
    first_cell = SimpleNamespace(
        kind="first",
        act=lambda params, key, env_state, timestep: jnp.argmax(timestep.legal_action_mask),
        params=None,
    )
    fixed, opened = (
        compile_match(env, first_cell, first_cell, num_games=64, max_steps=9, opening_moves=n)
        for n in (0, 2)
    )
    ret, _ = fixed(None, None, jax.random.key(0))
    # a1 b1 c1 a2 b2 c2 a3: the first mover completes the a3-b2-c1 diagonal on move 7
    assert set(np.asarray(ret[:32]).tolist()) == {1.0} and set(np.asarray(ret[32:]).tolist()) == {
        -1.0
    }
    ret, _ = opened(None, None, jax.random.key(0))
    assert len(set(np.asarray(ret).tolist())) > 1  # the openings change some results
    with pytest.raises(ValueError, match="opening_moves -1 is invalid: allowed an integer >= 0"):
        play_match(
            jax.random.key(0), env=env, player_a="random", player_b="random", num_games=2,
            max_steps=9, opening_moves=-1,
        )  # fmt: skip
