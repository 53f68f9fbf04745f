"""Tests of the opt-in EfficientZero parts of mz_jax.networks (Ye et al., 2021): the projection
networks of the consistency loss (§4.1) and the value-prefix LSTM head (§4.2), for the MLP and the
ResNet family.

Expected values come from numpy re-implementations of the layers, written from the equations. Each
family compiles one network with both options and reuses it.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _params import perturb

from mz_jax.networks import make_mlp_network, make_resnet_network, mlp_network, resnet_network
from mz_jax.types import MuZeroNetwork

NUM_ACTIONS = 3
REWARD_BINS = 2 * 3 + 1
PROJECTION = 6
LSTM = 5
HORIZON = 3
BATCH = 3

MLP_KWARGS = dict(
    observation_shape=(5,),
    num_actions=NUM_ACTIONS,
    hidden_sizes=(8,),
    latent_size=4,
    value_support_size=2,
    reward_support_size=3,
)
RESNET_KWARGS = dict(
    observation_shape=(4, 4, 2),
    num_actions=NUM_ACTIONS,
    channels=4,
    num_blocks=1,
    prediction_blocks=1,
    head_channels=2,
    head_hidden=8,
    value_support_size=2,
    reward_support_size=3,
)
BOTH = dict(projection_size=PROJECTION, value_prefix_horizon=HORIZON, lstm_size=LSTM)


FACTORIES = {"mlp": (mlp_network, MLP_KWARGS), "resnet": (resnet_network, RESNET_KWARGS)}


VARIANTS = {
    "base": {},
    "projection": dict(projection_size=PROJECTION),
    "value_prefix": dict(value_prefix_horizon=HORIZON, lstm_size=LSTM),
    "both": BOTH,
}


@functools.cache
def _variants(name: str) -> tuple[dict[str, MuZeroNetwork], dict[str, Any]]:
    """The network and initial params of each variant of a family, drawn from the same key."""
    factory, kwargs = FACTORIES[name]
    networks, inits = {}, {}
    for variant, options in VARIANTS.items():
        networks[variant], inits[variant] = factory(**kwargs, **options)
    # One compiled program for the four inits. The RngBitGenerator compiles faster than threefry.
    draw = jax.jit(lambda key: {variant: init(key) for variant, init in inits.items()})
    return networks, draw(jax.random.key(0, impl="rbg"))


class Family(NamedTuple):
    name: str
    network: MuZeroNetwork  # with both options
    params: Any
    perturbed: Any  # params plus noise, so that every zero-initialised head is non-zero
    observation: jax.Array
    initial: Any  # jit of network.initial_inference
    recurrent: Any  # jit of network.recurrent_inference


def _family(name: str) -> Family:
    networks, params = _variants(name)
    network, params = networks["both"], params["both"]
    rng = np.random.default_rng(0)
    observation_shape = FACTORIES[name][1]["observation_shape"]
    observation = jnp.asarray(rng.normal(size=(BATCH, *observation_shape)), jnp.float32)
    return Family(
        name=name,
        network=network,
        params=params,
        perturbed=perturb(params, seed=3),
        observation=observation,
        initial=jax.jit(network.initial_inference),
        recurrent=jax.jit(network.recurrent_inference),
    )


@pytest.fixture(scope="module")
def mlp() -> Family:
    return _family("mlp")


@pytest.fixture(scope="module")
def resnet() -> Family:
    return _family("resnet")


@pytest.fixture(params=["mlp", "resnet"])
def family(request) -> Family:
    return request.getfixturevalue(request.param)


def _random_carry(seed: int) -> tuple[jax.Array, jax.Array]:
    rng = np.random.default_rng(seed)
    return tuple(jnp.asarray(rng.normal(size=(BATCH, LSTM)), jnp.float32) for _ in range(2))


# numpy references, from the equations.


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _relu(x):
    return np.maximum(x, 0.0)


def _dense(x, p):
    return x @ np.asarray(p["kernel"]) + np.asarray(p["bias"])


def _norm(x, p, axes=(-1,)):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-6) * np.asarray(p["scale"]) + np.asarray(p["bias"])


def _np_projection(x, p, q):
    """EfficientZero's projection (params p) and prediction head (params q) on x [B, D]."""
    projection = _dense(_relu(_norm(_dense(x, p["dense_1"]), p["norm_1"])), p["dense_2"])
    projection = _norm(projection, p["norm_2"])
    head = _dense(_relu(_norm(_dense(projection, q["dense_1"]), q["norm_1"])), q["dense_2"])
    return projection, head


