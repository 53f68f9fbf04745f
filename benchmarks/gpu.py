r"""One GPU lease in one call: the matmul peaks, the learner's share of the bfloat16 peak, the
search on the MinAtar ResNet, MinAtar training throughput against the old preset, then the MinAtar
suite for the time left.

    python benchmarks/gpu.py --smoke                  # tiny sizes, every part, on a CPU: CI's check
    python benchmarks/gpu.py --print-setup            # the set-up and lease commands, with versions
    python benchmarks/gpu.py --parts matmul learner   # some parts (always in the order below)

A lease (one H100 or H200, one call of at most 10 minutes): here, once, the first command that
``--print-setup`` prints (wheels of the packages the GPU image lacks, for its Python 3.12, into
``.whl/``, which git ignores); then one device call, from the repository root, carrying ``.whl``,
with ``timeout_s`` 600, running the second::

    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site \
        .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD && \
    timeout -s INT 560 python3 benchmarks/gpu.py --out-dir $OUT --suite-workdir /tmp/minatar_suite

The image has jax, flax, optax, chex and orbax-checkpoint (its own versions: the CPU environment's
flax fails to import under its jax); mctx, rlax, gymnax, pgx, tyro, tensorboardX and what they need
(``CARRIED``) travel as wheels, and mz_jax is this checkout, on ``PYTHONPATH`` (nothing is built
offline). Set ``XLA_FLAGS`` there as the run should have it (benchmarks/RESULTS-gpu.md measured
``--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUSTOM_CALL,CONDITIONAL,WHILE``); it is recorded.

Parts, in order, each a function below:

* **matmul**: float32 (``training.matmul_peak``, JAX's default precision: TF32 on NVIDIA GPUs) and
  bfloat16 (the same function): n doubled from 512 until one n x n product takes
  50 ms, up to 16384; 2 n^3 FLOPs over the fastest of the timed products.
* **learner**: ``presets.update_rows`` (``training.time_learner_update``: the median update after
  compilation; FLOPs from XLA's cost analysis of the unrolled update, lowered for the CPU) of a
  6-block, 128-channel ResNet (pgx's AlphaZero size) at batch 1,024 and of the ``minatar_gpu``
  preset's ResNet at its batch and at 1,024, each with ``network.compute_dtype`` bfloat16 and
  float32. Shares are of the bfloat16 peak of the same run; ``learner.share_of_peak`` (a
  fraction) is the bfloat16 6x128 ResNet's.
* **search**: one jitted ``mz_jax.search`` (Gumbel) of 2,048 fresh Breakout-MinAtar observations on
  the preset's untrained ResNet, 16 and 32 simulations; the median call after compilation;
  simulations/s = roots x simulations / seconds; ``search.simulations_per_s`` is the best.
* **minatar**: ``presets.loop_row`` (``training.time_training_loop``: whole iterations of
  ``make_train(config).step`` after the replay warmed up, median of timed blocks) of the
  ``minatar_gpu`` preset and, as the baseline of the same call, of ``breakout_minatar``.
* **suite**: ``mz-jax suite`` on ``benchmarks/suites/minatar_gpu.toml`` (4 games x 3 seeds x 1M
  steps) in a child process, sent one SIGINT when the call's time is spent: the run finishes its
  iteration, saves a checkpoint and exits, and the same command with the same ``--suite-workdir``
  resumes it. ``minatar_suite.iqm`` is the normalised interquartile mean the suite's report
  computes, once every game has finished (None before). The whole suite takes about 40 minutes of
  an H200, more than a lease, and its workdir (checkpoints with the replay: hundreds of MB) is more
  than a lease brings back, so a lease measures its start-up and rate; its ``results.json`` and
  ``report.md`` are copied into the output folder.

Time: each part has a share of ``--limit-s`` (``PART_SHARES``; the suite gets what the others leave)
and starts another measurement only while its share has room for one as long as its last, so a slow
part cannot eat the call; a part that fails is recorded and the next one runs. Each row goes to
stderr as soon as it is measured, and ``OUT_DIR/results.json`` and the markdown section are
rewritten after each row, so a run cut short (a time limit's SIGINT included) keeps what it
finished.

Output (``--out-dir``, default ``benchmarks/gpu``; with ``--smoke`` a fresh temporary folder, so CI
never writes into the repository): ``results.json``, ``{"runs": [...]}``, to which each run appends
one record (``device``, ``commit``, ``date``, ``command``, ``versions``, the parts' summaries under
``matmul``, ``learner``, ``search``, ``minatar`` and ``minatar_suite``, every table row under
``rows``, each part's status and seconds under ``parts``); ``RESULTS-gpu-section.md``, this run's
dated section with one table a part, to paste into ``benchmarks/RESULTS-gpu.md``. The tables also go
to stdout at the end. When the suite runs, this process does not preallocate GPU memory
(``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless set), so that the suite's process finds some.

``--smoke`` (:meth:`Settings.smoke_run`) shrinks every configuration: 4 environments, batch 8, a
1-block, 4-channel ResNet (an 8-unit MLP in the training runs, whose steps compile twice as fast),
2 simulations, 32 roots, 64 env steps of one game and one seed of the suite; it times the headline
learner network alone but builds every configuration of every part.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import presets
import training
from common import format_table, git_revision, machine_description, median_seconds, package_versions

from mz_jax.config.overrides import override
from mz_jax.config.presets import load_preset
from mz_jax.config.train import TrainConfig
from mz_jax.mcts.policies import search
from mz_jax.run.workdir import RESULTS_FILE, write_atomically
from mz_jax.suite import aggregate
from mz_jax.suite.report import normalised_final_scores
from mz_jax.suite.results import final_returns, load_results
from mz_jax.suite.runner import load_suite
from mz_jax.training.build import build

REPO = Path(__file__).resolve().parents[1]
PARTS = ("matmul", "learner", "search", "minatar", "suite")
PRESET = "minatar_gpu"
BASELINE_PRESET = "breakout_minatar"
SUITE_FILE = REPO / "benchmarks" / "suites" / "minatar_gpu.toml"
SECTION_FILE = "RESULTS-gpu-section.md"
VERSIONS = ("jax", "jaxlib", "flax", "optax", "mctx", "gymnax", "pgx")

PART_SHARES = {"matmul": 0.05, "learner": 0.3, "search": 0.1, "minatar": 0.3}
"""Each part's share of ``--limit-s``; the suite gets what the others leave."""
SUITE_STOP_S = 30.0
"""The suite is sent SIGINT this long before the call's limit: it ends its iteration and saves."""
SUITE_GRACE_S = 60.0
"""How long a SIGINT-ed suite may take to save and exit before it is killed."""
SUITE_MIN_S = 60.0
"""A suite given less than this is not started (its start-up and compilation alone take ~30 s)."""

