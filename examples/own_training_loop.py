"""Your own training loop around mz_jax's loss: your optimizer, your data, one device or many.

Trains a small MuZero network on a synthetic task (every example says which action pays, and the
model must carry that through its unroll) twice from the same start and the same batches: with a
jitted update on one device, then data-parallel over all devices with ``jax.shard_map`` and
``lax.pmean`` over the mesh axis ``'data'``. Both runs end with the same parameters (up to float
summation order).

    python examples/own_training_loop.py                   # 4 CPU devices by default
    python examples/own_training_loop.py --steps 50 --cpu-devices 2
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from mz_jax import Batch, make_loss_fn
from mz_jax.networks import make_mlp_network

NUM_ACTIONS, UNROLL, BATCH_SIZE = 3, 3, 64


@jax.jit
def synthetic_batch(key) -> Batch:
    """Observation ``x[B, 4]``: action ``argmax(x[:3])`` pays reward 1, others 0; the value is
    ``x[3]``; the target policy is one-hot on the paying action at every step."""
    batch_size = BATCH_SIZE
    obs_key, action_key = jax.random.split(key)
    x = jax.random.normal(obs_key, (batch_size, 4))
    actions = jax.random.randint(action_key, (batch_size, UNROLL), 0, NUM_ACTIONS)
    best = jnp.argmax(x[:, :3], axis=-1)
    reward = (actions == best[:, None]).astype(jnp.float32)
    return Batch(
        observation=x,
        actions=actions,
        target_value=jnp.repeat(x[:, 3:], UNROLL + 1, axis=1),
        target_reward=jnp.concatenate([jnp.zeros((batch_size, 1)), reward], axis=1),
        target_policy=jnp.repeat(jax.nn.one_hot(best, NUM_ACTIONS)[:, None], UNROLL + 1, axis=1),
        mask=jnp.ones((batch_size, UNROLL + 1)),
        weight=jnp.ones(batch_size),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument(
        "--cpu-devices", type=int, default=4, help="CPU devices to create (no effect on GPU/TPU)"
    )
    args = parser.parse_args()
    # Before anything touches a device: split the CPU into several (like the XLA flag
    # --xla_force_host_platform_device_count), so data parallelism can be tried on a laptop.
    jax.config.update("jax_num_cpu_devices", args.cpu_devices)

    network, init_params = make_mlp_network(
        jax.random.key(0),
        observation_shape=(4,),
        num_actions=NUM_ACTIONS,
        hidden_sizes=(32,),
        latent_size=16,
        value_support_size=3,
        reward_support_size=1,
    )
    loss_fn = make_loss_fn(network, weight_decay=1e-5)
    optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(3e-3))
    batches = [synthetic_batch(k) for k in jax.random.split(jax.random.key(1), args.steps)]

    # ---- One device: a jitted update, any optax optimizer. ----
    @jax.jit
    def update(params, opt_state, batch):
        (loss, _), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    params, opt_state = init_params, optimizer.init(init_params)
    single_losses = []
    for batch in batches:
        params, opt_state, loss = update(params, opt_state, batch)
        single_losses.append(float(loss))
    single_params = params

    # ---- Many devices: the same update per device, gradients averaged over 'data'. ----
    devices = jax.devices()
    mesh = jax.make_mesh((len(devices),), ("data",))

    def per_device_update(params, opt_state, batch):
        # Runs on each device with its B / N examples; the loss is a mean over them.
        (loss, _), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
        grads = jax.lax.pmean(grads, "data")  # every device now holds the global mean gradient
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, jax.lax.pmean(loss, "data")

    parallel_update = jax.jit(
        jax.shard_map(
            per_device_update,
            mesh=mesh,
            in_specs=(P(), P(), P("data")),  # params and optimizer state replicated, batch split
            out_specs=(P(), P(), P()),
            # Off: each device differentiates its own copy of the parameters, and the pmean above
            # is the only reduction (with it on, JAX would sum gradients of replicated inputs).
            check_vma=False,
        )
    )
    replicated, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    params = jax.device_put(init_params, replicated)
    opt_state = jax.device_put(optimizer.init(init_params), replicated)
    parallel_losses = []
    for batch in batches:
        params, opt_state, loss = parallel_update(params, opt_state, jax.device_put(batch, split))
        parallel_losses.append(float(loss))

    gap = max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
        for a, b in zip(jax.tree.leaves(single_params), jax.tree.leaves(params), strict=True)
    )
    first, last = np.mean(single_losses[:10]), np.mean(single_losses[-10:])
    print(
        f"devices: {len(devices)} x {devices[0].device_kind}; batch {BATCH_SIZE} split "
        f"{BATCH_SIZE // len(devices)} per device"
    )
    print(f"one device:  loss {first:.3f} (first 10 updates) -> {last:.3f} (last 10)")
    print(
        f"{len(devices)} devices:   loss {np.mean(parallel_losses[:10]):.3f} (first 10 updates) -> "
        f"{np.mean(parallel_losses[-10:]):.3f} (last 10)"
    )
    print(f"largest parameter difference after {args.steps} updates: {gap:.2e}")


if __name__ == "__main__":
    main()
