"""Every check of a configuration, in one place, run before anything is built or compiled.

Each field is checked by its own rule in :mod:`mz_jax.core.validation` (the rules the network and
search factories apply to their arguments too), from the dataclasses' ``__post_init__``.
:func:`check_train_config` runs those of a :class:`~mz_jax.TrainConfig` and then the rules that
relate several fields (the replay must hold one sequence per environment stream; the momentum
encoder needs a consistency loss); :func:`check_for_env` the rules that relate the configuration to
its environment (a mirror symmetry for ``augment_reflection``, chance outcomes for
``stochastic.chance_codes="environment"``, the number of players), once :func:`mz_jax.build` has
made it.
Every failure is one ``ValueError`` naming the field, its value and what is allowed.
"""

from __future__ import annotations

from typing import Any

from mz_jax.config.network import NetworkConfig
from mz_jax.config.search import SearchConfig
from mz_jax.config.stochastic import StochasticConfig
from mz_jax.core import validation
from mz_jax.core.validation import fail
from mz_jax.envs import GYMNAX_PREFIX, PGX_PREFIX, Env, Reflection, gymnax_adapter, pgx_adapter


def check_train_config(config: Any) -> None:
    """Raises ``ValueError`` naming the first field of ``config`` (a :class:`~mz_jax.TrainConfig`;
    not imported here, since :mod:`mz_jax.config.train` imports this module) that breaks a rule."""
    if not isinstance(config.search, SearchConfig):
        fail("search", config.search, "a mz_jax.SearchConfig")
    if not isinstance(config.network, NetworkConfig):
        fail("network", config.network, "a mz_jax.NetworkConfig")
    if not isinstance(config.stochastic, StochasticConfig):
        fail("stochastic", config.stochastic, "a mz_jax.config.StochasticConfig")
    if not isinstance(config.env, str) or ":" not in config.env:
        fail("env", config.env, "'gymnax:<id>' or 'pgx:<id>' (run `mz-jax envs` for the list)")
    options = config.env_options
    if not isinstance(options, tuple | list) or any(
        not isinstance(pair, tuple | list)
        or len(pair) != 2
        or not (isinstance(pair[0], str) and pair[0].isidentifier())
        or not isinstance(pair[1], str)
        for pair in options
    ):
        fail("env_options", options, "(name, value) pairs of text, names Python identifiers")
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


def check_for_env(config: Any, env: Env) -> None:
    """Raises ``ValueError`` naming the first field of ``config`` (a :class:`~mz_jax.TrainConfig`)
    that ``env`` cannot train with: ``augment_reflection`` without a mirror symmetry, what
    Stochastic MuZero does not combine with, or ``search.two_player`` against its players."""
    if config.augment_reflection:
        _check_reflection(config, env)
    if config.network.num_chance_outcomes is not None:
        _check_stochastic(config, env)
    two_player = env.num_players == 2
    if config.search.two_player not in (None, two_player):
        fail(
            "search.two_player",
            config.search.two_player,
            f"None or {two_player} ({env.name} has {env.num_players} player(s))",
        )


def _check_reflection(config: Any, env: Env) -> None:
    """Refuses ``augment_reflection`` where ``env`` has no mirror symmetry, or an invalid one."""
    if env.reflection is None:
        known = [GYMNAX_PREFIX + name for name in gymnax_adapter.REFLECTIONS]
        known += [PGX_PREFIX + name for name in pgx_adapter.REFLECTIONS]
        fail(
            "augment_reflection",
            config.augment_reflection,
            f"False for {env.name}, which has no mirror symmetry written down (Env.reflection; "
            f"these have one: {', '.join(known)})",
        )
    check_reflection(env.reflection, env.num_actions, env.name)


def _check_stochastic(config: Any, env: Env) -> None:
    """Refuses what Stochastic MuZero (``network.num_chance_outcomes``) does not combine with, and
    ``stochastic.chance_codes="environment"`` where ``env`` names no outcomes or more than the
    network has."""
    chance = f"with network.num_chance_outcomes = {config.network.num_chance_outcomes}"
    if config.network.value_prefix_horizon is not None:
        fail("network.value_prefix_horizon", config.network.value_prefix_horizon, f"None {chance}")
    if config.stochastic.chance_codes == "environment":
        if env.chance_outcome is None:
            fail(
                "stochastic.chance_codes",
                config.stochastic.chance_codes,
                f"'learned' for {env.name}, which does not name its chance outcomes (pgx:2048 "
                "and pgx:backgammon do; an action_repeat above 1 does not)",
            )
        if config.network.num_chance_outcomes < env.num_chance_outcomes:
            fail(
                "network.num_chance_outcomes",
                config.network.num_chance_outcomes,
                f"an integer >= {env.num_chance_outcomes} with "
                f"stochastic.chance_codes='environment': {env.name} names "
                f"{env.num_chance_outcomes} outcomes",
            )


def check_reflection(reflection: Reflection, num_actions: int, name: str) -> None:
    """Raises ValueError unless ``reflection.actions`` permutes ``range(num_actions)``."""
    actions = tuple(reflection.actions)
    if sorted(actions) != list(range(num_actions)):
        raise ValueError(
            f"{name}'s reflection.actions {actions!r} is invalid: allowed a permutation of "
            f"range({num_actions}), the mirror image of each action"
        )
