"""One of the two processes of tests/test_distributed.py (not a test module: pytest does not collect it).

Usage: ``python tests/_distributed_worker.py PORT PROCESS_ID OUTPUT_JSON``

Each process owns two forced CPU devices (the parent sets
``XLA_FLAGS=--xla_force_host_platform_device_count=2``), joins the coordinator on 127.0.0.1:PORT, and
runs the same program as the other: ``make_train`` over the mesh of all four devices of both
processes, ``init``, and two training iterations. It writes a digest of the parameters it holds, so
the parent can check that both processes hold the same, trained, parameters.

Cross-process collectives on CPU go through gloo, the default of
``jax_cpu_collectives_implementation`` in jax 0.10 (set below anyway, so the test does not depend on
that default). Set to None, running a computation over devices of two processes fails with
"INVALID_ARGUMENT: Multiprocess computations aren't implemented on the CPU backend" (checked on
jax 0.10.2). Like ``jax.distributed.initialize`` itself, the setting must come before the backend
starts (the first ``jax.devices()`` or computation).
"""

from __future__ import annotations

import hashlib
import json
import sys


def main(port: int, process_id: int, output: str) -> None:
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}",
        num_processes=2,
        process_id=process_id,
        initialization_timeout=120,
    )
    import numpy as np

    from mz_jax.config.search import SearchConfig
    from mz_jax.config.train import NetworkConfig, TrainConfig
    from mz_jax.training.train import make_train

    assert jax.process_count() == 2 and jax.process_index() == process_id
    assert len(jax.local_devices()) == 2 and len(jax.devices()) == 4, jax.devices()

    config = TrainConfig(
        env="gymnax:CartPole-v1",
        num_envs=8,
        batch_size=8,
        # Three steps per iteration: windows of K + td + 1 = 5 steps fit after two iterations.
        rollout_length=3,
        updates_per_iteration=1,
        num_unroll_steps=2,
        td_steps=2,
        replay_capacity=8 * 6,
        warmup_updates=0,
        network=NetworkConfig(hidden_sizes=(16,), latent_size=16),
        search=SearchConfig(num_simulations=2),
    )
    trainer = make_train(config)
    assert trainer.mesh.devices.size == 4

    def digest(params) -> str:
        # The parameters are replicated: this process's first shard of each leaf is the whole leaf.
        # All its local copies must agree, or the mean over devices went wrong.
        h = hashlib.sha256()
        for leaf in jax.tree.leaves(params):
            local = [np.asarray(shard.data) for shard in leaf.addressable_shards]
            assert len(local) == 2
            for copy in local[1:]:
                np.testing.assert_array_equal(copy, local[0])
            h.update(np.ascontiguousarray(np.asarray(leaf.addressable_data(0))).tobytes())
        return h.hexdigest()

    state = trainer.init(0)
    initial = digest(state.train.params)
    updates = 0
    losses = []
    for _ in range(2):
        state, metrics = trainer.step(state)
        # The host loop reads metrics like this: replicated values are readable on every process.
        metrics = jax.device_get(metrics)
        updates += int(metrics["optim"]["updates"][0])
        losses.append(float(metrics["loss"]["total"][0]))
    with open(output, "w") as f:
        json.dump(
            {
                "process_index": jax.process_index(),
                "num_devices": len(jax.devices()),
                "initial_digest": initial,
                "digest": digest(state.train.params),
                "updates": updates,
                "losses": losses,
                "iteration": int(np.asarray(state.iteration.addressable_data(0))),
            },
            f,
        )
    jax.distributed.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
