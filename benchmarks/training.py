"""Learner updates per second and their share of the matmul peak; end-to-end training throughput;
vmapped seeds against sequential seeds. All on the CartPole preset (``mz_jax/config/presets/cartpole.py``).

    python benchmarks/training.py            # all measurements
    python benchmarks/training.py --quick    # fewer repeats and iterations, for a smoke test

* **Learner update**: ``mz_jax.training.learner.update`` under ``jax.jit`` on one device, the preset's network,
  batch (128) and K (5), on a fixed synthetic batch; median of timed calls after compilation.
* **Matmul peak**: a jitted float32 ``a @ b`` of n x n matrices, n doubled from 512 until one call
  takes at least 50 ms; 2 n^3 FLOPs per call, the fastest of a few calls. The update's FLOPs are
  XLA's cost analysis of the lowered (not yet optimised) program of the same update, lowered for
  the CPU whatever the device, with the unroll's ``lax.scan`` fully unrolled: XLA counts a
  ``while`` loop's body once, not once per iteration. (The compiled program's count, after XLA's
  rewrites, is about 5% higher.) The fraction is (update FLOPs / update time) / peak.
* **End to end**: ``trainer = make_train(config)``, one ``trainer.step`` per iteration (act 16 envs x
  4 steps with 16-simulation Gumbel search, add to replay, 4 updates), timed after the replay has
  warmed up so every iteration runs its updates; one block of iterations per seed, median over seeds.
* **Seeds**: ``config.replace(num_seeds=S)`` (one program, every leaf of the state with a leading
  [S] axis) against S single-seed runs one after another (one compiled step, reused: the seed is
  data). Throughput is environment steps of all seeds per second; the ratio is vmapped / sequential.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import statistics
import sys
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from common import machine_description, percent, print_table

from mz_jax import Batch
from mz_jax.config.presets import load_preset
from mz_jax.config.train import TrainConfig
from mz_jax.training import learner
from mz_jax.training.build import build
from mz_jax.training.train import make_train

PRESET = "cartpole"


# ---------------------------------------------------------------------------------------------------
# The matrix-multiply peak.


class MatmulPeak(NamedTuple):
    size: int
    """n of the n x n float32 matrices."""
    seconds: float
    """Fastest of the timed products: a peak is what the machine can do, and other processes only
    ever slow it down."""

    @property
    def flops_per_second(self) -> float:
        return 2 * self.size**3 / self.seconds


def matmul_peak(
    *,
    dtype=jnp.float32,
    min_seconds: float = 0.05,
    start_size: int = 512,
    max_size: int = 16384,
    repeats: int = 5,
) -> MatmulPeak:
    """The ``dtype`` matmul rate of the default device at JAX's default precision, which the update
    uses too (for float32 on GPUs this may be a TF32 rate): the smallest power-of-two n from
    ``start_size`` whose product takes at least ``min_seconds``, so dispatch overhead is negligible."""
    product = jax.jit(jnp.matmul)
    size = start_size
    while True:
        keys = jax.random.split(jax.random.key(size))
        a = jax.random.normal(keys[0], (size, size), dtype)
        b = jax.random.normal(keys[1], (size, size), dtype)
        jax.block_until_ready(product(a, b))  # compile
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            jax.block_until_ready(product(a, b))
            times.append(time.perf_counter() - start)
        if min(times) >= min_seconds or size >= max_size:
            return MatmulPeak(size, min(times))
        size *= 2


# ---------------------------------------------------------------------------------------------------
# The learner update alone.


class UpdateTiming(NamedTuple):
    batch_size: int
    num_unroll_steps: int
    num_params: int
    compile_seconds: float
    seconds: float
    """Median seconds of one update."""
    flops: float
    """FLOPs of one update (XLA's cost analysis, unroll fully unrolled)."""

    @property
    def updates_per_second(self) -> float:
        return 1.0 / self.seconds

    @property
    def flops_per_second(self) -> float:
        return self.flops / self.seconds


def synthetic_batch(
    config: TrainConfig, observation_shape, num_actions: int, seed: int = 0
) -> Batch:
    """A batch of the shapes the preset trains on, with plausible values (and the next
    observations where the loss reads them): returns up to the discount's horizon, or up to 1
    where the discount is 1 (the board games' end-of-game +1/-1)."""
    rng = np.random.default_rng(seed)
    b, k = config.batch_size, config.num_unroll_steps
    value_max = 1 / (1 - config.discount) if config.discount < 1 else 1.0
    next_observation = None
    if config.uses_next_observation:
        next_observation = jnp.asarray(rng.normal(size=(b, k, *observation_shape)), jnp.float32)
    return Batch(
        observation=jnp.asarray(rng.normal(size=(b, *observation_shape)), jnp.float32),
        actions=jnp.asarray(rng.integers(0, num_actions, size=(b, k)), jnp.int32),
        target_value=jnp.asarray(rng.uniform(0, value_max, (b, k + 1)), jnp.float32),
        target_reward=jnp.ones((b, k + 1), jnp.float32),
        target_policy=jnp.asarray(rng.dirichlet(np.ones(num_actions), (b, k + 1)), jnp.float32),
        mask=jnp.ones((b, k + 1), jnp.float32),
        weight=jnp.asarray(rng.uniform(0.5, 1.0, b), jnp.float32),
        next_observation=next_observation,
    )


def _jitted_update(config: TrainConfig, *, unroll: int | bool | None):
    """``update(train_state, batch)`` as training builds it, on one device (no mapped axis)."""
    components = build(config, unroll=unroll)
    update = functools.partial(
        learner.update,
        loss_fn=components.loss_fn,
        optimizer=components.optimizer,
        schedule=components.schedule,
        axis_name=None,
    )
    return jax.jit(update, donate_argnums=0), components


def cost_flops(stage) -> float:
    """The 'flops' of a ``Lowered`` or ``Compiled`` stage's cost analysis (a dict, or a list of one
    dict per computation in older jax versions)."""
    analysis = stage.cost_analysis()
    if isinstance(analysis, dict):
        analysis = [analysis]
    return float(sum(entry.get("flops", 0.0) for entry in analysis or []))


def update_flops(config: TrainConfig, state, batch: Batch) -> float:
    """FLOPs of one update: XLA's cost analysis of the update lowered, unroll fully unrolled, for
    the CPU. The count is the program's, not the chip's; lowered for an H100 (jax 0.11.2), the
    analysis left out the convolutions (0.00 GFLOP for the Breakout ResNet's update against the
    CPU lowering's 52.7)."""
    unrolled, _ = _jitted_update(config, unroll=True)
    cpu = jax.devices("cpu")[0]
    lowered = unrolled.lower(*jax.device_put((state, batch), cpu))
    if "while" in lowered.as_text():
        raise RuntimeError("the unrolled update still holds a while loop; its FLOPs would be low")
    flops = cost_flops(lowered)
    if flops <= 0:
        raise RuntimeError("XLA's cost analysis counted no FLOPs in the learner update")
    return flops


def time_learner_update(config: TrainConfig, *, repeats: int = 20) -> UpdateTiming:
    """Compile and step time of one learner update of ``config``'s network, batch and K."""
    update, components = _jitted_update(config, unroll=None)  # as training traces it
    env = components.env
    params = components.init_params(jax.random.key(0))
    batch = synthetic_batch(config, env.observation_shape or (1,), env.num_actions)
    num_params = sum(x.size for x in jax.tree.leaves(params))
    state = learner.init_train_state(params, components.optimizer)
    start = time.perf_counter()
    compiled = update.lower(state, batch).compile()
    compile_seconds = time.perf_counter() - start

    flops = update_flops(config, state, batch)

    times = []
    for i in range(repeats + 2):  # the first two calls are warm-up
        start = time.perf_counter()
        state, _, metrics = compiled(state, batch)  # donates the previous state
        jax.block_until_ready((state, metrics))
        if i >= 2:
            times.append(time.perf_counter() - start)
    return UpdateTiming(
        batch_size=config.batch_size,
        num_unroll_steps=config.num_unroll_steps,
        num_params=num_params,
        compile_seconds=compile_seconds,
        seconds=statistics.median(times),
        flops=flops,
    )


# ---------------------------------------------------------------------------------------------------
# Whole iterations of the training loop.


class LoopTiming(NamedTuple):
    num_seeds: int
    """Seeds the program advances at once (1: a plain run)."""
    compile_seconds: float
    """Lowering and compiling ``trainer.step``."""
    env_steps_per_second: float
    """Environment steps of all seeds per second (median over timed blocks)."""
    updates_per_second: float
    """Learner updates of all seeds per second (same blocks)."""
    env_steps_per_iteration: int
    """Environment steps of one iteration, all seeds together."""
    iterations_per_call: int = 1
    """Iterations one call of the step runs."""

    @property
    def ms_per_iteration(self) -> float:
        return 1e3 * self.env_steps_per_iteration / self.env_steps_per_second


def _compile_step(trainer, state):
    start = time.perf_counter()
    compiled = trainer.step.lower(state).compile()
    return compiled, time.perf_counter() - start


def _warm_up(step, state, *, max_iterations: int = 100):
    """Steps until the replay holds enough data that every iteration runs its updates, plus two
    more iterations (so allocation and caches have settled)."""
    for _ in range(max_iterations):
        state, metrics = step(state)
        if np.all(np.asarray(metrics["optim"]["updates"]) > 0):
            break
    else:
        raise RuntimeError(f"no updates after {max_iterations} warm-up iterations")
    for _ in range(2):
        state, metrics = step(state)
    jax.block_until_ready(metrics)
    return state


def _time_block(step, state, calls: int, *, fetch: bool = False):
    """(state, seconds, updates) of ``calls`` steps dispatched back to back; ``fetch``: the host
    fetches each call's metrics before the next call, as the training loop does."""
    all_updates = []
    start = time.perf_counter()
    for _ in range(calls):
        state, metrics = step(state)  # donates the previous state: always rebind
        if fetch:
            metrics = jax.device_get(metrics)
        all_updates.append(metrics["optim"]["updates"])
    jax.block_until_ready((state, all_updates))
    seconds = time.perf_counter() - start
    return state, seconds, int(sum(np.sum(np.asarray(u)) for u in all_updates))


def time_training_loop(
    config: TrainConfig,
    *,
    seeds: list[int],
    iterations: int,
    blocks_per_seed: int = 1,
    fetch: bool = False,
) -> LoopTiming:
    """Throughput of ``make_train(config).step``: for each seed in turn, a fresh run warmed up, then
    ``blocks_per_seed`` timed blocks of ``iterations`` iterations (``iterations /
    iterations_per_call`` calls); the median block. ``fetch``: metrics fetched after every call."""
    calls = iterations // config.iterations_per_call
    iterations = calls * config.iterations_per_call
    trainer = make_train(config)
    compiled = None
    rates, update_rates = [], []
    steps_per_iteration = trainer.env_steps_per_iteration * config.num_seeds
    for seed in seeds:
        state = trainer.init(seed)
        if compiled is None:
            compiled, compile_seconds = _compile_step(trainer, state)
        state = _warm_up(compiled, state)
        for _ in range(blocks_per_seed):
            state, seconds, updates = _time_block(compiled, state, calls, fetch=fetch)
            expected = iterations * config.updates_per_iteration * config.num_seeds
            if updates != expected:
                raise RuntimeError(f"{updates} updates in a timed block; expected {expected}")
            rates.append(iterations * steps_per_iteration / seconds)
            update_rates.append(updates / seconds)
        del state
    return LoopTiming(
        num_seeds=config.num_seeds,
        compile_seconds=compile_seconds,
        env_steps_per_second=statistics.median(rates),
        updates_per_second=statistics.median(update_rates),
        env_steps_per_iteration=steps_per_iteration,
        iterations_per_call=config.iterations_per_call,
    )


class SeedsComparison(NamedTuple):
    vmapped: LoopTiming
    sequential: LoopTiming
    total_env_steps: int | None
    """Environment steps of one run of the preset, for the projected wall times."""

    @property
    def ratio(self) -> float:
        return self.vmapped.env_steps_per_second / self.sequential.env_steps_per_second

    def projected_seconds(self, timing: LoopTiming) -> float | None:
        """Wall time to train all seeds for ``total_env_steps`` each: one compilation, then the
        measured throughput (evaluation, logging and checkpoints not counted)."""
        if self.total_env_steps is None:
            return None
        num_seeds = self.vmapped.num_seeds
        return timing.compile_seconds + num_seeds * self.total_env_steps / (
            timing.env_steps_per_second
        )


# ---------------------------------------------------------------------------------------------------
# Everything, as tables.


@dataclasses.dataclass(frozen=True)
class Settings:
    """Repeats and sizes of :func:`measure`."""

    update_repeats: int = 30
    """Timed learner updates (the median is reported)."""
    matmul_repeats: int = 10
    """Timed products at the chosen matrix size (the fastest is reported)."""
    iterations: int = 100
    """Iterations per timed block of the training loop."""
    num_seeds: int = 4
    """S: seeds of the vmapped program, and single-seed runs timed one after another."""
    vmapped_blocks: int = 3
    """Timed blocks of the vmapped program (the median is reported)."""
    iterations_per_call: int = 8
    """N of the comparison of N iterations per host call against one, with the metrics fetched
    after every call as the training loop does."""

    @classmethod
    def quick(cls) -> Settings:
        return cls(
            update_repeats=10,
            matmul_repeats=3,
            iterations=24,
            num_seeds=2,
            vmapped_blocks=2,
            iterations_per_call=4,
        )


class Results(NamedTuple):
    config: TrainConfig
    peak: MatmulPeak
    update: UpdateTiming
    single: LoopTiming
    seeds: SeedsComparison
    per_call: tuple[LoopTiming, LoopTiming]
    """One iteration per call and ``iterations_per_call`` per call, metrics fetched per call."""


def measure(settings: Settings, *, log=print) -> Results:
    """Every measurement of this script, on the CartPole preset."""
    config = load_preset(PRESET)
    log("  matmul peak ...")
    peak = matmul_peak(repeats=settings.matmul_repeats)
    log("  learner update ...")
    update = time_learner_update(config, repeats=settings.update_repeats)
    log(f"  training loop, {settings.num_seeds} single-seed runs one after another ...")
    single = time_training_loop(
        config, seeds=list(range(settings.num_seeds)), iterations=settings.iterations
    )
    log(f"  training loop, {settings.num_seeds} seeds vmapped ...")
    vmapped = time_training_loop(
        config.replace(num_seeds=settings.num_seeds),
        seeds=[0],
        iterations=settings.iterations,
        blocks_per_seed=settings.vmapped_blocks,
    )
    per_call = []
    for n in (1, settings.iterations_per_call):
        log(f"  training loop, {n} iteration(s) per call, metrics fetched after each call ...")
        per_call.append(
            time_training_loop(
                config.replace(iterations_per_call=n),
                seeds=[0],
                iterations=settings.iterations,
                blocks_per_seed=settings.vmapped_blocks,
                fetch=True,
            )
        )
    return Results(
        config,
        peak,
        update,
        single,
        SeedsComparison(vmapped, single, config.total_env_steps),
        tuple(per_call),
    )


def description(results: Results, settings: Settings) -> str:
    config = results.config
    net = config.network
    return (
        f"CartPole preset: MLP {'x'.join(map(str, net.hidden_sizes))}, latent {net.latent_size}, "
        f"batch {config.batch_size}, K = {config.num_unroll_steps}; {config.num_envs} envs x "
        f"{config.rollout_length} steps and {config.updates_per_iteration} updates per iteration, "
        f"{config.search.policy} search with {config.search.num_simulations} simulations; "
        f"timed blocks of {settings.iterations} iterations"
    )


def update_table(results: Results) -> tuple[list[str], list[list[object]]]:
    update, peak = results.update, results.peak
    headers = [
        "batch",
        "K",
        "params",
        "compile s",
        "ms/update",
        "updates/s",
        "MFLOP/update",
        "GFLOP/s",
        f"matmul peak GFLOP/s (n = {peak.size})",
        "fraction of peak",
    ]
    row = [
        update.batch_size,
        update.num_unroll_steps,
        f"{update.num_params:,}",
        f"{update.compile_seconds:.1f}",
        f"{1e3 * update.seconds:.2f}",
        f"{update.updates_per_second:,.0f}",
        f"{update.flops / 1e6:,.1f}",
        f"{update.flops_per_second / 1e9:.2f}",
        f"{peak.flops_per_second / 1e9:.1f}",
        percent(update.flops_per_second / peak.flops_per_second),
    ]
    return headers, [row]


def end_to_end_table(results: Results) -> tuple[list[str], list[list[object]]]:
    single = results.single
    headers = ["compile s (first step)", "ms/iteration", "env steps/s", "updates/s"]
    row = [
        f"{single.compile_seconds:.1f}",
        f"{single.ms_per_iteration:.1f}",
        f"{single.env_steps_per_second:,.0f}",
        f"{single.updates_per_second:,.0f}",
    ]
    return headers, [row]


def seeds_table(results: Results) -> tuple[list[str], list[list[object]]]:
    seeds = results.seeds
    num_seeds = seeds.vmapped.num_seeds
    headers = [
        f"{num_seeds} seeds",
        "compile s",
        "env steps/s (all seeds)",
        "updates/s (all seeds)",
        "throughput vs sequential",
    ]
    if seeds.total_env_steps:
        headers.append(f"projected s for {num_seeds} x {seeds.total_env_steps:,} steps")
    rows = []
    for name, timing in (("sequential", seeds.sequential), ("vmapped", seeds.vmapped)):
        row = [
            name,
            f"{timing.compile_seconds:.1f}",
            f"{timing.env_steps_per_second:,.0f}",
            f"{timing.updates_per_second:,.0f}",
            f"{timing.env_steps_per_second / seeds.sequential.env_steps_per_second:.2f}x",
        ]
        if seeds.total_env_steps:
            row.append(f"{seeds.projected_seconds(timing):,.0f}")
        rows.append(row)
    return headers, rows


def per_call_table(results: Results) -> tuple[list[str], list[list[object]]]:
    one, many = results.per_call
    headers = ["iterations per call", "compile s", "ms/iteration", "env steps/s", "vs 1 per call"]
    rows = []
    for timing, n in ((one, 1), (many, many.iterations_per_call)):
        rows.append(
            [
                n,
                f"{timing.compile_seconds:.1f}",
                f"{timing.ms_per_iteration:.1f}",
                f"{timing.env_steps_per_second:,.0f}",
                f"{timing.env_steps_per_second / one.env_steps_per_second:.2f}x",
            ]
        )
    return headers, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and iterations")
    args = parser.parse_args()
    settings = Settings.quick() if args.quick else Settings()

    print(machine_description())
    results = measure(settings, log=lambda line: print(line, file=sys.stderr, flush=True))
    print(description(results, settings))
    print("\nLearner update (jitted, one device) and the float32 matmul peak:")
    print_table(*update_table(results))
    print("\nEnd to end (make_train(config).step, one seed):")
    print_table(*end_to_end_table(results))
    print("\nSeeds: one vmapped program against single-seed runs one after another:")
    print_table(*seeds_table(results))
    print("\nIterations per host call (metrics fetched after every call, as `mz-jax train` does):")
    print_table(*per_call_table(results))


if __name__ == "__main__":
    main()
