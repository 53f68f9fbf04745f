"""A persistent XLA compilation cache for the command line: the second run of a preset skips most of
its compilation.

A training run compiles its step, its evaluation and its initialisation, which takes 15-40 s on a
CPU and is the same work every time the same configuration runs on the same machine. JAX can keep
compiled programs on disk (``jax_compilation_cache_dir``); :func:`enable` turns that on for
``mz-jax`` and the benchmarks, in ``$MZ_JAX_COMPILATION_CACHE`` or else
``$XDG_CACHE_HOME/mz_jax/xla`` (``~/.cache/mz_jax/xla``). ``MZ_JAX_COMPILATION_CACHE=off`` turns it
off; a cache directory set for JAX itself (``JAX_COMPILATION_CACHE_DIR`` or
``jax.config.jax_compilation_cache_dir``) is left as it is. The library proper never changes JAX's
configuration: code that imports ``mz_jax`` calls :func:`enable` itself if it wants the cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

ENV_VAR = "MZ_JAX_COMPILATION_CACHE"
"""Environment variable naming the cache directory, or ``off``."""

MIN_COMPILE_SECONDS = 1.0
"""Programs that compile faster than this are not written (loading them would gain little)."""


def default_directory() -> Path:
    """``$XDG_CACHE_HOME/mz_jax/xla``, ``~/.cache/mz_jax/xla`` without ``XDG_CACHE_HOME``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mz_jax" / "xla"


def enable(directory: str | os.PathLike | None = None) -> Path | None:
    """Turns JAX's persistent compilation cache on, in ``directory`` if given.

    Without ``directory``: ``$MZ_JAX_COMPILATION_CACHE`` (``off`` disables the cache), else
    :func:`default_directory`. A directory already configured for JAX is kept, and so is a run
    without a cache where the directory cannot be created (a read-only home, say): the cache only
    saves time, so its absence is never an error.

    Returns:
      The cache directory in use, or None when the cache is off.
    """
    configured = jax.config.jax_compilation_cache_dir
    if configured:
        return Path(configured)
    if directory is None:
        setting = os.environ.get(ENV_VAR, "").strip()
        if setting.lower() in ("off", "0", "false", "no", "none"):
            return None
        directory = setting or default_directory()
    path = Path(directory).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return path
