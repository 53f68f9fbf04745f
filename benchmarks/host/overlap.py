"""Acting overlapped with learning against the same run in turn: environment steps per second of
each, and the share of time the actor and the learner wait, measured in one process.

    python benchmarks/host/overlap.py                                  # gymnasium CartPole
    python benchmarks/host/overlap.py --preset cartpole --env envpool:CartPole-v1 --blocks 5
    python benchmarks/host/overlap.py --set updates_per_iteration=8    # any field changed

For each of ``overlap_acting`` False and True a run of the preset (``--env`` and ``--set`` applied)
is compiled and warmed up until its updates run; then timed blocks of ``--iterations``
iterations alternate between the two (in turn, overlapped, in turn, ...), each iteration's metrics
fetched as the training loop fetches them, so that drift of a shared machine reaches both alike.
The table gives each mode's median block (ms an iteration, env steps/s, updates/s), the mean wait
shares (``overlap/actor_wait``, ``overlap/learner_wait``) of the overlapped blocks, and the ratio
of the medians. ``--xla-threads 1`` runs every compiled program on one thread (XLA:CPU's
``--xla_cpu_multi_thread_eigen=false``), so the two halves each take a core instead of
sharing all of them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="cartpole", help="a shipped preset (default cartpole)")
    parser.add_argument("--env", default="gymnasium:CartPole-v1", help="the environment")
    parser.add_argument("--iterations", type=int, default=50, help="iterations of a timed block")
    parser.add_argument("--blocks", type=int, default=3, help="timed blocks of each mode")
    parser.add_argument(
        "--set", nargs="*", default=[], metavar="FIELD=VALUE", help="configuration changes"
    )
    parser.add_argument(
        "--xla-threads", type=int, choices=(1,), help="1: each compiled program on one thread"
    )
    return parser.parse_args(argv)


def mean_share(waits: list[dict], key: str) -> str:
    """The mean of one wait share over the iterations, as a percentage ('-' for none)."""
    if not waits:
        return "-"
    return f"{100 * statistics.fmean(w[key] for w in waits):.0f}%"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.xla_threads == 1:  # read when jax starts: before it is imported
        flag = "--xla_cpu_multi_thread_eigen=false"
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import jax
    import numpy as np
    from common import machine_description, print_table
    from learning import with_overrides

    from mz_jax.config.overrides import override
    from mz_jax.config.presets import load_preset
    from mz_jax.envs.host import host_failures
    from mz_jax.training.train import make_train

    preset = override(load_preset(args.preset), {"env": args.env, "total_env_steps": None})
    base = with_overrides(preset, args.set)
    modes = {"in turn": False, "overlapped": True}
    runs = {}
    with host_failures():
        for name, overlapped in modes.items():
            trainer = make_train(override(base, {"overlap_acting": overlapped}))
            state = trainer.init(base.seed)
            started = time.perf_counter()
            trainer.compile_step(state)
            compile_s = time.perf_counter() - started
            for _ in range(200):  # until the replay is ready and every iteration updates
                state, metrics = trainer.step(state)
                if np.all(np.asarray(jax.device_get(metrics)["optim"]["updates"]) > 0):
                    break
            runs[name] = {"trainer": trainer, "state": state, "compile_s": compile_s, "blocks": []}
            print(f"overlap: {name}: compiled in {compile_s:.1f} s, warmed up", file=sys.stderr)
        for block in range(args.blocks):
            for name, run in runs.items():
                trainer, state = run["trainer"], run["state"]
                waits, updates = [], 0
                started = time.perf_counter()
                for _ in range(args.iterations // base.iterations_per_call):
                    state, metrics = trainer.step(state)
                    metrics = jax.device_get(metrics)
                    updates += int(np.sum(metrics["optim"]["updates"]))
                    if "overlap" in metrics:
                        waits.append({k: float(np.mean(v)) for k, v in metrics["overlap"].items()})
                seconds = time.perf_counter() - started
                run["state"] = state
                run["blocks"].append((seconds, updates, waits))
                print(
                    f"overlap: block {block + 1}: {name}: "
                    f"{1e3 * seconds / args.iterations:.1f} ms an iteration",
                    file=sys.stderr,
                )
        for run in runs.values():
            run["trainer"].close()

    steps = base.env_steps_per_iteration * (args.iterations // base.iterations_per_call)
    rows, rates = [], {}
    for name, run in runs.items():
        seconds = statistics.median(s for s, _, _ in run["blocks"])
        updates = statistics.median(u / s for s, u, _ in run["blocks"])
        waits = [w for _, _, block_waits in run["blocks"] for w in block_waits]
        rates[name] = steps / seconds
        rows.append(
            [
                name,
                f"{run['compile_s']:.1f}",
                f"{1e3 * seconds / args.iterations:.1f}",
                f"{steps / seconds:,.0f}",
                f"{updates:,.1f}",
                mean_share(waits, "actor_wait"),
                mean_share(waits, "learner_wait"),
            ]
        )
    print(f"machine: {machine_description()}")
    threads = "one thread a program" if args.xla_threads == 1 else "XLA's default threads"
    print(
        f"{args.preset} on {args.env} ({', '.join(args.set) or 'unchanged'}), {threads}; "
        f"median of {args.blocks} blocks of {args.iterations} iterations, alternating"
    )
    print_table(
        [
            "mode",
            "compile s",
            "ms/iteration",
            "env steps/s",
            "updates/s",
            "actor waits",
            "learner waits",
        ],
        rows,
    )
    print(f"overlapped / in turn: {rates['overlapped'] / rates['in turn']:.2f}x env steps/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
