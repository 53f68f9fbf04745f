"""A tiny training run for the crash-safety tests of tests/test_run.py, run as a subprocess.

    python tests/_crash_worker.py WORKDIR ITERATIONS [--kill-at-commit STEP] [--cache DIR]

Trains :func:`tiny_config` for ITERATIONS iterations in total with ``mz_jax.run.loop.run_training``,
saving a checkpoint after every iteration (so a kill at a random moment often lands inside a save).
``--kill-at-commit STEP`` makes the process SIGKILL itself inside orbax's save of checkpoint STEP,
after every file is written and just before the atomic rename that commits it: the moment at which
an unfinished checkpoint looks most complete. ``--cache`` shares compiled programs between the
test's processes (JAX's persistent compilation cache), which saves most of each one's compile time.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from mz_jax.config.search import SearchConfig
from mz_jax.config.train import NetworkConfig, TrainConfig

NUM_ENVS = 4
ROLLOUT_LENGTH = 2


def tiny_config(iterations: int) -> TrainConfig:
    """A config that compiles fast and trains from its third iteration on."""
    return TrainConfig(
        env="gymnax:CartPole-v1",
        seed=3,
        total_env_steps=iterations * NUM_ENVS * ROLLOUT_LENGTH,
        num_envs=NUM_ENVS,
        rollout_length=ROLLOUT_LENGTH,
        updates_per_iteration=1,
        batch_size=8,
        num_unroll_steps=1,
        td_steps=2,
        replay_capacity=64,
        warmup_updates=0,
        search=SearchConfig(num_simulations=2, max_num_considered_actions=2),
        network=NetworkConfig(hidden_sizes=(16,), latent_size=16),
        eval_every_env_steps=0,
        log_every_seconds=0.0,
        checkpoint_every_seconds=0.0,
        keep_checkpoints=2,
    )


def _kill_at_commit(step: int) -> None:
    from orbax.checkpoint._src.path import atomicity

    commit = atomicity.AtomicRenameTemporaryPath.finalize

    async def finalize(self, *args, **kwargs):
        if self.get_final().name == str(step):
            print(f"killing myself before committing checkpoint {step}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return await commit(self, *args, **kwargs)

    atomicity.AtomicRenameTemporaryPath.finalize = finalize


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("workdir")
    parser.add_argument("iterations", type=int)
    parser.add_argument("--kill-at-commit", type=int, default=None)
    parser.add_argument("--cache", default=None)
    args = parser.parse_args()
    import jax

    if args.cache:
        jax.config.update("jax_compilation_cache_dir", args.cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    if args.kill_at_commit is not None:
        _kill_at_commit(args.kill_at_commit)
    from mz_jax.run.loop import run_training

    summary = run_training(tiny_config(args.iterations), args.workdir)
    print(f"finished at iteration {summary['iterations']}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
