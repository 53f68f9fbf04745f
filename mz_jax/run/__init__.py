"""One training run on the host: the loop (:func:`run_training`), its workdir, logs and metrics,
checkpoints, and :class:`Agent`, a trained run ready to act.
"""

from mz_jax.run import agent, checkpoint, logger, loop, metrics, workdir
from mz_jax.run.agent import Agent
from mz_jax.run.loop import run_training

__all__ = [
    "Agent",
    "agent",
    "checkpoint",
    "logger",
    "loop",
    "metrics",
    "run_training",
    "workdir",
]
