"""Which part of a trained two-player agent is weak: its search, its prior, its model, or its value?

    python benchmarks/diagnostics/one_ply.py --workdir RUN [--seed-index 0] [--games 256] [--samples 4]
        [--agreement-games 16]

Plays games against the uniformly random player with moves chosen in several ways from the same
trained network, on the same games (the same keys; pgx draws who moves first):

* ``search``: the agent's greedy search, as ``mz-jax eval`` plays it;
* ``prior``: the legal move of highest prior logit;
* ``model one-ply``: the legal move of highest value one step ahead *in the learned model*: the
  afterstate value ``Q(as)`` of Stochastic MuZero, or ``r + v`` of the next state (``v`` negated
  where the other player moves next) for a MuZero network;
* ``true one-ply``: the legal move of highest value one step ahead *in the true game*: the
  environment is stepped (``--samples`` draws of its chance per move, averaged) and the network's
  value of the real next position scored as above. It uses the network's representation and value
  only, so it says how good the value is when the model is taken out;
* ``first legal``: the legal move of lowest index, a fixed reference that knows nothing.

If ``true one-ply`` is far above ``model one-ply``, the value is fine and the dynamics has not
learned what a move does. ``--agreement-games N`` then says how: on the positions of N games of the
agent's search, it compares the model's move values (its afterstate values, and for Stochastic
MuZero also the next states' values through its chance step) with the true one-ply values, by the
share of positions where both pick the same move, their rank correlation over the legal moves and
their spreads. A spread near 0 is a model that ignores the move; a spread like the true one's with
a correlation near 0, one that gets its effect wrong. Two-player games only (pgx).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

import jax
import jax.numpy as jnp
import numpy as np
from common import machine_description, print_table

from mz_jax.core.transforms import logits_to_scalar
from mz_jax.mcts.model import ply_discount
from mz_jax.run.agent import Agent
from mz_jax.types import StochasticMuZeroNetwork

PLAYERS = ("search", "prior", "model one-ply", "true one-ply", "first legal")


def masked_argmax(scores, legal):
    return jnp.argmax(jnp.where(legal, scores, -jnp.inf), axis=-1).astype(jnp.int32)


def make_players(agent: Agent, samples: int) -> dict:
    """``player(key, states[G], timesteps[G]) -> actions[G]`` for each of :data:`PLAYERS`."""
    env, network, params = agent.env, agent.network, agent.params
    num_actions = env.num_actions

    def state_value(observation):
        output, _ = network.initial_inference(params, observation)
        return logits_to_scalar(output.value_logits)

    def search(key, states, timesteps):
        return agent.act(key, timesteps.observation, timesteps.legal_action_mask)

    def prior(key, states, timesteps):
        output, _ = network.initial_inference(params, timesteps.observation)
        return masked_argmax(output.policy_logits, timesteps.legal_action_mask)

    def every_move(observation):
        """The hidden state of one observation, repeated for each of the A actions, and those
        actions: the inputs of the model's step for every move."""
        _, hidden = network.initial_inference(params, observation[None])
        hidden = jax.tree.map(lambda x: jnp.repeat(x, num_actions, axis=0), hidden)
        return hidden, jnp.arange(num_actions, dtype=jnp.int32)

    def model_scores(timesteps):
        """[G, A]: each move's value one step ahead in the learned model, from the mover's side."""

        def one(observation):
            hidden, actions = every_move(observation)
            if isinstance(network, StochasticMuZeroNetwork):
                output, _ = network.afterstate_inference(params, hidden, actions)
                return logits_to_scalar(output.value_logits)
            output, next_hidden = network.recurrent_inference(params, hidden, actions)
            value = logits_to_scalar(output.value_logits)
            if network.turn_logits is not None:
                same = network.turn_logits(params, next_hidden) > 0
            else:
                same = jnp.zeros(num_actions, bool)
            reward = logits_to_scalar(output.reward_logits)
            return reward + jnp.where(same, value, -value)

        return jax.vmap(one)(timesteps.observation)

    def chance_scores(timesteps):
        """[G, A], Stochastic MuZero only: each move's value through the model's chance step, the
        state values of the next states it predicts averaged over its chance distribution σ
        (``Σ_c σ_c (r_c ± v_c)``), where :func:`model_scores` reads the afterstate value head."""

        def one(observation):
            output, afterstate = network.afterstate_inference(params, *every_move(observation))
            sigma = jax.nn.softmax(output.chance_logits, axis=-1)  # [A, C]

            def outcome(code):
                codes = jnp.broadcast_to(code, (num_actions, len(code)))
                out, state = network.recurrent_inference(params, afterstate, codes)
                value = logits_to_scalar(out.value_logits)
                sign = ply_discount(network, params, state, value, discount=1.0, two_player=True)
                return logits_to_scalar(out.reward_logits) + sign * value

            codes = jnp.eye(network.num_chance_outcomes)
            return (sigma * jax.vmap(outcome, out_axes=1)(codes)).sum(-1)

        return jax.vmap(one)(timesteps.observation)

    def true_scores(key, states, timesteps):
        """[G, A]: each move's value one step ahead in the true game (the network's value of the
        real next positions, ``samples`` chance draws averaged), from the mover's side."""

        def one(key, state, timestep):
            keys = jax.random.split(key, num_actions * samples)
            actions = jnp.repeat(jnp.arange(num_actions, dtype=jnp.int32), samples)
            copies = jax.tree.map(lambda x: jnp.broadcast_to(x, (len(actions), *x.shape)), state)
            _, after = jax.vmap(env.step)(keys, copies, actions)
            value = state_value(after.final_observation)
            value = jnp.where(after.final_player == timestep.player, value, -value)
            score = after.reward + jnp.where(after.terminated, 0.0, value)
            return score.reshape(num_actions, samples).mean(axis=1)

        return jax.vmap(one)(jax.random.split(key, len(timesteps.player)), states, timesteps)

    def model_one_ply(key, states, timesteps):
        return masked_argmax(model_scores(timesteps), timesteps.legal_action_mask)

    def true_one_ply(key, states, timesteps):
        return masked_argmax(true_scores(key, states, timesteps), timesteps.legal_action_mask)

    def first_legal(key, states, timesteps):
        return jnp.argmax(timesteps.legal_action_mask, axis=-1).astype(jnp.int32)

    players = dict(
        zip(PLAYERS, (search, prior, model_one_ply, true_one_ply, first_legal), strict=True)
    )
    stochastic = isinstance(network, StochasticMuZeroNetwork)
    return players, model_scores, (chance_scores if stochastic else None), true_scores


