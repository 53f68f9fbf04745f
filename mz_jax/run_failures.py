"""When a training run must stop for non-finite values, and what it says (:mod:`mz_jax.run`).

The compiled step skips an update whose loss or gradient is not finite and counts it; the host
loop asks :func:`nonfinite_error` after every iteration whether the run must stop: too many skipped
updates in a row (``max_consecutive_nonfinite``), or any non-finite observation or reward from the
environment.
"""

from __future__ import annotations

import math

from mz_jax import metrics as metrics_lib
from mz_jax.config import TrainConfig


class NonFiniteError(RuntimeError):
    """Training produced non-finite values for too long, or the environment did."""


def _nonfinite_message(step: int, metrics: dict) -> str:
    terms = [
        name
        for name, value in metrics.items()
        if (name.startswith("loss/") or name == "optim/grad_norm") and not math.isfinite(value)
    ]
    return (
        f"{int(metrics[metrics_lib.NONFINITE_IN_A_ROW])} updates in a row had a non-finite loss or "
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
        if of_seed[metrics_lib.NONFINITE_ENV_STEPS] > 0:
            return NonFiniteError(
                f"the environment {config.env} returned a non-finite observation or reward "
                f"({int(of_seed[metrics_lib.NONFINITE_ENV_STEPS])} steps) before env step "
                f"{env_steps}{which}"
            )
        if of_seed[metrics_lib.NONFINITE_IN_A_ROW] >= config.max_consecutive_nonfinite:
            return NonFiniteError(_nonfinite_message(step, of_seed) + which)
    return None
