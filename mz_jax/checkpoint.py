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
"""

from __future__ import annotations

import hashlib
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from mz_jax.workdir import CHECKPOINT_DIR, CORRUPTED_DIR

_TMP_MARKER = ".orbax-checkpoint-tmp"


class CheckpointError(RuntimeError):
    """A checkpoint could not be restored (unreadable, or its content hash does not match)."""


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _key_data(x: Any) -> Any:
    if isinstance(x, jax.ShapeDtypeStruct):
        data = jax.eval_shape(jax.random.key_data, x)
        return jax.ShapeDtypeStruct(data.shape, data.dtype, sharding=x.sharding)
    return jax.random.key_data(x)


def to_saveable(state: Any) -> Any:
    """Typed PRNG keys become their raw uint32 data (orbax stores plain arrays); works on abstract
    (``jax.ShapeDtypeStruct``) states too."""
    return jax.tree.map(lambda x: _key_data(x) if _is_key(x) else x, state)


def _key_impl(ref: Any) -> Any:
    # jax.random.key_impl accepts arrays only; an abstract key carries its implementation in its dtype.
    return jax.random.key_impl(ref) if isinstance(ref, jax.Array) else ref.dtype._impl


def from_saveable(saved: Any, like: Any) -> Any:
    """Inverse of :func:`to_saveable`, with ``like`` (the state, or its abstract version) telling
    which were keys."""
    return jax.tree.map(
        lambda x, ref: jax.random.wrap_key_data(x, impl=_key_impl(ref)) if _is_key(ref) else x,
        saved,
        like,
    )


def _host_view(leaf: Any) -> np.ndarray | None:
    """The bytes this process can vouch for: the whole array, or one replica of a replicated array
    spread over processes; None for an array sharded over other processes' devices."""
    if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
        if not leaf.is_fully_replicated:
            return None
        leaf = leaf.addressable_data(0)
    return np.asarray(leaf)


def _to_host(leaf: Any) -> Any:
    """A host copy of ``leaf`` that no later device computation can change.

    ``np.array(..., copy=True)`` rather than ``np.asarray``: on the CPU backend the latter may alias
    the device buffer, which the next (donating) training step overwrites. Arrays spread over other
    processes stay device arrays; orbax copies them to host before ``save`` returns (its default
    without a host-memory limit).
    """
    if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
        return leaf
    return np.array(leaf, copy=True)


def state_digest(state: Any) -> str:
    """SHA-256 of every leaf's path, dtype, shape and bytes, in tree order.

    In a multi-process run, leaves sharded across processes (that no process sees whole) are left
    out; replicated ones (parameters, optimiser state, counters, keys) are always covered.
    """
    digest = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_leaves_with_path(to_saveable(state)):
        array = _host_view(leaf)
        if array is None:
            continue
        digest.update(f"{jax.tree_util.keystr(path)}|{array.dtype}|{array.shape}|".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def nonfinite_leaves(state: Any) -> list[str]:
    """The paths of the floating-point leaves of ``state`` holding a NaN or an infinity."""
    found = []
    for path, leaf in jax.tree_util.tree_leaves_with_path(to_saveable(state)):
        if not jax.dtypes.issubdtype(leaf.dtype, np.inexact):
            continue
        array = _host_view(leaf)
        if array is not None and not np.all(np.isfinite(array)):
            found.append(jax.tree_util.keystr(path))
    return found


class Checkpointer:
    """Saves and restores a run's state under ``workdir/checkpoints``, one orbax step per save.

    Args:
      workdir: the run's directory.
      keep_last: the newest checkpoints kept.
      keep_every: additionally keep every checkpoint whose step is a multiple of this (None: none);
        orbax's ``keep_period``.
      read_only: only restore (while a training run may be writing): nothing is removed, moved or
        created, and :meth:`save` is refused.
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
        if not read_only:
            self._remove_temporary_directories()
        self.manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(
                max_to_keep=keep_last,
                keep_period=keep_every,
                create=not read_only,
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
        """
        if self.read_only:
            raise ValueError(f"this Checkpointer of {self.directory} is read_only; it cannot save")
        if step in self.manager.all_steps():
            return True
        host_state = jax.tree.map(_to_host, to_saveable(state))
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
        self.manager.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(host_state), meta=ocp.args.JsonSave(meta)
            ),
            force=True,
        )
        return True

    def wait(self) -> None:
        """Blocks until every save started so far is complete on disk."""
        self.manager.wait_until_finished()

    def restore(self, step: int, abstract_state: Any) -> tuple[Any, dict]:
        """The checkpoint ``step`` as ``(state, meta)``.

        Args:
          step: one of :meth:`steps`.
          abstract_state: the state's structure with shapes, dtypes and shardings
            (``jax.ShapeDtypeStruct`` leaves with ``sharding``), into which to restore.

        Raises:
          CheckpointError: if it cannot be read or its content hash does not match.
        """
        try:
            restored = self.manager.restore(
                step,
                args=ocp.args.Composite(
                    state=ocp.args.StandardRestore(to_saveable(abstract_state)),
                    meta=ocp.args.JsonRestore(),
                ),
            )
        except Exception as error:  # orbax and tensorstore raise many kinds
            raise CheckpointError(
                f"checkpoint {step} in {self.directory} could not be read: "
                f"{type(error).__name__}: {error}"
            ) from error
        state = from_saveable(restored.state, abstract_state)
        meta = dict(restored.meta or {})
        if meta.get("sha256") != state_digest(state):
            raise CheckpointError(
                f"checkpoint {step} in {self.directory} is corrupted: its content hash does not "
                "match the one saved with it"
            )
        return state, meta

    def restore_latest(self, abstract_state: Any) -> tuple[int, Any, dict] | None:
        """The newest checkpoint that restores and verifies: ``(step, state, meta)``.

        Newer checkpoints that fail are reported on stderr and (unless ``read_only``) moved to
        ``corrupted_checkpoints/``, so that the run can save those steps again.

        Returns:
          None if there are no checkpoints.

        Raises:
          CheckpointError: if there are checkpoints but none restores; nothing is moved then (a
            changed network or environment gives different shapes, for example).
        """
        failures: list[tuple[int, CheckpointError]] = []
        for step in reversed(self.steps()):
            try:
                state, meta = self.restore(step, abstract_state)
            except CheckpointError as error:
                print(f"{error}; trying an older one", file=sys.stderr, flush=True)
                failures.append((step, error))
                continue
            if not self.read_only:
                for bad_step, _ in failures:
                    self._move_aside(bad_step)
            return step, state, meta
        if failures:
            raise CheckpointError(
                f"none of the {len(failures)} checkpoints in {self.directory} could be restored "
                "into this run's state (a different network or environment gives different shapes; "
                "use another --workdir to start afresh). Newest failure: " + str(failures[0][1])
            )
        return None

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
        """Waits for pending saves and releases orbax's resources."""
        self.manager.wait_until_finished()
        self.manager.close()


def state_nbytes(abstract_state: Any) -> int:
    """Bytes of the state's arrays (an upper bound of a checkpoint's size; orbax compresses)."""
    return int(
        sum(
            math.prod(x.shape) * np.dtype(x.dtype).itemsize
            for x in jax.tree.leaves(to_saveable(abstract_state))
        )
    )