def _np_lstm_step(p, carry, x):
    """One step of an LSTM: gates i, f, g, o from ``x W_i + h W_h + b`` (Hochreiter and
    Schmidhuber, 1997, with a forget gate)."""
    c, h = (np.asarray(a, np.float64) for a in carry)
    y = x @ np.asarray(p["dense_i"]["kernel"]) + h @ np.asarray(p["dense_h"]["kernel"])
    y = y + np.asarray(p["dense_h"]["bias"])
    i, f, g, o = np.split(y, 4, axis=-1)
    new_c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    new_h = _sigmoid(o) * np.tanh(new_c)
    return new_c, new_h


def _conv3x3(x, kernel):
    """A 3x3 "SAME" cross-correlation without bias: ``[B, H, W, Ci] -> [B, H, W, Co]``."""
    kernel = np.asarray(kernel)
    height, width = x.shape[1:3]
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    return sum(
        padded[:, i : i + height, j : j + width, :] @ kernel[i, j]
        for i in range(3)
        for j in range(3)
    )


def _np_mlp_dynamics_features(p, state, action):
    """The output of the MLP's one-layer dynamics torso (the value-prefix LSTM's input)."""
    x = np.concatenate([state, np.eye(NUM_ACTIONS)[action]], axis=-1)
    layers = p["dynamics"]["layers"]
    return _relu(_norm(_dense(x, layers["dense_0"]), layers["norm_0"]))


def _np_resnet_dynamics_features(p, state, action):
    """The output of the ResNet's dynamics tower of one block, flattened."""
    planes = np.broadcast_to(np.eye(NUM_ACTIONS)[action][:, None, None, :], (*state.shape[:3], 3))
    plane_norm = functools.partial(_norm, axes=(-3, -2, -1))
    z = _conv3x3(np.concatenate([state, planes], axis=-1), p["dynamics_conv"]["kernel"])
    x = _relu(state + plane_norm(z, p["dynamics_norm"]))
    block = p["dynamics"]["blocks"]["block_0"]
    y = _relu(plane_norm(_conv3x3(x, block["conv_1"]["kernel"]), block["norm_1"]))
    x = _relu(x + plane_norm(_conv3x3(y, block["conv_2"]["kernel"]), block["norm_2"]))
    return x.reshape(x.shape[0], -1)


# Tests.


def test_without_options_the_network_has_no_extras(family):
    network = _variants(family.name)[0]["base"]
    assert network.project is None
    assert network.predict_projection is None
    assert network.value_prefix_horizon is None
    assert family.network.value_prefix_horizon == HORIZON
    assert family.network.project is not None and family.network.predict_projection is not None


@pytest.mark.parametrize("name", ["mlp", "resnet"])
def test_make_passes_the_options_on(name):
    make = {"mlp": make_mlp_network, "resnet": make_resnet_network}[name]
    captured = {}

    def init(key):
        captured["network"], params = make(key, **FACTORIES[name][1], **BOTH)
        return params

    abstract = jax.eval_shape(init, jax.random.key(0))  # shapes only: nothing is compiled
    params = _variants(name)[1]["both"]
    assert jax.tree.map(jnp.shape, abstract) == jax.tree.map(jnp.shape, params)
    assert captured["network"].value_prefix_horizon == HORIZON
    assert captured["network"].project is not None


@pytest.mark.parametrize(
    ("variant", "added", "removed"),
    [
        ("projection", {"projection", "projection_head"}, set()),
        ("value_prefix", {"value_prefix_head"}, {"reward_head"}),
        ("both", {"projection", "projection_head", "value_prefix_head"}, {"reward_head"}),
    ],
)
def test_options_leave_the_existing_params_as_they_are(family, variant, added, removed):
    # Existing checkpoints load, and a run with an option starts from the same MuZero weights.
    params = _variants(family.name)[1]
    base, extended = params["base"], params[variant]
    assert set(extended) == (set(base) | added) - removed
    common = set(base) & set(extended)
    before, after = ({name: tree[name] for name in common} for tree in (base, extended))
    assert jax.tree.structure(before) == jax.tree.structure(after)
    jax.tree.map(np.testing.assert_array_equal, before, after)
    # And the new modules do draw random numbers (the projection's first layer is not all zero).
    if "projection" in added:
        assert np.abs(np.asarray(extended["projection"]["dense_1"]["kernel"])).max() > 0


