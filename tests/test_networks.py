"""Tests of mz_jax.networks: shapes, hidden-state scaling, zero-initialised heads, purity under jit,
grad, vmap and scan, the action input, downsampling, and argument checks.

Compiles are few and shared: each network case jits one ``step`` (initial then recurrent inference)
and its gradient, reused for several parameter values of one shape.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from _params import perturb
from _xla import LEVEL_1

from mz_jax.core import transforms
from mz_jax.networks import (
    count_params,
    make_mlp_network,
    make_resnet_network,
    mlp_network,
    resnet_network,
)
from mz_jax.types import ModelOutput, MuZeroNetwork

NUM_ACTIONS = 3
VALUE_SUPPORT = 2  # 5 bins
REWARD_SUPPORT = 3  # 7 bins, different from the value's so swapped heads would show


class Case(NamedTuple):
    network: MuZeroNetwork
    params: Any
    perturbed: Any  # params plus noise, so that every head is non-zero
    observation: jax.Array
    hidden_shape: tuple[int, ...]
    step: Any  # jit of (params, observation, action) -> (out_0, hidden_0, out_1, hidden_1)
    grad: Any  # jit of (params, observation, action) -> grad of a scalar of ``step``


def _weighted_sum(tree):
    """A fixed random linear functional of every leaf (weights are trace-time constants)."""
    rng = np.random.default_rng(0)
    return sum(
        jnp.sum(leaf.astype(jnp.float32) * rng.normal(size=leaf.shape).astype(np.float32))
        for leaf in jax.tree.leaves(tree)
    )


def _make_case(network, params, observation_shape, hidden_shape, batch=2) -> Case:
    def step(params, observation, action):
        out_0, hidden_0 = network.initial_inference(params, observation)
        out_1, hidden_1 = network.recurrent_inference(params, hidden_0, action)
        return out_0, hidden_0, out_1, hidden_1

    rng = np.random.default_rng(42)
    observation = jnp.asarray(rng.normal(size=(batch, *observation_shape)), jnp.float32)
    return Case(
        network=network,
        params=params,
        perturbed=perturb(params, seed=7),
        observation=observation,
        hidden_shape=hidden_shape,
        step=jax.jit(step),
        grad=jax.jit(jax.grad(lambda *args: _weighted_sum(step(*args))), compiler_options=LEVEL_1),
    )


def _fast_key(seed: int) -> jax.Array:
    # The ResNets' many parameter shapes make the default threefry sampler slow to compile on CPU;
    # XLA's RngBitGenerator compiles in a fraction of the time. (The MLP uses the default key.)
    return jax.random.key(seed, impl="rbg")


@pytest.fixture(scope="module")
def mlp() -> Case:
    network, params = make_mlp_network(
        jax.random.key(0),
        observation_shape=(5,),
        num_actions=NUM_ACTIONS,
        hidden_sizes=(16,),
        latent_size=8,
        value_support_size=VALUE_SUPPORT,
        reward_support_size=REWARD_SUPPORT,
    )
    return _make_case(network, params, (5,), (8,), batch=3)


@pytest.fixture(scope="module")
def resnet() -> Case:
    # Non-square, so that a swap of H and W would show. Residual blocks: one in the prediction
    # tower here, and in the representation and dynamics towers of the downsampling case.
    network, params = make_resnet_network(
        _fast_key(1),
        observation_shape=(6, 5, 3),
        num_actions=NUM_ACTIONS,
        channels=8,
        num_blocks=0,
        prediction_blocks=1,
        head_channels=2,
        head_hidden=8,
        value_support_size=VALUE_SUPPORT,
        reward_support_size=REWARD_SUPPORT,
    )
    return _make_case(network, params, (6, 5, 3), (6, 5, 8))


@pytest.fixture(scope="module")
def resnet_downsample() -> Case:
    # 24 -> 12 -> 6 -> 3 -> 2 and 20 -> 10 -> 5 -> 3 -> 2: four halvings, each rounding up.
    network, params = make_resnet_network(
        _fast_key(2),
        observation_shape=(24, 20, 2),
        num_actions=NUM_ACTIONS,
        channels=4,
        num_blocks=1,
        downsample=True,
        prediction_blocks=0,
        head_channels=2,
        head_hidden=8,
        value_support_size=VALUE_SUPPORT,
        reward_support_size=REWARD_SUPPORT,
    )
    return _make_case(network, params, (24, 20, 2), (2, 2, 4))


CASES = ["mlp", "resnet", "resnet_downsample"]


@pytest.fixture(params=CASES)
def case(request) -> Case:
    return request.getfixturevalue(request.param)


def _actions(case: Case, value: int) -> jax.Array:
    return jnp.full((case.observation.shape[0],), value, jnp.int32)


def test_output_shapes_and_dtypes(case):
    batch = case.observation.shape[0]
    out_0, hidden_0, out_1, hidden_1 = case.step(case.params, case.observation, _actions(case, 1))
    for out in (out_0, out_1):
        assert isinstance(out, ModelOutput)
        assert out.value_logits.shape == (batch, 2 * VALUE_SUPPORT + 1)
        assert out.reward_logits.shape == (batch, 2 * REWARD_SUPPORT + 1)
        assert out.policy_logits.shape == (batch, NUM_ACTIONS)
        assert all(x.dtype == jnp.float32 for x in out)
    assert hidden_0.shape == hidden_1.shape == (batch, *case.hidden_shape)


def test_hidden_state_is_min_max_scaled_per_example(case):
    for params in (case.params, case.perturbed):
        _, hidden_0, _, hidden_1 = case.step(params, case.observation, _actions(case, 2))
        for hidden in (hidden_0, hidden_1):
            flat = np.asarray(hidden).reshape(hidden.shape[0], -1)
            assert np.ptp(flat, axis=1).min() > 0  # not a constant state, so the range is [0, 1]
            np.testing.assert_allclose(flat.min(axis=1), 0.0, atol=1e-6)
            np.testing.assert_allclose(flat.max(axis=1), 1.0, atol=1e-6)


def test_heads_are_zero_initialised(case):
    out_0, _, out_1, _ = case.step(case.params, case.observation, _actions(case, 0))
    for out in (out_0, out_1):
        for logits in out:
            np.testing.assert_array_equal(logits, 0.0)
        np.testing.assert_allclose(transforms.logits_to_scalar(out.value_logits), 0.0, atol=1e-6)
        np.testing.assert_allclose(transforms.logits_to_scalar(out.reward_logits), 0.0, atol=1e-6)
        np.testing.assert_allclose(jax.nn.softmax(out.policy_logits), 1.0 / NUM_ACTIONS, rtol=1e-6)


def test_jit_matches_eager(mlp):
    # The mechanism (nnx.merge of the params inside a pure function) is the same for every network;
    # the MLP keeps the eager, op-by-op run cheap.
    action = _actions(mlp, 1)
    jitted = mlp.step(mlp.perturbed, mlp.observation, action)
    out_0, hidden_0 = mlp.network.initial_inference(mlp.perturbed, mlp.observation)
    out_1, hidden_1 = mlp.network.recurrent_inference(mlp.perturbed, hidden_0, action)
    eager = (out_0, hidden_0, out_1, hidden_1)
    assert np.abs(np.asarray(jitted[2].value_logits)).max() > 1e-3  # outputs are not trivial
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), jitted, eager)


def test_grad_is_finite_and_reaches_every_param(case):
    action = jnp.array([0, 2, 1][: case.observation.shape[0]], jnp.int32)
    grads = case.grad(case.params, case.observation, action)
    assert jax.tree.structure(grads) == jax.tree.structure(case.params)
    assert all(np.isfinite(g).all() for g in jax.tree.leaves(grads))
    # Zero-initialised heads stop the gradient to the prediction torso, but the heads do learn.
    for head in ("value_head", "reward_head", "policy_head"):
        out_layer = grads[head].get("out", grads[head])  # the ResNet's heads end in an "out" layer
        assert np.abs(np.asarray(out_layer["kernel"])).max() > 0

    # With non-zero heads, every parameter array influences the outputs: none is left unused.
    grads = case.grad(case.perturbed, case.observation, action)
    dead = [
        jax.tree_util.keystr(path)
        for path, g in jax.tree_util.tree_leaves_with_path(grads)
        if not (np.isfinite(g).all() and np.abs(np.asarray(g)).max() > 0)
    ]
    assert not dead


def test_examples_of_a_batch_are_independent(case):
    # No batch statistics and a per-example scaling: changing example 0 leaves the others alone.
    changed = case.observation.at[0].multiply(-2.0)
    action = jnp.arange(case.observation.shape[0], dtype=jnp.int32) % NUM_ACTIONS
    before = case.step(case.perturbed, case.observation, action)
    after = case.step(case.perturbed, changed, action)
    assert not np.allclose(before[1][0], after[1][0])
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a[1:], b[1:], rtol=1e-6), before, after)


def test_action_changes_the_next_state_and_reward(case):
    results = [case.step(case.perturbed, case.observation, _actions(case, a)) for a in range(3)]
    for a in range(3):
        for b in range(a):
            # Same starting state (initial inference does not see the action), different next state.
            np.testing.assert_array_equal(results[a][1], results[b][1])
            for next_hidden_a, next_hidden_b in zip(results[a][3], results[b][3], strict=True):
                assert not np.allclose(next_hidden_a, next_hidden_b, atol=1e-4)
            for reward_a, reward_b in zip(
                results[a][2].reward_logits, results[b][2].reward_logits, strict=True
            ):
                assert not np.allclose(reward_a, reward_b, atol=1e-4)
    # And the initial parameters (zero heads, random dynamics) already tell actions apart.
    next_0 = case.step(case.params, case.observation, _actions(case, 0))[3]
    next_1 = case.step(case.params, case.observation, _actions(case, 1))[3]
    assert not np.allclose(next_0, next_1, atol=1e-4)


def test_action_k_enters_as_input_k_of_the_dynamics(case):
    # The one-hot vector (MLP) or the planes (ResNet) of action k feed input latent_size + k (plane
    # channels + k) of the dynamics' first layer, and nothing else does: with that input's weights
    # zeroed, action k acts like an out-of-range action, whose encoding is all zeros.
    k = 1
    action_input = case.hidden_shape[-1] + k
    if "dynamics_conv" in case.params:  # ResNet: a 3x3 conv kernel [3, 3, channels + A, channels]
        path, axis = ("dynamics_conv", "kernel"), 2
    else:  # MLP: a dense kernel [latent_size + A, width]
        path, axis = ("dynamics", "layers", "dense_0", "kernel"), 0
    params = jax.tree.map(lambda x: x, case.perturbed)  # a copy of the nested dicts
    parent = params
    for name in path[:-1]:
        parent = parent[name]
    kernel = parent[path[-1]]
    parent[path[-1]] = kernel.at[(slice(None),) * axis + (action_input,)].set(0.0)

    blank = case.step(params, case.observation, _actions(case, NUM_ACTIONS))
    without_k = case.step(params, case.observation, _actions(case, k))
    other = case.step(params, case.observation, _actions(case, 0))
    np.testing.assert_allclose(without_k[3], blank[3], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(without_k[2].reward_logits, blank[2].reward_logits, rtol=1e-6)
    assert not np.allclose(other[3], blank[3], atol=1e-4)


def test_scan_unroll_matches_step_by_step(mlp):
    # The loss unrolls the dynamics with lax.scan (MuZero Appendix G), the search step by step.
    net, params = mlp.network, mlp.perturbed
    actions = jnp.array([[0, 1, 2], [2, 2, 0], [1, 0, 1]], jnp.int32)  # [B, K]
    hidden = mlp.step(params, mlp.observation, actions[:, 0])[1]

    def unroll(params, hidden, actions):
        def body(hidden, action):
            out, next_hidden = net.recurrent_inference(params, hidden, action)
            return next_hidden, (out.reward_logits, next_hidden)

        return jax.lax.scan(body, hidden, actions.T)[1]

    rewards, hiddens = jax.jit(unroll)(params, hidden, actions)
    recurrent = jax.jit(net.recurrent_inference)
    for k in range(actions.shape[1]):
        out, hidden = recurrent(params, hidden, actions[:, k])
        np.testing.assert_allclose(hiddens[k], hidden, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(rewards[k], out.reward_logits, rtol=1e-5, atol=1e-6)


def test_vmap_over_observations_and_over_params(mlp):
    net = mlp.network
    observations = jnp.stack([mlp.observation, -mlp.observation, 2 * mlp.observation])
    out, hidden = jax.jit(jax.vmap(net.initial_inference, in_axes=(None, 0)))(
        mlp.perturbed, observations
    )
    for i in range(3):
        expected = mlp.step(mlp.perturbed, observations[i], _actions(mlp, 0))
        np.testing.assert_allclose(hidden[i], expected[1], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out.policy_logits[i], expected[0].policy_logits, rtol=1e-5)

    # An ensemble: a stacked batch of two parameter sets, applied to one hidden state.
    stacked = jax.tree.map(lambda a, b: jnp.stack([a, b]), mlp.params, mlp.perturbed)
    action = _actions(mlp, 2)
    hidden_0 = mlp.step(mlp.params, mlp.observation, action)[1]
    out, _ = jax.jit(jax.vmap(net.recurrent_inference, in_axes=(0, None, None)))(
        stacked, hidden_0, action
    )
    for i, params in enumerate((mlp.params, mlp.perturbed)):
        expected = jax.jit(net.recurrent_inference)(params, hidden_0, action)[0]
        np.testing.assert_allclose(
            out.reward_logits[i], expected.reward_logits, rtol=1e-5, atol=1e-6
        )


def _np_mlp_reference(params, observation, action):
    """MuZero with dense layers, written out in float64 numpy from the parameter dict."""
    p = jax.tree.map(lambda x: np.asarray(x, np.float64), params)

    def dense(x, layer):
        return x @ layer["kernel"] + layer["bias"]

    def torso(x, torso_params):
        layers = torso_params["layers"]
        for i in range(len(layers) // 2):
            y = dense(x, layers[f"dense_{i}"])
            norm = layers[f"norm_{i}"]
            y = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-6)
            x = np.maximum(y * norm["scale"] + norm["bias"], 0.0)
        return x

    def scale(x):
        low, high = x.min(-1, keepdims=True), x.max(-1, keepdims=True)
        return (x - low) / np.maximum(high - low, 1e-5)

    def predict(hidden):
        features = torso(hidden, p["prediction"])
        return dense(features, p["value_head"]), dense(features, p["policy_head"])

    obs = np.asarray(observation, np.float64).reshape(observation.shape[0], -1)
    hidden_0 = scale(dense(torso(obs, p["representation"]), p["representation_out"]))
    one_hot = np.eye(NUM_ACTIONS)[np.asarray(action)]
    features = torso(np.concatenate([hidden_0, one_hot], axis=-1), p["dynamics"])
    hidden_1 = scale(dense(features, p["dynamics_out"]))
    reward_1 = dense(features, p["reward_head"])
    return predict(hidden_0), hidden_0, predict(hidden_1), reward_1, hidden_1


def test_mlp_matches_a_numpy_reference(mlp):
    action = jnp.array([2, 0, 1], jnp.int32)
    out_0, hidden_0, out_1, hidden_1 = mlp.step(mlp.perturbed, mlp.observation, action)
    (v_0, pi_0), ref_hidden_0, (v_1, pi_1), r_1, ref_hidden_1 = _np_mlp_reference(
        mlp.perturbed, mlp.observation, action
    )
    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    close(hidden_0, ref_hidden_0)
    close(out_0.value_logits, v_0)
    close(out_0.policy_logits, pi_0)
    np.testing.assert_array_equal(out_0.reward_logits, 0.0)  # the root has no transition
    close(hidden_1, ref_hidden_1)
    close(out_1.value_logits, v_1)
    close(out_1.policy_logits, pi_1)
    close(out_1.reward_logits, r_1)


def _np_conv3x3_relu(image, conv):
    """``relu(conv(image))`` of a 3x3 "SAME" convolution, summed offset by offset in numpy."""
    kernel, bias = np.asarray(conv["kernel"], np.float64), np.asarray(conv["bias"], np.float64)
    batch, height, width, _ = image.shape
    padded = np.pad(np.asarray(image, np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.broadcast_to(bias, (batch, height, width, bias.size)).copy()
    for dy in range(3):
        for dx in range(3):
            out += padded[:, dy : dy + height, dx : dx + width, :] @ kernel[dy, dx]
    return np.maximum(out, 0.0)


def test_mlp_with_a_convolution_matches_a_numpy_reference():
    # A non-square image, so that a swap of H and W in the flattening would show.
    shape = (5, 4, 2)
    network, params = make_mlp_network(
        jax.random.key(3),
        observation_shape=shape,
        num_actions=NUM_ACTIONS,
        hidden_sizes=(16,),
        latent_size=8,
        value_support_size=VALUE_SUPPORT,
        reward_support_size=REWARD_SUPPORT,
        conv_channels=6,
    )
    assert params["conv"]["kernel"].shape == (3, 3, 2, 6)
    # The representation reads the flattened convolution: H * W * conv_channels inputs.
    assert params["representation"]["layers"]["dense_0"]["kernel"].shape == (5 * 4 * 6, 16)
    params = perturb(params, seed=5)
    observation = jnp.asarray(np.random.default_rng(1).normal(size=(3, *shape)), jnp.float32)
    action = jnp.array([1, 2, 0], jnp.int32)
    out_0, hidden_0 = network.initial_inference(params, observation)
    out_1, hidden_1 = network.recurrent_inference(params, hidden_0, action)
    features = _np_conv3x3_relu(observation, params["conv"])
    rest = {name: value for name, value in params.items() if name != "conv"}
    (v_0, pi_0), ref_hidden_0, (v_1, pi_1), r_1, ref_hidden_1 = _np_mlp_reference(
        rest, features, action
    )
    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    close(hidden_0, ref_hidden_0)
    close(out_0.value_logits, v_0)
    close(out_0.policy_logits, pi_0)
    close(hidden_1, ref_hidden_1)
    close(out_1.value_logits, v_1)
    close(out_1.policy_logits, pi_1)
    close(out_1.reward_logits, r_1)


@pytest.mark.parametrize(
    ("height", "width", "expected"),
    [(96, 96, (6, 6)), (17, 33, (2, 3))],
)
def test_downsampled_hidden_shape(height, width, expected):
    # By hand, halving with rounding up four times: 96 48 24 12 6; 17 9 5 3 2; 33 17 9 5 3.
    # Shapes only: no initialisation, no compilation.
    captured = {}

    def init(key):
        captured["network"], params = make_resnet_network(
            key, observation_shape=(height, width, 2), num_actions=4, channels=4, downsample=True
        )
        return params

    params = jax.eval_shape(init, jax.random.key(0))
    network = captured["network"]
    observation = jax.ShapeDtypeStruct((2, height, width, 2), jnp.float32)
    out, hidden = jax.eval_shape(network.initial_inference, params, observation)
    assert hidden.shape == (2, *expected, 4)
    action = jax.ShapeDtypeStruct((2,), jnp.int32)
    out, next_hidden = jax.eval_shape(network.recurrent_inference, params, hidden, action)
    assert next_hidden.shape == hidden.shape
    assert out.policy_logits.shape == (2, 4)


def test_count_params_by_hand(mlp):
    obs, hidden, latent, v, r, a = 5, 16, 8, 2 * VALUE_SUPPORT + 1, 2 * REWARD_SUPPORT + 1, 3
    dense = lambda i, o: i * o + o
    norm = lambda n: 2 * n
    expected = (
        dense(obs, hidden) + norm(hidden) + dense(hidden, latent)  # representation
        + dense(latent + a, hidden) + norm(hidden) + dense(hidden, latent)  # dynamics
        + dense(hidden, r)  # reward head
        + dense(latent, hidden) + norm(hidden) + dense(hidden, v) + dense(hidden, a)  # prediction
    )  # fmt: skip
    assert count_params(mlp.params) == expected
    assert count_params(jax.eval_shape(lambda: mlp.params)) == expected
    assert count_params({"a": np.zeros((2, 3)), "b": [np.zeros(4), 1.0]}) == 11


def test_params_are_a_plain_dict_that_optax_updates(mlp):
    def check(tree):
        assert type(tree) is dict and all(isinstance(k, str) for k in tree)
        for value in tree.values():
            if isinstance(value, dict):
                check(value)
            else:
                assert isinstance(value, jax.Array) and value.dtype == jnp.float32

    check(mlp.params)
    optimizer = optax.adam(1e-2)
    grads = mlp.grad(mlp.params, mlp.observation, _actions(mlp, 0))

    @jax.jit
    def update(params, grads, opt_state):
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    new_params, _ = update(mlp.params, grads, optimizer.init(mlp.params))
    assert jax.tree.structure(new_params) == jax.tree.structure(mlp.params)
    assert not np.allclose(new_params["value_head"]["kernel"], 0.0)


def test_keyless_factories_draw_the_params_of_make_when_init_is_called(mlp, resnet):
    network, init = mlp_network(
        observation_shape=(5,),
        num_actions=NUM_ACTIONS,
        hidden_sizes=(16,),
        latent_size=8,
        value_support_size=VALUE_SUPPORT,
        reward_support_size=REWARD_SUPPORT,
    )
    params = init(jax.random.key(0))
    jax.tree.map(np.testing.assert_array_equal, params, mlp.params)
    jax.tree.map(np.testing.assert_array_equal, init(0), mlp.params)  # an int seed, as for make
    step = jax.jit(network.initial_inference)
    jax.tree.map(
        np.testing.assert_array_equal,
        step(mlp.perturbed, mlp.observation),
        jax.jit(mlp.network.initial_inference)(mlp.perturbed, mlp.observation),
    )
    # init traces under jit and eval_shape (a traced key), as inside a compiled run start.
    abstract = jax.eval_shape(init, jax.random.key(0))
    assert jax.tree.structure(abstract) == jax.tree.structure(mlp.params)

    _, init = resnet_network(
        observation_shape=(6, 5, 3),
        num_actions=NUM_ACTIONS,
        channels=8,
        num_blocks=0,
        prediction_blocks=1,
        head_channels=2,
        head_hidden=8,
        value_support_size=VALUE_SUPPORT,
        reward_support_size=REWARD_SUPPORT,
    )
    abstract = jax.eval_shape(init, _fast_key(1))
    assert jax.tree.map(lambda x: x.shape, abstract) == jax.tree.map(
        lambda x: x.shape, resnet.params
    )
    # Arguments are checked when the factory is called, the key when init is.
    with pytest.raises(ValueError, match="num_actions"):
        mlp_network(observation_shape=(5,), num_actions=0)
    with pytest.raises(ValueError, match="key"):
        init("seed")


@pytest.mark.parametrize(
    ("factory", "kwargs"),
    [
        (make_mlp_network, dict(observation_shape=(6,), hidden_sizes=(32, 32), latent_size=16)),
        (
            make_resnet_network,
            dict(observation_shape=(5, 5, 2), channels=8, num_blocks=1, head_channels=2,
                 head_hidden=8),
        ),
    ],
    ids=["mlp", "resnet"],
)  # fmt: skip
def test_bfloat16_computes_what_float32_does_to_its_precision(factory, kwargs):
    # The same float32 parameters (noise added, so that no head is zero) through both dtypes.
    # bfloat16 keeps 8 significant bits, so each rounding errs by up to 2^-9 of its value; through
    # the few layers here the logits stay within 4% of their largest magnitude of float32's
    # (measured: 0.7-1.3%), while a wrong layer or a head computed from the wrong state is off by
    # far more.
    common = dict(num_actions=NUM_ACTIONS, value_support_size=2, reward_support_size=3, **kwargs)
    results = {}
    for dtype in (jnp.float32, jnp.bfloat16):
        network, params = factory(3, dtype=dtype, **common)
        params = perturb(params, seed=1)
        observation = np.random.default_rng(2).normal(size=(8, *kwargs["observation_shape"]))
        first, hidden = jax.jit(network.initial_inference)(params, jnp.asarray(observation))
        actions = jnp.arange(8) % NUM_ACTIONS
        second, next_hidden = jax.jit(network.recurrent_inference)(params, hidden, actions)
        results[dtype] = params, (first, second), (hidden, next_hidden)
    params_32, outputs_32, _ = results[jnp.float32]
    params_16, outputs_16, hidden_16 = results[jnp.bfloat16]
    for x, y in zip(jax.tree.leaves(params_32), jax.tree.leaves(params_16), strict=True):
        assert x.dtype == y.dtype == jnp.float32 and np.array_equal(x, y)
    assert all(h.dtype == jnp.bfloat16 for h in hidden_16)
    for out_32, out_16 in zip(outputs_32, outputs_16, strict=True):
        for name in ("value_logits", "reward_logits", "policy_logits"):
            x, y = np.asarray(getattr(out_32, name)), getattr(out_16, name)
            assert y.dtype == jnp.float32, name
            if out_32 is outputs_32[0] and name == "reward_logits":
                continue  # the root's reward is not predicted (zero logits in both)
            scale, error = np.abs(x).max(), np.abs(x - np.asarray(y)).max()
            assert scale > 0.5, (name, scale)  # not a zero head
            assert 0 < error <= 0.04 * scale, (name, error, scale)  # 0: not computed in bfloat16


_MLP_OK = dict(observation_shape=(4,), num_actions=2)
_RESNET_OK = dict(observation_shape=(4, 4, 1), num_actions=2)


@pytest.mark.parametrize(
    ("factory", "kwargs", "match"),
    [
        (make_mlp_network, {**_MLP_OK, "num_actions": 0}, "num_actions"),
        (make_mlp_network, {**_MLP_OK, "num_actions": 2.0}, "num_actions"),
        (make_mlp_network, {**_MLP_OK, "num_actions": True}, "num_actions"),
        (make_mlp_network, {**_MLP_OK, "observation_shape": (4, 0)}, "observation_shape"),
        (make_mlp_network, {**_MLP_OK, "observation_shape": 4}, "observation_shape"),
        (make_mlp_network, {**_MLP_OK, "hidden_sizes": ()}, "hidden_sizes"),
        (make_mlp_network, {**_MLP_OK, "hidden_sizes": (8, 0)}, "hidden_sizes"),
        (make_mlp_network, {**_MLP_OK, "latent_size": 1}, "latent_size"),
        (make_mlp_network, {**_MLP_OK, "value_support_size": 0}, "value_support_size"),
        (make_mlp_network, {**_MLP_OK, "reward_support_size": -1}, "reward_support_size"),
        (make_mlp_network, {**_MLP_OK, "dtype": jnp.int32}, "dtype"),
        (make_mlp_network, {**_MLP_OK, "key": "seed"}, "key"),
        (make_mlp_network, {**_MLP_OK, "key": 0.5}, "key"),
        (
            make_mlp_network,
            {**_MLP_OK, "observation_shape": (3, 3, 1), "conv_channels": 0},
            "conv_channels",
        ),
        (make_mlp_network, {**_MLP_OK, "conv_channels": 4}, "conv_channels"),
        (make_resnet_network, {**_RESNET_OK, "observation_shape": (4, 4)}, "observation_shape"),
        (
            make_resnet_network,
            {**_RESNET_OK, "observation_shape": (1, 4, 4, 1)},
            "observation_shape",
        ),
        (make_resnet_network, {**_RESNET_OK, "num_actions": 0}, "num_actions"),
        (make_resnet_network, {**_RESNET_OK, "channels": 0}, "channels"),
        (make_resnet_network, {**_RESNET_OK, "num_blocks": -1}, "num_blocks"),
        (make_resnet_network, {**_RESNET_OK, "downsample": "yes"}, "downsample"),
        (make_resnet_network, {**_RESNET_OK, "prediction_blocks": -1}, "prediction_blocks"),
        (make_resnet_network, {**_RESNET_OK, "head_channels": 0}, "head_channels"),
        (make_resnet_network, {**_RESNET_OK, "head_hidden": 0}, "head_hidden"),
        (make_resnet_network, {**_RESNET_OK, "value_support_size": 0}, "value_support_size"),
        (make_resnet_network, {**_RESNET_OK, "reward_support_size": 0}, "reward_support_size"),
        # 10x10 downsamples to 1x1: one plane is a single number, which min-max scaling zeroes.
        (
            make_resnet_network,
            {**_RESNET_OK, "observation_shape": (10, 10, 3), "channels": 1, "downsample": True},
            "channels",
        ),
    ],
)
def test_bad_arguments_raise(factory, kwargs, match):
    kwargs = {"key": jax.random.key(0), **kwargs}
    with pytest.raises(ValueError, match=match):
        factory(kwargs.pop("key"), **kwargs)


def test_bad_inputs_raise_at_trace_time(mlp):
    net, params = mlp.network, mlp.params
    spec = lambda shape, dtype=jnp.float32: jax.ShapeDtypeStruct(shape, dtype)
    with pytest.raises(ValueError, match="observation"):
        jax.eval_shape(net.initial_inference, params, spec((3, 6)))
    with pytest.raises(ValueError, match="hidden"):
        jax.eval_shape(net.recurrent_inference, params, spec((3, 7)), spec((3,), jnp.int32))
    with pytest.raises(ValueError, match="action"):
        jax.eval_shape(net.recurrent_inference, params, spec((3, 8)), spec((3, 1), jnp.int32))
    with pytest.raises(ValueError, match="action"):
        jax.eval_shape(net.recurrent_inference, params, spec((3, 8)), spec((3,)))
