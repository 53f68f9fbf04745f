"""Training configuration: frozen dataclasses, one docstring per field, validated before anything runs.

The CLI (:mod:`mz_jax.cli.main`) is generated from these classes by tyro, so every field here is a flag
(``--num-envs 32``, ``--search.num-simulations 8``); presets live in :mod:`mz_jax.config.presets`.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from mz_jax.config.checks import check_train_config
from mz_jax.config.network import NetworkConfig
from mz_jax.config.search import SearchConfig
from mz_jax.core import validation
from mz_jax.core.validation import fail

__all__ = ["NetworkConfig", "SearchConfig", "TrainConfig"]


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything a training run needs; the run is a pure function of this and the seed."""

    env: str = "gymnax:CartPole-v1"
    """Environment name, 'gymnax:<id>' or 'pgx:<id>' (see `mz-jax envs`)."""
    max_episode_steps: int | None = None
    """Time limit in environment steps (truncation); None keeps the environment's own."""
    action_repeat: int = 1
    """Environment steps per action (frame skip; MuZero's Atari agent repeats each action 4 times):
    the agent decides once every this many steps, and the rewards of the steps in between are
    summed (:func:`mz_jax.envs.repeat_action`; a repeat stops at the end of an episode). Step
    counts that say *environment steps* (``total_env_steps``, ``eval_every_env_steps``,
    ``eval_max_steps``, ``max_episode_steps``, the logs' ``env_steps``) count environment steps, this
    many per decision; the discount, ``td_steps``, ``num_unroll_steps``, ``rollout_length`` and
    the replay count decisions, and so do the episode lengths in the logs. Single-player
    environments only. 1: every step is a decision."""
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
    iterations_per_call: int = 1
    """Iterations one call of the compiled step runs (a `lax.scan` inside the jit), so the host
    fetches metrics once per call. The results are those of single iterations; evaluations and
    checkpoints happen between calls."""
    updates_per_iteration: int = 4
    """Learner updates per iteration: with rollout_length and num_envs it sets the replay ratio."""
    batch_size: int = 128
    """Training sequences per update, all devices together (must divide by the number of devices)."""
    num_unroll_steps: int = 5
    """K, the steps the model is unrolled in training."""
    td_steps: int = 5
    """n of the n-step value targets; reaching past an episode's end gives Monte-Carlo targets."""
    discount: float = 0.99
    """Per-step discount gamma in (0, 1] (0.997 in the MuZero paper's Atari runs)."""

    replay_capacity: int = 50_000
    """Replay size in transitions, all devices together."""
    min_replay_steps: int = 0
    """Environment steps per environment collected before the first update (0: as soon as one
    sequence fits)."""
    sample_newest_steps: bool = False
    """Windows may run past the newest step written: a window is sampled once its K + 1 unrolled
    steps are written, and a return whose n rows are not all written yet stops at the newest one
    and bootstraps from its value (as at an exploratory step). False, as MuZero's replay of
    finished data: a window waits for all its K + td_steps + 1 steps, so each step is trained on
    only K + td_steps iterations after it was collected."""
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
    """Cosine decay of the learning rate to 10% over this many updates after warm-up. 'run': over
    the updates the run makes after warm-up (from total_env_steps; resuming with a longer
    total_env_steps stretches the decay from there on, like the temperature schedule); a run
    without total_env_steps keeps the rate constant. None: constant."""
    max_grad_norm: float = 5.0
    """Global gradient-norm clipping threshold."""
    weight_decay: float = 1e-4
    """Weight-decay coefficient: an L2 penalty in the loss, or with decoupled_weight_decay the
    decay applied by the optimiser."""
    decoupled_weight_decay: bool = True
    """Apply weight_decay in the optimiser (AdamW; SGD with decoupled decay) rather than as an L2
    term in the loss, which under Adam is not weight decay (Loshchilov and Hutter, 2019): Adam
    turns the L2 gradient of a weight the loss barely moves into a step of about ``lr * sign(w)``
    and drives it to zero. False: the L2 term (MuZero's loss as written)."""
    value_loss_weight: float = 0.25
    """Weight of the value loss (0.25 in MuZero Reanalyse)."""
    reward_loss_weight: float = 1.0
    """Weight of the reward loss (1 in MuZero). A game scored once, at its end, trains the reward
    head on one transition in tens, and the joint loss learns it slowly:
    benchmarks/tuning/connect_four.md has the measurements."""
    consistency_loss_weight: float = 0.0
    """Weight of EfficientZero's self-supervised consistency loss (2 in the paper): the projected
    unrolled hidden states are pulled towards the projected representations of the observations
    actually reached. 0: off (the MuZero loss)."""
    value_target_sigma: float = 0.0
    """HL-Gauss value targets (Farebrother et al., 2024): each value target spread over the value
    support by a normal of this many bins (0.75 in the paper) rather than projected two-hot onto
    its two nearest bins, as MuZero. 0: two-hot. The reward targets stay two-hot."""
    commitment_loss_weight: float = 0.0
    """Stochastic MuZero only (network.num_chance_outcomes): β of the chance encoder's commitment
    term ``||sg(c) - c^e||^2`` (VQ-VAE's commitment cost is 0.25, van den Oord et al., 2017). 0 by
    default: the term pulls the encoder's softmax onto the first code it picks, before codes carry
    anything, and the saturated softmax passes almost no straight-through gradient, so every
    transition keeps one code. Measured (docs/stochastic_muzero.md): on toy:gamble the two sides of
    the coin got one code in 5 of 6 seeds with 0.25; on CartPole C = 32 ended at 13 and 123 with
    0.25, 110 and 500 with 0."""
    code_usage_weight: float = 0.0
    """Stochastic MuZero only: weight of a bonus on the entropy of the chance codes averaged over a
    batch (``loss/code_usage``), against an encoder that gives every transition the same code. Not
    in the paper; 0 leaves it out."""
    chance_straight_through: str = "softmax"
    """Stochastic MuZero only: what the chance code's straight-through gradient reaches, the chance
    encoder's ``"logits"`` (VQ-VAE's nearest-code quantisation of the encoder's output) or their
    ``"softmax"`` (:func:`mz_jax.core.stochastic_loss.chance_code`). Through the softmax, a code whose
    probability has fallen near 0 gets no gradient and is never picked again: on backgammon the
    encoder gave the 21 rolls 3-5 of 32 codes, through the logits 8-9. The preset played no better
    for it (0.68 and 0.61 of 256 games won against random, against 0.66 and 0.62) and 2048 scored
    less (2,480 against 2,869 over seeds 10-12), so the softmax stays the default
    (docs/stochastic_muzero.md)."""
    chance_codes: str = "learned"
    """Stochastic MuZero only: where the chance code of each stored transition comes from.
    ``"learned"``: the paper's encoder (a VQ-VAE over the two observations). ``"environment"``: the
    outcome the environment names (:attr:`mz_jax.envs.Env.chance_outcome`; pgx:2048 names the new
    tile's cell and value, 32 outcomes, pgx:backgammon the roll that starts the next turn or none,
    22), as LightZero's 2048 configurations do
    (``use_ture_chance_label_in_chance_encoder``): σ then learns the true distribution and the
    encoder is unused. It takes the codebook's collapse out of a comparison (docs/
    stochastic_muzero.md)."""
    reanalyse_values: bool = True
    """Bootstrap the n-step value targets from the network's value of the stored observations,
    with the target parameters (fresh values, as MuZero Reanalyse and EfficientZero compute them),
    instead of the search values stored when acting, which grow stale in the replay; the bootstrap
    values of truncated episodes are refreshed too (their final observations are then stored). On
    by default: with the stored values, CartPole's greedy return settled near 100-180 in 100k steps
    in every seed we ran; with fresh ones it reached 500 and stayed there."""
    reanalyse_values_by_search: bool = False
    """With reanalyse_values: the refreshed bootstraps are the root values of a search with the
    target parameters from the stored observations and legal actions (EfficientZero's and
    LightZero's ``use_root_value``; greedy: no root noise), instead of the network's value of them.
    The search looks ahead through the model, at a search per bootstrap row (about
    ``num_simulations`` times the inference); the bootstraps of truncated episodes keep the
    network's value (their final observations' legal actions are not stored)."""
    reanalyse_policy_fraction: float = 0.0
    """Fraction of each batch, in [0, 1], whose policy targets come from a fresh search with the
    target parameters from the stored observations (MuZero Reanalyse; EfficientZero §4.3) instead
    of the search policies stored when acting."""
    off_policy_correction_steps: int | None = None
    """EfficientZero's off-policy correction: a window whose first step was collected a environment
    steps ago uses n = td_steps - floor(a / this) steps of real rewards (at least 1) before
    bootstrapping. None: td_steps for all data."""
    target_update_every: int = 1
    """With reanalyse_values or reanalyse_policy_fraction: learner updates between copies of the
    parameters into the target parameters that reanalyse uses (1: always the current parameters)."""
    target_ema_decay: float = 0.0
    """In [0, 1): each refresh of the target parameters moves them to decay x target + (1 - decay)
    x params, a Polyak average (the exponential moving average that SPR and BBF keep of their
    online network), instead of copying the parameters (0). With 0.99 and one refresh per update
    the target averages about the last 100 updates."""
    consistency_target_params: bool = False
    """The consistency loss encodes its target branch (the representation of the stored
    observations) with the target parameters instead of the current ones: with target_ema_decay,
    SPR's momentum encoder. Needs consistency_loss_weight > 0 and target parameters
    (reanalyse_values or reanalyse_policy_fraction > 0)."""
    augment_reflection: bool = False
    """Mirror each sequence of every batch with probability 1/2 (:func:`mz_jax.training.augment.
    reflect_batch`): its observations, actions and policy targets become their mirror images, as
    AlphaGo Zero trained on Go's symmetries. Needs an environment with a mirror symmetry
    (:attr:`mz_jax.envs.Env.reflection`: gymnax CartPole-v1, Acrobot-v1 and Catch-bsuite, pgx
    connect_four and tic_tac_toe)."""
    hidden_grad_scale: float = 0.5
    """Gradient scale of the hidden state between unrolled steps (1/2 in the paper)."""
    unroll_learner: bool | None = None
    """Trace the learner as straight-line code: the K model steps of the loss (``jax.lax.scan``
    with ``unroll=K``) and the ``updates_per_iteration`` updates of an iteration, which also run
    (and are dropped) in the first iterations, before the replay can be sampled, instead of
    behind a conditional. The same numbers, to float rounding; the program and its compile time
    grow with K and the updates. None: True for a network with convolutions (the ResNet, or the
    MLP with ``conv_channels``), whose gradient inside a loop or a conditional runs about 10x
    slower on a CPU (XLA), False for the plain MLP, which they do not slow. On an H100 the
    ``breakout_minatar`` update gains 1.55x and its iteration 1.08x, for a step that compiles in
    65 s instead of 21 s: False can suit a short GPU run."""
    max_consecutive_nonfinite: int = 10
    """Stop with an error after this many updates in a row with a non-finite loss or gradient."""

    search: SearchConfig = dataclasses.field(default_factory=SearchConfig)
    """Search settings (policy, simulations, pUCT/Gumbel constants). Its discount and two_player are
    derived (from `discount` and the environment) and may be left None."""
    temperature_schedule: tuple[tuple[float, float], ...] = ((0.5, 1.0), (0.75, 0.5), (1.0, 0.25))
    """(fraction of training, temperature) pairs: the muzero policy samples visits with temperature
    T until that fraction of total_env_steps."""
    random_action_probability: float = 0.0
    """Self-play plays a uniformly random legal action instead of the search's with this
    probability, in [0, 1]: positions the agent's own play never reaches (a blunder to punish in a
    board game) get into the data. The policy target stays the search's, and the n-step value
    targets stop at such a step, bootstrapping from its search value."""
    stop_value_targets_at_exploration: bool = True
    """With random_action_probability > 0: True stops each n-step value target at the first
    exploratory step, bootstrapping from its value (the value of the search's policy: a random
    blunder does not lower it). False lets the targets run through exploratory steps (the value of
    the policy that acted, exploration included), so that a goal reached by exploration reaches the
    values of the states before it: what sparse-goal environments need (Acrobot: with εz-greedy
    exploration, the stopped targets left the value flat across states)."""
    exploration_repeat_exponent: float | None = None
    """εz-greedy (Dabney, Ostrovski and Barreto, 2021, "Temporally-extended ε-greedy
    exploration"): with random_action_probability ε > 0 and this exponent μ > 1, an exploratory
    draw plays one uniformly random legal action for n consecutive steps, n drawn from a zeta
    distribution (``P(n) ∝ n^-μ``, n <= 10,000; 2 in the paper), instead of for one step. A
    repeated action reaches states a single random step does not (MountainCar's and Acrobot's
    swings); every repeated step is exploratory for the value targets. None: one step (ε-greedy)."""
    random_action_anneal: tuple[float, float] | None = None
    """(final probability, fraction of the run): random_action_probability falls linearly to the
    final probability over that fraction of total_env_steps and stays there (DQN's ε schedule), so
    that exploration which found the goal early leaves the later data, and the value targets,
    to the search's policy. None: random_action_probability throughout."""
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
