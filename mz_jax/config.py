"""Training configuration: frozen dataclasses, one docstring per field, validated before anything runs.

The CLI (:mod:`mz_jax.cli`) is generated from these classes by tyro, so every field here is a flag
(``--num-envs 32``, ``--search.num-simulations 8``); presets live in ``configs/``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from mz_jax.search import SearchConfig


def _fail(name: str, value, allowed: str) -> None:
    raise ValueError(f"config field {name!r} = {value!r} is invalid: allowed {allowed}")


def _check_int(name: str, value, minimum: int, maximum: int | None = None) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        _fail(
            name,
            value,
            f"an integer >= {minimum}"
            if maximum is None
            else f"an integer in [{minimum}, {maximum}]",
        )


def _check_bool(name: str, value) -> None:
    if not isinstance(value, bool):
        _fail(name, value, "True or False")


def _check_float(name, value, low, high, *, low_open=False, high_open=False) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > low if low_open else value >= low)
    ok = ok and (value < high if high_open else value <= high)
    if not ok:
        _fail(
            name,
            value,
            f"a number in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}",
        )


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """The MuZero network (see :mod:`mz_jax.networks`)."""

    kind: Literal["auto", "mlp", "resnet"] = "auto"
    """'mlp' for vector observations, 'resnet' for image observations [H, W, C]; 'auto' picks by rank."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """MLP: widths of the hidden layers of each function."""
    latent_size: int = 64
    """MLP: size of the hidden state."""
    channels: int = 32
    """ResNet: channels of every convolution."""
    num_blocks: int = 2
    """ResNet: residual blocks in each of the representation, dynamics and prediction functions."""
    downsample: bool = False
    """ResNet: downsample large images as in the MuZero Atari network (96x96 -> 6x6)."""
    value_support_size: int = 10
    """S of the value support [-S, S] (2S+1 bins, in h-transformed units)."""
    reward_support_size: int = 10
    """S of the reward support [-S, S]."""

    def __post_init__(self) -> None:
        if self.kind not in ("auto", "mlp", "resnet"):
            _fail("network.kind", self.kind, "'auto', 'mlp' or 'resnet'")
        if (
            not isinstance(self.hidden_sizes, tuple | list)
            or not self.hidden_sizes
            or any(
                isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in self.hidden_sizes
            )
        ):
            _fail("network.hidden_sizes", self.hidden_sizes, "a non-empty tuple of integers >= 1")
        for name in (
            "latent_size",
            "channels",
            "num_blocks",
            "value_support_size",
            "reward_support_size",
        ):
            _check_int(f"network.{name}", getattr(self, name), 1)
        _check_bool("network.downsample", self.downsample)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything a training run needs; the run is a pure function of this and the seed."""

    env: str = "gymnax:CartPole-v1"
    """Environment name, 'gymnax:<id>' or 'pgx:<id>' (see `mz-jax envs`)."""
    max_episode_steps: int | None = None
    """Time limit in environment steps (truncation); None keeps the environment's own."""
    seed: int = 0
    """Seed of every random choice of the run, in [0, 2**31 - 1]."""
    num_seeds: int = 1
    """Independent runs with seeds seed, seed + 1, ... trained as one program: the whole run state
    gets a leading axis of this size and the step is vmapped over it (the runs share nothing but the
    compiled code). 1: a plain run without the axis."""
    total_env_steps: int | None = 100_000
    """Stop after this many environment steps (all environments together); None runs until stopped."""

    num_envs: int = 16
    """Self-play environments, all devices together (must divide by the number of devices)."""
    rollout_length: int = 4
    """Environment steps each environment takes per iteration."""
    updates_per_iteration: int = 4
    """Learner updates per iteration: with rollout_length and num_envs it sets the replay ratio."""
    batch_size: int = 128
    """Training sequences per update, all devices together (must divide by the number of devices)."""
    num_unroll_steps: int = 5
    """K, the steps the model is unrolled in training."""
    td_steps: int = 10
    """n of the n-step value targets; reaching past an episode's end gives Monte-Carlo targets."""
    discount: float = 0.997
    """Per-step discount gamma in (0, 1]."""

    replay_capacity: int = 50_000
    """Replay size in transitions, all devices together."""
    min_replay_steps: int = 0
    """Environment steps per environment collected before the first update (0: as soon as one
    sequence fits)."""
    priority_alpha: float = 1.0
    """Prioritisation exponent alpha in [0, inf); 0 samples uniformly."""
    priority_beta: tuple[float, float] = (0.4, 1.0)
    """Importance-sampling exponent beta, annealed linearly from the first to the second value."""

    optimizer: Literal["adam", "sgd"] = "adam"
    """'adam' or 'sgd' (with momentum, as in the MuZero paper)."""
    learning_rate: float = 3e-3
    """Peak learning rate."""
    momentum: float = 0.9
    """Momentum of 'sgd'."""
    warmup_updates: int = 100
    """Linear learning-rate warm-up, in updates."""
    lr_decay_updates: int | None = None
    """Cosine decay of the learning rate to 10% over this many updates after warm-up; None: constant."""
    max_grad_norm: float = 5.0
    """Global gradient-norm clipping threshold."""
    weight_decay: float = 1e-4
    """L2 penalty coefficient in the loss."""
    value_loss_weight: float = 0.25
    """Weight of the value loss (0.25 in MuZero Reanalyse)."""
    reanalyse_values: bool = False
    """Bootstrap the n-step value targets from the network's value of the stored observations,
    with target parameters a few updates old (fresh values, as MuZero Reanalyse and EfficientZero
    compute them), instead of the search values stored when acting, which grow stale in the
    replay."""
    target_update_every: int = 100
    """With reanalyse_values: learner updates between copies of the parameters into the target
    parameters whose values the targets bootstrap from (1: always the current parameters)."""
    hidden_grad_scale: float = 0.5
    """Gradient scale of the hidden state between unrolled steps (1/2 in the paper)."""
    max_consecutive_nonfinite: int = 10
    """Stop with an error after this many updates in a row with a non-finite loss or gradient."""

    search: SearchConfig = dataclasses.field(default_factory=SearchConfig)
    """Search settings (policy, simulations, pUCT/Gumbel constants); discount and two_player are set
    from the environment and `discount`."""
    temperature_schedule: tuple[tuple[float, float], ...] = ((0.5, 1.0), (0.75, 0.5), (1.0, 0.25))
    """(fraction of training, temperature) pairs: the muzero policy samples visits with temperature
    T until that fraction of total_env_steps."""
    random_action_probability: float = 0.0
    """Self-play plays a uniformly random legal action instead of the search's with this
    probability, in [0, 1]: positions the agent's own play never reaches (a blunder to punish in a
    board game) get into the data. The policy target stays the search's."""
    network: NetworkConfig = dataclasses.field(default_factory=NetworkConfig)
    """The MuZero network."""

    eval_every_env_steps: int = 10_000
    """Evaluate (greedy, separate environments) every this many environment steps; 0 never."""
    eval_episodes: int = 32
    """Episodes per evaluation."""
    eval_max_steps: int = 1_000
    """Steps an evaluation episode may last at most (the evaluation runs this many steps)."""
    log_every_seconds: float = 5.0
    """Console progress and metrics.jsonl at most this often."""
    checkpoint_every_seconds: float = 120.0
    """Save the whole training state at most this often (and at the end, and on SIGTERM/SIGINT)."""
    keep_checkpoints: int = 3
    """The newest checkpoints kept."""
    keep_checkpoint_every: int | None = None
    """Also save and keep the checkpoint of every iteration that is a multiple of this; None keeps
    no others."""

    def __post_init__(self) -> None:
        # Every field is checked here, before anything is built or compiled; one error names the
        # field, its value and what is allowed. The environment's name is checked against the
        # registry by make_train (building the list imports every backend).
        if not isinstance(self.search, SearchConfig):
            _fail("search", self.search, "a mz_jax.search.SearchConfig")
        if not isinstance(self.network, NetworkConfig):
            _fail("network", self.network, "a mz_jax.config.NetworkConfig")
        if not isinstance(self.env, str) or ":" not in self.env:
            _fail("env", self.env, "'gymnax:<id>' or 'pgx:<id>' (run `mz-jax envs` for the list)")
        if self.max_episode_steps is not None:
            _check_int("max_episode_steps", self.max_episode_steps, 1)
        # jax.random.key keeps 32 bits, and init takes the seed as a traced int32.
        _check_int("seed", self.seed, 0, 2**31 - 1)
        _check_int("num_seeds", self.num_seeds, 1, 2**31 - self.seed)
        if self.total_env_steps is not None:
            _check_int("total_env_steps", self.total_env_steps, 1)
        for name in (
            "num_envs",
            "rollout_length",
            "batch_size",
            "num_unroll_steps",
            "td_steps",
            "replay_capacity",
            "eval_episodes",
            "eval_max_steps",
            "max_consecutive_nonfinite",
            "target_update_every",
        ):
            _check_int(name, getattr(self, name), 1)
        for name in (
            "updates_per_iteration",
            "min_replay_steps",
            "warmup_updates",
            "eval_every_env_steps",
        ):
            _check_int(name, getattr(self, name), 0)
        if self.lr_decay_updates is not None:
            _check_int("lr_decay_updates", self.lr_decay_updates, 1)
        _check_float("discount", self.discount, 0.0, 1.0, low_open=True)
        _check_float("priority_alpha", self.priority_alpha, 0.0, 10.0)
        if not isinstance(self.priority_beta, tuple | list) or len(self.priority_beta) != 2:
            _fail("priority_beta", self.priority_beta, "a pair (start, end) of numbers in [0, 1]")
        for beta in self.priority_beta:
            _check_float("priority_beta", beta, 0.0, 1.0)
        if self.optimizer not in ("adam", "sgd"):
            _fail("optimizer", self.optimizer, "'adam' or 'sgd'")
        _check_float("learning_rate", self.learning_rate, 0.0, 10.0, low_open=True)
        _check_float("momentum", self.momentum, 0.0, 1.0, high_open=True)
        _check_float(
            "max_grad_norm", self.max_grad_norm, 0.0, math.inf, low_open=True, high_open=True
        )
        _check_float("weight_decay", self.weight_decay, 0.0, 1.0)
        _check_float("value_loss_weight", self.value_loss_weight, 0.0, 100.0)
        _check_float("hidden_grad_scale", self.hidden_grad_scale, 0.0, 1.0)
        _check_bool("reanalyse_values", self.reanalyse_values)
        _check_float("random_action_probability", self.random_action_probability, 0.0, 1.0)
        _check_float("log_every_seconds", self.log_every_seconds, 0.0, math.inf, high_open=True)
        _check_float(
            "checkpoint_every_seconds", self.checkpoint_every_seconds, 0.0, math.inf, high_open=True
        )
        _check_int("keep_checkpoints", self.keep_checkpoints, 1)
        if self.keep_checkpoint_every is not None:
            _check_int("keep_checkpoint_every", self.keep_checkpoint_every, 1)
        schedule = self.temperature_schedule
        if (
            not isinstance(schedule, tuple | list)
            or not schedule
            or any(not isinstance(p, tuple | list) or len(p) != 2 for p in schedule)
        ):
            _fail(
                "temperature_schedule",
                schedule,
                "a non-empty tuple of (fraction, temperature) pairs",
            )
        fractions = [p[0] for p in schedule]
        for fraction in fractions:
            _check_float("temperature_schedule", fraction, 0.0, math.inf, high_open=True)
        if fractions != sorted(fractions) or fractions[-1] < 1.0:
            _fail("temperature_schedule", schedule, "fractions increasing and the last one >= 1.0")
        for _, temperature in schedule:
            _check_float("temperature_schedule", temperature, 0.0, 100.0, low_open=True)
        # The replay keeps replay_capacity // num_envs time slots per environment stream; a stream
        # must hold one training sequence and one rollout.
        window = self.num_unroll_steps + self.td_steps + 1
        slots_needed = max(window, self.rollout_length)
        if self.replay_capacity < self.num_envs * slots_needed:
            _fail(
                "replay_capacity",
                self.replay_capacity,
                f"at least num_envs * max(num_unroll_steps + td_steps + 1, rollout_length) = "
                f"{self.num_envs} * {slots_needed} = {self.num_envs * slots_needed} (one sequence "
                "and one rollout per environment stream)",
            )
        slots = self.replay_capacity // self.num_envs
        if self.min_replay_steps > slots:
            _fail(
                "min_replay_steps",
                self.min_replay_steps,
                f"at most replay_capacity // num_envs = {slots} (the steps one environment stream "
                "holds; more would never be reached)",
            )

    def check_devices(self, num_devices: int) -> None:
        """Raises if the batch or the environments cannot be split evenly over ``num_devices``."""
        _check_int("number of devices", num_devices, 1)
        for name in ("num_envs", "batch_size"):
            value = getattr(self, name)
            if value % num_devices:
                _fail(name, value, f"a multiple of the number of devices ({num_devices})")

    def replace(self, **changes) -> TrainConfig:
        """A copy with ``changes`` (validated again)."""
        return dataclasses.replace(self, **changes)
