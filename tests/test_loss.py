"""The MuZero loss against an independent reference: a Python loop over examples and unroll steps."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _hl_gauss import reference_phi_gauss

import mz_jax
from mz_jax import Batch, ModelOutput, MuZeroNetwork, make_loss_fn

OBS, ACTIONS, HIDDEN, VALUE_BINS, REWARD_BINS = 3, 4, 5, 11, 7


def tiny_network() -> MuZeroNetwork:
    """A MuZero network in plain jax.numpy, to show the loss needs no Flax."""

    def predict(params, s):
        return s @ params["value"], s @ params["policy"]

    def initial_inference(params, observation):
        s = jnp.tanh(observation @ params["repr"])
        value, policy = predict(params, s)
        reward = jnp.zeros((*s.shape[:-1], REWARD_BINS))
        return ModelOutput(value, reward, policy), s

    def recurrent_inference(params, hidden, action):
        x = jnp.concatenate([hidden, jax.nn.one_hot(action, ACTIONS)], axis=-1)
        s = jnp.tanh(x @ params["dynamics"])
        value, policy = predict(params, s)
        return ModelOutput(value, s @ params["reward"], policy), s

    return MuZeroNetwork(initial_inference, recurrent_inference)


def tiny_params(seed=0):
    keys = jax.random.split(jax.random.key(seed), 5)
    shapes = {
        "repr": (OBS, HIDDEN),
        "dynamics": (HIDDEN + ACTIONS, HIDDEN),
        "value": (HIDDEN, VALUE_BINS),
        "reward": (HIDDEN, REWARD_BINS),
        "policy": (HIDDEN, ACTIONS),
    }
    return {n: jax.random.normal(k, s) for k, (n, s) in zip(keys, shapes.items(), strict=True)}


def random_batch(seed, batch_size, num_unroll_steps):
    rng = np.random.default_rng(seed)
    b, k = batch_size, num_unroll_steps
    policy = rng.dirichlet(np.ones(ACTIONS), size=(b, k + 1)).astype(np.float32)
    policy[:, -1] = 0.0  # an absorbing state: no policy loss
    return Batch(
        observation=jnp.asarray(rng.normal(size=(b, OBS)), jnp.float32),
        actions=jnp.asarray(rng.integers(0, ACTIONS, size=(b, k)), jnp.int32),
        target_value=jnp.asarray(rng.normal(scale=6.0, size=(b, k + 1)), jnp.float32),
        target_reward=jnp.asarray(rng.normal(scale=2.0, size=(b, k + 1)), jnp.float32),
        target_policy=jnp.asarray(policy),
        mask=jnp.asarray(rng.random((b, k + 1)) < 0.8, jnp.float32),
        weight=jnp.asarray(rng.uniform(0.2, 1.0, size=b), jnp.float32),
    )


# --- The reference: written independently of mz_jax.core.transforms and mz_jax.core.loss. ----------------------


def formula_scale_gradient(x, scale):
    """The MuZero pseudocode's definition."""
    return x * scale + jax.lax.stop_gradient(x) * (1 - scale)


def reference_phi(x, num_bins, eps=0.001):
    """Categorical target by the textbook formulas: h, clip, then floor/ceil weights."""
    support = (num_bins - 1) // 2
    y = jnp.sign(x) * (jnp.sqrt(jnp.abs(x) + 1) - 1) + eps * x
    y = jnp.clip(y, -support, support)
    low = jnp.floor(y)
    p_high = y - low
    probs = jnp.zeros(num_bins)
    probs = probs.at[(low + support).astype(int)].add(1 - p_high)
    return probs.at[jnp.minimum(low + support + 1, num_bins - 1).astype(int)].add(p_high)


def reference_ce(logits, probs):
    return -jnp.sum(probs * (logits - jax.scipy.special.logsumexp(logits)))


