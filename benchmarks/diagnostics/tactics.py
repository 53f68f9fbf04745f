"""One-move tactics of a trained board-game agent: does it take a win in one, and does it avoid
handing the opponent one?

Positions come from uniformly random play (each game a random number of moves, drawn from
``--moves LO HI``; finished games are dropped), so they are not the agent's own. In each one the
rules (pgx's ``step``) mark two kinds of move:

* a **win in one**: a legal move after which the mover has won;
* a move that **hands a win**: a legal move after which the game goes on and the opponent has a
  win in one.

``takes a win`` is the share of the positions with a win in one where the agent's greedy move
(``mz_jax.Agent.act``: the search with the learned model) is one of them; ``avoids handing one`` the
share of the positions with no win in one, where some moves hand a win and some do not, in which
its move does not. ``a random move`` is what a uniformly random legal move scores on the same
positions. ``model reward`` is the reward the learned model predicts for one move from the
position (one step of the dynamics), averaged over winning moves and over the other legal moves of
the same positions: the reward of a win is 1, of any other move 0. For pgx's deterministic
two-player games where a finished game pays the winner +1 (``tic_tac_toe``, ``connect_four``).

    python benchmarks/diagnostics/tactics.py runs/c4                 # a training workdir, every seed
    python benchmarks/diagnostics/tactics.py runs/ttt --moves 1 6    # tic-tac-toe: shorter random games
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

import jax
import jax.numpy as jnp
import numpy as np
from common import machine_description, print_table

from mz_jax.core.transforms import logits_to_scalar
from mz_jax.envs.base import select_tree
from mz_jax.envs.pgx_adapter import pgx_game
from mz_jax.run.agent import Agent
from mz_jax.run.resume import read_config

GAMES = ("pgx:tic_tac_toe", "pgx:connect_four")


def random_positions(env, key: jax.Array, num: int, moves: tuple[int, int]):
    """``num`` pgx states, each after a uniformly random number of moves in ``[LO, HI]`` of uniformly
    random legal play (a game that ends earlier stays at its end), and ``alive[num]``: not ended."""
    lo, hi = moves
    init_key, count_key, play_key = jax.random.split(key, 3)
    state = jax.vmap(env.init)(jax.random.split(init_key, num))
    length = jax.random.randint(count_key, (num,), lo, hi + 1)
    step = jax.vmap(env.step)

    def move(t, state):
        key = jax.random.fold_in(play_key, t)
        logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(key, logits)
        play = (t < length) & ~state.terminated
        return jax.vmap(select_tree)(play, step(state, action), state)

    state = jax.lax.fori_loop(0, hi, move, state)
    return state, ~state.terminated


def _after_each_move(env, state, outcome) -> jax.Array:
    """``[N, A]`` bool: ``outcome(state reached)`` ``[N]`` for each move, False where it is illegal."""
    num = state.current_player.shape[0]
    after = lambda action: outcome(jax.vmap(env.step)(state, jnp.full((num,), action)))
    return jax.vmap(after, out_axes=1)(jnp.arange(env.num_actions)) & state.legal_action_mask


def wins_in_one(env, state) -> jax.Array:
    """``[N, A]`` bool: legal moves after which the player who made them has won."""
    mover = state.current_player[:, None]
    won = lambda played: (
        played.terminated & (jnp.take_along_axis(played.rewards, mover, axis=1)[:, 0] > 0)
    )
    return _after_each_move(env, state, won)


def hands_a_win(env, state) -> jax.Array:
    """``[N, A]`` bool: legal moves after which the game goes on and the opponent (to move) has a
    win in one."""
    hands = lambda played: ~played.terminated & jnp.any(wins_in_one(env, played), axis=-1)
    return _after_each_move(env, state, hands)


def one_step_rewards(network, num_actions: int, params, observation: jax.Array) -> jax.Array:
    """``[N, A]``: the reward the learned model predicts for each move from each observation."""
    _, hidden = network.initial_inference(params, observation)

    def reward(action):
        actions = jnp.full((observation.shape[0],), action, jnp.int32)
        output, _ = network.recurrent_inference(params, hidden, actions)
        return logits_to_scalar(output.reward_logits)

    return jax.vmap(reward, out_axes=1)(jnp.arange(num_actions))


class Positions(NamedTuple):
    """Random-play positions of one game and what the rules say of each move there."""

    state: Any  # the pgx states [N]
    alive: np.ndarray  # [N] bool: the game has not ended
    wins: np.ndarray  # [N, A] bool: wins_in_one
    hands: np.ndarray  # [N, A] bool: hands_a_win


def positions(env, key: jax.Array, num: int, moves: tuple[int, int]) -> Positions:
    """``num`` random-play positions of ``env`` (:func:`random_positions`) with their wins in one
    and the moves that hand one over: the same for every agent of the game."""
    state, alive = jax.jit(random_positions, static_argnums=(0, 2, 3))(env, key, num, moves)
    wins = jax.jit(wins_in_one, static_argnums=0)(env, state)
    hands = jax.jit(hands_a_win, static_argnums=0)(env, state)
    return Positions(state, np.asarray(alive), np.asarray(wins), np.asarray(hands))


def tactics(agent: Agent, at: Positions, key: jax.Array) -> dict:
    """The shares in this module's docstring, for one agent, on the positions ``at``."""
    state, alive, wins, hands = at
    legal = np.asarray(state.legal_action_mask)
    observation = jnp.asarray(state.observation, jnp.float32)
    action = np.asarray(agent.act(key, observation, state.legal_action_mask))
    rewards = jax.jit(one_step_rewards, static_argnums=(0, 1))(
        agent.network, legal.shape[1], agent.params, observation
    )
    rewards = np.asarray(rewards)

    rows = np.arange(len(alive))
    has_win = alive & wins.any(axis=1)
    must_avoid = alive & ~wins.any(axis=1) & (hands & legal).any(axis=1)
    must_avoid &= (~hands & legal).any(axis=1)
    share = lambda moves_of: (moves_of & legal).sum(axis=1) / legal.sum(axis=1)
    winning = has_win[:, None] & wins
    others = has_win[:, None] & legal & ~wins
    return {
        "positions with a win": int(has_win.sum()),
        "takes a win": float(wins[rows, action][has_win].mean()),
        "random takes a win": float(share(wins)[has_win].mean()),
        "positions to avoid": int(must_avoid.sum()),
        "avoids handing one": float((~hands[rows, action])[must_avoid].mean()),
        "random avoids": float(share(~hands)[must_avoid].mean()),
        "model reward, winning move": float(rewards[winning].mean()),
        "model reward, other moves": float(rewards[others].mean()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdirs", nargs="+", help="training run directories (pgx board games)")
    parser.add_argument("--positions", type=int, default=2048, help="random-play positions")
    parser.add_argument(
        "--moves",
        type=int,
        nargs=2,
        default=(4, 24),
        metavar=("LO", "HI"),
        help="random moves before a position, drawn uniformly from [LO, HI]",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the positions")
    args = parser.parse_args(argv)
    lo, hi = args.moves
    if not 0 <= lo <= hi:
        parser.error(f"--moves {lo} {hi}: needs 0 <= LO <= HI")
    if args.positions < 1:
        parser.error(f"--positions {args.positions}: needs at least 1")

    print(machine_description())
    position_key, act_key = jax.random.split(jax.random.key(args.seed))
    of_game: dict[str, Positions] = {}  # the positions of each game, made once
    rows = []
    for workdir in args.workdirs:
        config = read_config(workdir)
        if config.env not in GAMES:
            raise SystemExit(f"{workdir}: trained on {config.env}; this measures {GAMES}")
        if config.env not in of_game:
            env = pgx_game(config.env)
            of_game[config.env] = positions(env, position_key, args.positions, (lo, hi))
        for index in range(config.num_seeds):
            agent = Agent.restore(workdir, seed_index=index)
            result = tactics(agent, of_game[config.env], act_key)
            rows.append(
                [
                    workdir,
                    agent.config.seed,
                    agent.env_steps,
                    f"{result['takes a win']:.3f} of {result['positions with a win']}",
                    f"{result['random takes a win']:.3f}",
                    f"{result['avoids handing one']:.3f} of {result['positions to avoid']}",
                    f"{result['random avoids']:.3f}",
                    f"{result['model reward, winning move']:.3f} / "
                    f"{result['model reward, other moves']:.3f}",
                ]
            )
    print_table(
        [
            "workdir",
            "seed",
            "env steps",
            "takes a win",
            "a random move",
            "avoids handing one",
            "a random move",
            "model reward (winning / other moves)",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
