"""A run's directory: the names of its files, atomic writes, and what a failed start or run leaves.

A training run's workdir holds::

    config.json              the configuration (written at start, compared when resuming)
    metrics.jsonl            one JSON record per log line (:mod:`mz_jax.run.metrics` names the fields)
    tensorboard/             the same records as TensorBoard events
    checkpoints/             orbax checkpoints (:mod:`mz_jax.run.checkpoint`)
    corrupted_checkpoints/   checkpoints that failed to restore, moved aside
    learning_curve.png       returns against environment steps (:mod:`mz_jax.run.plots`)
    errors.log               tracebacks of the failures ``mz-jax train`` reported in one line

and a suite's workdir holds ``results.json`` and one such directory per environment, named by
:func:`sanitise`. Resuming is :mod:`mz_jax.run.resume`; reading ``metrics.jsonl`` back,
:mod:`mz_jax.run.records`; the ``config.json`` round trip, :mod:`mz_jax.config.overrides`.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from pathlib import Path

import jax

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
TENSORBOARD_DIR = "tensorboard"
CHECKPOINT_DIR = "checkpoints"
CORRUPTED_DIR = "corrupted_checkpoints"
LEARNING_CURVE_FILE = "learning_curve.png"
ERRORS_FILE = "errors.log"
RESULTS_FILE = "results.json"
"""A suite workdir's record of its environments and seeds (:mod:`mz_jax.suite.runner`)."""


def sanitise(name: str) -> str:
    """A file or directory name for a preset or environment name: ``:``, ``/`` and spaces made ``_``.

    ``"gymnax:CartPole-v1"`` -> ``"gymnax_CartPole-v1"``. The default workdirs (``runs/<name>``) and a
    suite's environment directories are named by it, so the pattern must not change: a changed name
    would start afresh beside an existing run instead of resuming it.
    """
    return re.sub(r"[^\w.-]", "_", name)


def write_atomically(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` so that a reader (or a later run) never sees half of it.

    Raises:
      OSError: naming ``path`` (a full disk, an unwritable directory); ``path`` is then unchanged.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        if error.strerror:  # "[Errno 28] writing .../config.json failed: No space left on device"
            raise OSError(error.errno, f"writing {path} failed: {error.strerror}") from error
        raise OSError(f"writing {path} failed: {error}") from error


# ---------------------------------------------------------------------------------------------------
# The directory itself


def check_workdir(workdir: Path, *, required_bytes: int = 0) -> None:
    """Fails early, with the path in the message, if ``workdir`` cannot be written or has less than
    ``required_bytes`` free (room for one checkpoint).

    Raises:
      ValueError: ``workdir``, or one of its parents, is a file (bad input, not an I/O failure).
      OSError: ``workdir`` cannot be created or written, or has too little free space.
    """
    for path in (workdir, *workdir.absolute().parents):
        if path.exists() and not path.is_dir():
            named = "" if path == workdir else f" (its parent {str(path)!r} is a file)"
            raise ValueError(
                f"workdir {str(workdir)!r} is not a directory{named}: give --workdir a directory, "
                "existing or not"
            )
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        # One probe per process: processes of a multi-host run share the workdir.
        probe = workdir / f".write-test-{jax.process_index()}"
        probe.write_bytes(b"\0" * 4096)
        probe.unlink(missing_ok=True)
    except OSError as error:
        raise OSError(f"workdir {str(workdir)!r} is not writable: {error}") from error
    free = shutil.disk_usage(workdir).free
    if free < required_bytes:
        raise OSError(
            f"workdir {str(workdir)!r} has {free / 2**20:.1f} MiB free; a checkpoint of this run "
            f"needs up to {required_bytes / 2**20:.1f} MiB (free some space, use another --workdir, "
            "or shrink replay_capacity)"
        )


# ---------------------------------------------------------------------------------------------------
# After a failure


def first_missing(path: Path) -> Path | None:
    """The outermost of ``path`` and its parents that does not exist (what ``mkdir(parents=True)``
    would create first), or None if ``path`` exists."""
    missing = None
    for candidate in (path, *path.absolute().parents):
        if candidate.exists():
            break
        missing = candidate
    return missing


def remove_failed_start(workdir: Path, *, created: Path | None, created_config: bool) -> None:
    """Removes what a start that failed before it trained anything wrote, and nothing else.

    ``config.json`` goes if this start wrote it (``created_config``), then ``workdir`` and its
    parents up to ``created`` (the outermost directory this start created, :func:`first_missing`)
    where they are empty: a failed first start leaves no empty directory or half-begun run behind,
    and a directory that existed before keeps everything it held.
    """
    if jax.process_index() != 0:
        return
    # Best effort: this runs while the start's own error is on its way up, which it must not hide.
    with contextlib.suppress(OSError):
        if created_config:
            (workdir / CONFIG_FILE).unlink(missing_ok=True)
        if created is not None:
            directory = workdir.absolute()
            while True:
                directory.rmdir()  # only if empty: never a tree
                if directory == created.absolute():
                    break
                directory = directory.parent


def append_error_log(workdir: str | Path, text: str) -> Path | None:
    """Appends ``text`` (a traceback) to ``workdir/errors.log``; returns the file, or None if
    ``workdir`` does not exist or cannot be written (a full disk: the caller says so instead)."""
    path = Path(workdir) / ERRORS_FILE
    if not Path(workdir).is_dir():
        return None
    existed = path.exists()
    try:
        with open(path, "a") as log:
            log.write(text if text.endswith("\n") else text + "\n")
    except OSError:
        if not existed:  # no empty or torn log left behind by a full disk
            with contextlib.suppress(OSError):
                path.unlink()
        return None
    return path
