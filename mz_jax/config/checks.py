"""The rules a whole :class:`~mz_jax.TrainConfig` must satisfy, checked before anything is built.

Each field is checked by its own rule in :mod:`mz_jax.core.validation`; :func:`check_train_config` runs
those and then the rules that relate several fields (the replay must hold one sequence per
environment stream; the momentum encoder needs a consistency loss). Every failure is one
``ValueError`` naming the field, its value and what is allowed. The environment's name is checked
against the registry by :mod:`mz_jax.training.build` (listing the registry imports every backend).
"""

from __future__ import annotations

from typing import Any

from mz_jax.config.network import NetworkConfig
from mz_jax.core import validation
from mz_jax.core.validation import fail
from mz_jax.mcts.policies import SearchConfig


def check_train_config(config: Any) -> None:
    """Raises ``ValueError`` naming the first field of ``config`` (a :class:`~mz_jax.TrainConfig`;
    not imported here, since :mod:`mz_jax.config.train` imports this module) that breaks a rule."""
    if not isinstance(config.search, SearchConfig):
        fail("search", config.search, "a mz_jax.SearchConfig")
    if not isinstance(config.network, NetworkConfig):
        fail("network", config.network, "a mz_jax.NetworkConfig")
    if not isinstance(config.env, str) or ":" not in config.env:
        fail("env", config.env, "'gymnax:<id>' or 'pgx:<id>' (run `mz-jax envs` for the list)")
    # init traces seed + i as an int32 for each of the num_seeds runs.
    validation.check("seed", config.seed)
    seeds = validation.integer(1, 2**31 - config.seed)
    if not seeds.accepts(config.num_seeds):
        fail("num_seeds", config.num_seeds, seeds.allowed)
    validation.check_fields(config)
    if config.search.discount is not None and config.search.discount != config.discount:
        fail(
            "search.discount",
            config.search.discount,
            f"None or the training discount ({config.discount}): training searches with "
            "'discount'; set that instead",
        )
    schedule = config.temperature_schedule
    if (
        not isinstance(schedule, tuple | list)
        or not schedule
        or any(not isinstance(p, tuple | list) or len(p) != 2 for p in schedule)
    ):
        fail(
            "temperature_schedule",
            schedule,
            "a non-empty tuple of (fraction, temperature) pairs",
        )
    fraction, temperature = validation.number(0), validation.number(0, 100, low_open=True)
    if not all(fraction.accepts(f) and temperature.accepts(t) for f, t in schedule):
        fail(
            "temperature_schedule",
            schedule,
            f"fractions each {fraction.allowed} and temperatures each {temperature.allowed}",
        )
    fractions = [f for f, _ in schedule]
    if fractions != sorted(fractions) or fractions[-1] < 1.0:
        fail("temperature_schedule", schedule, "fractions increasing and the last one >= 1.0")
    if config.exploration_repeat_exponent is not None and config.random_action_probability == 0:
        fail(
            "exploration_repeat_exponent",
            config.exploration_repeat_exponent,
            "None while random_action_probability is 0 (it sets how long an exploratory "
            "action lasts; with no exploratory actions it would do nothing)",
        )
    if config.random_action_anneal is not None and (
        config.random_action_probability == 0 or config.total_env_steps is None
    ):
        fail(
            "random_action_anneal",
            config.random_action_anneal,
            "None while random_action_probability is 0 or total_env_steps is None (it anneals "
            "the first over a fraction of the second)",
        )
    if config.consistency_target_params and config.consistency_loss_weight == 0:
        fail(
            "consistency_target_params",
            True,
            "False without consistency_loss_weight > 0 (it sets which parameters encode that "
            "loss's targets)",
        )
    if config.reanalyse_values_by_search and not config.reanalyse_values:
        fail(
            "reanalyse_values_by_search",
            True,
            "False while reanalyse_values is False (it sets how the refreshed values are computed)",
        )
    for field, off in (("target_ema_decay", 0), ("consistency_target_params", False)):
        if getattr(config, field) != off and not config.uses_target_params:
            fail(
                field,
                getattr(config, field),
                f"{off} while neither reanalyse_values nor reanalyse_policy_fraction > 0 "
                "keeps target parameters",
            )
    # The replay keeps replay_capacity // num_envs time slots per environment stream; a stream
    # must hold one training sequence and one rollout.
    slots_needed = max(config.window_length, config.rollout_length)
    if config.replay_capacity < config.num_envs * slots_needed:
        fail(
            "replay_capacity",
            config.replay_capacity,
            f"at least num_envs * max(num_unroll_steps + td_steps + 1, rollout_length) = "
            f"{config.num_envs} * {slots_needed} = {config.num_envs * slots_needed} (one sequence "
            "and one rollout per environment stream)",
        )
    slots = config.replay_capacity // config.num_envs
    if config.min_replay_steps > slots:
        fail(
            "min_replay_steps",
            config.min_replay_steps,
            f"at most replay_capacity // num_envs = {slots} (the steps one environment stream "
            "holds; more would never be reached)",
        )