def reference_loss(
    params,
    batch,
    value_loss_weight=1.0,
    reward_loss_weight=1.0,
    weight_decay=0.0,
    hidden_scale=0.5,
    value_target_sigma=0.0,
):
    net = tiny_network()
    b_size, k_steps = batch.actions.shape
    total = 0.0
    for b in range(b_size):
        out, hidden = net.initial_inference(params, batch.observation[b : b + 1])
        example = 0.0
        for k in range(k_steps + 1):
            if k > 0:
                out, state = net.recurrent_inference(
                    params, hidden, batch.actions[b : b + 1, k - 1]
                )
                hidden = formula_scale_gradient(state, hidden_scale)
            if value_target_sigma > 0:
                value_target = reference_phi_gauss(
                    batch.target_value[b, k], VALUE_BINS, value_target_sigma
                )
            else:
                value_target = reference_phi(batch.target_value[b, k], VALUE_BINS)
            step = value_loss_weight * reference_ce(out.value_logits[0], value_target)
            step += reference_ce(out.policy_logits[0], batch.target_policy[b, k])
            if k > 0:
                step += reward_loss_weight * reference_ce(
                    out.reward_logits[0], reference_phi(batch.target_reward[b, k], REWARD_BINS)
                )
                step = formula_scale_gradient(step, 1.0 / k_steps)
            example += batch.mask[b, k] * step
        total += batch.weight[b] * example
    l2 = sum(jnp.sum(p**2) for p in params.values())
    return total / b_size + weight_decay * l2 / 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {
            "value_loss_weight": 0.25,
            "reward_loss_weight": 3.0,
            "weight_decay": 1e-2,
            "hidden_scale": 0.3,
        },
        {"value_target_sigma": 0.75},  # HL-Gauss value targets
    ],
)
@pytest.mark.parametrize("unroll", [1, True])  # one loop body; the K steps as straight-line code
def test_loss_and_gradients_match_reference_loop(kwargs, unroll):
    params, batch = tiny_params(), random_batch(0, batch_size=4, num_unroll_steps=3)
    hidden_scale = kwargs.get("hidden_scale", 0.5)
    loss_fn = make_loss_fn(
        tiny_network(),
        value_loss_weight=kwargs.get("value_loss_weight", 1.0),
        reward_loss_weight=kwargs.get("reward_loss_weight", 1.0),
        weight_decay=kwargs.get("weight_decay", 0.0),
        hidden_grad_scale=hidden_scale,
        value_target_sigma=kwargs.get("value_target_sigma", 0.0),
        unroll=unroll,
    )
    (loss, _), grads = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))(params, batch)
    # Jitted: the loop is traced once into one program (eagerly, every op compiles on its own).
    reference = jax.jit(jax.value_and_grad(functools.partial(reference_loss, **kwargs)))
    ref_loss, ref_grads = reference(params, batch)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    for name in params:
        np.testing.assert_allclose(grads[name], ref_grads[name], rtol=1e-4, atol=1e-6, err_msg=name)


def test_one_over_k_acts_on_the_gradient_only():
    """Value: unscaled sum over steps. Gradient of the later steps: carries 1/K."""
    params, batch = tiny_params(1), random_batch(1, batch_size=2, num_unroll_steps=4)
    batch = batch._replace(mask=jnp.ones_like(batch.mask))
    loss_fn = make_loss_fn(tiny_network())
    loss, aux = jax.jit(loss_fn)(params, batch)
    np.testing.assert_allclose(
        loss, aux.losses["value"] + aux.losses["reward"] + aux.losses["policy"], rtol=1e-6
    )
    # Only step 2 counts: its gradient w.r.t. the prediction heads is 1/K of the unscaled one.
    only_step_2 = batch._replace(mask=jnp.zeros_like(batch.mask).at[:, 2].set(1.0))
    grads = jax.jit(jax.grad(lambda p: loss_fn(p, only_step_2)[0]))(params)

    def unscaled(p):  # the same step written without any gradient scaling
        net = tiny_network()
        total = 0.0
        for b in range(2):
            _, s = net.initial_inference(p, batch.observation[b : b + 1])
            _, s = net.recurrent_inference(p, s, batch.actions[b : b + 1, 0])
            out, _ = net.recurrent_inference(p, s, batch.actions[b : b + 1, 1])
            step = reference_ce(out.value_logits[0], reference_phi(batch.target_value[b, 2], 11))
            step += reference_ce(out.policy_logits[0], batch.target_policy[b, 2])
            total += batch.weight[b] * step
        return total / 2

    np.testing.assert_allclose(
        grads["value"], jax.jit(jax.grad(unscaled))(params)["value"] / 4, rtol=1e-4, atol=1e-7
    )