def run_games(agent: Agent, player, key, *, games: int, max_steps: int, record=None):
    """``games`` games of ``player`` (the agent, player id 0) against the uniformly random player,
    all ``max_steps`` steps in one scan: the agent's result (+ its reward at the end, from its
    side), whether each game ended, and per step what ``record(key, states, timesteps, done)``
    returns for the positions before the move (None without ``record``)."""
    env = agent.env

    def run(key):
        key, reset_key = jax.random.split(key)
        states, timesteps = jax.vmap(env.reset)(jax.random.split(reset_key, games))

        def body(carry, key):
            states, timesteps, done, result = carry
            # The first three keys are those of a three-way split: recording changes no game.
            act_key, random_key, step_key, record_key = jax.random.split(key, 4)
            recorded = None if record is None else record(record_key, states, timesteps, done)
            logits = jnp.where(timesteps.legal_action_mask, 0.0, -jnp.inf)
            random_moves = jax.random.categorical(random_key, logits).astype(jnp.int32)
            mine = timesteps.player == 0
            actions = jnp.where(mine, player(act_key, states, timesteps), random_moves)
            states, after = jax.vmap(env.step)(jax.random.split(step_key, games), states, actions)
            ended = after.terminated | after.truncated
            reward = jnp.where(mine, after.reward, -after.reward)
            result = jnp.where(done, result, jnp.where(ended, reward, 0.0))
            return (states, after, done | ended, result), recorded

        start = (states, timesteps, jnp.zeros(games, bool), jnp.zeros(games))
        (_, _, done, result), recorded = jax.lax.scan(body, start, jax.random.split(key, max_steps))
        return result, done, recorded

    return jax.device_get(jax.jit(run)(key))


def play(agent: Agent, player, key, *, games: int, max_steps: int) -> np.ndarray:
    """The agent's result (+ its reward at the end, from its side) in ``games`` games against the
    uniformly random player, the agent being player id 0."""
    result, done, _ = run_games(agent, player, key, games=games, max_steps=max_steps)
    if not done.all():
        print(f"  {int((~done).sum())} of {games} games unfinished after {max_steps} steps: draws")
    return np.asarray(result)


