"""The batches a run's learner applies, captured on the host."""

from __future__ import annotations

import jax

from mz_jax.training import learner


def capture_batches(monkeypatch) -> list:
    """Patches the learner's update so that every batch it applies is appended, as a
    :class:`mz_jax.types.Batch` of numpy arrays, to the list returned (in the order applied;
    an update skipped while the replay fills appends nothing). Trainers made afterwards see it."""
    batches = []
    update = learner.update

    def recording_update(train, batch, **kwargs):
        jax.debug.callback(batches.append, batch)
        return update(train, batch, **kwargs)

    monkeypatch.setattr(learner, "update", recording_update)
    return batches
