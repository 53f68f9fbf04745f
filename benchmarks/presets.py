"""Throughput of named presets as they train: the learner update (ms, updates/s, share of the matmul
peak) and whole training iterations (env steps/s, updates/s). Written for the ResNet presets on a
GPU or TPU, where ``training.py``'s CartPole MLP is too small to say anything about the chip.

    python benchmarks/presets.py                                   # breakout_minatar (ResNet)
    python benchmarks/presets.py --presets breakout_minatar cartpole --batch-sizes 256 1024
    python benchmarks/presets.py --quick                           # few repeats: a smoke run
    python benchmarks/presets.py --learner looped unrolled         # both tracings, same run

* **Learner update**: ``training.time_learner_update`` on the preset's network and K, at the
  preset's batch and at each ``--batch-sizes`` entry (a bigger batch shows how much of the chip a
  larger learner would use); FLOPs from XLA's cost analysis of the fully unrolled update, over the
  float32 matmul peak of ``training.matmul_peak`` (JAX's default precision, so TF32 on NVIDIA GPUs).
* **End to end**: ``training.time_training_loop`` on one seed, the preset unchanged: median of timed
  blocks of ``--iterations`` iterations after the replay has warmed up.

``--learner looped unrolled`` times each preset with ``TrainConfig.unroll_learner`` False and True
(the default, ``config``, keeps the preset's own, resolved as training resolves it), so the effect of
tracing the learner without loops is measured on one machine in one run.

Progress goes to stderr, with each row as soon as it is measured, so a run cut short by a device's
time limit keeps what it finished; the tables are printed at the end.
"""

from __future__ import annotations

import argparse
import sys

import training
from common import machine_description, percent, print_table

from mz_jax.config.presets import load_preset
from mz_jax.config.train import TrainConfig
from mz_jax.training.build import make_run_env, unrolls_learner

DEFAULT_PRESETS = ("breakout_minatar",)
LEARNER_CHOICES = {"config": None, "looped": False, "unrolled": True}


def network_description(config: TrainConfig) -> str:
    net = config.network
    if net.kind == "resnet":
        text = f"ResNet {net.num_blocks} blocks x {net.channels} channels"
    else:
        text = f"MLP {'x'.join(map(str, net.hidden_sizes))}, latent {net.latent_size}"
    return f"{text}, {'unrolled' if unrolls_learner(config, make_run_env(config)) else 'looped'}"


def update_rows(
    name: str,
    network: str,
    config: TrainConfig,
    batch_sizes: list[int],
    peak: training.MatmulPeak,
    repeats: int,
) -> list[list[object]]:
    rows = []
    for batch_size in [config.batch_size, *(b for b in batch_sizes if b != config.batch_size)]:
        timing = training.time_learner_update(
            config.replace(batch_size=batch_size), repeats=repeats
        )
        rows.append(
            [
                name,
                network,
                batch_size,
                timing.num_unroll_steps,
                f"{timing.compile_seconds:.1f}",
                f"{1e3 * timing.seconds:.2f}",
                f"{timing.updates_per_second:,.0f}",
                f"{batch_size * timing.updates_per_second:,.0f}",
                f"{timing.flops / 1e9:,.2f}",
                f"{timing.flops_per_second / 1e12:.3f}",
                percent(timing.flops_per_second / peak.flops_per_second),
            ]
        )
    return rows


def loop_row(
    name: str, network: str, config: TrainConfig, iterations: int, blocks: int
) -> list[object]:
    timing = training.time_training_loop(
        config, seeds=[0], iterations=iterations, blocks_per_seed=blocks
    )
    search = config.search
    return [
        name,
        network,
        f"{config.num_envs} x {config.rollout_length}",
        f"{search.policy} {search.num_simulations}",
        f"{config.updates_per_iteration} x {config.batch_size}",
        f"{timing.compile_seconds:.1f}",
        f"{timing.ms_per_iteration:.1f}",
        f"{timing.env_steps_per_second:,.0f}",
        f"{timing.updates_per_second:,.1f}",
    ]


UPDATE_HEADERS = [
    "preset",
    "network",
    "batch",
    "K",
    "compile s",
    "ms/update",
    "updates/s",
    "samples/s",
    "GFLOP/update",
    "TFLOP/s",
    "share of matmul peak",
]
LOOP_HEADERS = [
    "preset",
    "network",
    "envs x steps",
    "search",
    "updates x batch",
    "compile s",
    "ms/iteration",
    "env steps/s",
    "updates/s",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=list(DEFAULT_PRESETS))
    parser.add_argument(
        "--batch-sizes", type=int, nargs="*", default=[], help="more learner batch sizes to time"
    )
    parser.add_argument("--iterations", type=int, default=50, help="iterations per timed block")
    parser.add_argument("--blocks", type=int, default=3, help="timed blocks (median reported)")
    parser.add_argument("--repeats", type=int, default=20, help="timed learner updates (median)")
    parser.add_argument("--quick", action="store_true", help="few repeats and iterations")
    parser.add_argument(
        "--learner",
        nargs="+",
        choices=list(LEARNER_CHOICES),
        default=["config"],
        help="how the learner is traced (TrainConfig.unroll_learner): the preset's own, or each",
    )
    args = parser.parse_args()
    if args.quick:
        args.iterations, args.blocks, args.repeats = 8, 1, 3

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def log_rows(headers: list[str], rows: list[list[object]]) -> None:
        # Each row as soon as it is measured: a run stopped by a time limit keeps what it finished
        # (the tables below are printed only at the end).
        for row in rows:
            log(
                "  done: "
                + " | ".join(f"{h} {v}" for h, v in zip(headers[2:], row[2:], strict=True))
            )

    print(machine_description())
    log("matmul peak ...")
    peak = training.matmul_peak()
    configs = [
        (name, load_preset(name).replace(unroll_learner=LEARNER_CHOICES[learner]))
        for name in args.presets
        for learner in dict.fromkeys(args.learner)
    ]
    update, loop = [], []
    for name, config in configs:
        network = network_description(config)  # builds the environment: once per config
        log(f"{name} ({network}): learner update ...")
        rows = update_rows(name, network, config, args.batch_sizes, peak, args.repeats)
        log_rows(UPDATE_HEADERS, rows)
        update += rows
        log(f"{name}: training iterations ...")
        row = loop_row(name, network, config, args.iterations, args.blocks)
        log_rows(LOOP_HEADERS, [row])
        loop.append(row)
    print(
        f"\nLearner update (jitted, one device; median of {args.repeats}); float32 matmul peak "
        f"{peak.flops_per_second / 1e12:.1f} TFLOP/s (n = {peak.size}):"
    )
    print_table(UPDATE_HEADERS, update)
    print(
        f"\nTraining iterations (make_train(config).step, one seed; median of {args.blocks} "
        f"blocks of {args.iterations} iterations):"
    )
    print_table(LOOP_HEADERS, loop)


if __name__ == "__main__":
    main()
