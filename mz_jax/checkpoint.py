"""Checkpoints of the whole training state with orbax, verified by our own content hash.

A checkpoint holds everything a run needs to continue exactly: parameters, optimiser state, PRNG keys,
counters, replay contents with priorities and the actors' environment states, plus the configuration
the run was started with. orbax writes each step to a temporary directory and renames it when
complete, so a save interrupted half-way is never chosen on restore; leftover temporary directories
are removed at start-up. orbax does not detect a corrupted but complete checkpoint (it restored
different values silently in our trials), so a SHA-256 of the state's bytes is saved beside it and
checked on restore; a checkpoint that fails is reported and the previous good one is used.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

CHECKPOINT_DIR = "checkpoints"
CONFIG_FILE = "config.json"


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


def from_saveable(saved: Any, like: Any) -> Any:
    """Inverse of :func:`to_saveable`, with ``like`` (the abstract state) telling which were keys."""
    return jax.tree.map(
        lambda x, ref: (
            jax.random.wrap_key_data(x, impl=jax.random.key_impl(ref)) if _is_key(ref) else x
        ),
        saved,
        like,
    )


def state_digest(state: Any) -> str:
    """SHA-256 of every leaf's dtype, shape and bytes, in tree order.

    In a multi-process run, leaves this process cannot see whole (sharded across processes) are
    left out; replicated ones (parameters, optimiser state, counters) are always covered.
    """
    digest = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_leaves_with_path(to_saveable(state)):
        if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
            continue
        array = np.asarray(leaf)
        digest.update(f"{jax.tree_util.keystr(path)}|{array.dtype}|{array.shape}|".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def config_to_dict(config: Any) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(config)))


def config_differences(saved: dict, current: dict, prefix: str = "") -> list[str]:
    """``field: saved -> current`` for every field that differs (nested fields dotted)."""
    differences = []
    for name in sorted(set(saved) | set(current)):
        old, new = saved.get(name), current.get(name)
        if isinstance(old, dict) and isinstance(new, dict):
            differences += config_differences(old, new, prefix=f"{prefix}{name}.")
        elif old != new:
            differences.append(f"{prefix}{name}: {old!r} -> {new!r}")
    return differences


class Checkpointer:
    """Saves and restores a run's state under ``workdir/checkpoints``.

    Args:
      workdir: the run's directory.
      keep_last: the newest checkpoints kept.
      keep_every: additionally keep every checkpoint whose step is a multiple of this (None: none).
    """

    def __init__(self, workdir: str | Path, *, keep_last: int = 3, keep_every: int | None = None):
        self.directory = Path(workdir).absolute() / CHECKPOINT_DIR
        self._remove_temporary_directories()
        self.manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(
                max_to_keep=keep_last,
                keep_period=keep_every,
                create=True,
                cleanup_tmp_directories=True,
            ),
        )

    def _remove_temporary_directories(self) -> None:
        if not self.directory.exists() or jax.process_index() != 0:
            return
        for path in self.directory.iterdir():
            if path.is_dir() and ".orbax-checkpoint-tmp" in path.name:
                shutil.rmtree(path, ignore_errors=True)

    def steps(self) -> list[int]:
        return sorted(self.manager.all_steps())

    def save(self, step: int, state: Any, *, meta: dict | None = None) -> None:
        """Saves ``state`` at ``step`` (asynchronously; :meth:`wait` blocks until it is on disk)."""
        meta = dict(meta or {})
        meta["sha256"] = state_digest(state)
        self.manager.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(to_saveable(state)), meta=ocp.args.JsonSave(meta)
            ),
            force=True,
        )

    def wait(self) -> None:
        self.manager.wait_until_finished()

    def restore_latest(self, abstract_state: Any) -> tuple[int, Any, dict] | None:
        """The newest checkpoint whose hash verifies: ``(step, state, meta)``, or None if none does.

        Args:
          abstract_state: the state's structure with shapes, dtypes and shardings (e.g.
            ``jax.ShapeDtypeStruct`` leaves with ``sharding``), into which to restore.
        """
        target = to_saveable(abstract_state)
        for step in reversed(self.steps()):
            try:
                restored = self.manager.restore(
                    step,
                    args=ocp.args.Composite(
                        state=ocp.args.StandardRestore(target), meta=ocp.args.JsonRestore()
                    ),
                )
            except Exception as error:
                print(
                    f"checkpoint {step} could not be read ({error}); trying an older one",
                    file=sys.stderr,
                )
                continue
            state = from_saveable(restored.state, abstract_state)
            meta = dict(restored.meta)
            if meta.get("sha256") != state_digest(state):
                print(
                    f"checkpoint {step} is corrupted (its content hash does not match); "
                    "trying an older one",
                    file=sys.stderr,
                )
                continue
            return step, state, meta
        return None

    def close(self) -> None:
        self.manager.wait_until_finished()
        self.manager.close()
