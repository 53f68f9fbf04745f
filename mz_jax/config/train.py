"""The training configuration, :class:`TrainConfig`: a frozen dataclass, one line of help a field.

The CLI (:mod:`mz_jax.cli.main`) is generated from it by tyro, so every field is a flag
(``--num-envs 32``, ``--search.num-simulations 8``); presets (:mod:`mz_jax.config.presets`) and
suite files set the same dotted names through :func:`mz_jax.config.overrides.override`.
docs/options.md describes every field in full.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any, Literal

from mz_jax.config.checks import check_train_config
from mz_jax.config.network import NetworkConfig
from mz_jax.config.search import SearchConfig
from mz_jax.config.stochastic import StochasticConfig
from mz_jax.core import validation
from mz_jax.core.validation import fail

__all__ = ["NetworkConfig", "SearchConfig", "StochasticConfig", "TrainConfig"]


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything a training run needs; the run is a pure function of this and the seed.

    Validated as a whole when made (:func:`mz_jax.config.checks.check_train_config`); the parts
    ``network``, ``search`` and ``stochastic`` are dataclasses of their own. How the defaults are
    chosen, across environments: benchmarks/tuning/defaults.md.
    """

    env: str = "gymnax:CartPole-v1"
    """Environment name: 'gymnax:<id>', 'pgx:<id>', or 'gymnasium:<id>' and 'envpool:<task>' stepped
    in Python (see `mz-jax envs`)."""
    env_options: tuple[tuple[str, str], ...] = ()
    """Keyword arguments of the environment's constructor as NAME VALUE pairs, each value read as a
    Python literal (96, False) where it is one, else as text."""
    max_episode_steps: int | None = None
    """Time limit in environment steps (truncation); None keeps the environment's own."""
    action_repeat: int = 1
    """Environment steps per decision (frame skip); the rewards in between are summed. Single-player
    environments only."""
    seed: int = 0
    """Seed of every random choice of the run, in [0, 2**31 - 1]."""
    num_seeds: int = 1
    """Independent runs of seeds seed, seed + 1, ..., vmapped as one program; 1: a plain run."""
    total_env_steps: int | None = 100_000
    """Stop after this many environment steps (all environments together); None runs until
    stopped."""

    num_envs: int = 16
    """Self-play environments, all devices together (must divide by the number of devices)."""
    rollout_length: int = 4
    """Environment steps each environment takes per iteration."""
    iterations_per_call: int = 1
    """Iterations per call of the compiled step (a lax.scan), so the host fetches metrics once per
    call."""
    overlap_acting: bool | None = None
    """Act in a thread while the learner trains on the previous rollout (Sebulba), with parameters
    one iteration older; None: on for environments stepped in Python."""
    updates_per_iteration: int = 4
    """Learner updates per iteration: with rollout_length and num_envs it sets the replay ratio."""
    batch_size: int = 128
    """Training sequences per update, all devices together (must divide by the number of
    devices)."""
    num_unroll_steps: int = 5
    """K, the steps the model is unrolled in training."""
    td_steps: int = 5
    """n of the n-step value targets; reaching past an episode's end gives Monte-Carlo targets."""
    discount: float = 0.99
    """Per-step discount gamma in (0, 1] (0.997 in the MuZero paper's Atari runs)."""

    replay_capacity: int = 50_000
    """Replay size in transitions, all devices together."""
    replay_observation_dtype: Literal["float32", "uint8"] = "float32"
    """How the replay stores observations: 'uint8' keeps round(255 x) of x clipped to [0, 1], a
    quarter of the memory, exact for 8-bit images."""
    min_replay_steps: int = 0
    """Environment steps per environment collected before the first update (0: as soon as one
    sequence fits)."""
    sample_newest_steps: bool = False
    """Sample a window once its K + 1 unrolled steps are written; a return past the newest step
    bootstraps there."""
    priority_alpha: float = 0.5
    """Prioritisation exponent alpha in [0, inf); 0 samples uniformly (1 in the MuZero paper)."""
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
    lr_decay_updates: int | Literal["run"] | None = "run"
    """Cosine decay of the learning rate to 10% over this many updates after warm-up; 'run': the
    run's updates; None: constant."""
    max_grad_norm: float = 5.0
    """Global gradient-norm clipping threshold."""
    weight_decay: float = 1e-4
    """Weight-decay coefficient: an L2 term in the loss, or the optimiser's decay with
    decoupled_weight_decay."""
    decoupled_weight_decay: bool = True
    """Apply weight_decay in the optimiser (AdamW) rather than as the loss's L2 term (MuZero's loss
    as written)."""
    value_loss_weight: float = 0.25
    """Weight of the value loss (0.25 in MuZero Reanalyse)."""
    reward_loss_weight: float = 1.0
    """Weight of the reward loss (1 in MuZero)."""
    consistency_loss_weight: float = 0.0
    """Weight of EfficientZero's self-supervised consistency loss (2 in the paper); 0: off."""
    value_target_sigma: float = 0.0
    """HL-Gauss value targets: each spread over the value support by a normal of this many bins
    (0.75 in the paper); 0: two-hot."""
    reanalyse_values: bool = True
    """Bootstrap value targets from the target parameters' values of the stored observations, not
    the stored search values."""
    reanalyse_values_by_search: bool = False
    """With reanalyse_values: the refreshed bootstraps are the root values of a fresh greedy
    search."""
    reanalyse_policy_fraction: float = 0.0
    """Share of each batch, in [0, 1], whose policy targets come from a fresh search with the target
    parameters."""
    off_policy_correction_steps: int | None = None
    """EfficientZero's off-policy correction: data collected a steps ago uses td_steps - a // this
    rewards; None: off."""
    target_update_every: int = 1
    """Learner updates between copies of the parameters into the target parameters (1: always the
    current ones)."""
    target_ema_decay: float = 0.0
    """In [0, 1): the target parameters are a Polyak average with this decay instead of a copy
    (0)."""
    consistency_target_params: bool = False
    """The consistency loss encodes its targets with the target parameters (with target_ema_decay:
    SPR's momentum encoder)."""
    augment_reflection: bool = False
    """Mirror each sequence of a batch with probability 1/2 (the environment needs a mirror
    symmetry, Env.reflection)."""
    hidden_grad_scale: float = 0.5
    """Gradient scale of the hidden state between unrolled steps (1/2 in the paper)."""
    unroll_learner: bool | None = None
    """Trace the learner as straight-line code rather than loops and a conditional; None: True for
    networks with convolutions."""
    max_consecutive_nonfinite: int = 10
    """Stop with an error after this many updates in a row with a non-finite loss or gradient."""
    stochastic: StochasticConfig = dataclasses.field(default_factory=StochasticConfig)
    """Stochastic MuZero's loss settings, read where network.num_chance_outcomes is set."""

    search: SearchConfig = dataclasses.field(default_factory=SearchConfig)
    """Search settings; their discount and two_player are derived in training and may be left
    None."""
    temperature_schedule: tuple[tuple[float, float], ...] = ((0.5, 1.0), (0.75, 0.5), (1.0, 0.25))
    """(fraction of the run, temperature) pairs: the muzero policy samples visits with temperature T
    until that fraction."""
    random_action_probability: float = 0.0
    """Self-play plays a uniformly random legal action with this probability; the policy target
    stays the search's."""
    stop_value_targets_at_exploration: bool = True
    """With random_action_probability > 0: value targets stop at the first exploratory step (False:
    run through it)."""
    exploration_repeat_exponent: float | None = None
    """εz-greedy: an exploratory action lasts n steps, n from a zeta distribution with this
    exponent; None: one step."""
    random_action_anneal: tuple[float, float] | None = None
    """(final probability, fraction of the run): random_action_probability falls linearly to it;
    None: constant."""
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
        # Every field, and every rule that relates several, is checked before anything is built or
        # compiled; one error names the field, its value and what is allowed.
        check_train_config(self)

    @property
    def uses_target_params(self) -> bool:
        """Whether reanalyse reads target parameters (kept in the run state and refreshed)."""
        return self.reanalyse_values or self.reanalyse_policy_fraction > 0

    @property
    def uses_next_observation(self) -> bool:
        """Whether the batch carries the stored observations of steps 1..K: the consistency loss
        encodes them as its targets, Stochastic MuZero's chance encoder reads them."""
        return self.consistency_loss_weight > 0 or self.network.num_chance_outcomes is not None

    @property
    def window_length(self) -> int:
        """Steps of one replayed sequence: K + 1 unrolled steps and td_steps to bootstrap from."""
        return self.num_unroll_steps + self.td_steps + 1

    @property
    def written_window_rows(self) -> int:
        """Steps of a window that must be written before it can be sampled: all of them, or its
        K + 1 unrolled steps with ``sample_newest_steps``."""
        return self.num_unroll_steps + 1 if self.sample_newest_steps else self.window_length

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """``env_options`` as the keyword arguments of the environment's constructor."""
        return {name: _literal(value) for name, value in self.env_options}

    @property
    def env_steps_per_iteration(self) -> int:
        """Environment steps of one iteration, all environments together (``action_repeat`` per
        decision; a repeat cut short by the end of an episode counts in full)."""
        return self.num_envs * self.rollout_length * self.action_repeat

    def decisions(self, env_steps: int) -> int:
        """The decisions that take ``env_steps`` environment steps: ``ceil(env_steps /
        action_repeat)``."""
        return -(-env_steps // self.action_repeat)

    @property
    def eval_max_decisions(self) -> int:
        """The decisions an evaluation episode may take: ``eval_max_steps`` environment steps."""
        return self.decisions(self.eval_max_steps)

    @property
    def decay_updates(self) -> int | None:
        """The updates of the learning-rate decay: ``lr_decay_updates``, with 'run' resolved to the
        updates the run makes after warm-up (at least 1), or None (a constant rate)."""
        if self.lr_decay_updates != "run":
            return self.lr_decay_updates
        if self.total_env_steps is None:
            return None
        iterations = -(-self.total_env_steps // self.env_steps_per_iteration)
        return max(1, iterations * self.updates_per_iteration - self.warmup_updates)

    def check_devices(self, num_devices: int) -> None:
        """Raises if the batch or the environments cannot be split evenly over ``num_devices``."""
        devices = validation.integer(1)
        if not devices.accepts(num_devices):
            fail("number of devices", num_devices, devices.allowed)
        for name in ("num_envs", "batch_size"):
            value = getattr(self, name)
            if value % num_devices:
                fail(name, value, f"a multiple of the number of devices ({num_devices})")

    def replace(self, **changes) -> TrainConfig:
        """A copy with ``changes`` (validated again)."""
        return dataclasses.replace(self, **changes)


def _literal(text: str) -> Any:
    """``text`` as the Python literal it spells (``96``, ``False``, ``0.25``), else as itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
