"""What MuZero's two gradient scalings do to the gradient of the dynamics function.

For unroll lengths K = 1..10 this prints the gradient norm that reaches the dynamics function's
parameters, for the MuZero loss with and without its two uses of ``scale_gradient`` (the 1/2 on the
hidden state between unrolled steps, and the 1/K on each unrolled step's loss), and checks that the
loss value is the same in all cases: the scalings act on the backward pass only.

    python examples/scale_gradient_demo.py
    python examples/scale_gradient_demo.py --quick     # one network, K = 1, 4, 8 (what CI runs)
"""

from __future__ import annotations

import argparse
import functools
import math

import jax
import jax.numpy as jnp
import optax

from mz_jax import Batch, ModelOutput, MuZeroNetwork, make_loss_fn, scale_gradient
from mz_jax.core.loss import cross_entropy
from mz_jax.core.transforms import scalar_to_support
from mz_jax.core.unroll import unroll_model
from mz_jax.networks import make_mlp_network

BATCH_SIZE, NUM_ACTIONS, SUPPORT, LATENT = 256, 3, 5, 16
BINS = 2 * SUPPORT + 1


def residual_network():
    """A small network in plain jax.numpy whose dynamics is residual, s' = s + f(s, a), and not
    normalised, so that gradient survives many unrolled steps."""

    def predict(params, hidden):
        x = jnp.tanh(hidden @ params["prediction"])
        return x @ params["value"], x @ params["policy"]

    def initial_inference(params, observation):
        hidden = jnp.tanh(observation @ params["representation"])
        value, policy = predict(params, hidden)
        return ModelOutput(value, jnp.zeros((observation.shape[0], BINS)), policy), hidden

    def recurrent_inference(params, hidden, action):
        inputs = jnp.concatenate([hidden, jax.nn.one_hot(action, NUM_ACTIONS)], axis=-1)
        x = jnp.tanh(inputs @ params["dynamics_hidden"])
        next_hidden = hidden + x @ params["dynamics_out"]
        value, policy = predict(params, next_hidden)
        return ModelOutput(value, x @ params["dynamics_reward"], policy), next_hidden

    shapes = {
        "representation": (4, LATENT),
        "dynamics_hidden": (LATENT + NUM_ACTIONS, 32),
        "dynamics_out": (32, LATENT),
        "dynamics_reward": (32, BINS),
        "prediction": (LATENT, 32),
        "value": (32, BINS),
        "policy": (32, NUM_ACTIONS),
    }
    keys = jax.random.split(jax.random.key(0), len(shapes))
    params = {
        name: jax.random.normal(key, shape) / math.sqrt(shape[0])
        for key, (name, shape) in zip(keys, shapes.items(), strict=True)
    }
    parts = {
        "representation": ["representation"],
        "dynamics": ["dynamics_hidden", "dynamics_out", "dynamics_reward"],
    }
    return MuZeroNetwork(initial_inference, recurrent_inference), params, parts


def library_mlp_network():
    """``mz_jax.networks.make_mlp_network``: LayerNorm and a min-max normalised hidden state."""
    network, params = make_mlp_network(
        jax.random.key(0),
        observation_shape=(4,),
        num_actions=NUM_ACTIONS,
        hidden_sizes=(32,),
        latent_size=LATENT,
        value_support_size=SUPPORT,
        reward_support_size=SUPPORT,
    )
    # Its output layers start at zero, which passes no gradient back into the model at all;
    # perturb every parameter, as a few training steps would.
    leaves, treedef = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.key(1), len(leaves))
    noise = [0.3 * jax.random.normal(k, x.shape) for k, x in zip(keys, leaves, strict=True)]
    params = jax.tree.unflatten(treedef, [x + n for x, n in zip(leaves, noise, strict=True)])
    parts = {
        "representation": ["representation", "representation_out"],
        "dynamics": ["dynamics", "dynamics_out", "reward_head"],
    }
    return network, params, parts


def make_batch(num_unroll_steps: int) -> Batch:
    """Random observations and actions; every step wants value 1, reward 1 and action 0."""
    obs_key, action_key = jax.random.split(jax.random.key(2))
    steps = num_unroll_steps + 1
    return Batch(
        observation=jax.random.normal(obs_key, (BATCH_SIZE, 4)),
        actions=jax.random.randint(action_key, (BATCH_SIZE, num_unroll_steps), 0, NUM_ACTIONS),
        target_value=jnp.ones((BATCH_SIZE, steps)),
        target_reward=jnp.ones((BATCH_SIZE, steps)),
        target_policy=jnp.zeros((BATCH_SIZE, steps, NUM_ACTIONS)).at[:, :, 0].set(1.0),
        mask=jnp.ones((BATCH_SIZE, steps)),
        weight=jnp.ones(BATCH_SIZE),
    )


