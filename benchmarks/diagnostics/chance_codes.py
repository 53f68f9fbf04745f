"""What a trained Stochastic MuZero's chance encoder codes: the chance outcome, or the move?

    python benchmarks/diagnostics/chance_codes.py --workdir RUN [--seed-index 0] [--positions 400] [--draws 64]

The encoder ``e(o, o')`` should give the chance outcome of a transition (the dice rolled, the tile
placed) as one of C codes. On positions of uniformly random play (with two legal moves or more),
every legal move is stepped in the true environment under ``--draws`` keys, and each ``(o, o')``
coded:

* a move whose next observations differ between keys has a random outcome: the number of distinct
  next observations against the number of distinct codes says how much of the chance the codebook
  resolves (as many codes as outcomes: all of it; one code: none);
* moves whose next observation is the same under every key have no chance at all, so one code
  should serve them all: more than one distinct code among a position's deterministic moves is
  the code carrying what the move did.
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

from mz_jax.run.agent import Agent
from mz_jax.types import StochasticMuZeroNetwork


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", required=True, help="a Stochastic MuZero training run")
    parser.add_argument("--seed-index", type=int, default=0)
    parser.add_argument("--positions", type=int, default=400, help="steps of random play")
    parser.add_argument("--draws", type=int, default=64, help="keys each move is stepped under")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    agent = Agent.restore(args.workdir, seed_index=args.seed_index)
    env, network, params = agent.env, agent.network, agent.params
    if not isinstance(network, StochasticMuZeroNetwork):
        parser.error(
            f"{args.workdir} trained a MuZero network; chance codes need Stochastic MuZero"
        )
    if agent.config.stochastic.chance_codes == "environment":
        parser.error(
            f"{args.workdir} trained on the environment's chance outcomes (stochastic.chance_codes="
            "'environment'); its encoder was not used"
        )
    num_actions, draws = env.num_actions, args.draws

    @jax.jit
    def codes(key, state, timestep):
        """[A, D] codes and [A, D, obs] next observations of every move under D keys."""
        actions = jnp.repeat(jnp.arange(num_actions, dtype=jnp.int32), draws)
        keys = jnp.tile(jax.random.split(key, draws), num_actions)
        copies = jax.tree.map(lambda x: jnp.broadcast_to(x, (len(actions), *x.shape)), state)
        _, after = jax.vmap(env.step)(keys, copies, actions)
        observation = jnp.broadcast_to(timestep.observation, after.observation.shape)
        logits = network.encode_chance(params, observation, after.observation)
        code = jnp.argmax(logits, axis=-1).reshape(num_actions, draws)
        return code, after.observation.reshape(num_actions, draws, -1)

    @jax.jit
    def advance(key, state, timestep):
        act_key, step_key, reset_key = jax.random.split(key, 3)
        logits = jnp.where(timestep.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(act_key, logits).astype(jnp.int32)
        state, timestep = env.step(step_key, state, action)
        reset_state, reset_timestep = env.reset(reset_key)
        done = timestep.terminated | timestep.truncated
        pick = lambda new, old: jax.tree.map(lambda n, o: jnp.where(done, n, o), new, old)
        return pick(reset_state, state), pick(reset_timestep, timestep)

    print(machine_description())
    start = time.perf_counter()
    key = jax.random.key(args.seed)
    key, reset_key = jax.random.split(key)
    state, timestep = jax.jit(env.reset)(reset_key)
    random_outcomes, random_codes, deterministic = [], [], []
    for _ in range(args.positions):
        key, code_key, move_key = jax.random.split(key, 3)
        legal = np.asarray(timestep.legal_action_mask)
        if legal.sum() >= 2:
            code, next_obs = jax.device_get(codes(code_key, state, timestep))
            fixed = []
            for action in np.flatnonzero(legal):
                outcomes = len(np.unique(next_obs[action], axis=0))
                if outcomes > 1:
                    random_outcomes.append(outcomes)
                    random_codes.append(len(set(code[action].tolist())))
                else:
                    fixed.append(code[action, 0])
            if len(fixed) >= 2:
                deterministic.append(len(set(fixed)))
        state, timestep = advance(move_key, state, timestep)

    print(
        f"{args.workdir} (seed {agent.config.seed}, {agent.env_steps:,} env steps, "
        f"{network.num_chance_outcomes} codes): {args.positions} positions of random play, each "
        f"legal move stepped under {draws} keys ({time.perf_counter() - start:.0f} s)"
    )
    rows = []
    if random_outcomes:
        rows.append(
            [
                "moves with a random outcome",
                f"{len(random_outcomes):,}",
                f"{np.mean(random_outcomes):.2f} distinct next observations",
                f"{np.mean(random_codes):.2f} distinct codes",
            ]
        )
    if deterministic:
        deterministic = np.asarray(deterministic)
        rows.append(
            [
                "positions with 2+ moves of no chance",
                f"{len(deterministic):,}",
                "1 outcome",
                f"{deterministic.mean():.2f} distinct codes among them; more than 1 in "
                f"{np.mean(deterministic > 1):.0%} of positions",
            ]
        )
    print_table(["transitions", "count", "true outcomes", "the encoder's codes"], rows)


if __name__ == "__main__":
    main()