CARRIED = (
    "mctx",
    "rlax",
    "distrax",
    "dm-env",
    "dm-tree",
    "tfp-nightly",
    "decorator",
    "gast",
    "gymnax",
    "gymnasium",
    "farama-notifications",
    "pgx",
    "svgwrite",
    "tyro",
    "docstring-parser",
    "typeguard",
    "tensorboardx",
    "tzdata",
)
"""Requirements of mz-jax, and theirs, that the GPU image lacks (the module docstring says more)."""
WHEEL_DIR = ".whl"
LEASE_COMMAND = (
    "timeout -s INT 560 python3 benchmarks/gpu.py --out-dir $OUT --suite-workdir /tmp/minatar_suite"
)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


SMOKE_SHRINK = (
    ("num_envs", 4),
    ("rollout_length", 2),
    ("iterations_per_call", 1),
    ("updates_per_iteration", 1),
    ("batch_size", 8),
    ("num_unroll_steps", 2),
    ("td_steps", 2),
    ("replay_capacity", 256),
    ("min_replay_steps", 0),
    ("search.num_simulations", 2),
    ("network.channels", 4),
    ("network.num_blocks", 1),
    # The suite's end; the same in the minatar part, so that the suite's training step is the
    # program that part compiled (a persistent compilation cache then holds it).
    ("total_env_steps", 64),
)
"""A smoke run's changes to every configuration: a few small environments, batches and searches,
a 1-block, 4-channel ResNet, 64 env steps (the games' lease script uses them too)."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """Sizes and repeats of every part: a lease's (the defaults) or CI's (:meth:`smoke_run`)."""

    smoke: bool = False
    overrides: tuple[tuple[str, object], ...] = ()
    """Field overrides applied to every configuration (the smoke run shrinks them)."""
    matmul: dict = dataclasses.field(default_factory=dict)
    """Keyword arguments of the matmul peak searches."""
    learner_batch: int = 1024
    learner_repeats: int = 10
    big_resnet: tuple[int, int] = (6, 128)
    """(blocks, channels) of the larger learner network."""
    learner_variants: tuple[tuple[str, str], ...] = (
        ("big", "bfloat16"),
        ("big", "float32"),
        ("preset", "bfloat16"),
        ("preset", "float32"),
    )
    """(network, compute dtype) of each learner measurement, 'big' or 'preset'; the first is the
    headline (a run cut short keeps it)."""
    learner_timed: int | None = None
    """How many of ``learner_variants`` are timed (None: all); every one's configuration is built
    first all the same, so a smoke run that times one still checks them all."""
    search_roots: int = 2048
    search_simulations: tuple[int, ...] = (16, 32)
    search_repeats: int = 5
    loop_iterations: int = 30
    loop_blocks: int = 2
    loop_overrides: tuple[tuple[str, object], ...] = ()
    """Overrides of the training runs (the minatar and suite parts) on top of ``overrides``."""
    suite_seeds: int = 3
    suite_overrides: tuple[tuple[str, object], ...] = ()
    """() runs the suite file; else one of its games alone (the preset's), with these overrides."""

    @classmethod
    def smoke_run(cls) -> Settings:
        """Tiny networks, batches and searches: every part on two CPU cores in about a minute."""
        shrink = SMOKE_SHRINK
        # A ResNet's training step takes twice an MLP's time to compile on a CPU; the learner and
        # search parts keep the ResNet.
        mlp = (("network.kind", "mlp"), ("network.hidden_sizes", (8,)), ("network.latent_size", 8))
        evaluation = (
            ("eval_every_env_steps", 64),
            ("eval_episodes", 4),
            ("eval_max_steps", 8),
            ("log_every_seconds", 60.0),
        )
        return cls(
            smoke=True,
            overrides=shrink,
            matmul={"start_size": 32, "max_size": 64, "min_seconds": 0.0, "repeats": 2},
            learner_batch=8,
            learner_repeats=1,
            big_resnet=(1, 8),
            learner_timed=1,
            search_roots=32,
            search_simulations=(2,),
            search_repeats=1,
            loop_iterations=2,
            loop_blocks=1,
            loop_overrides=mlp,
            suite_seeds=1,
            suite_overrides=shrink + mlp + evaluation,
        )


@dataclasses.dataclass(frozen=True)
class Budget:
    """A deadline on ``time.monotonic()``."""

    deadline: float

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def allows(self, estimate: float) -> bool:
        """Whether a measurement expected to take ``estimate`` seconds fits."""
        return self.left() > estimate


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def preset_config(name: str, settings: Settings, changes: dict | None = None) -> TrainConfig:
    """Preset ``name`` shrunk by ``settings.overrides``, then with ``changes``."""
    return override(load_preset(name), {**dict(settings.overrides), **(changes or {})})


def cell_number(cell: object) -> float | None:
    """A table cell as a number: ``"3,532"`` -> 3532.0, ``"2.84%"`` -> 0.0284; None if not one."""
    text = str(cell).replace(",", "").strip()
    scale = 1.0
    if text.endswith("%"):
        text, scale = text[:-1], 0.01
    try:
        number = float(text) * scale
    except ValueError:
        return None
    return number if math.isfinite(number) else None  # JSON has no NaN


def row_record(headers: list[str], row: list[object]) -> dict:
    """A table row as results.json holds it: header -> number where the cell is one, else text."""
    record = {}
    for header, cell in zip(headers, row, strict=True):
        number = cell_number(cell)
        record[header] = number if number is not None else str(cell)
    return record


def measure_rows(
    specs: list, measure: Callable[[object], list], budget: Budget, emit: Callable
) -> int:
    """``emit(row)`` for each row of ``measure(spec)``, spec by spec, while ``budget`` has room
    for one more spec as long as the last took; returns how many specs were left out."""
    last = 0.0
    for count, spec in enumerate(specs):
        if not budget.allows(last):
            log(f"  out of this part's time: {len(specs) - count} measurement(s) left out")
            return len(specs) - count
        start = time.monotonic()
        for row in measure(spec):
            emit(row)
        last = time.monotonic() - start
    return 0


# --------------------------------------------------------------------------------------------------
# The parts. Each takes the settings, its budget and emit(table, headers, row), and returns its
# summary (the keys of results.json).


MATMUL_HEADERS = ["dtype", "n", "ms/product", "TFLOP/s"]


def matmul_part(settings: Settings, budget: Budget, emit: Callable) -> dict:
    summary = {}

    def measure(dtype):
        peak = training.matmul_peak(dtype=jnp.dtype(dtype), **settings.matmul)
        summary[dtype] = {
            "size": peak.size,
            "seconds": peak.seconds,
            "flops_per_s": peak.flops_per_second,
        }
        return [
            [dtype, peak.size, f"{1e3 * peak.seconds:.2f}", f"{peak.flops_per_second / 1e12:.1f}"]
        ]

    left_out = measure_rows(
        ["bfloat16", "float32"], measure, budget, lambda row: emit(MATMUL_HEADERS, row)
    )
    return {**summary, "left_out": left_out}


LEARNER_HEADERS = [*presets.UPDATE_HEADERS[:-1], "share of bf16 matmul peak"]


class LearnerSpec(NamedTuple):
    name: str
    """The table's first column: the preset, or the larger network's size."""
    network: str
    """The network's description and compute dtype."""
    config: TrainConfig
    batch_sizes: list[int]
    """Batch sizes timed besides the config's."""


def learner_part(
    settings: Settings, budget: Budget, emit: Callable, *, preset: str, bf16_peak: dict | None
) -> dict:
    if bf16_peak is None:  # the learner alone: its own peak
        peak = training.matmul_peak(dtype=jnp.dtype("bfloat16"), **settings.matmul)
    else:
        peak = training.MatmulPeak(bf16_peak["size"], bf16_peak["seconds"])
    blocks, channels = settings.big_resnet
    big = {
        "network.num_blocks": blocks,
        "network.channels": channels,
        "batch_size": settings.learner_batch,
    }
    networks = {  # name, changes, more batch sizes than the config's
        "big": (f"{blocks}x{channels} ResNet", big, []),
        "preset": (preset, {}, [settings.learner_batch]),
    }
    specs = []
    for network, dtype in settings.learner_variants:
        name, changes, batch_sizes = networks[network]
        config = preset_config(preset, settings, {**changes, "network.compute_dtype": dtype})
        description = f"{presets.network_description(config)}, {dtype}"
        specs.append(LearnerSpec(name, description, config, batch_sizes))
    first = specs[0]
    summary = {
        "dtype": first.config.network.compute_dtype,
        "network": first.network,
        "batch": first.config.batch_size,
        "share_of_peak": None,
    }

    def measure(spec: LearnerSpec) -> list[list]:
        rows = presets.update_rows(
            spec.name, spec.network, spec.config, spec.batch_sizes, peak, settings.learner_repeats
        )
        if spec is first:
            summary["share_of_peak"] = cell_number(rows[0][-1])
        return rows

    timed = specs[: settings.learner_timed]
    summary["left_out"] = measure_rows(
        timed, measure, budget, lambda row: emit(LEARNER_HEADERS, row)
    )
    return summary


def time_network_search(
    config: TrainConfig, *, roots: int, num_simulations: int, repeats: int
) -> tuple[float, float]:
    """(compile seconds, median seconds of a call) of one jitted search of ``roots`` fresh
    observations of ``config.env`` on ``config``'s network, untrained, as the actor searches."""
    components = build(config)
    params = components.init_params(jax.random.key(0))
    reset = jax.jit(jax.vmap(components.env.reset))
    _, timestep = reset(jax.random.split(jax.random.key(1), roots))
    search_config = dataclasses.replace(components.search_config, num_simulations=num_simulations)
    run = jax.jit(
        lambda p, k, o, m: search(p, k, o, m, network=components.network, config=search_config)
    )
    args = (params, jax.random.key(2), timestep.observation, timestep.legal_action_mask)
    start = time.perf_counter()
    compiled = run.lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    keys = iter(jax.random.split(jax.random.key(3), repeats + 1))  # a fresh key per call
    seconds = median_seconds(
        lambda: jax.block_until_ready(compiled(params, next(keys), *args[2:])), repeats=repeats
    )
    return compile_seconds, seconds


SEARCH_HEADERS = [
    "network",
    "policy",
    "roots",
    "simulations",
    "compile s",
    "ms/call",
    "simulations/s",
]


def search_part(settings: Settings, budget: Budget, emit: Callable, *, preset: str) -> dict:
    config = preset_config(preset, settings, {"env": "gymnax:Breakout-MinAtar"})
    config = override(config, {"search.policy": "gumbel"})
    network = presets.network_description(config).rsplit(",", 1)[0]
    dtype = config.network.compute_dtype
    summary = {"roots": settings.search_roots, "simulations_per_s": None, "network": network}

    def measure(num_simulations):
        compile_seconds, seconds = time_network_search(
            config,
            roots=settings.search_roots,
            num_simulations=num_simulations,
            repeats=settings.search_repeats,
        )
        rate = settings.search_roots * num_simulations / seconds
        summary["simulations_per_s"] = max(rate, summary["simulations_per_s"] or 0.0)
        return [
            [
                f"{network}, {dtype}",
                "gumbel",
                settings.search_roots,
                num_simulations,
                f"{compile_seconds:.1f}",
                f"{1e3 * seconds:.2f}",
                f"{rate:,.0f}",
            ]
        ]

    summary["left_out"] = measure_rows(
        list(settings.search_simulations), measure, budget, lambda row: emit(SEARCH_HEADERS, row)
    )
    return summary


def minatar_part(
    settings: Settings, budget: Budget, emit: Callable, *, preset: str, baseline: str
) -> dict:
    summary = {"env_steps_per_s": None, "num_envs": None, "baseline_env_steps_per_s": None}

    def measure(role):
        name = preset if role == "preset" else baseline
        config = preset_config(name, settings, dict(settings.loop_overrides))
        row = presets.loop_row(
            name,
            presets.network_description(config),
            config,
            settings.loop_iterations,
            settings.loop_blocks,
        )
        rate = cell_number(row[presets.LOOP_HEADERS.index("env steps/s")])
        if role == "preset":
            summary.update(env_steps_per_s=rate, num_envs=config.num_envs)
        else:
            summary["baseline_env_steps_per_s"] = rate
        return [row]

    summary["left_out"] = measure_rows(
        ["preset", "baseline"], measure, budget, lambda row: emit(presets.LOOP_HEADERS, row)
    )
    return summary


# --------------------------------------------------------------------------------------------------
# The suite, in a child process stopped by SIGINT when the call's time is spent.


def smoke_suite_file(suite_file: Path, settings: Settings, folder: Path, env: str) -> Path:
    """A suite file of one game of ``suite_file`` (``env`` where it has it, else its first), its
    overrides shrunk."""
    entries = load_suite(suite_file)
    entry = next((e for e in entries if e.env == env), entries[0])
    game = {"env": entry.env, "overrides": {**entry.overrides, **dict(settings.suite_overrides)}}
    if entry.preset is not None:
        game["preset"] = entry.preset
    path = folder / "smoke_suite.json"
    path.write_text(json.dumps({"environment": [game]}, indent=2) + "\n")
    return path


def run_until(
    command: list[str], budget: Budget, log_path: Path, *, label: str = "suite"
) -> tuple[int, bool]:
    """Runs ``command`` (its output to stderr, each line after ``label |``, and to ``log_path``)
    until it exits or ``budget`` is spent, then sends it one SIGINT (a second would stop it without
    saving) and waits for it to save; returns (exit status, whether it was stopped)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    # Its own process group: a time limit's SIGINT to ours reaches it once, through us.
    child = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        process_group=0,
    )

    def copy_output() -> None:
        with open(log_path, "a") as file:
            for line in child.stdout:
                file.write(line)
                log(f"  {label} | {line.rstrip()}")

    reader = threading.Thread(target=copy_output, daemon=True)
    reader.start()
    stopped = False
    try:
        child.wait(timeout=max(budget.left(), 0.0))
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as reason:
        stopped = True
        log(f"  {label}: time is up: SIGINT, waiting for its checkpoint")
        child.send_signal(signal.SIGINT)
        try:
            child.wait(timeout=SUITE_GRACE_S)
        except subprocess.TimeoutExpired:
            log(f"  {label}: not done {SUITE_GRACE_S:.0f} s after SIGINT: killed")
            child.kill()
            child.wait()
        reader.join(timeout=5)
        if isinstance(reason, KeyboardInterrupt):
            raise
    reader.join(timeout=5)
    return child.returncode, stopped


def suite_iqm(workdir: Path, envs: list[str]) -> float | None:
    """The interquartile mean of the normalised final returns, as the suite's report computes it
    (the first seeds common to all games), once every game in ``envs`` has finished; else None."""
    try:
        environments = load_results(workdir)["environments"]
    except (FileNotFoundError, ValueError):
        return None
    if not all(environments.get(env, {}).get("done") is True for env in envs):
        return None
    references = aggregate.reference_scores()
    finals = {env: final_returns(environments[env]) for env in envs if env in references}
    normalised = normalised_final_scores(finals, references)
    return None if normalised is None else float(aggregate.interquartile_mean(normalised[1]))


SUITE_HEADERS = [
    "suite",
    "games x seeds",
    "env steps done",
    "wall s",
    "stopped",
    "games done",
    "IQM",
]


def suite_part(
    settings: Settings,
    budget: Budget,
    emit: Callable,
    *,
    preset: str,
    suite_file: Path,
    workdir: Path,
    out_dir: Path,
) -> dict:
    summary = {"wall_s": None, "iqm": None, "workdir": str(workdir), "left_out": 0}
    if not settings.smoke and budget.left() < SUITE_MIN_S:
        log(f"  {budget.left():.0f} s left: too little to start the suite")
        return {**summary, "left_out": 1}
    if settings.suite_overrides:
        env = load_preset(preset).env
        suite_file = smoke_suite_file(suite_file, settings, out_dir, env)
    envs = [entry.env for entry in load_suite(suite_file)]
    arguments = ["suite", "--suite", str(suite_file), "--seeds", str(settings.suite_seeds)]
    arguments += ["--workdir", str(workdir)]
    command = [sys.executable, "-m", "mz_jax.cli.main", *arguments]
    summary["command"] = shlex.join(["mz-jax", *arguments])
    log(f"  {summary['command']} (stopped in {budget.left():.0f} s)")
    start = time.monotonic()
    code, stopped = run_until(command, budget, out_dir / "minatar_suite.log")
    summary.update(wall_s=time.monotonic() - start, exit_code=code, stopped=stopped)
    summary["iqm"] = suite_iqm(workdir, envs)
    try:
        environments = load_results(workdir)["environments"]
    except (FileNotFoundError, ValueError):
        environments = {}
    done = sum(environments.get(env, {}).get("done") is True for env in envs)
    steps = sum(int(environments.get(env, {}).get("env_steps", 0)) for env in envs)
    summary.update(games_done=done, games=len(envs))
    for name, copy in (
        ("results.json", "minatar_suite_results.json"),
        ("report.md", "minatar_suite_report.md"),
    ):
        if (workdir / name).is_file() and workdir / name != out_dir / copy:
            shutil.copyfile(workdir / name, out_dir / copy)
    iqm = "—" if summary["iqm"] is None else f"{summary['iqm']:.3f}"
    emit(
        SUITE_HEADERS,
        [
            suite_file.name,
            f"{len(envs)} x {settings.suite_seeds}",
            f"{steps:,}",
            f"{summary['wall_s']:.0f}",
            "yes" if stopped else "no",
            f"{done}/{len(envs)}",
            iqm,
        ],
    )
    if code != 0 and not stopped:
        raise RuntimeError(f"mz-jax suite exited with status {code} (see minatar_suite.log)")
    return summary


# --------------------------------------------------------------------------------------------------
# The run's record, its markdown section and the set-up commands.


def versions() -> dict[str, str | None]:
    return {"python": platform.python_version(), **package_versions(VERSIONS)}


def new_record(argv: list[str], smoke: bool, limit_s: float, *, script: str = "gpu.py") -> dict:
    """A run's record: when, the command, the device and machine, the commit and versions."""
    device = jax.devices()[0]
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": shlex.join(["python", f"benchmarks/{script}", *argv]),
        "smoke": smoke,
        "limit_s": limit_s,
        "device": {
            "kind": device.device_kind,
            "platform": device.platform,
            "count": jax.device_count(),
        },
        "machine": machine_description(),
        "commit": git_revision(),
        "versions": versions(),
        "xla_flags": os.environ.get("XLA_FLAGS"),
        "parts": {},
        "rows": {},
    }


