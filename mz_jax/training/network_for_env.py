"""The network a configuration asks for, fitted to its environment.

``network.kind`` resolved by the observations' rank (:func:`network_kind`), the value and reward
supports sized to the returns and rewards the environment can give (:func:`network_config_for`,
MuZero Appendix F), and the network functions with their ``init`` (:func:`make_network`):
:func:`mz_jax.build` calls these once.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax.numpy as jnp

from mz_jax import networks
from mz_jax.config.network import NetworkConfig
from mz_jax.config.train import TrainConfig
from mz_jax.core import transforms
from mz_jax.core.validation import fail
from mz_jax.envs import Env
from mz_jax.types import Array, MuZeroNetwork, Params, StochasticMuZeroNetwork

UNBOUNDED_SUPPORT_SIZE = 300
"""S of a support for returns or rewards with no stated bound: MuZero's Atari support of 601 bins,
``[-300, 300]`` under ``h``, which represents ``|x|`` up to about 58,700 (MuZero Appendix F)."""


def network_kind(config: NetworkConfig, env: Env) -> str:
    """``config.kind`` with ``'auto'`` resolved: ``'resnet'`` for image observations, else ``'mlp'``."""
    if config.kind != "auto":
        return config.kind
    return "resnet" if len(env.observation_shape) == 3 else "mlp"


def return_bound(env: Env, discount: float) -> float | None:
    """The largest |return| (and so |value|) ``env`` can give at ``discount``, or None where it
    has no bound: the reward bound times the discounted length of the longest episode, or the
    environment's own ``return_bound`` where that is smaller (games scored once, at the end)."""
    bounds = [env.return_bound]
    if env.reward_bound is not None:
        steps = env.max_episode_steps
        if steps is not None:
            length = steps if discount >= 1.0 else (1.0 - discount**steps) / (1.0 - discount)
            bounds.append(env.reward_bound * length)
        elif discount < 1.0:
            bounds.append(env.reward_bound / (1.0 - discount))
    known = [float(b) for b in bounds if b is not None]
    return min(known) if known else None


def network_config_for(config: TrainConfig, env: Env) -> NetworkConfig:
    """``config.network`` with support sizes that represent the returns and rewards of ``env``:
    where None, the smallest ``S >= 10`` that covers the bound ``env`` states, or
    :data:`UNBOUNDED_SUPPORT_SIZE` where it states none; checked against the bound where set; and
    ``predict_turn`` derived where None (True where ``env.repeats_player``)."""
    network = config.network
    horizon = network.value_prefix_horizon or 1
    reward_bound = None if env.reward_bound is None else env.reward_bound * horizon
    bounds = {
        "value_support_size": (return_bound(env, config.discount), "returns"),
        "reward_support_size": (reward_bound, "value prefixes" if horizon > 1 else "rewards"),
    }
    sizes = {}
    for name, (bound, what) in bounds.items():
        size = getattr(network, name)
        if bound is None:
            sizes[name] = UNBOUNDED_SUPPORT_SIZE if size is None else size
            continue
        needed = transforms.support_size_for(bound, minimum=1)
        if size is not None and size < needed:
            fail(
                f"network.{name}",
                size,
                f"None (sized automatically) or an integer >= {needed}: the {what} of {env.name} "
                f"at discount {config.discount} reach {bound:.4g}, and a support [-{size}, {size}] "
                f"represents at most {float(transforms.h_inv(size)):.4g}",
            )
        sizes[name] = size if size is not None else max(needed, 10)
    predict_turn = network.predict_turn
    if predict_turn is None:
        predict_turn = env.repeats_player
    elif predict_turn and env.num_players != 2:
        fail(
            "network.predict_turn",
            predict_turn,
            f"None or False for {env.name}, a single-player environment (turns are for two-player "
            "games)",
        )
    return dataclasses.replace(network, **sizes, predict_turn=predict_turn)


