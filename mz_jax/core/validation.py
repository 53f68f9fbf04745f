"""One rule per field: the values every configuration field and factory argument accepts.

A field that appears in several places (``discount`` in :class:`~mz_jax.TrainConfig` and
:class:`~mz_jax.SearchConfig`, ``latent_size`` in :class:`~mz_jax.NetworkConfig` and
:func:`mz_jax.networks.make_mlp_network`) is checked by the same rule everywhere, so the places
cannot drift apart. Every failure is one ``ValueError`` naming the field, its value and what is
allowed::

    config field 'discount' = 2.0 is invalid: allowed a number in (0, 1]

Rules that relate several fields of :class:`~mz_jax.TrainConfig` (the replay must hold one
sequence per environment stream) live in :mod:`mz_jax.config.checks`, which runs these too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn

import numpy as np


class Rule(NamedTuple):
    """What a field accepts: a predicate and its description for the error message."""

    accepts: Callable[[Any], bool]
    allowed: str


def is_int(value: Any) -> bool:
    """An integer (Python or numpy), not a bool."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def is_real(value: Any) -> bool:
    """A finite real number (int or float, Python or numpy), not a bool."""
    return (
        isinstance(value, int | float | np.integer | np.floating)
        and not isinstance(value, bool | np.bool_)
        and math.isfinite(value)
    )


def integer(minimum: int, maximum: int | None = None) -> Rule:
    """An integer in ``[minimum, maximum]`` (no upper bound when None)."""
    allowed = (
        f"an integer >= {minimum}" if maximum is None else f"an integer in [{minimum}, {maximum}]"
    )
    return Rule(lambda v: is_int(v) and v >= minimum and (maximum is None or v <= maximum), allowed)


def number(low: float, high: float = math.inf, *, low_open=False, high_open=False) -> Rule:
    """A finite number in the interval from ``low`` to ``high`` (open or closed at either end)."""
    high_open = high_open or math.isinf(high)

    def accepts(v: Any) -> bool:
        return (
            is_real(v)
            and (v > low if low_open else v >= low)
            and (v < high if high_open else v <= high)
        )

    interval = f"{'(' if low_open else '['}{_fmt(low)}, {_fmt(high)}{')' if high_open else ']'}"
    return Rule(accepts, f"a number in {interval}")


def boolean() -> Rule:
    return Rule(lambda v: isinstance(v, bool | np.bool_), "True or False")


def one_of(*choices: str) -> Rule:
    return Rule(lambda v: v in choices, " or ".join(repr(c) for c in choices))


def optional(rule: Rule) -> Rule:
    """``rule``, or None."""
    return Rule(lambda v: v is None or rule.accepts(v), f"None or {rule.allowed}")


def sizes(minimum: int = 1) -> Rule:
    """A non-empty tuple of integers >= ``minimum``."""
    return Rule(
        lambda v: (
            isinstance(v, tuple | list) and bool(v) and all(is_int(x) and x >= minimum for x in v)
        ),
        f"a non-empty tuple of integers >= {minimum}",
    )


def scales() -> Rule:
    """A non-empty tuple of finite numbers > 0."""
    return Rule(
        lambda v: isinstance(v, tuple | list) and bool(v) and all(is_real(x) and x > 0 for x in v),
        "a non-empty tuple of finite numbers > 0",
    )


def pair(rule: Rule, *, ordered: bool = False) -> Rule:
    """A pair ``(a, b)`` of values that ``rule`` accepts (``a < b`` when ``ordered``)."""

    def accepts(v: Any) -> bool:
        ok = isinstance(v, tuple | list) and len(v) == 2 and all(rule.accepts(x) for x in v)
        return ok and (not ordered or v[0] < v[1])

    return Rule(
        accepts, f"a pair {'(min, max), min < max,' if ordered else '(a, b),'} each {rule.allowed}"
    )


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "inf"
    return str(float(x))


_POSITIVE = integer(1)
_COUNT = integer(0)
_FRACTION = number(0, 1)

