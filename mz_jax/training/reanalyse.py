"""Reanalyse inside the compiled step: fresher targets for replayed data (MuZero Reanalyse;
EfficientZero, Ye et al. 2021, §4.3).

Self-play stores the search policy and the search value of every step, computed with the parameters
of the time. The longer a step stays in the replay, the further those targets lag behind the
network being trained. Just before the targets are built, the learner may refresh a sampled batch
of windows (leaves ``[B, W, ...]``, see :mod:`mz_jax.training.replay`) with its target parameters (a copy of
the parameters a few updates old):

* :func:`refresh_values`: the ``root_value`` of every row the value targets can read becomes the
  network's value of its observation, or the root value of a greedy search from it
  (:func:`mz_jax.core.targets.bootstrap_rows` says which rows), and the ``bootstrap_value`` of a
  truncated episode the value of the observation it reached (stored for this by
  ``rollout(record_final_observation=True)``);
* :func:`refresh_policies`: the policy targets of steps 0..K of the first windows become those of a
  fresh search from their stored observations and legal actions;
* :func:`td_steps_for_age` (off-policy correction): older data bootstraps after fewer real rewards,
  since its rewards came from an older policy.

All of it is pure and runs inside the one jitted, sharded iteration (:mod:`mz_jax.training.iteration`).
No gradient flows through any refreshed target.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from mz_jax.config.search import SearchConfig
from mz_jax.core.transforms import logits_to_scalar
from mz_jax.mcts.policies import search
from mz_jax.training.replay import ReplayIndex, ReplayState, slots_since
from mz_jax.types import Array, MuZeroNetwork, Params, Trajectory


def _flatten2(x: Array) -> Array:
    """``[B, R, ...] -> [B * R, ...]``."""
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])


def _at_rows(x: Array, rows: Array) -> Array:
    """``x[b, rows[b, r]]``: ``[B, W, ...]`` at int rows ``[B, R]`` -> ``[B, R, ...]``."""
    return jnp.take_along_axis(x, rows.reshape(*rows.shape, *(1,) * (x.ndim - 2)), axis=1)


def _values(params: Params, network: MuZeroNetwork, observation: Array) -> Array:
    output, _ = network.initial_inference(params, observation)
    return jax.lax.stop_gradient(logits_to_scalar(output.value_logits))


def _search_values(
    params: Params, network: MuZeroNetwork, observation: Array, legal: Array, config: SearchConfig
) -> Array:
    # greedy: no root noise, and a fixed key for the tree's tie-breaking (no key to pass).
    out = search(
        params, jax.random.key(0), observation, legal, network=network, config=config, greedy=True
    )
    return jax.lax.stop_gradient(out.root_value)


def refresh_values(
    params: Params,
    windows: Trajectory,
    *,
    network: MuZeroNetwork,
    final_observations: bool = False,
    rows: Array | None = None,
    search_config: SearchConfig | None = None,
) -> Trajectory:
    """``windows`` (leaves ``[B, W, ...]``) with the ``root_value`` of the given rows replaced by
    the network's value of their observations, and, with ``final_observations`` (the windows hold
    them, as ``rollout(record_final_observation=True)`` records them), the first truncation's
    ``bootstrap_value`` of each window by the value of the observation it reached (from the
    perspective of the player at that row).

    With ``search_config``, the rows' values are instead the root values of a greedy search
    (no root noise) with ``params`` from their observations and stored legal actions
    (EfficientZero's ``use_root_value``); the truncations' bootstraps stay the network's values.

    ``rows``: None refreshes all ``W`` rows of every window; an int ``[B, R]`` array refreshes rows
    ``rows[b]`` of window ``b`` (repeats allowed) and leaves the others as stored. The value targets
    read only the ``K + 1`` rows of :func:`mz_jax.core.targets.bootstrap_rows`, so refreshing those costs
    ``K + 1`` inferences a window rather than ``K + n + 1``.
    """
    batch, length = windows.reward.shape
    if rows is None:
        rows = jnp.broadcast_to(jnp.arange(length), (batch, length))
    if rows.ndim != 2 or rows.shape[0] != batch:
        raise ValueError(
            f"rows must have shape [B, R] with B = {batch} windows; got shape {rows.shape}"
        )
    count = rows.shape[1]
    observation = _flatten2(_at_rows(windows.observation, rows))
    if search_config is None:
        values = _values(params, network, observation)
    else:
        legal = _flatten2(_at_rows(windows.legal_action_mask, rows))
        values = _search_values(params, network, observation, legal, search_config)
    values = values.reshape(batch, count).astype(windows.root_value.dtype)
    root_value = windows.root_value.at[jnp.arange(batch)[:, None], rows].set(values)
    windows = windows._replace(root_value=root_value)
    if not final_observations:
        return windows  # keep the acting-time estimates of truncation bootstraps
    # Only the first truncation of a window can be read by the targets (a row after it belongs to
    # another episode), so one inference per window suffices.
    row = jnp.argmax(windows.truncated, axis=1)
    take = lambda x: _at_rows(x, row[:, None])[:, 0]
    final_value = _values(params, network, take(windows.final_observation))
    same_player = take(windows.final_player) == take(windows.player)
    fresh = jnp.where(same_player, final_value, -final_value)
    at_row = (jnp.arange(length)[None, :] == row[:, None]) & windows.truncated
    bootstrap_value = jnp.where(at_row, fresh[:, None], windows.bootstrap_value)
    return windows._replace(bootstrap_value=bootstrap_value)


def refresh_policies(
    params: Params,
    key: Array,
    windows: Trajectory,
    *,
    network: MuZeroNetwork,
    search_config: SearchConfig,
    num_unroll_steps: int,
    count: int,
) -> Trajectory:
    """``windows`` with the policy targets of rows 0..K of the first ``count`` windows replaced by
    those of a fresh search with ``params`` from the stored observations and legal actions.

    The search is the acting search (``search_config``, root noise included, as EfficientZero's
    reanalyse), on ``count * (K + 1)`` roots at once. Rows past the end of an episode are searched
    too (the batch is static) and then zeroed or masked by the target builder.
    """
    if count == 0:
        return windows
    steps = num_unroll_steps + 1
    observation = _flatten2(windows.observation[:count, :steps])
    legal = _flatten2(windows.legal_action_mask[:count, :steps])
    out = search(params, key, observation, legal, network=network, config=search_config)
    policy = jax.lax.stop_gradient(out.policy).reshape(count, steps, -1)
    return windows._replace(policy=windows.policy.at[:count, :steps].set(policy))


def window_age(replay: ReplayState, index: ReplayIndex, *, num_envs: int) -> Array:
    """``[B]`` int32: environment steps (``num_envs`` environments together) collected since the
    first step of each sampled window was written; 0 for the newest time slot."""
    return slots_since(replay, index) * num_envs


def td_steps_for_age(age: Array, *, td_steps: int, correction_steps: int) -> Array:
    """EfficientZero's off-policy correction: ``n = td_steps - floor(age / correction_steps)``,
    clipped to ``[1, td_steps]``; ``age`` in environment steps (:func:`window_age`)."""
    shorter = age // correction_steps
    return jnp.clip(td_steps - shorter, 1, td_steps).astype(jnp.int32)