def make_network(
    config: NetworkConfig, env: Env, *, projection: bool = False
) -> tuple[MuZeroNetwork | StochasticMuZeroNetwork, Callable[[Array], Params]]:
    """The network of ``config`` for ``env``'s observations and actions, and its ``init(key)``.

    The support sizes of ``config`` must be set (see :func:`network_config_for`); ``projection``
    adds the projection network and head of the consistency loss. With
    ``config.num_chance_outcomes`` it is a Stochastic MuZero network of the same kind
    (:func:`mz_jax.networks.stochastic_mlp_network` or
    :func:`mz_jax.networks.stochastic_resnet_network`), which computes in float32 only in its MLP
    kind. ``config.compute_dtype`` is the networks' ``dtype``."""
    kind = network_kind(config, env)
    if kind == "resnet" and len(env.observation_shape) != 3:
        fail(
            "network.kind",
            "resnet",
            f"'mlp' for {env.name}: 'resnet' needs image observations [H, W, C], and it observes "
            f"shape {env.observation_shape}",
        )
    if config.conv_channels is not None and (kind != "mlp" or config.num_chance_outcomes):
        fail(
            "network.conv_channels",
            config.conv_channels,
            "None here: the convolution is part of the deterministic MLP network (network.kind "
            f"'mlp' without num_chance_outcomes); this is kind {kind!r}"
            + (" with chance outcomes" if config.num_chance_outcomes else ""),
        )
    if config.conv_channels is not None and len(env.observation_shape) != 3:
        fail(
            "network.conv_channels",
            config.conv_channels,
            f"None for {env.name}, whose observations have shape {env.observation_shape}: the "
            "convolution needs image observations [H, W, C]",
        )
    if config.observation_scale is not None:
        if kind != "mlp" or config.num_chance_outcomes:
            fail(
                "network.observation_scale",
                config.observation_scale,
                "None here: the scale is part of the deterministic MLP network (network.kind "
                f"'mlp' without num_chance_outcomes); this is kind {kind!r}"
                + (" with chance outcomes" if config.num_chance_outcomes else ""),
            )
        features = math.prod(env.observation_shape)
        if len(config.observation_scale) != features:
            fail(
                "network.observation_scale",
                config.observation_scale,
                f"None or {features} numbers > 0 for {env.name}, one per feature of its "
                f"observations of shape {env.observation_shape}",
            )
    if config.compute_dtype != "float32" and config.num_chance_outcomes and kind == "mlp":
        fail(
            "network.compute_dtype",
            config.compute_dtype,
            "'float32' for the Stochastic MuZero MLP (network.kind 'mlp' with "
            "num_chance_outcomes); its ResNet computes in bfloat16",
        )
    dtype = jnp.dtype(config.compute_dtype)
    common = dict(
        observation_shape=env.observation_shape,
        num_actions=env.num_actions,
        value_support_size=config.value_support_size,
        reward_support_size=config.reward_support_size,
        projection_size=config.projection_size if projection else None,
        predict_turn=bool(config.predict_turn),
    )
    mlp = dict(
        hidden_sizes=config.hidden_sizes,
        latent_size=config.latent_size,
        observation_layer_norm=config.observation_layer_norm,
    )
    resnet = dict(
        channels=config.channels,
        num_blocks=config.num_blocks,
        downsample=config.downsample,
        dtype=dtype,
    )
    if config.num_chance_outcomes is not None:
        # No value prefix here: mz_jax.config.checks.check_for_env refuses it.
        chance = dict(num_chance_outcomes=config.num_chance_outcomes, **common)
        if kind == "mlp":
            return networks.stochastic_mlp_network(**mlp, **chance)
        return networks.stochastic_resnet_network(**resnet, **chance)
    deterministic = dict(
        value_prefix_horizon=config.value_prefix_horizon, lstm_size=config.lstm_size, **common
    )
    if kind == "mlp":
        return networks.mlp_network(
            **mlp,
            **deterministic,
            conv_channels=config.conv_channels,
            observation_scale=config.observation_scale,
            dtype=dtype,
        )
    return networks.resnet_network(**resnet, **deterministic)
