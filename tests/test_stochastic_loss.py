"""The Stochastic MuZero loss against an independent reference: a Python loop over examples and steps.

The reference quantises the encoder's output by comparing it with its maximum, scales gradients with
the pseudocode's formula, and encodes targets with textbook formulas; it shares no code with
``mz_jax.core.stochastic_loss`` or ``mz_jax.core.loss``.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _hl_gauss import reference_phi_gauss
from _target_params import assert_target_params_only_encode_targets

from mz_jax import Batch, ModelOutput
from mz_jax.core.stochastic_loss import make_stochastic_loss_fn
from mz_jax.core.unroll import chance_code
from mz_jax.types import AfterstateOutput, MuZeroNetwork, StochasticMuZeroNetwork

OBS, ACTIONS, HIDDEN, CHANCE, VALUE_BINS, REWARD_BINS = 3, 4, 5, 3, 11, 7


def tiny_network() -> StochasticMuZeroNetwork:
    """A Stochastic MuZero network in plain jax.numpy: the loss needs no Flax."""

    def predict(params, s):
        return s @ params["value"], s @ params["policy"]

    def initial_inference(params, observation):
        s = jnp.tanh(observation @ params["repr"])
        value, policy = predict(params, s)
        return ModelOutput(value, jnp.zeros((*s.shape[:-1], REWARD_BINS)), policy), s

    def afterstate_inference(params, state, action):
        x = jnp.concatenate([state, jax.nn.one_hot(action, ACTIONS)], axis=-1)
        afterstate = jnp.tanh(x @ params["phi"])
        output = AfterstateOutput(afterstate @ params["q"], afterstate @ params["sigma"])
        return output, afterstate

    def recurrent_inference(params, afterstate, code):
        s = jnp.tanh(jnp.concatenate([afterstate, code], axis=-1) @ params["g"])
        value, policy = predict(params, s)
        return ModelOutput(value, s @ params["reward"], policy), s

    def encode_chance(params, observation, next_observation):
        return jnp.concatenate([observation, next_observation], axis=-1) @ params["encoder"]

    return StochasticMuZeroNetwork(
        initial_inference, afterstate_inference, recurrent_inference, encode_chance, CHANCE
    )


def tiny_params(seed=0):
    shapes = {
        "repr": (OBS, HIDDEN),
        "phi": (HIDDEN + ACTIONS, HIDDEN),
        "q": (HIDDEN, VALUE_BINS),
        "sigma": (HIDDEN, CHANCE),
        "g": (HIDDEN + CHANCE, HIDDEN),
        "value": (HIDDEN, VALUE_BINS),
        "reward": (HIDDEN, REWARD_BINS),
        "policy": (HIDDEN, ACTIONS),
        "encoder": (2 * OBS, CHANCE),
    }
    keys = jax.random.split(jax.random.key(seed), len(shapes))
    return {n: jax.random.normal(k, s) for k, (n, s) in zip(keys, shapes.items(), strict=True)}


def random_batch(seed, batch_size, num_unroll_steps, observation_mask=False):
    rng = np.random.default_rng(seed)
    b, k = batch_size, num_unroll_steps
    policy = rng.dirichlet(np.ones(ACTIONS), size=(b, k + 1)).astype(np.float32)
    policy[:, -1] = 0.0
    return Batch(
        observation=jnp.asarray(rng.normal(size=(b, OBS)), jnp.float32),
        actions=jnp.asarray(rng.integers(0, ACTIONS, size=(b, k)), jnp.int32),
        target_value=jnp.asarray(rng.normal(scale=6.0, size=(b, k + 1)), jnp.float32),
        target_reward=jnp.asarray(rng.normal(scale=2.0, size=(b, k + 1)), jnp.float32),
        target_policy=jnp.asarray(policy),
        mask=jnp.asarray(rng.random((b, k + 1)) < 0.8, jnp.float32),
        weight=jnp.asarray(rng.uniform(0.2, 1.0, size=b), jnp.float32),
        next_observation=jnp.asarray(rng.normal(size=(b, k, OBS)), jnp.float32),
        observation_mask=(
            jnp.asarray(rng.random((b, k)) < 0.7, jnp.float32) if observation_mask else None
        ),
    )


# --- The reference --------------------------------------------------------------------------------


def formula_scale_gradient(x, scale):
    return x * scale + jax.lax.stop_gradient(x) * (1 - scale)


def reference_phi(x, num_bins, eps=0.001):
    support = (num_bins - 1) // 2
    y = jnp.clip(jnp.sign(x) * (jnp.sqrt(jnp.abs(x) + 1) - 1) + eps * x, -support, support)
    low = jnp.floor(y)
    probs = jnp.zeros(num_bins).at[(low + support).astype(int)].add(1 - (y - low))
    return probs.at[jnp.minimum(low + support + 1, num_bins - 1).astype(int)].add(y - low)


def reference_ce(logits, probs):
    return -jnp.sum(probs * (logits - jax.scipy.special.logsumexp(logits)))


def reference_code(logits, straight_through):
    """The one-hot of the largest logit, with the gradient passed to the logits or their softmax;
    returns the code, what the commitment term compares with it, and the one-hot."""
    soft = jnp.exp(logits - jax.scipy.special.logsumexp(logits))
    hard = (soft == jnp.max(soft)).astype(jnp.float32)
    encoding = logits if straight_through == "logits" else soft
    return encoding - jax.lax.stop_gradient(encoding) + jax.lax.stop_gradient(hard), encoding, hard


def reference_loss(
    params,
    batch,
    value_weight=1.0,
    reward_weight=1.0,
    beta=1.0,
    hidden_scale=0.5,
    straight_through="softmax",
    outcome=None,
    value_sigma=0.0,
):
    if value_sigma > 0:
        value_phi = lambda x: reference_phi_gauss(x, VALUE_BINS, value_sigma)
    else:
        value_phi = lambda x: reference_phi(x, VALUE_BINS)
    net = tiny_network()
    b_size, k_steps = batch.actions.shape
    obs_mask = batch.mask[:, 1:] if batch.observation_mask is None else batch.observation_mask
    total = 0.0
    for b in range(b_size):
        observations = [batch.observation[b]] + [
            batch.next_observation[b, k] for k in range(k_steps)
        ]
        out, state = net.initial_inference(params, batch.observation[b : b + 1])
        example = batch.mask[b, 0] * (
            value_weight * reference_ce(out.value_logits[0], value_phi(batch.target_value[b, 0]))
            + reference_ce(out.policy_logits[0], batch.target_policy[b, 0])
        )
        for k in range(1, k_steps + 1):
            after_out, afterstate = net.afterstate_inference(
                params, state, batch.actions[b : b + 1, k - 1]
            )
            if outcome is None:
                logits = net.encode_chance(
                    params, observations[k - 1][None], observations[k][None]
                )[0]
                code, encoding, hard = reference_code(logits, straight_through)
            else:  # the environment's outcome: a fixed one-hot, nothing to commit to
                label = outcome(observations[k - 1], batch.actions[b, k - 1], observations[k])
                code = encoding = hard = (jnp.arange(CHANCE) == label).astype(jnp.float32)
            out, new_state = net.recurrent_inference(params, afterstate, code[None])
            state = formula_scale_gradient(new_state, hidden_scale)
            muzero = batch.mask[b, k] * (
                value_weight
                * reference_ce(out.value_logits[0], value_phi(batch.target_value[b, k]))
                + reference_ce(out.policy_logits[0], batch.target_policy[b, k])
                + reward_weight
                * reference_ce(
                    out.reward_logits[0], reference_phi(batch.target_reward[b, k], REWARD_BINS)
                )
            )
            q = (
                batch.mask[b, k - 1]
                * value_weight
                * reference_ce(after_out.value_logits[0], value_phi(batch.target_value[b, k - 1]))
            )
            chance = reference_ce(after_out.chance_logits[0], hard)
            commitment = jnp.sum((hard - encoding) ** 2)
            step = muzero + q + obs_mask[b, k - 1] * (chance + beta * commitment)
            example += formula_scale_gradient(step, 1.0 / k_steps)
        total += batch.weight[b] * example
    return total / b_size


@pytest.mark.parametrize(
    "kwargs, observation_mask",
    [
        ({}, False),
        ({"value_weight": 0.25, "reward_weight": 2.0, "beta": 0.3, "hidden_scale": 0.3}, True),
        ({"beta": 0.5, "straight_through": "logits"}, True),
        ({"value_sigma": 0.75}, False),  # HL-Gauss state and afterstate value targets
    ],
)
@pytest.mark.parametrize("unroll", [1, True])  # one loop body; the K steps as straight-line code
def test_loss_and_gradients_match_reference_loop(kwargs, observation_mask, unroll):
    params = tiny_params()
    batch = random_batch(0, batch_size=4, num_unroll_steps=3, observation_mask=observation_mask)
    loss_fn = make_stochastic_loss_fn(
        tiny_network(),
        value_loss_weight=kwargs.get("value_weight", 1.0),
        reward_loss_weight=kwargs.get("reward_weight", 1.0),
        commitment_loss_weight=kwargs.get("beta", 1.0),
        hidden_grad_scale=kwargs.get("hidden_scale", 0.5),
        straight_through=kwargs.get("straight_through", "softmax"),
        value_target_sigma=kwargs.get("value_sigma", 0.0),
        unroll=unroll,
    )
    (loss, aux), grads = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))(params, batch)
    # Jitted: the loop is traced once into one program (eagerly, every op compiles on its own).
    reference = jax.jit(jax.value_and_grad(functools.partial(reference_loss, **kwargs)))
    ref_loss, ref_grads = reference(params, batch)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    for name in params:
        np.testing.assert_allclose(grads[name], ref_grads[name], rtol=1e-4, atol=1e-6, err_msg=name)
    # Every part of the model is trained: the encoder through the straight-through code and the
    # commitment term, sigma through the chance term, Q through its value term.
    for name in ("encoder", "sigma", "q", "phi", "g"):
        assert np.abs(np.asarray(grads[name])).sum() > 0, name
    assert set(aux.losses) >= {"value", "reward", "policy", "q", "chance", "commitment", "total"}


def test_chance_code_is_one_hot_with_the_identity_gradient():
    logits = jnp.array([[0.3, 2.0, -1.0, 0.5], [4.0, 1.0, 1.0, -2.0]])
    soft = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    for straight_through in ("softmax", "logits"):
        code = chance_code(logits, straight_through)
        np.testing.assert_array_equal(code.code, [[0, 1, 0, 0], [1, 0, 0, 0]])
        np.testing.assert_allclose(code.soft, soft, rtol=1e-6)
    np.testing.assert_allclose(chance_code(logits, "softmax").encoding, soft, rtol=1e-6)
    np.testing.assert_array_equal(chance_code(logits, "logits").encoding, logits)
    # d code / d encoding is the identity. Through the softmax, the Jacobian with respect to the
    # logits is the softmax Jacobian diag(p) - p p^T, written out by hand; on the logits it is I.
    for row in range(2):
        for straight_through, expected in (
            ("softmax", np.diag(soft[row]) - np.outer(soft[row], soft[row])),
            ("logits", np.eye(4)),
        ):
            code = lambda x, mode=straight_through: chance_code(x[None], mode).code[0]
            jacobian = jax.jacobian(code)(logits[row])
            np.testing.assert_allclose(jacobian, expected, atol=1e-6)


def test_a_code_the_encoder_no_longer_picks_gets_a_gradient_only_through_the_logits():
    # Logits far apart, as a trained encoder's are (their spread was about 9 on backgammon): the
    # third code has probability e^-20. A loss that would rather have it picked, d loss / d code =
    # -e_3, moves its logit by 1 per unit step through the logits and by ~p_3 through the softmax.
    logits = jnp.array([10.0, 9.5, -10.0])
    want_third = lambda x, mode: -chance_code(x, mode).code[2]
    through_logits = jax.grad(want_third)(logits, "logits")
    through_softmax = jax.grad(want_third)(logits, "softmax")
    np.testing.assert_allclose(through_logits, [0.0, 0.0, -1.0])
    assert np.abs(through_softmax).max() < 1e-8


def test_chance_code_is_exactly_one_hot_however_large_the_logits():
    # Nothing holds the encoder's logits near the codebook when the commitment term is off (they
    # grew to thousands on backgammon). Past 2^24, 1 is below float32's spacing, so the form
    # ``x + sg(one_hot - x)`` gives 0 where the code is 1.
    logits = jnp.array([[3.0e7, -2.9e7, 12.1], [-1.5e3, 2.0e8, -7.0e5]], jnp.float32)
    for straight_through in ("softmax", "logits"):
        code = np.asarray(chance_code(logits, straight_through).code)
        assert np.array_equal(code, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), straight_through


def test_chance_code_refuses_an_unknown_straight_through():
    with pytest.raises(ValueError, match="straight_through must be one of"):
        chance_code(jnp.zeros(3), "sigmoid")
    with pytest.raises(ValueError, match="'sigmoid'"):
        make_stochastic_loss_fn(tiny_network(), straight_through="sigmoid")


def test_chance_code_ties_go_to_the_lowest_index():
    np.testing.assert_array_equal(chance_code(jnp.array([1.0, 3.0, 3.0])).code, [0, 1, 0])


def test_refuses_a_deterministic_network_and_a_batch_without_next_observations():
    deterministic = MuZeroNetwork(lambda p, o: None, lambda p, h, a: None)
    with pytest.raises(ValueError, match="StochasticMuZeroNetwork"):
        make_stochastic_loss_fn(deterministic)
    with pytest.raises(ValueError, match="commitment_loss_weight must be >= 0"):
        make_stochastic_loss_fn(tiny_network(), commitment_loss_weight=-1.0)
    batch = random_batch(0, 2, 2)._replace(next_observation=None)
    with pytest.raises(ValueError, match="next_observation"):
        make_stochastic_loss_fn(tiny_network())(tiny_params(), batch)


def test_masked_out_chance_steps_do_not_train_the_encoder():
    """With every transition's observation masked out and no state after step 0 in the data, the
    encoder gets no gradient: the codes then only feed masked terms."""
    batch = random_batch(1, 3, 2, observation_mask=True)
    batch = batch._replace(
        mask=batch.mask.at[:, 1:].set(0.0), observation_mask=jnp.zeros_like(batch.observation_mask)
    )
    loss_fn = make_stochastic_loss_fn(tiny_network())
    grads = jax.jit(jax.grad(lambda p: loss_fn(p, batch)[0]))(tiny_params())
    np.testing.assert_array_equal(grads["encoder"], 0.0)
    assert np.abs(np.asarray(grads["q"])).sum() > 0  # Q of step 0 follows a real action


def test_code_usage_is_the_entropy_of_the_mean_code_and_enters_the_loss_as_a_bonus():
    from mz_jax.core.stochastic_loss import code_usage_entropy

    soft = jnp.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [[0.0, 0.0, 1.0], [0.2, 0.2, 0.6]]])
    # The last transition is masked out: the mean of the other three is uniform, entropy log 3.
    mask = jnp.array([[1.0, 1.0], [1.0, 0.0]])
    np.testing.assert_allclose(code_usage_entropy(soft, mask), np.log(3.0), rtol=1e-6)
    np.testing.assert_allclose(code_usage_entropy(soft[:1, :1], mask[:1, :1]), 0.0, atol=1e-6)
    params, batch = tiny_params(), random_batch(2, 3, 2)
    plain, aux = jax.jit(make_stochastic_loss_fn(tiny_network()))(params, batch)
    bonus, _ = jax.jit(make_stochastic_loss_fn(tiny_network(), code_usage_weight=0.5))(
        params, batch
    )
    np.testing.assert_allclose(bonus, plain - 0.5 * aux.losses["code_usage"], rtol=1e-6)
    assert 0.0 <= float(aux.losses["code_usage"]) <= np.log(CHANCE) + 1e-6


def toy_outcome(observation, action, next_observation):
    """An outcome the transition names: which of the next observation's entries is largest,
    shifted by the action (so every argument counts)."""
    return ((jnp.argmax(next_observation) + action) % CHANCE).astype(jnp.int32)


@pytest.mark.parametrize("unroll", [1, True])
def test_environment_outcomes_replace_the_encoder_codes(unroll):
    """With ``chance_outcome``, the chance dynamics reads its one-hots and σ is trained on them:
    the reference loop with those codes gives the loss and gradients, the encoder gets no
    gradient, and the commitment term is 0."""
    params = tiny_params(3)
    batch = random_batch(3, batch_size=4, num_unroll_steps=3, observation_mask=True)
    loss_fn = make_stochastic_loss_fn(
        tiny_network(),
        value_loss_weight=0.5,
        commitment_loss_weight=0.7,
        chance_outcome=toy_outcome,
        unroll=unroll,
    )
    (loss, aux), grads = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))(params, batch)
    kwargs = {"value_weight": 0.5, "beta": 0.7, "outcome": toy_outcome}
    # Jitted: the loop is traced once into one program (eagerly, every op compiles on its own).
    reference = jax.jit(jax.value_and_grad(functools.partial(reference_loss, **kwargs)))
    ref_loss, ref_grads = reference(params, batch)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    for name in params:
        np.testing.assert_allclose(grads[name], ref_grads[name], rtol=1e-4, atol=1e-6, err_msg=name)
    np.testing.assert_array_equal(grads["encoder"], 0.0)
    assert np.abs(np.asarray(grads["sigma"])).sum() > 0
    assert float(aux.losses["commitment"]) == 0.0
    with pytest.raises(ValueError, match="chance_outcome must be None or a function"):
        make_stochastic_loss_fn(tiny_network(), chance_outcome=3)


PROJECTION = 4


def projected_network_and_params(seed=0):
    """The tiny network with EfficientZero's projection and prediction head (linear maps)."""
    network = tiny_network()._replace(
        project=lambda p, s: s @ p["proj"], predict_projection=lambda p, x: x @ p["head"]
    )
    params = tiny_params(seed)
    key_proj, key_head = jax.random.split(jax.random.key(seed + 100))
    params["proj"] = jax.random.normal(key_proj, (HIDDEN, PROJECTION))
    params["head"] = jax.random.normal(key_head, (PROJECTION, PROJECTION))
    return network, params


