"""The ``mz-jax`` command line (:func:`mz_jax.cli.main.main`): ``train``, ``eval``, ``suite``,
``report``, ``envs``."""