def agreement(agent: Agent, player, scorers: dict, true_scores, key, *, games: int, max_steps: int):
    """How well the learned model ranks moves, on the positions of games that ``player`` plays
    against the uniformly random player, at its turns with two legal moves or more. For each of
    ``scorers`` (a name -> ``scores(timesteps) -> [G, A]``), per position: whether its best move is
    the true one-ply best, the rank correlation of its scores with the true one-ply scores over the
    legal moves, and the spread (standard deviation over the legal moves) of each. A model that
    ignores the move has a spread near 0; one that gets the move's effect wrong, a correlation
    near 0. Returns ``{name: {measure: mean}}`` and the number of positions."""

    def statistics(model, true, legal):
        n = legal.sum(-1)
        top = masked_argmax(model, legal) == masked_argmax(true, legal)

        def ranks(x):
            return jnp.argsort(jnp.argsort(jnp.where(legal, x, jnp.inf), -1), -1).astype(float)

        def centred(x):
            return jnp.where(legal, x - (x * legal).sum(-1, keepdims=True) / n[:, None], 0.0)

        def spread(x):
            return jnp.sqrt((centred(x) ** 2).sum(-1) / n)

        rm, rt = centred(ranks(model)), centred(ranks(true))
        rank_corr = (rm * rt).sum(-1) / jnp.sqrt((rm**2).sum(-1) * (rt**2).sum(-1))
        return dict(top=top, chance=1.0 / n, rank=rank_corr, model=spread(model), true=spread(true))

    def record(key, states, timesteps, done):
        legal = timesteps.legal_action_mask
        true = true_scores(key, states, timesteps)
        stats = {name: statistics(f(timesteps), true, legal) for name, f in scorers.items()}
        valid = (timesteps.player == 0) & ~done & (legal.sum(-1) >= 2)
        return stats, valid

    _, _, (stats, valid) = run_games(
        agent, player, key, games=games, max_steps=max_steps, record=record
    )
    valid = np.asarray(valid)
    means = {
        name: {m: float(np.asarray(v)[valid].mean()) for m, v in measures.items()}
        for name, measures in stats.items()
    }
    return means, int(valid.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", required=True, help="a training run of a two-player game")
    parser.add_argument("--seed-index", type=int, default=0)
    parser.add_argument(
        "--games",
        type=int,
        default=256,
        help="games per player (0: none, e.g. with --agreement-games)",
    )
    parser.add_argument(
        "--samples", type=int, default=4, help="chance draws per move (true one-ply)"
    )
    parser.add_argument(
        "--max-steps", type=int, default=None, help="default: the run's eval_max_steps"
    )
    parser.add_argument("--players", nargs="+", choices=PLAYERS, default=list(PLAYERS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--agreement-games",
        type=int,
        default=0,
        help="also measure how the model's move values agree with the true one-ply values, on the "
        "positions of this many games of the agent's search against the random player (0: not)",
    )
    args = parser.parse_args()
    for flag in ("games", "agreement_games"):
        if getattr(args, flag) < 0:
            parser.error(f"--{flag.replace('_', '-')} must be >= 0; got {getattr(args, flag)}")
    if not args.games and not args.agreement_games:
        parser.error("--games 0 and --agreement-games 0 leave nothing to measure")

    agent = Agent.restore(args.workdir, seed_index=args.seed_index)
    if agent.env.num_players != 2:
        parser.error(
            f"{agent.env.name} is a single-player environment; this compares two-player play"
        )
    max_steps = args.max_steps or agent.config.eval_max_steps
    print(machine_description())
    run = f"{args.workdir} (seed {agent.config.seed}, {agent.env_steps:,} env steps)"
    players, model_scores, chance_scores, true_scores = make_players(agent, args.samples)
    if args.games:
        print(
            f"{run}: {args.games} games against the uniformly random player, at most {max_steps} "
            "steps, the same keys for every row"
        )
        rows = []
        for name in args.players:
            start = time.perf_counter()
            result = play(
                agent,
                players[name],
                jax.random.key(args.seed),
                games=args.games,
                max_steps=max_steps,
            )
            rows.append(
                [
                    name,
                    f"{np.mean(result > 0):.3f}",
                    f"{np.mean(result == 0):.3f}",
                    f"{np.mean(result < 0):.3f}",
                    f"{result.mean():+.3f}",
                    f"{time.perf_counter() - start:.0f}",
                ]
            )
        print_table(["moves by", "wins", "draws", "losses", "mean result", "seconds"], rows)
    else:
        print(run)
    if args.agreement_games:
        start = time.perf_counter()
        scorers = {"model one-ply": model_scores}
        if chance_scores is not None:
            scorers["through the chance step"] = chance_scores
        found, positions = agreement(
            agent,
            players["search"],
            scorers,
            true_scores,
            jax.random.key(args.seed + 1),
            games=args.agreement_games,
            max_steps=max_steps,
        )
        print(
            f"\nThe model's move values against the true one-ply values, over {positions:,} "
            f"positions of the agent's play with two legal moves or more "
            f"({time.perf_counter() - start:.0f} s). 'model one-ply' reads the afterstate value "
            "(Stochastic MuZero) or the next state's; 'through the chance step' averages the "
            "predicted next states' values over the model's chance distribution:"
        )
        measures = [
            ("top", "its best move is the true one-ply best", "{:.3f}"),
            ("chance", "the same by chance (1 / legal moves)", "{:.3f}"),
            ("rank", "rank correlation over the legal moves", "{:+.3f}"),
            ("model", "spread of its values over the legal moves", "{:.3f}"),
            ("true", "spread of the true one-ply values", "{:.3f}"),
        ]
        print_table(
            ["measure", *found],
            [[label] + [fmt.format(found[n][key]) for n in found] for key, label, fmt in measures],
        )


if __name__ == "__main__":
    main()
