"""Which part of a trained two-player agent is weak: its search, its prior, its model, or its value?

    python benchmarks/one_ply.py --workdir RUN [--seed-index 0] [--games 256] [--samples 4]

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
learned what a move does. Two-player games only (pgx).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from common import machine_description, print_table

from mz_jax.agent import Agent
from mz_jax.transforms import logits_to_scalar
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

    def model_one_ply(key, states, timesteps):
        def one(observation, legal):
            _, hidden = network.initial_inference(params, observation[None])
            hidden = jax.tree.map(lambda x: jnp.repeat(x, num_actions, axis=0), hidden)
            actions = jnp.arange(num_actions, dtype=jnp.int32)
            if isinstance(network, StochasticMuZeroNetwork):
                output, _ = network.afterstate_inference(params, hidden, actions)
                return masked_argmax(logits_to_scalar(output.value_logits), legal)
            output, next_hidden = network.recurrent_inference(params, hidden, actions)
            value = logits_to_scalar(output.value_logits)
            if network.turn_logits is not None:
                same = network.turn_logits(params, next_hidden) > 0
            else:
                same = jnp.zeros(num_actions, bool)
            reward = logits_to_scalar(output.reward_logits)
            return masked_argmax(reward + jnp.where(same, value, -value), legal)

        return jax.vmap(one)(timesteps.observation, timesteps.legal_action_mask)

    def true_one_ply(key, states, timesteps):
        def one(key, state, timestep):
            keys = jax.random.split(key, num_actions * samples)
            actions = jnp.repeat(jnp.arange(num_actions, dtype=jnp.int32), samples)
            copies = jax.tree.map(lambda x: jnp.broadcast_to(x, (len(actions), *x.shape)), state)
            _, after = jax.vmap(env.step)(keys, copies, actions)
            value = state_value(after.final_observation)
            value = jnp.where(after.final_player == timestep.player, value, -value)
            score = after.reward + jnp.where(after.terminated, 0.0, value)
            return masked_argmax(
                score.reshape(num_actions, samples).mean(axis=1), timestep.legal_action_mask
            )

        return jax.vmap(one)(jax.random.split(key, len(timesteps.player)), states, timesteps)

    def first_legal(key, states, timesteps):
        return jnp.argmax(timesteps.legal_action_mask, axis=-1).astype(jnp.int32)

    return dict(
        zip(PLAYERS, (search, prior, model_one_ply, true_one_ply, first_legal), strict=True)
    )


def play(agent: Agent, player, key, *, games: int, max_steps: int) -> np.ndarray:
    """The agent's result (+ its reward at the end, from its side) in ``games`` games against the
    uniformly random player, the agent being player id 0."""
    env = agent.env

    def run(key):
        key, reset_key = jax.random.split(key)
        states, timesteps = jax.vmap(env.reset)(jax.random.split(reset_key, games))

        def body(carry, key):
            states, timesteps, done, result = carry
            act_key, random_key, step_key = jax.random.split(key, 3)
            logits = jnp.where(timesteps.legal_action_mask, 0.0, -jnp.inf)
            random_moves = jax.random.categorical(random_key, logits).astype(jnp.int32)
            mine = timesteps.player == 0
            actions = jnp.where(mine, player(act_key, states, timesteps), random_moves)
            states, after = jax.vmap(env.step)(jax.random.split(step_key, games), states, actions)
            ended = after.terminated | after.truncated
            reward = jnp.where(mine, after.reward, -after.reward)
            result = jnp.where(done, result, jnp.where(ended, reward, 0.0))
            return (states, after, done | ended, result), None

        start = (states, timesteps, jnp.zeros(games, bool), jnp.zeros(games))
        (_, _, done, result), _ = jax.lax.scan(body, start, jax.random.split(key, max_steps))
        return result, done

    result, done = jax.device_get(jax.jit(run)(key))
    if not done.all():
        print(f"  {int((~done).sum())} of {games} games unfinished after {max_steps} steps: draws")
    return np.asarray(result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True, help="a training run of a two-player game")
    parser.add_argument("--seed-index", type=int, default=0)
    parser.add_argument("--games", type=int, default=256)
    parser.add_argument(
        "--samples", type=int, default=4, help="chance draws per move (true one-ply)"
    )
    parser.add_argument(
        "--max-steps", type=int, default=None, help="default: the run's eval_max_steps"
    )
    parser.add_argument("--players", nargs="+", choices=PLAYERS, default=list(PLAYERS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    agent = Agent.restore(args.workdir, seed_index=args.seed_index)
    if agent.env.num_players != 2:
        parser.error(
            f"{agent.env.name} is a single-player environment; this compares two-player play"
        )
    max_steps = args.max_steps or agent.config.eval_max_steps
    print(machine_description())
    print(
        f"{args.workdir} (seed {agent.config.seed}, {agent.env_steps:,} env steps): {args.games} games "
        f"against the uniformly random player, at most {max_steps} steps, the same keys for every row"
    )
    players = make_players(agent, args.samples)
    rows = []
    for name in args.players:
        start = time.perf_counter()
        result = play(
            agent, players[name], jax.random.key(args.seed), games=args.games, max_steps=max_steps
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


if __name__ == "__main__":
    main()
