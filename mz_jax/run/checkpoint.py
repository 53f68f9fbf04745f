"""Checkpoints of the whole training state with orbax, verified by our own content hash.

A checkpoint holds everything a run needs to continue exactly: parameters, optimiser state, PRNG keys,
counters, replay contents with priorities and the actors' environment states, plus the configuration
the run was started with (in its ``meta``). The guarantees, and how each is kept:

* Atomic: orbax writes each step to a temporary directory and renames it when complete, so a save
  interrupted half-way (``kill -9``, power loss of the process) is never chosen on restore; leftover
  temporary directories are removed at start-up.
* Safe with donation: :meth:`Checkpointer.save` copies the state to host memory before it returns, so
  the caller may donate (and so overwrite) the device buffers at once while orbax writes in the
  background.
* Verified: orbax does not detect a corrupted but complete checkpoint (single-bit corruption restored
  different values silently in our trials), so a SHA-256 of the state's bytes is saved beside it and
  checked on restore; a checkpoint that fails to read or to verify is reported, moved out of the way
  (to ``corrupted_checkpoints/``) and the previous good one is used.
* Finite: a state with a non-finite floating-point value is never written.
* Reported in one line: a failed save raises :class:`CheckpointSaveError` (an ``OSError``) naming
  the step, the directory, the reason and the newest complete checkpoint, which stays intact; a
  failed restore tells a checkpoint that cannot be read or verified (corrupt) from one holding a
  state of other shapes (another network or environment), by comparing the saved array metadata
  with the state first. TensorStore's specs and orbax's late "Event loop is closed" callbacks (left
  by a read that failed part-way) are kept out of the messages and off stderr.

:mod:`mz_jax.run.state_bytes` turns the state into what is saved (keys as raw data, host copies, the
content hash); :mod:`mz_jax.run.checkpoint_diagnostics` words the failures.
"""

from __future__ import annotations

import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from mz_jax.run.checkpoint_diagnostics import (
    layout,
    layout_difference,
    saved_layout,
    short_reason,
    silence_closed_loop_callbacks,
)
from mz_jax.run.state_bytes import (
    from_orbax,
    nonfinite_leaves,
    orbax_tree,
    state_digest,
    to_host,
    to_orbax,
    to_saveable,
)
from mz_jax.run.workdir import CHECKPOINT_DIR, CORRUPTED_DIR

_TMP_MARKER = ".orbax-checkpoint-tmp"


class CheckpointError(RuntimeError):
    """A checkpoint could not be restored.

    Attributes:
      corrupt: True if it cannot be read or does not verify (its files are damaged); False if it
        holds a state of other shapes or structure than the one asked for (a run of another
        network or environment).
      detail: what is wrong, without the checkpoint's step and directory.
    """

    def __init__(self, message: str, *, corrupt: bool = True, detail: str | None = None):
        super().__init__(message)
        self.corrupt = corrupt
        self.detail = message if detail is None else detail


class CheckpointSaveError(OSError):
    """A checkpoint could not be written (a full disk, an unwritable directory). The message names
    the step, the directory, the reason, and the newest complete checkpoint (which is intact)."""


