"""The compiled training iteration (Anakin, Hessel et al., 2021): self-play, replay, reanalyse,
augmentation, the learner, one iteration of act -> store -> learn, ``build(config)`` that turns a
configuration into components, and ``make_train`` that compiles the data-parallel step.
"""

from mz_jax.training import (
    actor,
    augment,
    build,
    iteration,
    learner,
    reanalyse,
    replay,
    train,
)

__all__ = [
    "actor",
    "augment",
    "build",
    "iteration",
    "learner",
    "reanalyse",
    "replay",
    "train",
]