def test_projection_matches_a_numpy_reference(family):
    params = family.perturbed
    network = family.network
    _, hidden = family.initial(params, family.observation)

    @jax.jit
    def project(params, hidden):
        projection = network.project(params, hidden)
        return projection, network.predict_projection(params, projection)

    projection, predicted = project(params, hidden)
    for array in (projection, predicted):
        assert array.shape == (BATCH, PROJECTION) and array.dtype == jnp.float32
    state = np.asarray(hidden[0], np.float64).reshape(BATCH, -1)  # the carry is not projected
    expected, expected_head = _np_projection(state, params["projection"], params["projection_head"])
    np.testing.assert_allclose(projection, expected, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(predicted, expected_head, rtol=2e-4, atol=2e-5)
    # A different carry, the same projection.
    other_carry = project(params, (hidden[0], _random_carry(1)))[0]
    np.testing.assert_array_equal(other_carry, projection)


def test_initial_inference_returns_a_zero_carry(family):
    out, (state, (c, h)) = family.initial(family.perturbed, family.observation)
    assert state.shape[0] == BATCH
    for leaf in (c, h):
        assert leaf.shape == (BATCH, LSTM) and leaf.dtype == jnp.float32
        np.testing.assert_array_equal(leaf, 0.0)
    np.testing.assert_array_equal(out.reward_logits, 0.0)  # the root has no transition


def test_value_prefix_head_starts_at_zero(family):
    _, (state, _) = family.initial(family.params, family.observation)
    action = jnp.array([0, 1, 2], jnp.int32)
    out, (_, (_, h)) = family.recurrent(family.params, (state, _random_carry(2)), action)
    assert out.reward_logits.shape == (BATCH, REWARD_BINS)
    np.testing.assert_array_equal(out.reward_logits, 0.0)
    assert np.abs(np.asarray(h)).max() > 0  # the LSTM itself is not zero, only its output layer


def test_the_carry_matters(family):
    _, (state, zero) = family.initial(family.perturbed, family.observation)
    action = jnp.array([2, 0, 1], jnp.int32)
    from_zero = family.recurrent(family.perturbed, (state, zero), action)
    from_carry = family.recurrent(family.perturbed, (state, _random_carry(3)), action)
    assert not np.allclose(from_zero[0].reward_logits, from_carry[0].reward_logits, atol=1e-3)
    assert not np.allclose(from_zero[1][1][0], from_carry[1][1][0], atol=1e-3)
    # The carry feeds the value prefix only: next state, value and policy are the same.
    np.testing.assert_array_equal(from_zero[1][0], from_carry[1][0])
    np.testing.assert_array_equal(from_zero[0].value_logits, from_carry[0].value_logits)
    np.testing.assert_array_equal(from_zero[0].policy_logits, from_carry[0].policy_logits)


def test_one_recurrent_step_matches_a_numpy_lstm(family):
    params = family.perturbed
    _, (state, _) = family.initial(params, family.observation)
    carry = _random_carry(4)
    action = np.array([1, 2, 0])
    out, (_, (c, h)) = family.recurrent(params, (state, carry), jnp.asarray(action, jnp.int32))

    dynamics = {"mlp": _np_mlp_dynamics_features, "resnet": _np_resnet_dynamics_features}
    features = dynamics[family.name](params, np.asarray(state, np.float64), action)
    head = params["value_prefix_head"]
    expected_c, expected_h = _np_lstm_step(head["lstm"], carry, features)
    expected_logits = _dense(_relu(_norm(expected_h, head["norm"])), head["out"])
    close = functools.partial(np.testing.assert_allclose, rtol=2e-4, atol=2e-5)
    close(c, expected_c)
    close(h, expected_h)
    close(out.reward_logits, expected_logits)


def test_jit_and_grad_through_an_unroll(mlp):
    # The MLP only: the ResNet's extras differ from the MLP's by a reshape in the forward pass,
    # and its gradient would be the costliest compile here.
    network = mlp.network
    actions = jnp.array([[0, 1, 2], [2, 2, 0], [1, 0, 1]], jnp.int32)  # [K, B]

    def loss(params):
        def step(hidden, action):
            out, next_hidden = network.recurrent_inference(params, hidden, action)
            predicted = network.predict_projection(params, network.project(params, next_hidden))
            # A stand-in for the projection of the next observation: any fixed target will do.
            target = jax.lax.stop_gradient(network.project(params, hidden))
            return next_hidden, jnp.sum(out.reward_logits**2) + jnp.sum((predicted - target) ** 2)

        out, hidden = network.initial_inference(params, mlp.observation)
        _, losses = jax.lax.scan(step, hidden, actions)
        return jnp.sum(out.value_logits**2) + jnp.sum(losses)

    value, grads = jax.jit(jax.value_and_grad(loss))(mlp.perturbed)
    assert np.isfinite(value)
    assert jax.tree.structure(grads) == jax.tree.structure(mlp.perturbed)
    assert all(np.isfinite(g).all() for g in jax.tree.leaves(grads))
    # The gradient reaches the LSTM's recurrent weights (through the carry) and the head.
    assert np.abs(np.asarray(grads["value_prefix_head"]["lstm"]["dense_h"]["kernel"])).max() > 0
    assert np.abs(np.asarray(grads["projection_head"]["dense_2"]["kernel"])).max() > 0


def test_bad_inputs_raise_at_trace_time(mlp):
    spec = lambda shape, dtype=jnp.float32: jax.ShapeDtypeStruct(shape, dtype)
    state, action = spec((BATCH, 4)), spec((BATCH,), jnp.int32)
    carry = (spec((BATCH, LSTM)), spec((BATCH, LSTM)))
    recurrent = functools.partial(jax.eval_shape, mlp.network.recurrent_inference, mlp.params)
    recurrent((state, carry), action)  # the valid input
    with pytest.raises(ValueError, match="pair"):
        recurrent(state, action)
    with pytest.raises(ValueError, match="reward_carry"):
        recurrent((state, (spec((BATCH, LSTM + 1)), carry[1])), action)
    with pytest.raises(ValueError, match="reward_carry"):
        recurrent((state, (carry[0], spec((BATCH + 1, LSTM)))), action)
    with pytest.raises(ValueError, match="projection"):
        jax.eval_shape(mlp.network.predict_projection, mlp.params, spec((BATCH, PROJECTION + 1)))


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        (dict(lstm_size=0), "lstm_size"),
        (dict(value_prefix_horizon=HORIZON, lstm_size=0), "lstm_size"),
        (dict(projection_size=-1), "projection_size"),
        (dict(projection_size=2.0), "projection_size"),
        (dict(value_prefix_horizon=0), "value_prefix_horizon"),
        (dict(value_prefix_horizon=True), "value_prefix_horizon"),
    ],
)
@pytest.mark.parametrize("name", ["mlp", "resnet"])
def test_bad_arguments_raise(name, kwargs, argument):
    # Checked before any parameter is drawn: nothing is compiled.
    make = {"mlp": make_mlp_network, "resnet": make_resnet_network}[name]
    with pytest.raises(ValueError, match=f"'{argument}'"):
        make(0, **FACTORIES[name][1], **kwargs)