def muzero_loss(network, params, batch, *, halve_hidden: bool, divide_by_k: bool):
    """The MuZero loss with either scaling switched on or off (unit weights and masks)."""
    predictions = unroll_model(
        network,
        params,
        batch.observation,
        batch.actions,
        hidden_grad_scale=0.5 if halve_hidden else 1.0,
    ).predictions
    value_ce = cross_entropy(
        predictions.value_logits, scalar_to_support(batch.target_value, SUPPORT)
    )
    reward_ce = cross_entropy(
        predictions.reward_logits, scalar_to_support(batch.target_reward, SUPPORT)
    )
    policy_ce = cross_entropy(predictions.policy_logits, batch.target_policy)
    step_loss = value_ce + reward_ce.at[:, 0].set(0.0) + policy_ce  # [B, K+1]
    if divide_by_k:
        num_unroll_steps = batch.actions.shape[1]
        step_loss = step_loss.at[:, 1:].set(scale_gradient(step_loss[:, 1:], 1 / num_unroll_steps))
    return jnp.mean(jnp.sum(step_loss, axis=1))


VARIANTS = {  # column name: (halve_hidden, divide_by_k)
    "neither": (False, False),
    "1/2 only": (True, False),
    "1/K only": (False, True),
    "both (MuZero)": (True, True),
}


@functools.partial(jax.jit, static_argnums=0)
def losses_and_grad_norms(network, params, batch):
    """Each variant's loss value and the squared gradient norm of each top-level parameter."""
    losses, grads, squared_norms = {}, {}, {}
    for name, (halve_hidden, divide_by_k) in VARIANTS.items():
        loss_fn = functools.partial(
            muzero_loss, network, halve_hidden=halve_hidden, divide_by_k=divide_by_k
        )
        losses[name], grads[name] = jax.value_and_grad(loss_fn)(params, batch)
        squared_norms[name] = {k: optax.tree.norm(g, squared=True) for k, g in grads[name].items()}
    # The library's loss: it should be the "both" variant exactly.
    (library_loss, _), library_grads = jax.value_and_grad(make_loss_fn(network), has_aux=True)(
        params, batch
    )
    difference = jax.tree.map(jnp.subtract, library_grads, grads["both (MuZero)"])
    library_gap = optax.tree.norm(difference)
    return losses, squared_norms, library_loss, library_gap


def gradient_table(network, params, parts, unroll_lengths):
    """``{part: [[K, norm per variant..., loss], ...]}``, checking the forward values on the way."""
    rows = {part: [] for part in parts}
    for k in unroll_lengths:
        losses, squared_norms, library_loss, library_gap = jax.device_get(
            losses_and_grad_norms(network, params, make_batch(k))
        )
        loss = float(losses["neither"])
        # Bit for bit: scale_gradient adds no arithmetic to the forward pass.
        assert all(float(v) == loss for v in losses.values()), f"K={k}: {losses}"
        # make_loss_fn sums the same terms in another order (value weight, masks, weights).
        assert abs(float(library_loss) - loss) <= 1e-6 * abs(loss), (k, library_loss, loss)
        assert library_gap < 1e-5, f"K={k}: make_loss_fn's gradient differs by {library_gap}"
        for part, keys in parts.items():
            norms = [math.sqrt(sum(float(squared_norms[v][key]) for key in keys)) for v in VARIANTS]
            rows[part].append([k, *(f"{n:.3f}" for n in norms), f"{loss:.4f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the residual network, K = 1, 4, 8")
    args = parser.parse_args()
    networks = [("residual network (plain jax.numpy)", residual_network)]
    if not args.quick:
        networks.append(("mz_jax.networks.make_mlp_network", library_mlp_network))
    unroll_lengths = (1, 4, 8) if args.quick else tuple(range(1, 11))

    for title, make in networks:
        network, params, parts = make()
        for part, rows in gradient_table(network, params, parts, unroll_lengths).items():
            print(f"\n{title}: gradient norm reaching the {part} function's parameters")
            print(" ".join(f"{h:>14}" for h in ["K", *VARIANTS, "loss value"]))
            for row in rows:
                print(" ".join(f"{c:>14}" for c in row))
    print("\nthe loss value is identical (bit for bit) in all four variants;")
    print("make_loss_fn gives the loss and gradients of 'both (MuZero)'")


if __name__ == "__main__":
    main()