def test_step_zero_reward_is_not_trained_and_mask_and_weight_apply():
    params, batch = tiny_params(2), random_batch(2, batch_size=3, num_unroll_steps=2)
    loss_fn = jax.jit(make_loss_fn(tiny_network()))
    loss, _ = loss_fn(params, batch)
    changed = batch._replace(target_reward=batch.target_reward.at[:, 0].set(1e3))
    np.testing.assert_array_equal(loss_fn(params, changed)[0], loss)
    masked = batch._replace(mask=jnp.zeros_like(batch.mask))
    assert loss_fn(params, masked)[0] == 0.0
    doubled = batch._replace(weight=2 * batch.weight)
    np.testing.assert_allclose(loss_fn(params, doubled)[0], 2 * loss, rtol=1e-6)


def test_priority_is_decoded_value_error_at_step_zero():
    params, batch = tiny_params(3), random_batch(3, batch_size=5, num_unroll_steps=1)
    _, aux = make_loss_fn(tiny_network())(params, batch)
    logits = tiny_network().initial_inference(params, batch.observation)[0].value_logits
    probs = jax.nn.softmax(logits)
    y = probs @ jnp.arange(-5.0, 6.0)
    # Textbook closed-form inverse of h, in float64.
    eps = 0.001
    y64 = np.asarray(y, np.float64)
    x = np.sign(y64) * (((np.sqrt(1 + 4 * eps * (np.abs(y64) + 1 + eps)) - 1) / (2 * eps)) ** 2 - 1)
    np.testing.assert_allclose(aux.priority, np.abs(x - batch.target_value[:, 0]), rtol=1e-4)


def test_remat_and_vmap_give_the_same_result():
    params, batch = tiny_params(4), random_batch(4, batch_size=3, num_unroll_steps=3)
    plain = jax.jit(jax.value_and_grad(make_loss_fn(tiny_network()), has_aux=True))(params, batch)
    remat = jax.jit(jax.value_and_grad(make_loss_fn(tiny_network(), remat=True), has_aux=True))(
        params, batch
    )
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), plain, remat)
    # vmap over an ensemble of two parameter sets.
    ensemble = jax.tree.map(lambda a, b: jnp.stack([a, b]), params, tiny_params(5))
    losses, _ = jax.jit(jax.vmap(make_loss_fn(tiny_network()), in_axes=(0, None)))(ensemble, batch)
    np.testing.assert_allclose(losses[0], plain[0][0], rtol=1e-6)


def test_program_size_is_constant_in_unroll_length():
    loss_fn = make_loss_fn(tiny_network())
    grad_fn = jax.grad(lambda p, b: loss_fn(p, b)[0])
    sizes = {}
    for k in (5, 40):
        batch = random_batch(0, batch_size=2, num_unroll_steps=k)
        sizes[k] = len(jax.jit(grad_fn).lower(tiny_params(), batch).as_text())
    assert abs(sizes[40] - sizes[5]) / sizes[5] < 0.10, sizes


@pytest.mark.parametrize(
    ("kind", "unroll_learner", "unrolled"),
    [
        ("mlp", None, False),  # None: a plain MLP keeps one loop body
        ("mlp", True, True),
        ("resnet", None, True),  # None: convolutions are unrolled
        ("resnet", False, False),
    ],
)
def test_training_traces_the_unroll_as_its_config_says(kind, unroll_learner, unrolled):
    image = kind == "resnet"
    config = mz_jax.TrainConfig(
        env="gymnax:Breakout-MinAtar" if image else "gymnax:CartPole-v1",
        unroll_learner=unroll_learner,
        network=mz_jax.NetworkConfig(
            kind=kind, hidden_sizes=(8,), latent_size=8, channels=2, num_blocks=1
        ),
    )
    components = mz_jax.build(config)
    assert components.unroll_learner == unrolled
    k, shape = config.num_unroll_steps, components.env.observation_shape
    num_actions = components.env.num_actions
    batch = mz_jax.Batch(
        observation=jnp.zeros((2, *shape)),
        actions=jnp.zeros((2, k), jnp.int32),
        target_value=jnp.zeros((2, k + 1)),
        target_reward=jnp.zeros((2, k + 1)),
        target_policy=jnp.full((2, k + 1, num_actions), 1 / num_actions),
        mask=jnp.ones((2, k + 1)),
        weight=jnp.ones((2,)),
    )
    params = components.init_params(jax.random.key(0))
    grad_fn = jax.grad(lambda p: components.loss_fn(p, batch)[0])
    # One loop body holds while loops (the unroll's and its gradient's); the unrolled K steps none.
    assert ("stablehlo.while" in jax.jit(grad_fn).lower(params).as_text()) != unrolled