def consistency_by_hand(params, target_params, batch):
    """mean_b(weight_b Σ_k observation_mask_bk (-cos(head(proj(s_k)), proj(repr_target(o_k))))) in
    numpy, with s_k the states the afterstate and chance dynamics unroll to from the encoder's
    one-hot codes."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    t = {k: np.asarray(v, np.float64) for k, v in target_params.items()}
    observations = np.asarray(batch.observation, np.float64)
    following = np.asarray(batch.next_observation, np.float64)
    total = 0.0
    for b in range(batch.actions.shape[0]):
        state, previous, term = np.tanh(observations[b] @ p["repr"]), observations[b], 0.0
        for k in range(batch.actions.shape[1]):
            action = np.eye(ACTIONS)[int(batch.actions[b, k])]
            afterstate = np.tanh(np.concatenate([state, action]) @ p["phi"])
            logits = np.concatenate([previous, following[b, k]]) @ p["encoder"]
            code = np.eye(CHANCE)[np.argmax(logits)]
            state = np.tanh(np.concatenate([afterstate, code]) @ p["g"])
            online = state @ p["proj"] @ p["head"]
            target = np.tanh(following[b, k] @ t["repr"]) @ t["proj"]
            cos = online @ target / (np.linalg.norm(online) * np.linalg.norm(target))
            term += float(batch.observation_mask[b, k]) * -cos
            previous = following[b, k]
        total += float(batch.weight[b]) * term
    return total / batch.actions.shape[0]


def test_consistency_targets_encoded_with_target_parameters_by_hand():
    network, params = projected_network_and_params()
    _, target_params = projected_network_and_params(seed=7)
    batch = random_batch(4, batch_size=3, num_unroll_steps=3, observation_mask=True)
    loss_fn = make_stochastic_loss_fn(network, consistency_loss_weight=1.5)
    _, aux = jax.jit(loss_fn)(params, batch, target_params)
    expected = consistency_by_hand(params, target_params, batch)
    assert abs(expected - consistency_by_hand(params, params, batch)) > 1e-2  # encoders differ
    np.testing.assert_allclose(aux.losses["consistency"], expected, rtol=1e-5)
    _, aux_current = jax.jit(loss_fn)(params, batch)
    np.testing.assert_allclose(
        aux_current.losses["consistency"], consistency_by_hand(params, params, batch), rtol=1e-5
    )
    assert_target_params_only_encode_targets(loss_fn, params, target_params, batch)
