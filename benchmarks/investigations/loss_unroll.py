"""Trace, compile and step time of the ``lax.scan`` unroll against a Python-loop unroll.

    python benchmarks/investigations/loss_unroll.py [--quick] [--batch-size 256] [--network resnet]

For K in {5, 10, 20, 50}: the jitted ``value_and_grad`` of the MuZero loss with the model unrolled by
``jax.lax.scan`` (as ``mz_jax.make_loss_fn`` does) and by a Python for-loop (the usual PyTorch-style
unroll, which JAX traces K times). Then the effect of scan's ``unroll`` argument at the largest K.
Aim: compile time flat in K for the scan; step time within 1.2x of the Python loop at K = 5.

``--network resnet`` measures the ``breakout_minatar`` ResNet (10x10x4 frames, 2 blocks of 32
channels) instead of the MLP: on a CPU its gradient through the scan's loop body is several times
slower than through straight-line code, which is why training unrolls the K steps
(``TrainConfig.unroll_learner``).
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
from common import machine_description, median_seconds, print_table

from mz_jax import Batch, ModelOutput, networks
from mz_jax.core.loss import loss_from_predictions
from mz_jax.core.ops import scale_gradient
from mz_jax.core.unroll import unroll_model

OBSERVATION_SIZE, NUM_ACTIONS = 16, 8
IMAGE_SHAPE, IMAGE_ACTIONS = (10, 10, 4), 5  # Breakout-MinAtar's frames and moves


def python_loop_unroll(network, params, observation, actions, *, hidden_grad_scale=0.5):
    """The same unroll as ``mz_jax.core.unroll.unroll_model``, written as a Python loop (traced K times)."""
    output, hidden = network.initial_inference(params, observation)
    outputs = [output]
    for k in range(actions.shape[1]):
        output, next_hidden = network.recurrent_inference(params, hidden, actions[:, k])
        hidden = scale_gradient(next_hidden, hidden_grad_scale)
        outputs.append(output)
    return ModelOutput(*(jnp.stack(leaves, axis=1) for leaves in zip(*outputs, strict=True)))


def make_grad_fn(network, unroll_kind, scan_unroll=1):
    def loss(params, batch):
        if unroll_kind == "scan":
            predictions = unroll_model(
                network, params, batch.observation, batch.actions, unroll=scan_unroll
            ).predictions
        else:
            predictions = python_loop_unroll(network, params, batch.observation, batch.actions)
        return loss_from_predictions(predictions, batch)

    return jax.jit(jax.value_and_grad(loss, has_aux=True))


def make_batch(batch_size, num_unroll_steps, seed=0, *, kind="mlp"):
    rng = np.random.default_rng(seed)
    b, k = batch_size, num_unroll_steps
    shape, num_actions = _shapes(kind)
    return Batch(
        observation=jnp.asarray(rng.normal(size=(b, *shape)), jnp.float32),
        actions=jnp.asarray(rng.integers(0, num_actions, size=(b, k)), jnp.int32),
        target_value=jnp.asarray(rng.normal(scale=5, size=(b, k + 1)), jnp.float32),
        target_reward=jnp.asarray(rng.normal(size=(b, k + 1)), jnp.float32),
        target_policy=jnp.asarray(
            rng.dirichlet(np.ones(num_actions), size=(b, k + 1)), jnp.float32
        ),
        mask=jnp.ones((b, k + 1), jnp.float32),
        weight=jnp.ones((b,), jnp.float32),
    )


def measure(grad_fn, params, batch, repeats):
    start = time.perf_counter()
    traced = grad_fn.trace(params, batch)
    trace_s = time.perf_counter() - start
    lowered = traced.lower()
    start = time.perf_counter()
    compiled = lowered.compile()
    compile_s = time.perf_counter() - start
    step_s = median_seconds(lambda: jax.block_until_ready(compiled(params, batch)), repeats=repeats)
    return trace_s, compile_s, step_s


def _shapes(kind: str) -> tuple[tuple[int, ...], int]:
    """The observation shape and the number of actions the network ``kind`` is measured on."""
    return ((OBSERVATION_SIZE,), NUM_ACTIONS) if kind == "mlp" else (IMAGE_SHAPE, IMAGE_ACTIONS)


def make_network(kind="mlp"):
    """The benchmark's MLP (128 x 128, latent 128), or the ``breakout_minatar`` preset's ResNet
    (2 blocks of 32 channels), and its parameters."""
    shape, num_actions = _shapes(kind)
    if kind == "resnet":
        return networks.make_resnet_network(
            jax.random.key(0), observation_shape=shape, num_actions=num_actions
        )
    return networks.make_mlp_network(
        jax.random.key(0),
        observation_shape=shape,
        num_actions=num_actions,
        hidden_sizes=(128, 128),
        latent_size=128,
    )


UNROLL_HEADERS = [
    "K",
    "scan trace",
    "scan compile",
    "scan step",
    "loop trace",
    "loop compile",
    "loop step",
    "compile loop/scan",
    "step scan/loop",
]


def unroll_rows(
    unroll_lengths, *, batch_size: int, repeats: int, kind: str = "mlp"
) -> list[list[str]]:
    """One row of :data:`UNROLL_HEADERS` per K: (trace, compile, step) ms of scan, then of the loop."""
    network, params = make_network(kind)
    rows = []
    for k in unroll_lengths:
        batch = make_batch(batch_size, k, kind=kind)
        scan = measure(make_grad_fn(network, "scan"), params, batch, repeats)
        loop = measure(make_grad_fn(network, "python"), params, batch, repeats)
        rows.append(
            [k]
            + [f"{1e3 * t:.1f}" for t in (*scan, *loop)]
            + [f"{loop[1] / scan[1]:.2f}x", f"{scan[2] / loop[2]:.2f}x"]
        )
    return rows


def scan_unroll_rows(
    k: int, *, batch_size: int, repeats: int, kind: str = "mlp"
) -> list[list[str]]:
    """Compile and step ms of the scan at K = ``k`` for several values of its ``unroll`` argument."""
    network, params = make_network(kind)
    batch = make_batch(batch_size, k, kind=kind)
    rows = []
    for scan_unroll in (1, 2, 5, True):
        _, compile_s, step_s = measure(
            make_grad_fn(network, "scan", scan_unroll), params, batch, repeats
        )
        rows.append([scan_unroll, f"{1e3 * compile_s:.1f}", f"{1e3 * step_s:.2f}"])
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="K in {5, 10} and fewer repeats")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--network", choices=("mlp", "resnet"), default="mlp")
    args = parser.parse_args()
    unroll_lengths = (5, 10) if args.quick else (5, 10, 20, 50)
    repeats = 3 if args.quick else 10

    print(f"machine: {machine_description()}")
    name = {"mlp": "MLP network 128x128, latent 128", "resnet": "ResNet 2 blocks x 32 channels"}
    print(f"{name[args.network]}, batch {args.batch_size}; times in ms\n")
    sizes = dict(batch_size=args.batch_size, repeats=repeats, kind=args.network)
    rows = unroll_rows(unroll_lengths, **sizes)
    print_table(UNROLL_HEADERS, rows)

    k = unroll_lengths[-1]
    rows = scan_unroll_rows(k, **sizes)
    print(f"\nscan `unroll` argument at K = {k}:")
    print_table(["unroll", "compile ms", "step ms"], rows)


if __name__ == "__main__":
    main()
