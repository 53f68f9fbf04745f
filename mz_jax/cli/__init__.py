"""The ``mz-jax`` command line: ``train``, ``eval``, ``suite``, ``report``, ``envs``."""

from mz_jax.cli.main import main

__all__ = ["main"]