# --- observation_layer_norm: the representation's first LayerNorm, optional -----------------------


def test_torso_without_first_norm_is_linear_relu_then_the_usual_layers():
    from flax import nnx

    from mz_jax.networks.layers import DenseTorso

    torso = DenseTorso(3, (5, 4), dtype=jnp.float32, rngs=nnx.Rngs(0), first_norm=False)
    x = jnp.array([[0.5, -1.0, 2.0], [0.0, 0.1, -0.3]])
    layers = torso.layers
    w0, b0 = np.asarray(layers["dense_0"].kernel[...]), np.asarray(layers["dense_0"].bias[...])
    h = np.maximum(np.asarray(x) @ w0 + b0, 0.0)  # no LayerNorm after the first layer
    w1, b1 = np.asarray(layers["dense_1"].kernel[...]), np.asarray(layers["dense_1"].bias[...])
    z = h @ w1 + b1
    z = (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-6)
    scale, bias = np.asarray(layers["norm_1"].scale[...]), np.asarray(layers["norm_1"].bias[...])
    expected = np.maximum(z * scale + bias, 0.0)
    np.testing.assert_allclose(np.asarray(torso(x)), expected, rtol=1e-5, atol=1e-5)
    assert "norm_0" not in layers


def test_first_norm_hides_the_scale_of_an_observation_and_its_absence_keeps_it():
    from flax import nnx

    from mz_jax.networks.layers import DenseTorso

    x = jnp.array([[0.02, -0.01, 0.03, 0.05]])  # a CartPole state near upright
    with_norm = DenseTorso(4, (16,), dtype=jnp.float32, rngs=nnx.Rngs(1))
    without = DenseTorso(4, (16,), dtype=jnp.float32, rngs=nnx.Rngs(1), first_norm=False)
    # The Linear biases start at zero, so the pre-activations of 10 x are 10 times those of x.
    np.testing.assert_allclose(with_norm(10 * x), with_norm(x), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(without(10 * x), 10 * without(x), rtol=1e-5, atol=1e-7)
    assert float(jnp.max(jnp.abs(without(x)))) > 0


def test_observation_layer_norm_changes_only_the_representations_first_norm():
    kwargs = dict(observation_shape=(4,), num_actions=2, hidden_sizes=(8, 8), latent_size=6)
    _, default = make_mlp_network(0, **kwargs)
    _, without = make_mlp_network(0, observation_layer_norm=False, **kwargs)
    flat = lambda params: {
        jax.tree_util.keystr(k): v for k, v in jax.tree_util.tree_leaves_with_path(params)
    }
    default, without = flat(default), flat(without)
    removed = set(default) - set(without)
    assert removed and all("representation" in k and "norm_0" in k for k in removed)
    assert set(without) <= set(default)
    for k in without:  # every other parameter is drawn the same
        np.testing.assert_array_equal(default[k], without[k])


def test_observation_layer_norm_reaches_the_network_from_the_config():
    from mz_jax import NetworkConfig, TrainConfig
    from mz_jax.training.build import build

    config = TrainConfig(network=NetworkConfig(observation_layer_norm=False), num_envs=2)
    params = build(config).init_params(jax.random.key(0))
    names = [jax.tree_util.keystr(k) for k, _ in jax.tree_util.tree_leaves_with_path(params)]
    assert not any("representation" in n and "norm_0" in n for n in names)
    assert any("dynamics" in n and "norm_0" in n for n in names)
    with pytest.raises(ValueError, match=r"network\.observation_layer_norm"):
        NetworkConfig(observation_layer_norm="yes")


def test_conv_channels_reaches_the_mlp_from_the_config_and_is_refused_elsewhere():
    from mz_jax import NetworkConfig, TrainConfig
    from mz_jax.training.build import build

    image = TrainConfig(
        env="gymnax:Breakout-MinAtar",
        num_envs=2,
        network=NetworkConfig(kind="mlp", conv_channels=5, hidden_sizes=(8,), latent_size=4),
    )
    params = jax.eval_shape(build(image).init_params, jax.random.key(0))
    assert params["conv"]["kernel"].shape == (3, 3, 4, 5)  # Breakout-MinAtar: [10, 10, 4]
    assert params["representation"]["layers"]["dense_0"]["kernel"].shape == (10 * 10 * 5, 8)
    refused = {
        # A vector observation has no image to convolve.
        "shape": (dataclasses.replace(image, env="gymnax:CartPole-v1"), r"shape \(4,\)"),
        # The ResNet has convolutions of its own (kind 'auto' picks it for images).
        "resnet": (
            dataclasses.replace(image, network=dataclasses.replace(image.network, kind="auto")),
            "kind 'resnet'",
        ),
        "chance": (
            dataclasses.replace(
                image,
                search=dataclasses.replace(image.search, policy="muzero"),
                network=dataclasses.replace(image.network, num_chance_outcomes=4),
            ),
            "with chance outcomes",
        ),
    }
    for config, message in refused.values():
        with pytest.raises(ValueError, match=rf"'network\.conv_channels' = 5 .*{message}"):
            build(config)
    with pytest.raises(ValueError, match=r"network\.conv_channels"):
        NetworkConfig(conv_channels=0)


@pytest.mark.parametrize(
    "shape, conv_channels", [((5,), None), ((3, 3, 2), 4)], ids=["vector", "image"]
)
def test_observation_scale_is_the_network_on_the_scaled_observation(shape, conv_channels):
    kwargs = dict(MLP_KWARGS, observation_shape=shape, conv_channels=conv_channels)
    scale = np.linspace(0.5, 20.0, int(np.prod(shape)))
    plain, params = make_mlp_network(jax.random.key(3), **kwargs)
    scaled, scaled_params = make_mlp_network(
        jax.random.key(3), **kwargs, observation_scale=list(scale)
    )
    # A constant, not a parameter: the same key draws the same parameters.
    same = jax.tree.map(np.array_equal, params, scaled_params)
    assert all(jax.tree.leaves(same))
    # Trained-looking value and policy heads, so that the outputs depend on the observation.
    params = jax.tree.map(lambda x: x + 0.3 * jax.random.normal(jax.random.key(4), x.shape), params)
    observation = jax.random.normal(jax.random.key(5), (BATCH, *shape))
    by_hand = observation * scale.reshape(shape).astype(np.float32)
    got, got_hidden = scaled.initial_inference(params, observation)
    want, want_hidden = plain.initial_inference(params, by_hand)
    unscaled, _ = plain.initial_inference(params, observation)
    np.testing.assert_allclose(got_hidden, want_hidden, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.policy_logits, want.policy_logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.value_logits, want.value_logits, rtol=1e-5, atol=1e-6)
    assert not np.allclose(got.policy_logits, unscaled.policy_logits, atol=1e-3)


@pytest.mark.parametrize(
    "scale, message",
    [
        ((1.0, 2.0, 3.0), r"None or 5 numbers > 0, one per feature .* shape \(5,\); got 3"),
        ((1.0, 2.0, 0.0, 1.0, 1.0), "finite numbers > 0"),
        ((1.0, -2.0, 1.0, 1.0, 1.0), "finite numbers > 0"),
        ((1.0, float("nan"), 1.0, 1.0, 1.0), "finite numbers > 0"),
        (("a", 1.0, 1.0, 1.0, 1.0), "finite numbers > 0"),
        ((), "finite numbers > 0"),
    ],
)
def test_observation_scale_refuses_bad_factors(scale, message):
    with pytest.raises(ValueError, match=rf"argument 'observation_scale' = .* {message}"):
        mlp_network(**MLP_KWARGS, observation_scale=scale)


def test_observation_scale_reaches_the_mlp_from_the_config_and_is_refused_elsewhere():
    from mz_jax import NetworkConfig, TrainConfig
    from mz_jax.training.build import build

    network = NetworkConfig(hidden_sizes=(8,), latent_size=4, observation_scale=(1, 2, 20, 2))
    config = TrainConfig(env="gymnax:CartPole-v1", num_envs=2, network=network)
    components = build(config)
    params = components.init_params(jax.random.key(0))
    plain = build(
        dataclasses.replace(config, network=dataclasses.replace(network, observation_scale=None))
    )
    observation = jnp.array([[0.5, -0.3, 0.04, 0.2]])
    got, _ = components.network.initial_inference(params, observation)
    want, _ = plain.network.initial_inference(params, observation * jnp.array([1, 2, 20, 2.0]))
    np.testing.assert_allclose(got.policy_logits, want.policy_logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.value_logits, want.value_logits, rtol=1e-5, atol=1e-6)
    image = TrainConfig(env="gymnax:Breakout-MinAtar", num_envs=2, network=network)
    with pytest.raises(ValueError, match=r"'network\.observation_scale' = .*kind 'resnet'"):
        build(image)
    with pytest.raises(ValueError, match=r"network\.observation_scale"):
        NetworkConfig(observation_scale=(1.0, 0.0))
    three = NetworkConfig(observation_scale=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match=r"'network\.observation_scale' = .*4 numbers > 0 for"):
        build(dataclasses.replace(config, network=three))
