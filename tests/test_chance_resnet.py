"""The ResNet Stochastic MuZero network: the contract's shapes, purity, zero-initialised heads, what
each input changes, gradients, errors, and a few training iterations on an image environment."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _params import perturb
from _xla import LEVEL_1

from mz_jax.config.search import SearchConfig
from mz_jax.config.train import NetworkConfig, TrainConfig
from mz_jax.networks import count_params, stochastic_resnet_network
from mz_jax.run import metrics
from mz_jax.training.build import build
from mz_jax.training.train import make_train
from mz_jax.types import AfterstateOutput, ModelOutput, StochasticMuZeroNetwork

OBS, A, C, P = (5, 4, 3), 3, 4, 6  # non-square, so that a swap of H and W would show
STATE = (5, 4, 4)  # no downsampling: the observation's H, W and `channels` planes
VALUE_BINS, REWARD_BINS = 9, 7  # supports [-4, 4] and [-3, 3]
SMALL = dict(
    observation_shape=OBS,
    num_actions=A,
    num_chance_outcomes=C,
    channels=4,
    num_blocks=1,
    prediction_blocks=1,
    head_channels=2,
    head_hidden=8,
    value_support_size=4,
    reward_support_size=3,
)


@pytest.fixture(scope="module")
def built():
    network, init = stochastic_resnet_network(**SMALL, predict_turn=True, projection_size=P)
    # XLA's RngBitGenerator: drawing every parameter shape of this ResNet with the default threefry
    # sampler takes 11 s to compile on two CPU cores, with it 4 s.
    return network, init(jax.random.key(0, impl="rbg"))


def _run(network, params, observation, next_observation, action, code):
    output, state = network.initial_inference(params, observation)
    after, afterstate = network.afterstate_inference(params, state, action)
    next_output, next_state = network.recurrent_inference(params, afterstate, code)
    logits = network.encode_chance(params, observation, next_observation)
    projection = network.project(params, next_state)
    extras = (
        network.turn_logits(params, next_state),
        projection,
        network.predict_projection(params, projection),
    )
    return output, state, after, afterstate, next_output, next_state, logits, extras


def _inputs(batch, seed=0):
    rng = np.random.default_rng(seed)
    return (
        jnp.asarray(rng.normal(size=(batch, *OBS)), jnp.float32),
        jnp.asarray(rng.normal(size=(batch, *OBS)), jnp.float32),
        jnp.arange(batch, dtype=jnp.int32) % A,
        jax.nn.one_hot(jnp.arange(batch) % C, C),
    )


@pytest.mark.parametrize("batch", [1, 3])
def test_shapes_dtypes_and_purity(built, batch):
    network, params = built
    assert isinstance(network, StochasticMuZeroNetwork) and network.num_chance_outcomes == C
    args = _inputs(batch, seed=batch)
    run = jax.jit(_run, static_argnums=0)
    outputs = run(network, params, *args)
    output, state, after, afterstate, next_output, next_state, logits, extras = outputs
    assert isinstance(output, ModelOutput) and isinstance(after, AfterstateOutput)
    for out in (output, next_output):
        assert out.value_logits.shape == (batch, VALUE_BINS)
        assert out.reward_logits.shape == (batch, REWARD_BINS)
        assert out.policy_logits.shape == (batch, A)
    assert after.value_logits.shape == (batch, VALUE_BINS) and after.chance_logits.shape == (
        batch,
        C,
    )
    assert state.shape == afterstate.shape == next_state.shape == (batch, *STATE)
    assert logits.shape == (batch, C)
    turn, projection, predicted = extras
    assert turn.shape == (batch,) and projection.shape == predicted.shape == (batch, P)
    for x in jax.tree.leaves(outputs):
        assert x.dtype == jnp.float32
    # States and afterstates are min-max scaled to [0, 1] per example over h, w and channels.
    for s in (state, afterstate, next_state):
        flat = np.asarray(s).reshape(batch, -1)
        np.testing.assert_allclose(flat.min(axis=1), 0.0, atol=1e-6)
        np.testing.assert_allclose(flat.max(axis=1), 1.0, atol=1e-6)
    # Pure: the same parameters and inputs give the same outputs, called again or run eagerly.
    again, eager = run(network, params, *args), _run(network, params, *args)
    for x, y, z in zip(*map(jax.tree.leaves, (outputs, again, eager)), strict=True):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_allclose(x, z, rtol=1e-5, atol=1e-6)


def _softmax(logits):
    x = np.asarray(logits, np.float64)
    x = np.exp(x - x.max(-1, keepdims=True))
    return x / x.sum(-1, keepdims=True)


def test_zero_initialised_heads_predict_value_0_and_uniform_policy_and_sigma(built):
    network, params = built
    output, _, after, _, next_output, _, logits, (turn, *_) = jax.jit(_run, static_argnums=0)(
        network, params, *_inputs(3, seed=7)
    )
    for value_logits in (output.value_logits, after.value_logits, next_output.value_logits):
        # All bins equal: the expected value over the support [-4, 4] is its middle, 0.
        probs = _softmax(value_logits)
        np.testing.assert_allclose(probs, 1.0 / VALUE_BINS, rtol=1e-6)
        np.testing.assert_allclose(probs @ np.arange(-4, 5), 0.0, atol=1e-6)
    reward_probs = _softmax(next_output.reward_logits)
    np.testing.assert_allclose(reward_probs @ np.arange(-3, 4), 0.0, atol=1e-6)
    for prior, n in (
        (output.policy_logits, A),
        (next_output.policy_logits, A),
        (after.chance_logits, C),
    ):
        np.testing.assert_allclose(_softmax(prior), np.full((3, n), 1.0 / n), rtol=1e-6)
    np.testing.assert_allclose(turn, 0.0, atol=1e-7)  # probability 1/2
    # The encoder's output layer does not start at zero: its logits differ between codes.
    assert np.ptp(np.asarray(logits), axis=-1).min() > 1e-4


def test_the_action_the_code_and_the_next_observation_matter(built):
    network, params = built
    obs = jnp.asarray(np.random.default_rng(1).normal(size=(1, *OBS)), jnp.float32)
    _, state = network.initial_inference(params, obs)
    _, afterstates = network.afterstate_inference(
        params, jnp.repeat(state, 2, 0), jnp.array([0, 2], jnp.int32)
    )
    assert not np.allclose(afterstates[0], afterstates[1])
    codes = jax.nn.one_hot(jnp.array([0, 1]), C)
    _, next_state = network.recurrent_inference(params, jnp.repeat(afterstates[:1], 2, 0), codes)
    assert not np.allclose(next_state[0], next_state[1])
    following = jnp.stack([jnp.zeros(OBS), jnp.ones(OBS)])
    logits = network.encode_chance(params, jnp.repeat(obs, 2, 0), following)
    assert not np.allclose(logits[0], logits[1])
    # And the observation it starts from, with the same next observation.
    logits = network.encode_chance(params, following, jnp.repeat(obs, 2, 0))
    assert not np.allclose(logits[0], logits[1])


def test_examples_of_a_batch_are_independent(built):
    network, params = built
    args = _inputs(3, seed=2)
    run = jax.jit(_run, static_argnums=0)
    base = run(network, params, *args)
    changed = run(network, params, args[0].at[0].multiply(-2.0), *args[1:])
    for x, y in zip(jax.tree.leaves(base), jax.tree.leaves(changed), strict=True):
        np.testing.assert_allclose(x[1:], y[1:], rtol=1e-5, atol=1e-6)


def test_every_parameter_gets_a_gradient(built):
    network, params = built
    obs, nxt, _, _ = _inputs(4, seed=3)
    target = jnp.asarray(np.random.default_rng(4).normal(size=(4, 16)), jnp.float32)

    def scalar(p):
        outputs = _run(
            network, p, obs, nxt, jnp.array([0, 1, 2, 0]), jax.nn.softmax(jnp.ones((4, C)))
        )
        # Every output against a fixed random target, so that zero-initialised heads get gradient.
        total = 0.0
        for x in jax.tree.leaves(outputs):
            x = x.reshape(4, -1)[:, :16]
            total += jnp.sum(x * target[:, : x.shape[-1]])
        return total

    # Random parameters everywhere: at initialisation the zeroed heads pass no gradient upstream.
    # LayerNorm scales near 1 and small biases, so that no norm -> ReLU is dead for every example
    # by chance (the projection head's has 3 units).
    # numpy draws: jax.random would compile a sampler for every parameter shape.
    paths, treedef = jax.tree_util.tree_flatten_with_path(params)
    rng = np.random.default_rng(3)
    shift = {"scale": (1.0, 0.3), "bias": (0.0, 0.1)}
    params = treedef.unflatten(
        [
            jnp.asarray(mean + std * rng.normal(size=x.shape), jnp.float32)
            for path, x in paths
            for mean, std in [shift.get(path[-1].key, (0.0, 1.0))]
        ]
    )
    grads = jax.jit(jax.grad(scalar), compiler_options=LEVEL_1)(params)
    assert jax.tree.structure(grads) == jax.tree.structure(params)
    dead = [
        jax.tree_util.keystr(path)
        for path, g in jax.tree_util.tree_leaves_with_path(grads)
        if not (np.all(np.isfinite(g)) and np.abs(np.asarray(g)).sum() > 0)
    ]
    assert not dead
    for name in ("stem", "encoder", "encoder_out", "afterstate_dynamics", "chance_dynamics"):
        assert name in grads
    assert count_params(params) > 0


def test_downsampled_states_and_bfloat16():
    # 20 -> 10 -> 5 -> 3 -> 2 and 18 -> 9 -> 5 -> 3 -> 2: four halvings, each rounding up.
    network, init = stochastic_resnet_network(
        **{**SMALL, "observation_shape": (20, 18, 2)}, downsample=True, dtype=jnp.bfloat16
    )
    params = jax.eval_shape(init, jax.random.key(0))
    assert all(x.dtype == jnp.float32 for x in jax.tree.leaves(params))
    spec = lambda shape, dtype=jnp.float32: jax.ShapeDtypeStruct(shape, dtype)
    output, state = jax.eval_shape(network.initial_inference, params, spec((2, 20, 18, 2)))
    assert state.shape == (2, 2, 2, 4) and state.dtype == jnp.bfloat16
    after, afterstate = jax.eval_shape(
        network.afterstate_inference, params, state, spec((2,), jnp.int32)
    )
    next_output, next_state = jax.eval_shape(
        network.recurrent_inference, params, afterstate, spec((2, C))
    )
    assert afterstate.shape == next_state.shape == (2, 2, 2, 4)
    logits = jax.eval_shape(
        network.encode_chance, params, spec((2, 20, 18, 2)), spec((2, 20, 18, 2))
    )
    assert logits.shape == (2, C)
    for x in jax.tree.leaves((output, after, next_output, logits)):
        assert x.dtype == jnp.float32


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"observation_shape": (5, 5)}, r"'observation_shape' = \(5, 5\) is invalid"),
        ({"num_actions": 0}, r"'num_actions' = 0 is invalid"),
        ({"num_chance_outcomes": 0}, r"'num_chance_outcomes' = 0 is invalid"),
        ({"num_chance_outcomes": 2.0}, r"'num_chance_outcomes' = 2.0 is invalid"),
        ({"channels": 0}, r"'channels' = 0 is invalid"),
        ({"num_blocks": -1}, r"'num_blocks' = -1 is invalid"),
        ({"downsample": "yes"}, r"'downsample' = 'yes' is invalid"),
        ({"prediction_blocks": -1}, r"'prediction_blocks' = -1 is invalid"),
        ({"head_channels": 0}, r"'head_channels' = 0 is invalid"),
        ({"head_hidden": 0}, r"'head_hidden' = 0 is invalid"),
        ({"value_support_size": 0}, r"'value_support_size' = 0 is invalid"),
        ({"reward_support_size": 0}, r"'reward_support_size' = 0 is invalid"),
        ({"dtype": jnp.int32}, r"'dtype' = .* is invalid"),
        ({"predict_turn": "no"}, r"'predict_turn' = 'no' is invalid"),
        ({"projection_size": 0}, r"'projection_size' = 0 is invalid"),
        # 10x10 downsamples to 1x1: one plane is a single number, which min-max scaling zeroes.
        (
            {"observation_shape": (10, 10, 3), "channels": 1, "downsample": True},
            r"'channels' = 1 is invalid: allowed an integer >= 2 here",
        ),
    ],
)
def test_bad_arguments_are_named(change, message):
    with pytest.raises(ValueError, match=message):
        stochastic_resnet_network(**{**SMALL, **change})


def test_bad_inputs_are_named(built):
    network, params = built
    spec = lambda shape, dtype=jnp.float32: jax.ShapeDtypeStruct(shape, dtype)
    state, obs = spec((2, *STATE)), spec((2, *OBS))
    cases = [
        (network.initial_inference, (spec((2, 5, 4)),), r"observation must have shape \[B, 5, 4, 3\]"),
        (network.afterstate_inference, (spec((2, 8)), spec((2,), jnp.int32)), r"state must have shape \[B, 5, 4, 4\]"),
        (network.afterstate_inference, (state, spec((2,))), "action must be an integer"),
        (network.afterstate_inference, (state, spec((3,), jnp.int32)), "action must have the batch size 2"),
        (network.recurrent_inference, (state, spec((2, C + 1))), r"code must have shape \[B, 4\]"),
        (network.recurrent_inference, (state, spec((3, C))), "code must have the batch size 2"),
        (network.recurrent_inference, (spec((2, 5, 4, 5)), spec((2, C))), r"afterstate must have shape"),
        (network.encode_chance, (obs, spec((3, *OBS))), "next_observation must have the batch size 2"),
        (network.encode_chance, (obs, spec((2, 4, 5, 3))), r"next_observation must have shape"),
        (network.turn_logits, (spec((2, 5, 4)),), r"state must have shape"),
        (network.project, (spec((2, 80)),), r"state must have shape"),
        (network.predict_projection, (spec((2, P + 1)),), r"projection must have shape \[B, 6\]"),
    ]  # fmt: skip
    for fn, args, message in cases:
        with pytest.raises(ValueError, match=message):
            jax.eval_shape(fn, params, *args)


def test_optional_functions_are_left_out_unless_asked_for():
    network, _ = stochastic_resnet_network(**SMALL)
    assert network.turn_logits is None
    assert network.project is None and network.predict_projection is None


# ---------------------------------------------------------------------------------------------------
# In the training program, on pgx:2048 (observations [4, 4, 31]).

CONFIG = TrainConfig(
    env="pgx:2048",
    num_envs=4,
    batch_size=4,
    rollout_length=4,  # a window of K + td_steps + 1 = 4 steps: updates from the first iteration
    updates_per_iteration=1,
    num_unroll_steps=2,
    td_steps=1,
    replay_capacity=4 * 8,
    warmup_updates=0,
    consistency_loss_weight=1.0,
    network=NetworkConfig(
        kind="resnet",
        channels=4,
        num_blocks=1,
        projection_size=8,
        num_chance_outcomes=4,
        # 2048 states no bound on its rewards: the supports are set.
        value_support_size=20,
        reward_support_size=15,
    ),
    search=SearchConfig(policy="muzero", num_simulations=2),
)


def test_build_makes_a_stochastic_resnet_for_images_and_refuses_vectors():
    for kind in ("resnet", "auto"):
        config = dataclasses.replace(CONFIG, network=dataclasses.replace(CONFIG.network, kind=kind))
        components = build(config)
        assert isinstance(components.network, StochasticMuZeroNetwork)
        params = jax.eval_shape(components.init_params, jax.random.key(0))
        # The ResNet's modules: a stem, and an encoder stem on the two observations' 2 x 31 planes.
        assert params["stem"]["conv"]["conv"]["kernel"].shape == (3, 3, 31, 4)
        assert params["encoder"]["conv"]["conv"]["kernel"].shape == (3, 3, 62, 4)
        assert params["encoder_out"]["kernel"].shape == (4 * 4 * 4, 4)
    vectors = dataclasses.replace(CONFIG, env="gymnax:CartPole-v1")
    with pytest.raises(ValueError, match=r"'network.kind' = 'resnet' .*needs image observations"):
        build(vectors)
    value_prefix = dataclasses.replace(
        CONFIG, network=dataclasses.replace(CONFIG.network, value_prefix_horizon=5)
    )
    with pytest.raises(ValueError, match=r"'network.value_prefix_horizon' = 5 is invalid"):
        build(value_prefix)


def test_training_iterations_stay_finite_and_move_the_stochastic_parts():
    trainer = make_train(CONFIG, devices=jax.devices()[:1])
    state = trainer.init(0)
    params_0 = jax.device_get(state.train.params)
    records = []
    for _ in range(2):
        state, record = trainer.step(state)
        records.append(metrics.flatten(jax.device_get(record)))
    for term in ("q", "chance", "consistency", "value", "reward", "policy", "total"):
        values = np.array([r[f"loss/{term}"] for r in records]).ravel()
        assert np.all(np.isfinite(values)), term
    moved = jax.tree.map(
        lambda a, b: bool(np.any(np.asarray(a) != np.asarray(b))),
        params_0,
        jax.device_get(state.train.params),
    )
    for name in ("encoder_out", "chance_head", "q_head", "afterstate_dynamics", "chance_dynamics"):
        assert any(jax.tree.leaves(moved[name])), name


def test_bfloat16_computes_what_float32_does_to_its_precision(built):
    # The same float32 parameters (noise added, so that no head is zero) through both dtypes, every
    # function of the network. bfloat16 keeps 8 significant bits; through these few layers every
    # float32 output stays within 6% of its largest magnitude of float32's (measured: 0.2-3%),
    # while a wrong layer or a head read from the wrong state would be off by far more.
    network_32, params = built
    network_16, _ = stochastic_resnet_network(
        **SMALL, predict_turn=True, projection_size=P, dtype=jnp.bfloat16
    )
    params = perturb(params, seed=1)
    args = _inputs(4, seed=5)
    run = jax.jit(_run, static_argnums=0)
    outputs = {dtype: run(network, params, *args) for dtype, network in
               ((jnp.float32, network_32), (jnp.bfloat16, network_16))}  # fmt: skip
    states = lambda out: (out[1], out[3], out[5])  # the hidden states and the afterstate
    assert all(s.dtype == jnp.bfloat16 for s in states(outputs[jnp.bfloat16]))
    heads = lambda out: (out[0], out[2], out[4], out[6], out[7][0], out[7][2])
    compared = jax.tree_util.tree_leaves_with_path(heads(outputs[jnp.float32]))
    low = jax.tree.leaves(heads(outputs[jnp.bfloat16]))
    checked = 0
    for (path, x), y in zip(compared, low, strict=True):
        name = jax.tree_util.keystr(path)
        assert y.dtype == jnp.float32, name
        x, y = np.asarray(x), np.asarray(y)
        scale, error = np.abs(x).max(), np.abs(x - y).max()
        if scale == 0:  # predicted by no layer (the root's reward)
            assert error == 0, name
            continue
        assert scale > 0.1, (name, scale)
        assert 0 < error <= 0.06 * scale, (name, error, scale)  # 0: not computed in bfloat16
        checked += 1
    assert checked >= 7, checked
