"""Configuration: the frozen dataclasses of a run (:class:`TrainConfig`, :class:`NetworkConfig`; the
search's :class:`~mz_jax.SearchConfig` lives with the search), their checks, and the presets.
"""

from mz_jax.config.network import NetworkConfig
from mz_jax.config.train import TrainConfig

__all__ = ["NetworkConfig", "TrainConfig"]
