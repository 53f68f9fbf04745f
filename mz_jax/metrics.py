"""Metric names, and the one nested metrics record flattened to ``'a/b'`` names where it is logged.

The compiled iteration returns its scalars as one nested record (dicts of arrays): the loss terms
exactly as :func:`mz_jax.make_loss_fn` returns them in ``LossAux.losses``, the optimiser's, the
actor's and the replay's. Nothing copies a term by hand on the way up: a loss term added to the loss
reaches ``metrics.jsonl`` and TensorBoard as ``loss/<name>`` by itself. :func:`flatten` turns the
record into names only on the host, where it is written.

The records of ``metrics.jsonl`` (one JSON object a line; in a multi-seed run one per seed):

========================  ======================================================================
``step``                  learner updates done so far (cumulative)
``env_steps``             environment steps done so far, all environments together (cumulative)
``wall_s``                seconds of training so far, summed over restarts (cumulative)
``seed``                  the run's seed (multi-seed runs only)
``loss/<term>``           the loss terms of the iteration's updates, mean over them (``total``:
                          the loss value, ``value``, ``reward``, ``policy``, ``weight_decay``,
                          and ``consistency`` where it is on)
``targets/value_clipped``, ``targets/reward_clipped``: the share of trained value and reward
                          targets outside their categorical support (clipped to its ends)
``optim/grad_norm``       global gradient norm before clipping, mean over the iteration's updates
``optim/finite``          the share of the iteration's updates whose gradient was finite
``optim/learning_rate``   the rate the optimiser applied (from its own count of applied updates)
``optim/updates``         learner updates in this iteration (0 while the replay warms up)
``optim/nonfinite_in_a_row``, ``optim/nonfinite_total``: updates skipped for a non-finite
                          gradient, consecutive and since the start
``actor/temperature``     the acting temperature of the iteration
``actor/nonfinite_env_steps``: steps of the iteration with a non-finite observation or reward
``replay/beta``           the importance-sampling exponent of the iteration
``train/episodes``        self-play episodes that ended since the previous record
``train/episode_return``  their mean return (null if none ended)
``train/episode_length``  their mean length (null if none ended)
``eval/episode_return``   mean greedy evaluation return (only in records written at an evaluation)
========================  ======================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

EVAL_RETURN = "eval/episode_return"
TRAIN_RETURN = "train/episode_return"
TRAIN_LENGTH = "train/episode_length"
TRAIN_EPISODES = "train/episodes"
LOSS = "loss/total"
LEARNING_RATE = "optim/learning_rate"
UPDATES = "optim/updates"
NONFINITE_IN_A_ROW = "optim/nonfinite_in_a_row"
NONFINITE_ENV_STEPS = "actor/nonfinite_env_steps"
EPISODES = "actor/episodes"
EPISODE_RETURN_SUM = "actor/episode_return_sum"
EPISODE_LENGTH_SUM = "actor/episode_length_sum"
"""Per-iteration sums of the episodes that ended; the host logs them as ``train/...`` means."""


def flatten(record: Any, prefix: str = "") -> dict[str, Any]:
    """``{'a': {'b': x}}`` (dicts or NamedTuples, any depth) as ``{'a/b': x}``."""
    if hasattr(record, "_asdict"):
        record = record._asdict()
    if not isinstance(record, Mapping):
        return {prefix: record}
    flat: dict[str, Any] = {}
    for name, value in record.items():
        flat.update(flatten(value, f"{prefix}/{name}" if prefix else str(name)))
    return flat