def test_works_with_flax_networks():
    network, params = mz_jax.networks.make_mlp_network(
        jax.random.key(0),
        observation_shape=(OBS,),
        num_actions=ACTIONS,
        hidden_sizes=(8,),
        latent_size=8,
        value_support_size=5,
        reward_support_size=3,
    )
    batch = random_batch(6, batch_size=2, num_unroll_steps=2)
    (loss, aux), grads = jax.jit(jax.value_and_grad(make_loss_fn(network), has_aux=True))(
        params, batch
    )
    assert np.isfinite(loss) and aux.priority.shape == (2,)
    assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(grads))
    assert jax.tree.structure(grads) == jax.tree.structure(params)


@pytest.mark.parametrize(
    ("field", "bad", "message"),
    [
        ("actions", jnp.zeros((4, 3, 1), jnp.int32), "batch.actions"),
        ("actions", jnp.zeros((4, 3), jnp.float32), "integer"),
        ("target_value", jnp.zeros((4, 3)), "batch.target_value"),
        ("mask", jnp.zeros((4, 5)), "batch.mask"),
        ("weight", jnp.zeros((3,)), "batch.weight"),
        ("target_policy", jnp.zeros((4, 4)), "batch.target_policy"),
    ],
)
def test_bad_batch_shapes_name_the_field(field, bad, message):
    batch = random_batch(0, batch_size=4, num_unroll_steps=3)._replace(**{field: bad})
    with pytest.raises(ValueError, match=message):
        make_loss_fn(tiny_network())(tiny_params(), batch)


def test_the_config_field_gives_the_training_loss_hl_gauss_value_targets():
    # build(config).loss_fn's value term is make_loss_fn's with the same sigma (which the reference
    # loop above checks), and not the two-hot one: the field reaches the training loss.
    config = mz_jax.TrainConfig(
        env="gymnax:CartPole-v1", network=mz_jax.NetworkConfig(hidden_sizes=(8,), latent_size=8)
    )
    components = mz_jax.build(config.replace(value_target_sigma=0.75))
    two_hot = mz_jax.build(config)
    params = components.init_params(jax.random.key(0))
    # Random output layers (they start at zero, where every target gives the same cross-entropy).
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.key(1), len(leaves))
    params = jax.tree.unflatten(
        tree, [p + 0.3 * jax.random.normal(k, p.shape) for p, k in zip(leaves, keys, strict=True)]
    )
    rng = np.random.default_rng(0)
    k, num_actions = config.num_unroll_steps, components.env.num_actions
    batch = Batch(
        observation=jnp.asarray(rng.normal(size=(4, 4)), jnp.float32),
        actions=jnp.asarray(rng.integers(0, num_actions, size=(4, k)), jnp.int32),
        target_value=jnp.asarray(rng.uniform(0, 60, size=(4, k + 1)), jnp.float32),
        target_reward=jnp.ones((4, k + 1)),
        target_policy=jnp.full((4, k + 1, num_actions), 1 / num_actions),
        mask=jnp.ones((4, k + 1)),
        weight=jnp.ones((4,)),
    )
    value = lambda loss_fn: float(loss_fn(params, batch)[1].losses["value"])
    expected = value(make_loss_fn(components.network, value_target_sigma=0.75))
    np.testing.assert_allclose(value(components.loss_fn), expected, rtol=1e-6)
    assert abs(value(two_hot.loss_fn) - expected) > 1e-3
