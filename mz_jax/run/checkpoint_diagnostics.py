"""Why a checkpoint failed, in one line: an error's reason, the saved layout against the state's.

:func:`short_reason` says why an orbax or TensorStore call failed without their spec dumps;
:func:`saved_layout` reads the array metadata of a saved state (no array data) and
:func:`layout_difference` names the first array whose name, shape or dtype differs from the state
asked for, so that :mod:`mz_jax.run.checkpoint` tells a state of other shapes (another network or
environment) from a corrupt checkpoint. :func:`silence_closed_loop_callbacks` keeps the "Event
loop is closed" callbacks a failed read leaves behind off stderr.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp


def short_reason(error: BaseException, *, limit: int = 300) -> str:
    """One line saying why ``error`` happened, without TensorStore's spec dumps.

    ``[Errno 28] No space left on device`` for an ``OSError``; for TensorStore's nested status
    messages (``RESOURCE_EXHAUSTED: Error opening ...: Failed writing ...: No space left on device
    [tensorstore_spec=...]``) their last two parts and the status code; else ``Type: the first line
    of the message``. At most ``limit`` characters.
    """
    if isinstance(error, OSError) and error.strerror:
        return f"[Errno {error.errno}] {error.strerror}"
    text = str(error).strip()
    for tail in (" [tensorstore_spec=", "See full TensorStore details", "\n"):
        text = text.split(tail)[0].strip()
    status = re.match(r"([A-Z][A-Z_]+): (.+)", text)
    if status:
        text = f"{': '.join(status[2].split(': ')[-2:])} (TensorStore {status[1]})"
    else:
        text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_closed_loop_callback(unraisable: Any) -> bool:
    error = unraisable.exc_value
    return isinstance(error, RuntimeError) and str(error) == "Event loop is closed"


def silence_closed_loop_callbacks() -> None:
    """Drops the "Event loop is closed" errors TensorStore's callbacks raise when orbax has closed
    the event loop of a read that failed part-way (dozens of tracebacks on stderr, none of them
    actionable: the failure itself is raised as a :class:`mz_jax.run.checkpoint.CheckpointError`).
    Installed once, as a filter in front of whatever ``sys.unraisablehook`` is; every other
    unraisable error passes."""
    previous = sys.unraisablehook
    if getattr(previous, "_mz_jax_closed_loop_filter", False):
        return

    def hook(unraisable):
        if not _is_closed_loop_callback(unraisable):
            previous(unraisable)

    hook._mz_jax_closed_loop_filter = True
    sys.unraisablehook = hook


def _key_name(entry: Any) -> str:
    """A tree path entry as orbax names it: NamedTuple fields, dict keys and indices alike."""
    for attribute in ("name", "key", "idx"):
        if hasattr(entry, attribute):
            return str(getattr(entry, attribute))
    return str(entry)


def layout(tree: Any) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """``{'train.params.w': (shape, dtype)}`` for every array leaf of ``tree``."""
    return {
        ".".join(_key_name(entry) for entry in path): (tuple(leaf.shape), np.dtype(leaf.dtype))
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree)
    }


def saved_layout(directory: Path) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """The :func:`layout` of the state saved in ``directory`` (orbax's metadata; no array read)."""
    from etils import epath

    handler = ocp.StandardCheckpointHandler()
    try:
        return layout(handler.metadata(epath.Path(directory)))
    finally:
        handler.close()


def layout_difference(saved: dict, wanted: dict) -> str | None:
    """The first difference between two :func:`layout` s, in words; None if they agree."""
    missing = sorted(set(wanted) - set(saved))
    if missing:
        return f"{missing[0]} is missing ({len(missing)} arrays of this run's state are)"
    extra = sorted(set(saved) - set(wanted))
    if extra:
        return f"it holds {extra[0]}, which this run's state has not ({len(extra)} such arrays)"
    for name, (shape, dtype) in wanted.items():
        if saved[name] != (shape, dtype):
            saved_shape, saved_dtype = saved[name]
            return (
                f"{name} is {saved_dtype}{list(saved_shape)} there, {dtype}{list(shape)} in "
                "this run's state"
            )
    return None
