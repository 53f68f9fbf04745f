"""Metric names, and the one nested metrics record flattened to ``'a/b'`` names where it is logged.

The compiled iteration returns its scalars as one nested record (dicts of arrays): the loss terms
exactly as :func:`mz_jax.make_loss_fn` returns them in ``LossAux.losses``, the optimiser's, the
actor's and the replay's. Nothing copies a term by hand on the way up: a loss term added to the loss
reaches ``metrics.jsonl`` and TensorBoard as ``loss/<name>`` by itself. :func:`flatten` turns the
record into names only on the host, where it is written.

The records of ``metrics.jsonl`` (one JSON object a line; in a multi-seed run one per seed). A
record is written at most every ``log_every_seconds``, at an evaluation and before a failure, so
consecutive records may lie several iterations apart. Each field has one scope:

* cumulative: a count over the whole run up to the record (summed over restarts);
* run: the same in every record;
* last iteration: a value of the one iteration that ended at the record's ``env_steps`` (the
  iterations between two records are not logged; their updates are counted in ``step``);
* log window: over the episodes that ended since the previous record;
* evaluation: in a record written at an evaluation only.

==============================  ===============  ===================================================
field                           scope            meaning
==============================  ===============  ===================================================
``step``                        cumulative       learner updates
``env_steps``                   cumulative       environment steps, all environments together
``wall_s``                      cumulative       seconds of training
``seed``                        run              the run's seed (multi-seed runs only)
``loss/total``                  last iteration   the loss, mean over the iteration's updates
``loss/value``, ``loss/reward``, ``loss/policy``, ``loss/weight_decay``, ``loss/consistency``:
                                last iteration   each term, mean over the iteration's updates
                                                 (``consistency`` where it is on)
``targets/value_clipped``, ``targets/reward_clipped``:
                                last iteration   the share of trained value and reward targets
                                                 outside their support (clipped to its ends)
``optim/grad_norm``             last iteration   global gradient norm before clipping, mean
``optim/finite``                last iteration   the share of updates whose gradient was finite
``optim/learning_rate``         last iteration   the rate the optimiser applied
``optim/updates``               last iteration   learner updates in that iteration (0 while the
                                                 replay warms up); the run's total is ``step``
``optim/nonfinite_in_a_row``    cumulative       updates skipped in a row for a non-finite gradient
``optim/nonfinite_total``       cumulative       updates skipped for a non-finite gradient
``actor/temperature``           last iteration   the acting temperature
``actor/nonfinite_env_steps``   last iteration   steps with a non-finite observation or reward
``replay/beta``                 last iteration   the importance-sampling exponent
``overlap/learner_wait``        last iteration   the share of the iteration's wall time the learner
                                                 waited for the actor's rollout (overlapped runs,
                                                 ``overlap_acting``, only)
``overlap/actor_wait``          last iteration   the share of it the actor thread had no rollout
                                                 to play (overlapped runs only)
``train/episodes``              log window       self-play episodes that ended
``train/episode_return``        log window       their mean return (null if none ended)
``train/episode_length``        log window       their mean length (null if none ended)
``eval/episode_return``         evaluation       mean greedy return of ``eval_episodes`` episodes
``eval/completed``              evaluation       the share of them that ended within
                                                 ``eval_max_steps`` (below 1, the run notes once
                                                 that the returns count the rewards until then)
==============================  ===============  ===================================================

The per-iteration sums the compiled step returns for the episodes (``actor/episodes``,
``actor/episode_return_sum``, ``actor/episode_length_sum``) are not written: the host adds them up
over the log window into the ``train/...`` fields. docs/running.md refers to this table.

When a run must stop for non-finite values: the compiled step skips an update whose loss or gradient
is not finite and counts it; the host loop asks :func:`nonfinite_error` after every iteration
whether the run must stop: too many skipped updates in a row (``max_consecutive_nonfinite``), or any
non-finite observation or reward from the environment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mz_jax.config.train import TrainConfig

EVAL_RETURN = "eval/episode_return"
EVAL_COMPLETED = "eval/completed"
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


class NonFiniteError(RuntimeError):
    """Training produced non-finite values for too long, or the environment did."""


def _nonfinite_message(step: int, metrics: dict) -> str:
    terms = [
        name
        for name, value in metrics.items()
        if (name.startswith("loss/") or name == "optim/grad_norm") and not math.isfinite(value)
    ]
    return (
        f"{int(metrics[NONFINITE_IN_A_ROW])} updates in a row had a non-finite loss or "
        f"gradient (the last at update {step}; non-finite terms: "
        f"{', '.join(terms) or 'gradient only'}); these updates were skipped, and the last good "
        "parameters are in the newest checkpoint"
    )


def nonfinite_error(config: TrainConfig, metrics: dict, *, step: int, env_steps: int):
    """The :class:`NonFiniteError` this iteration's metrics (arrays ``[num_seeds]``) call for, or
    None."""
    for i in range(config.num_seeds):
        of_seed = {name: value[i] for name, value in metrics.items()}
        which = f" (seed {config.seed + i})" if config.num_seeds > 1 else ""
        if of_seed[NONFINITE_ENV_STEPS] > 0:
            return NonFiniteError(
                f"the environment {config.env} returned a non-finite observation or reward "
                f"({int(of_seed[NONFINITE_ENV_STEPS])} steps) before env step "
                f"{env_steps}{which}"
            )
        if of_seed[NONFINITE_IN_A_ROW] >= config.max_consecutive_nonfinite:
            return NonFiniteError(_nonfinite_message(step, of_seed) + which)
    return None