def earlier_runs(path: Path) -> list[dict]:
    """The runs of an existing results.json; a file of another shape is kept as ``.bak``."""
    if not path.exists():
        return []
    try:
        runs = json.loads(path.read_text())["runs"]
        if isinstance(runs, list):
            return runs
    except (OSError, ValueError, KeyError, TypeError):
        pass
    log(f"{path} holds no list of runs: kept as {path.name}.bak")
    shutil.copyfile(path, path.with_name(path.name + ".bak"))
    return []


PART_TITLES = {
    "matmul": "Matmul peak: the fastest n x n product, n doubled until one takes 50 ms",
    "learner": (
        "Learner update (jitted, one device, median after compilation); the share is of the "
        "bfloat16 matmul peak of the same run"
    ),
    "search": "Search: one jitted Gumbel search of fresh Breakout-MinAtar roots, untrained network",
    "minatar": (
        "Training iterations (make_train(config).step, one seed, median of timed blocks after "
        "the replay warmed up)"
    ),
    "suite": "MinAtar suite (mz-jax suite, stopped by SIGINT when the call's time is spent)",
}


def markdown_section(record: dict, tables: dict[str, tuple[list[str], list[list]]]) -> str:
    """One dated section for ``benchmarks/RESULTS-gpu.md``: what ran, where, a table a part."""
    device = record["device"]["kind"]
    lines = [
        f"## {record['date'][:10]}: {device}, commit {record['commit']}",
        "",
        f"- Machine: `{record['machine']}`",
        f"- Started {record['date']}; command: `{record['command']}`",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in record["versions"].items()),
        f"- XLA_FLAGS: `{record['xla_flags']}`" if record["xla_flags"] else "- XLA_FLAGS: not set",
        "- Parts: "
        + ", ".join(
            f"{name} {part['seconds']:.0f} s ({part['status']})"
            for name, part in record["parts"].items()
        ),
    ]
    for name, (headers, rows) in tables.items():
        lines += ["", f"{PART_TITLES[name]}:", "", format_table(headers, rows)]
    suite = record.get("minatar_suite") or {}
    if suite.get("command"):
        lines += ["", f"Suite command: `{suite['command']}`"]
    return "\n".join(lines) + "\n"