RULES: dict[str, Rule] = {
    # Environment and run.
    "max_episode_steps": optional(_POSITIVE),
    "action_repeat": _POSITIVE,
    "seed": integer(0, 2**31 - 1),  # jax.random.key keeps 32 bits; init traces it as int32
    "num_seeds": _POSITIVE,
    "total_env_steps": optional(_POSITIVE),
    "num_envs": _POSITIVE,
    "rollout_length": _POSITIVE,
    "updates_per_iteration": _COUNT,
    "iterations_per_call": _POSITIVE,
    "batch_size": _POSITIVE,
    "num_unroll_steps": _POSITIVE,
    "td_steps": _POSITIVE,
    "discount": number(0, 1, low_open=True),
    # Replay.
    "replay_capacity": _POSITIVE,
    "min_replay_steps": _COUNT,
    "priority_alpha": number(0, 10),
    "priority_beta": pair(_FRACTION),
    "sample_newest_steps": boolean(),
    # Learner.
    "optimizer": one_of("adam", "sgd"),
    "learning_rate": number(0, 10, low_open=True),
    "momentum": number(0, 1, high_open=True),
    "warmup_updates": _COUNT,
    "lr_decay_updates": Rule(
        lambda v: v is None or v == "run" or _POSITIVE.accepts(v),
        f"None, 'run' or {_POSITIVE.allowed}",
    ),
    "max_grad_norm": number(0, math.inf, low_open=True),
    "weight_decay": _FRACTION,
    "decoupled_weight_decay": boolean(),
    "value_loss_weight": number(0, 100),
    "reward_loss_weight": number(0, 100),
    "consistency_loss_weight": number(0, 100),
    "value_target_sigma": number(0, 100),
    "commitment_loss_weight": number(0, 100),
    "code_usage_weight": number(0, 100),
    "chance_straight_through": one_of("logits", "softmax"),
    "chance_codes": one_of("environment", "learned"),
    "reanalyse_values": boolean(),
    "reanalyse_values_by_search": boolean(),
    "augment_reflection": boolean(),
    "stop_value_targets_at_exploration": boolean(),
    "reanalyse_policy_fraction": _FRACTION,
    "off_policy_correction_steps": optional(_POSITIVE),
    "target_update_every": _POSITIVE,
    "target_ema_decay": number(0, 1, high_open=True),
    "consistency_target_params": boolean(),
    "hidden_grad_scale": _FRACTION,
    "unroll_learner": optional(boolean()),
    "overlap_acting": optional(boolean()),
    "replay_observation_dtype": one_of("float32", "uint8"),
    "max_consecutive_nonfinite": _POSITIVE,
    # Acting.
    "random_action_probability": _FRACTION,
    "exploration_repeat_exponent": optional(number(1, 100, low_open=True)),
    "random_action_anneal": optional(
        Rule(
            lambda v: (
                isinstance(v, tuple | list)
                and len(v) == 2
                and _FRACTION.accepts(v[0])
                and number(0, 1, low_open=True).accepts(v[1])
            ),
            "a pair (final probability, fraction of the run), the first a number in [0, 1] and "
            "the second in (0, 1]",
        )
    ),
    # Evaluation, logging, checkpoints.
    "eval_every_env_steps": _COUNT,
    "eval_episodes": _POSITIVE,
    "eval_max_steps": _POSITIVE,
    "log_every_seconds": number(0, math.inf),
    "checkpoint_every_seconds": number(0, math.inf),
    "keep_checkpoints": _POSITIVE,
    "keep_checkpoint_every": optional(_POSITIVE),
    # Network (NetworkConfig and the factories of mz_jax.networks).
    "kind": one_of("auto", "mlp", "resnet"),
    "num_actions": _POSITIVE,
    "hidden_sizes": sizes(1),
    "latent_size": integer(2),  # min-max normalisation needs two units to keep any information
    "channels": _POSITIVE,
    "num_blocks": _COUNT,
    "prediction_blocks": _COUNT,
    "head_channels": _POSITIVE,
    "head_hidden": _POSITIVE,
    "downsample": boolean(),
    "observation_layer_norm": boolean(),
    "conv_channels": optional(_POSITIVE),
    "observation_scale": optional(scales()),
    "value_support_size": _POSITIVE,
    "reward_support_size": _POSITIVE,
    "projection_size": _POSITIVE,
    "value_prefix_horizon": optional(_POSITIVE),
    "lstm_size": _POSITIVE,
    "num_chance_outcomes": optional(_POSITIVE),
    "predict_turn": boolean(),
    "compute_dtype": one_of("float32", "bfloat16"),
    # Search (SearchConfig).
    "policy": one_of("muzero", "gumbel"),
    "policy_target": one_of("visits", "completed_q"),
    "num_simulations": _POSITIVE,
    "two_player": boolean(),
    "dirichlet_alpha": number(0, math.inf, low_open=True),
    "dirichlet_fraction": _FRACTION,
    "pb_c_init": number(0),
    "pb_c_base": number(0, math.inf, low_open=True),
    "max_depth": optional(_POSITIVE),
    "max_num_considered_actions": _POSITIVE,
    "gumbel_scale": number(0),
    "value_scale": number(0, math.inf, low_open=True),
    "maxvisit_init": number(0),
    "rescale_values": boolean(),
    "rescale_min_range": number(0, math.inf, low_open=True),
    "value_bounds": optional(pair(number(-math.inf), ordered=True)),
}
"""The rule of every field, by its name (the same name in every class and function that has it)."""


def fail(label: str, value: Any, allowed: str, *, kind: str = "config field") -> NoReturn:
    """Raises the one-line error of an invalid value."""
    raise ValueError(f"{kind} {label!r} = {value!r} is invalid: allowed {allowed}")


def check(field: str, value: Any, *, label: str | None = None, kind: str = "config field") -> None:
    """Raises ``ValueError`` unless ``RULES[field]`` accepts ``value``.

    Args:
      field: the field's name, a key of :data:`RULES`.
      value: its value.
      label: the name shown in the message (e.g. ``'network.latent_size'``); default ``field``.
      kind: what the field is, for the message: ``'config field'`` or ``'argument'``.
    """
    rule = RULES[field]
    if not rule.accepts(value):
        fail(label or field, value, rule.allowed, kind=kind)


def check_fields(
    instance: Any,
    *,
    prefix: str = "",
    kind: str = "config field",
    optional: tuple[str, ...] = (),
) -> None:
    """Checks every field of the dataclass ``instance`` that has a rule; the fields named in
    ``optional`` may also be None (derived later)."""
    for name in type(instance).__dataclass_fields__:
        value = getattr(instance, name)
        if name in RULES and not (name in optional and value is None):
            check(name, value, label=prefix + name, kind=kind)
