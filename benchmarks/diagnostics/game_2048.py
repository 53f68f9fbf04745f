"""2048 scores and the largest tile reached, for trained agents: greedy games from each seed's
final network, compared between runs (Stochastic MuZero against MuZero, say).

A 2048 game is scored by the tiles its moves merge, and players of it speak of the largest tile a
game reached: a game that built 512 merged two 256s on the way. ``mz-jax eval`` reports the score;
this script also reads each game's boards (pgx's observation: channel i of a cell is tile 2^i) and
reports how often the largest tile reached 256, 512, 1024 and 2048. The uniformly random legal
move is measured the same way, as the floor both must beat.

    python benchmarks/diagnostics/game_2048.py --workdir runs/2048_stochastic runs/2048_muzero --games 64

Every run of a multi-seed workdir (``num_seeds > 1``) gets a row; the games of a row are played in
parallel, one per environment, until each ends or ``--max-steps`` steps have passed.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

import jax
import jax.numpy as jnp
import numpy as np
from common import machine_description, print_table

from mz_jax.envs import Env, make_env
from mz_jax.run.agent import Agent
from mz_jax.run.resume import read_config

ENV = "pgx:2048"
TILES = (256, 512, 1024, 2048)


class Games(NamedTuple):
    """Per game: ``score`` (the sum of merged tiles), ``max_tile``, ``length`` in moves, and
    ``ended``: the game ended (no move left) within the step budget."""

    score: np.ndarray
    max_tile: np.ndarray
    length: np.ndarray
    ended: np.ndarray


def largest_tile(observation: jax.Array) -> jax.Array:
    """The largest tile on a batch of 2048 boards ``[B, 4, 4, 31]``: ``2^i`` for the highest
    channel i lit in any cell (channel 0 marks an empty cell), 0 for an empty board."""
    channels = jnp.arange(observation.shape[-1])
    lit = jnp.max(jnp.where(observation > 0, channels, 0), axis=(-3, -2, -1))
    return jnp.where(lit > 0, 2**lit, 0)


@functools.partial(jax.jit, static_argnames=("env", "choose", "num_games", "max_steps"))
def play(key, *, env: Env, choose, num_games: int, max_steps: int) -> tuple[jax.Array, ...]:
    """``num_games`` games, one per environment, moves from ``choose(key, observation, legal)``."""
    reset_key, loop_key = jax.random.split(key)
    state, timestep = jax.vmap(env.reset)(jax.random.split(reset_key, num_games))
    init = (
        0,
        state,
        timestep,
        jnp.zeros(num_games, jnp.float32),
        largest_tile(timestep.observation),
        jnp.zeros(num_games, jnp.int32),
        jnp.zeros(num_games, bool),
    )

    def unfinished(carry):
        return (carry[0] < max_steps) & ~jnp.all(carry[-1])

    def step(carry):
        t, state, timestep, score, tile, length, done = carry
        choose_key, env_key = jax.random.split(jax.random.fold_in(loop_key, t))
        action = choose(choose_key, timestep.observation, timestep.legal_action_mask)
        state, timestep_next = jax.vmap(env.step)(
            jax.random.split(env_key, num_games), state, action
        )
        active = ~done
        # The board a move reached (before the automatic reset of a finished game).
        reached = largest_tile(timestep_next.final_observation)
        score = score + jnp.where(active, timestep_next.reward, 0.0)
        tile = jnp.where(active, jnp.maximum(tile, reached), tile)
        length = length + active.astype(jnp.int32)
        done = done | timestep_next.terminated | timestep_next.truncated
        return t + 1, state, timestep_next, score, tile, length, done

    _, _, _, score, tile, length, done = jax.lax.while_loop(unfinished, step, init)
    return score, tile, length, done


def random_choice(key, observation, legal):
    """A uniformly random legal move per board."""
    del observation
    return jax.random.categorical(key, jnp.where(legal, 0.0, -jnp.inf)).astype(jnp.int32)


def run_games(env: Env, choose, key, *, num_games: int, max_steps: int) -> Games:
    score, tile, length, done = play(
        key, env=env, choose=choose, num_games=num_games, max_steps=max_steps
    )
    return Games(*(np.asarray(x) for x in (score, tile, length, done)))


def row(label: str, steps: str, games: Games) -> list[object]:
    n = len(games.score)
    sem = games.score.std(ddof=1) / math.sqrt(n)
    shares = [f"{np.mean(games.max_tile >= t):.2f}" for t in TILES]
    return [
        label,
        steps,
        n,
        f"{games.score.mean():,.0f} ± {sem:,.0f}",
        f"{np.median(games.score):,.0f}",
        f"{int(games.max_tile.max()):,}",
        *shares,
        f"{games.length.mean():.0f}",
        f"{np.mean(games.ended):.2f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", nargs="+", default=[], help="training runs of pgx:2048")
    parser.add_argument("--games", type=int, default=64, help="greedy games per seed")
    parser.add_argument("--max-steps", type=int, default=5_000, help="moves a game may last")
    parser.add_argument("--seed", type=int, default=123, help="PRNG seed of the games")
    args = parser.parse_args()
    if args.games < 2:
        parser.error(f"--games must be at least 2 (a standard error needs two); got {args.games}")
    if args.max_steps < 1:
        parser.error(f"--max-steps must be at least 1; got {args.max_steps}")

    print(f"machine: {machine_description()}\n")
    key = jax.random.key(args.seed)
    env = make_env(ENV)
    rows = [
        row(
            "uniformly random legal move",
            "-",
            run_games(env, random_choice, key, num_games=args.games, max_steps=args.max_steps),
        )
    ]
    for workdir in args.workdir:
        config = read_config(Path(workdir))
        if config.env != ENV:
            parser.error(f"--workdir {workdir} trained {config.env}, not {ENV}")
        model = "Stochastic MuZero" if config.network.num_chance_outcomes else "MuZero"
        for i in range(config.num_seeds):
            agent = Agent.restore(workdir, seed_index=i)
            # Agent.act: the greedy search mz-jax eval plays, traced into the game loop.
            games = run_games(
                agent.env, agent.act, key, num_games=args.games, max_steps=args.max_steps
            )
            label = f"{workdir} (seed {agent.config.seed}, {model})"
            rows.append(row(label, f"{agent.env_steps:,}", games))
    headers = [
        "player",
        "env steps",
        "games",
        "mean score ± s.e.",
        "median score",
        "largest tile",
        *(f"share ≥ {t}" for t in TILES),
        "mean moves",
        "share ended",
    ]
    print_table(headers, rows)


if __name__ == "__main__":
    main()