def setup_commands(lease_command: str = LEASE_COMMAND) -> list[str]:
    """The command that downloads the carried wheels here, with this environment's versions, and
    the one that installs them on the GPU machine and runs ``lease_command`` there."""
    pinned = [
        name if version is None else f"{name}=={version}"
        for name, version in package_versions(CARRIED).items()
    ]
    platforms = " ".join(f"--platform {p}" for p in PLATFORMS)
    download = (
        f"python -m pip download --no-deps --only-binary=:all: --python-version 3.12 "
        f"--implementation cp {platforms} -d {WHEEL_DIR} " + " ".join(pinned)
    )
    install = (
        f"python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "
        f"/tmp/site {WHEEL_DIR}/*.whl && export PYTHONPATH=/tmp/site:$PWD"
    )
    return [download, f"{install} && {lease_command}"]


def print_setup(lease_command: str) -> None:
    """Prints :func:`setup_commands` for ``lease_command``, each after what it is for."""
    download, lease = setup_commands(lease_command)
    print("# here, in the repository root: the wheels the GPU image lacks, into .whl/")
    print(download)
    print("# on the GPU machine, in the repository root, in each call (carry .whl): install, run")
    print(lease)


def out_dir_of(out_dir: Path | None, *, smoke: bool, name: str) -> Path:
    """The output folder, made: ``out_dir``, else a fresh temporary one for a smoke run (CI never
    writes into the repository), else ``benchmarks/<name>``."""
    if out_dir is None:
        out_dir = (
            Path(tempfile.mkdtemp(prefix=f"mz_jax_{name}_smoke_"))
            if smoke
            else REPO / "benchmarks" / name
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


# --------------------------------------------------------------------------------------------------
# The command line.


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: every part on a CPU")
    parser.add_argument("--out-dir", type=Path, default=None, help="default benchmarks/gpu")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--limit-s", type=float, default=540.0, help="the whole run's time")
    parser.add_argument("--preset", default=PRESET, help="the preset measured")
    parser.add_argument("--baseline", default=BASELINE_PRESET, help="the preset compared with")
    parser.add_argument("--suite-file", type=Path, default=SUITE_FILE)
    parser.add_argument(
        "--suite-workdir", type=Path, default=None, help="default OUT_DIR/minatar_suite"
    )
    parser.add_argument(
        "--print-setup", action="store_true", help="print the set-up commands and exit"
    )
    return parser.parse_args(argv)


RESULT_KEYS = {part: part for part in PARTS} | {"suite": "minatar_suite"}


def run_part(part: str, args, settings: Settings, record: dict, budget: Budget, emit) -> dict:
    """The summary of ``part``, with ``left_out``: the measurements its budget left out."""
    if part == "matmul":
        return matmul_part(settings, budget, emit)
    if part == "learner":
        peak = record.get("matmul", {}).get("bfloat16")
        return learner_part(settings, budget, emit, preset=args.preset, bf16_peak=peak)
    if part == "search":
        return search_part(settings, budget, emit, preset=args.preset)
    if part == "minatar":
        return minatar_part(settings, budget, emit, preset=args.preset, baseline=args.baseline)
    return suite_part(
        settings,
        budget,
        emit,
        preset=args.preset,
        suite_file=args.suite_file.resolve(),
        workdir=args.suite_workdir.resolve(),
        out_dir=args.out_dir,
    )


def run_parts(args, settings: Settings, record: dict, save: Callable, tables: dict) -> None:
    """Runs the chosen parts in order, each within its budget, saving after every row and part.
    A part that fails is recorded and the next one runs; an interrupt stops them all."""
    overall = Budget(time.monotonic() + args.limit_s)

    def emit(part: str) -> Callable:
        def add(headers: list[str], row: list) -> None:
            tables.setdefault(part, (headers, []))[1].append(row)
            record["rows"].setdefault(part, []).append(row_record(headers, row))
            log("  done: " + " | ".join(f"{h} {v}" for h, v in zip(headers, row, strict=True)))
            save()

        return add

    for part in [part for part in PARTS if part in args.parts]:
        if part == "suite":
            budget = Budget(overall.deadline - SUITE_STOP_S)
        else:
            share = PART_SHARES[part] * args.limit_s
            budget = Budget(min(overall.deadline, time.monotonic() + share))
        log(f"{part} ({max(budget.left(), 0):.0f} s) ...")
        began = time.monotonic()
        try:
            if not budget.allows(0):
                status = "not started: out of time"
            else:
                summary = run_part(part, args, settings, record, budget, emit(part))
                left_out = summary.pop("left_out")
                record[RESULT_KEYS[part]] = summary
                status = f"{left_out} measurement(s) left out for time" if left_out else "done"
        except KeyboardInterrupt:
            record["parts"][part] = {"status": "interrupted", "seconds": time.monotonic() - began}
            save()
            raise
        except Exception as error:  # a lease keeps the other parts
            traceback.print_exc()
            status = f"failed: {type(error).__name__}: {error}"
        record["parts"][part] = {"status": status, "seconds": time.monotonic() - began}
        log(f"{part}: {status} in {record['parts'][part]['seconds']:.0f} s")
        save()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.print_setup:
        print_setup(LEASE_COMMAND)
        return 0
    if "suite" in args.parts and not args.smoke:
        # Before JAX starts its GPU client: the suite's own process needs memory too.
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    settings = Settings.smoke_run() if args.smoke else Settings()
    args.out_dir = out_dir_of(args.out_dir, smoke=args.smoke, name="gpu")
    if args.suite_workdir is None:
        args.suite_workdir = args.out_dir / "minatar_suite"
    results_path = args.out_dir / RESULTS_FILE
    runs = earlier_runs(results_path)
    record = new_record(argv, settings.smoke, args.limit_s)
    tables: dict[str, tuple[list[str], list[list]]] = {}

    def save() -> None:
        write_atomically(results_path, json.dumps({"runs": [*runs, record]}, indent=2) + "\n")
        write_atomically(args.out_dir / SECTION_FILE, markdown_section(record, tables))

    log(f"{record['machine']}\nresults: {results_path}")
    save()
    try:
        run_parts(args, settings, record, save, tables)
    except KeyboardInterrupt:
        log("interrupted: the results so far are saved")
    print(record["machine"])
    for name, (headers, rows) in tables.items():
        print(f"\n{PART_TITLES[name]}:")
        print(format_table(headers, rows))
    print(f"\nresults: {results_path}\nsection: {args.out_dir / SECTION_FILE}")
    statuses = [part["status"] for part in record["parts"].values()]
    return 0 if all(s == "done" for s in statuses) and len(statuses) == len(args.parts) else 1


if __name__ == "__main__":
    sys.exit(main())
