"""Configuration: the frozen dataclasses of a run (:class:`TrainConfig` and its parts
:class:`NetworkConfig` and :class:`SearchConfig`), their checks (:mod:`mz_jax.config.checks`), the
JSON round trip and dotted overrides (:mod:`mz_jax.config.overrides`), and the presets.
"""

from mz_jax.config.network import NetworkConfig
from mz_jax.config.search import SearchConfig
from mz_jax.config.stochastic import StochasticConfig
from mz_jax.config.train import TrainConfig

__all__ = ["NetworkConfig", "SearchConfig", "StochasticConfig", "TrainConfig"]
