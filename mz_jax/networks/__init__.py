"""MuZero networks in Flax NNX, as the pure functions of :class:`mz_jax.types.MuZeroNetwork`.

Two families follow the MuZero paper (Schrittwieser et al., 2020, Appendix F):

* :func:`make_mlp_network` for vector observations (any observation is flattened; a small image can
  pass through one shared 3x3 convolution first, ``conv_channels``), with a latent vector as
  hidden state;
* :func:`make_resnet_network` for image observations ``[B, H, W, C]`` (NHWC): an AlphaZero-style
  residual tower, with the Atari downsampling stem on request and the action encoded as planes.

Both scale the hidden state of every example to ``[0, 1]`` (Appendix G), predict value and reward as
logits over the categorical support ``[-S, S]`` (Appendix F), and start with zero-initialised output
layers. Normalisation is LayerNorm, never BatchNorm: the networks hold no state but their
parameters, so the examples of a batch do not interact and the functions are pure.

Both also take two opt-in parts of EfficientZero (Ye et al., 2021): ``projection_size`` adds the
projection network and its prediction head of the self-supervised consistency loss (§4.1), and
``value_prefix_horizon`` makes the reward head an LSTM over the unroll that predicts the value
prefix (§4.2). Without them the network and its parameters are MuZero's, unchanged.

``make_*_network(key, ...)`` returns ``(network, params)``; :func:`mlp_network` and
:func:`resnet_network` take the same arguments but no key and return ``(network, init)``, drawing no
parameter until ``init(key)`` is called.

Modules: :mod:`~mz_jax.networks.layers` (the shared NNX building blocks),
:mod:`~mz_jax.networks.mlp` and :mod:`~mz_jax.networks.resnet` (the two families and their
factories), :mod:`~mz_jax.networks.pure` (from an NNX module to pure functions and a ``dict`` of
parameters), :mod:`~mz_jax.networks.chance` and :mod:`~mz_jax.networks.chance_resnet` (the
Stochastic MuZero networks of the two families: :func:`stochastic_mlp_network` and
:func:`stochastic_resnet_network`).
"""

from mz_jax.networks.chance import stochastic_mlp_network
from mz_jax.networks.chance_resnet import stochastic_resnet_network
from mz_jax.networks.mlp import make_mlp_network, mlp_network
from mz_jax.networks.pure import Params, count_params
from mz_jax.networks.resnet import make_resnet_network, resnet_network

__all__ = [
    "Params",
    "count_params",
    "make_mlp_network",
    "make_resnet_network",
    "mlp_network",
    "resnet_network",
    "stochastic_mlp_network",
    "stochastic_resnet_network",
]