class Checkpointer:
    """Saves and restores a run's state under ``workdir/checkpoints``, one orbax step per save.

    Args:
      workdir: the run's directory.
      keep_last: the newest checkpoints kept.
      keep_every: additionally keep every checkpoint whose step is a multiple of this (None: none);
        orbax's ``keep_period``.
      read_only: only restore (while a training run may be writing): nothing is removed, moved or
        created, and :meth:`save` is refused.

    The ``checkpoints/`` directory is created by the first save, so a run that fails to start
    leaves no empty one behind.
    """

    def __init__(
        self,
        workdir: str | Path,
        *,
        keep_last: int = 3,
        keep_every: int | None = None,
        read_only: bool = False,
    ):
        self.workdir = Path(workdir).absolute()
        self.directory = self.workdir / CHECKPOINT_DIR
        self.read_only = read_only
        silence_closed_loop_callbacks()  # a failed read or write leaves them behind
        self._pending: int | None = None  # the step of the save orbax may still be writing
        self._failed = False  # a failed save was raised already: close() does not raise it again
        self._closed = False
        if not read_only:
            self._remove_temporary_directories()
        self.manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(
                max_to_keep=keep_last,
                keep_period=keep_every,
                create=False,
                cleanup_tmp_directories=not read_only,
                read_only=read_only,
            ),
        )

    def _remove_temporary_directories(self) -> None:
        """Removes what saves interrupted by a kill left behind (orbax would ignore them anyway)."""
        if not self.directory.exists() or jax.process_index() != 0:
            return
        for path in self.directory.iterdir():
            if path.is_dir() and _TMP_MARKER in path.name:
                shutil.rmtree(path, ignore_errors=True)

    def steps(self) -> list[int]:
        """The steps of the complete checkpoints, oldest first."""
        return sorted(self.manager.all_steps())

    def save(self, step: int, state: Any, *, meta: dict | None = None) -> bool:
        """Saves ``state`` as ``step``; returns False (and writes nothing) if it is not finite.

        The state is copied to host memory and hashed before this returns, so the caller may donate
        or change its device buffers right away; the files are written in the background
        (:meth:`wait` blocks until they are complete). Saving a step that exists already is a no-op
        that returns True: a step's state is a function of the step.

        Raises:
          CheckpointSaveError: if this save, or the previous one still being written, fails (a
            full disk): the message names that step, the directory and the newest complete
            checkpoint, which is intact.
        """
        if self.read_only:
            raise ValueError(f"this Checkpointer of {self.directory} is read_only; it cannot save")
        self.wait()  # a failure of the previous save is that save's, and is reported as such
        if step in self.manager.all_steps():
            return True
        # Hashed in the state's own structure (its NamedTuples), saved in orbax's (to_orbax).
        host_state = jax.tree.map(to_host, to_saveable(state))
        bad = nonfinite_leaves(host_state)
        if bad:
            print(
                f"not saving checkpoint {step}: non-finite values in {', '.join(bad[:5])}"
                + (f" and {len(bad) - 5} more" if len(bad) > 5 else ""),
                file=sys.stderr,
                flush=True,
            )
            return False
        meta = dict(meta or {})
        meta["sha256"] = state_digest(host_state)
        self._pending = step
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.manager.save(
                step,
                args=ocp.args.Composite(
                    state=ocp.args.StandardSave(orbax_tree(host_state)),
                    meta=ocp.args.JsonSave(meta),
                ),
                force=True,
            )
        except Exception as error:  # orbax wraps some failures; the reason is kept
            raise self._save_error(step, error) from error
        return True

    def wait(self) -> None:
        """Blocks until every save started so far is complete on disk.

        Raises:
          CheckpointSaveError: if one of them failed.
        """
        try:
            self.manager.wait_until_finished()
        except Exception as error:
            raise self._save_error(self._pending, error) from error
        self._pending = None

    def _save_error(self, step: int | None, error: BaseException) -> CheckpointSaveError:
        self._failed = True
        self._pending = None
        committed = [int(p.name) for p in self._step_dirs() if p.name != str(step)]
        kept = (
            f"the newest complete checkpoint, {max(committed)}, is intact"
            if committed
            else "no checkpoint was completed before it"
        )
        return CheckpointSaveError(
            f"saving checkpoint {step} to {self.directory} failed: {short_reason(error)}; {kept}. "
            "Free space (or fix the directory) and run the same command again to resume"
        )

    def _step_dirs(self) -> list[Path]:
        """The directories of committed steps (an unfinished save's has a temporary name)."""
        if not self.directory.is_dir():
            return []
        return [p for p in self.directory.iterdir() if p.is_dir() and p.name.isdigit()]

    def restore(self, step: int, abstract_state: Any) -> tuple[Any, dict]:
        """The checkpoint ``step`` as ``(state, meta)``.

        Args:
          step: one of :meth:`steps`.
          abstract_state: the state's structure with shapes, dtypes and shardings
            (``jax.ShapeDtypeStruct`` leaves with ``sharding``), into which to restore.

        Raises:
          CheckpointError: if it holds a state of other shapes (``corrupt`` False), or cannot be
            read or its content hash does not match (``corrupt`` True); the message is one line.
        """
        silence_closed_loop_callbacks()

        def failed(detail: str, *, corrupt: bool = True) -> CheckpointError:
            message = f"checkpoint {step} in {self.directory} {detail}"
            return CheckpointError(message, corrupt=corrupt, detail=detail)

        try:
            saved = saved_layout(self.directory / str(step) / "state")
        except Exception as error:
            detail = f"is unreadable: its array metadata cannot be read ({short_reason(error)})"
            raise failed(detail) from error
        difference = layout_difference(saved, layout(to_orbax(abstract_state)))
        if difference:
            raise failed(f"holds a state of other shapes: {difference}", corrupt=False)
        try:
            restored = self.manager.restore(
                step,
                args=ocp.args.Composite(
                    state=ocp.args.StandardRestore(to_orbax(abstract_state)),
                    meta=ocp.args.JsonRestore(),
                ),
            )
        except Exception as error:  # orbax and tensorstore raise many kinds
            raise failed(f"is unreadable ({short_reason(error)})") from error
        state = from_orbax(restored.state, abstract_state)
        meta = dict(restored.meta or {})
        if meta.get("sha256") != state_digest(state):
            raise failed("is corrupted: its content hash does not match the one saved with it")
        return state, meta

    def restore_latest(self, abstract_state: Any) -> tuple[int, Any, dict] | None:
        """The newest checkpoint that restores and verifies: ``(step, state, meta)``.

        Newer checkpoints that fail are reported on stderr and (unless ``read_only``) moved to
        ``corrupted_checkpoints/``, so that the run can save those steps again.

        Returns:
          None if there are no checkpoints.

        Raises:
          CheckpointError: if there are checkpoints but none restores, in one line saying whether
            they are unreadable or corrupt (``corrupt`` True) or hold a state of other shapes (a
            changed network or environment; ``corrupt`` False). Nothing is moved then.
        """
        failures: list[tuple[int, CheckpointError]] = []
        for step in reversed(self.steps()):
            try:
                state, meta = self.restore(step, abstract_state)
            except CheckpointError as error:
                failures.append((step, error))
                continue
            for bad_step, error in failures:
                print(f"{error}; using checkpoint {step}", file=sys.stderr, flush=True)
                if not self.read_only:
                    self._move_aside(bad_step)
            return step, state, meta
        if not failures:
            return None
        step, newest = failures[0]
        several = len(failures) > 1
        count = f"all {len(failures)} checkpoints" if several else "the only checkpoint"
        which = f"the newest, {step}," if several else step
        if all(error.corrupt for _, error in failures):
            raise CheckpointError(
                f"{count} in {self.directory} {'are' if several else 'is'} unreadable or corrupt "
                f"({which} {newest.detail}); nothing was moved: move {self.directory} aside to "
                "start this run afresh, or use another --workdir"
            )
        raise CheckpointError(
            f"{count} in {self.directory} cannot be restored into this run's state ({which} "
            f"{newest.detail}): a different network or environment gives other shapes, and so does "
            "an mz_jax version that keeps other state; resume with the configuration and version "
            "that saved them, or use another --workdir",
            corrupt=False,
        )

    def _move_aside(self, step: int) -> None:
        if jax.process_index() == 0:
            source = self.directory / str(step)
            target = self.workdir / CORRUPTED_DIR / f"{step}-{time.strftime('%Y%m%d-%H%M%S')}"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(source, target)
            print(f"moved checkpoint {step} to {target}", file=sys.stderr, flush=True)
        if jax.process_count() > 1:
            from jax.experimental import multihost_utils

            multihost_utils.sync_global_devices(f"mz_jax checkpoint {step} moved aside")
        self.manager.reload()

    def close(self) -> None:
        """Waits for pending saves and releases orbax's resources (once; later calls do nothing).

        Raises:
          CheckpointSaveError: if a pending save failed, unless a failed save was raised already
            (closing after that failure, in a ``finally``, does not hide it with a second error).
        """
        if self._closed:
            return
        self._closed = True
        try:
            if not self._failed:
                self.wait()
        finally:
            try:
                self.manager.close()
            except Exception:
                if not self._failed:
                    raise


def state_nbytes(abstract_state: Any) -> int:
    """Bytes of the state's arrays (an upper bound of a checkpoint's size; orbax compresses)."""
    return int(
        sum(
            math.prod(x.shape) * np.dtype(x.dtype).itemsize
            for x in jax.tree.leaves(to_saveable(abstract_state))
        )
    )
