"""EfficientZero's terms (consistency loss, value prefix, reanalyse, off-policy correction) and the
fixes that came with them. Expected values are computed by hand or by numpy references."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _target_params import assert_target_params_only_encode_targets

from mz_jax.config import search
from mz_jax.core import transforms
from mz_jax.core.loss import make_loss_fn, value_prefix_matrix
from mz_jax.mcts import model as search_model
from mz_jax.mcts import policies as mcts
from mz_jax.training import reanalyse
from mz_jax.types import Batch, ModelOutput, MuZeroNetwork, Trajectory

BINS = 7  # supports [-3, 3]


# ---------------------------------------------------------------------------------------------------
# A tiny linear network, written with plain jax.numpy so the loss can be recomputed in numpy.


def _linear_network(num_actions=2):
    def initial_inference(params, observation):
        hidden = observation @ params["rep"]
        return _outputs(hidden, num_actions), hidden

    def recurrent_inference(params, hidden, action):
        next_hidden = hidden @ params["dyn"] + params["act"][action]
        return _outputs(next_hidden, num_actions), next_hidden

    return MuZeroNetwork(
        initial_inference,
        recurrent_inference,
        project=lambda params, hidden: hidden @ params["proj"],
        predict_projection=lambda params, z: z @ params["head"],
    )


def _outputs(hidden, num_actions):
    batch = hidden.shape[0]
    return ModelOutput(
        value_logits=jnp.zeros((batch, BINS)),
        reward_logits=jnp.zeros((batch, BINS)),
        policy_logits=jnp.zeros((batch, num_actions)),
    )


def _params(seed=0):
    rng = np.random.default_rng(seed)
    shapes = {"rep": (2, 3), "dyn": (3, 3), "act": (2, 3), "proj": (3, 4), "head": (4, 4)}
    return {k: jnp.asarray(rng.normal(size=s), jnp.float32) for k, s in shapes.items()}


def _batch(k=2, b=2, seed=1):
    rng = np.random.default_rng(seed)
    return Batch(
        observation=jnp.asarray(rng.normal(size=(b, 2)), jnp.float32),
        actions=jnp.asarray(rng.integers(0, 2, size=(b, k)), jnp.int32),
        target_value=jnp.zeros((b, k + 1)),
        target_reward=jnp.zeros((b, k + 1)),
        target_policy=jnp.full((b, k + 1, 2), 0.5),
        mask=jnp.ones((b, k + 1)),
        weight=jnp.asarray([1.0, 0.5][:b]),
        next_observation=jnp.asarray(rng.normal(size=(b, k, 2)), jnp.float32),
        observation_mask=jnp.asarray([[1.0, 1.0], [1.0, 0.0]][:b]),
    )


def _consistency_by_hand(params, batch, target_params=None):
    """mean_b(weight_b Σ_k mask_bk (-cos(head(proj(ŝ_k)), proj(s_k)))) in numpy, s_k and its
    projection with ``target_params`` when given."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    t = (
        p
        if target_params is None
        else {k: np.asarray(v, np.float64) for k, v in target_params.items()}
    )
    total = 0.0
    for b in range(batch.actions.shape[0]):
        hidden = np.asarray(batch.observation[b], np.float64) @ p["rep"]
        term = 0.0
        for k in range(batch.actions.shape[1]):
            hidden = hidden @ p["dyn"] + p["act"][int(batch.actions[b, k])]
            online = (hidden @ p["proj"]) @ p["head"]
            target = (np.asarray(batch.next_observation[b, k], np.float64) @ t["rep"]) @ t["proj"]
            cos = online @ target / (np.linalg.norm(online) * np.linalg.norm(target))
            term += float(batch.observation_mask[b, k]) * -cos
        total += float(batch.weight[b]) * term
    return total / batch.actions.shape[0]


def test_consistency_term_by_hand():
    network, params, batch = _linear_network(), _params(), _batch()
    plain = jax.jit(make_loss_fn(network))
    with_term = jax.jit(make_loss_fn(network, consistency_loss_weight=2.0))
    loss_0, _ = plain(params, batch)
    loss_c, aux = with_term(params, batch)
    expected = _consistency_by_hand(params, batch)
    np.testing.assert_allclose(aux.losses["consistency"], expected, rtol=1e-5)
    # The difference of two float32 totals is exact to a few of their units in the last place.
    ulp = float(np.spacing(np.float32(loss_c)))
    np.testing.assert_allclose(loss_c - loss_0, 2.0 * expected, rtol=1e-5, atol=4 * ulp)
    assert "consistency" not in plain(params, batch)[1].losses


def test_no_gradient_through_the_target_branch():
    network, params, batch = _linear_network(), _params(), _batch()
    loss_fn = make_loss_fn(network, consistency_loss_weight=1.0)
    # The stored observations of steps 1..K enter only through the target branch.
    grad_obs = jax.jit(jax.grad(lambda o: loss_fn(params, batch._replace(next_observation=o))[0]))(
        batch.next_observation
    )
    np.testing.assert_array_equal(grad_obs, 0.0)

    # The parameters' gradient equals that of a loss whose targets are constants computed by hand.
    _, target_hidden = network.initial_inference(params, batch.next_observation.reshape(-1, 2))
    fixed = np.asarray(network.project(params, target_hidden)).reshape(2, 2, 4)

    def reference(p):
        hidden, total = batch.observation @ p["rep"], 0.0
        for k in range(2):
            hidden = hidden @ p["dyn"] + p["act"][batch.actions[:, k]]
            online = (hidden @ p["proj"]) @ p["head"]
            cos = jnp.sum(online * fixed[:, k], -1) / (
                jnp.linalg.norm(online, axis=-1) * np.linalg.norm(fixed[:, k], axis=-1)
            )
            # The 1/K of the unrolled steps acts on the gradient only.
            total = total + batch.observation_mask[:, k] * -cos / 2
            # The hidden state's gradient is halved between unrolled steps (MuZero pseudocode).
            hidden = 0.5 * hidden + 0.5 * jax.lax.stop_gradient(hidden)
        return jnp.mean(batch.weight * total)

    got = jax.jit(jax.grad(lambda p: loss_fn(p, batch)[0]))(params)
    want = jax.jit(jax.grad(reference))(params)
    for name in params:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-6, err_msg=name)


def test_consistency_targets_encoded_with_target_parameters_by_hand():
    network, params, batch = _linear_network(), _params(), _batch()
    target_params = _params(seed=7)
    loss_fn = make_loss_fn(network, consistency_loss_weight=1.0)
    _, aux = jax.jit(loss_fn)(params, batch, target_params)
    expected = _consistency_by_hand(params, batch, target_params)
    assert abs(expected - _consistency_by_hand(params, batch)) > 1e-2  # the encoders differ
    np.testing.assert_allclose(aux.losses["consistency"], expected, rtol=1e-5)
    assert_target_params_only_encode_targets(loss_fn, params, target_params, batch)


def test_consistency_needs_projection_and_next_observation():
    network, params, batch = _linear_network(), _params(), _batch()
    bare = network._replace(project=None, predict_projection=None)
    with pytest.raises(ValueError, match="project and predict_projection"):
        make_loss_fn(bare, consistency_loss_weight=1.0)(params, batch)
    with pytest.raises(ValueError, match=r"needs batch\.next_observation"):
        make_loss_fn(network, consistency_loss_weight=1.0)(
            params, batch._replace(next_observation=None)
        )


# ---------------------------------------------------------------------------------------------------
# Value prefix


def test_value_prefix_matrix_by_hand():
    u = np.array([9.0, 1.0, 2.0, 4.0, 8.0, 16.0])  # column 0 (step 0) is never trained
    # H = 2: P1 = u1, P2 = u1 + u2, P3 = u3, P4 = u3 + u4, P5 = u5.
    np.testing.assert_array_equal(u @ value_prefix_matrix(5, 2).T, [0, 1, 3, 4, 12, 16])
    # H = 5 (the paper's): the prefix runs over the whole unroll.
    np.testing.assert_array_equal(u @ value_prefix_matrix(5, 5).T, [0, 1, 3, 7, 15, 31])


def _counting_network(rewards, horizon):
    """A value-prefix network whose carry is the running sum of ``rewards[action]``; its reward
    logits encode that sum exactly (two-hot of h(sum)), so decoded prefixes are the sums."""
    rewards = jnp.asarray(rewards, jnp.float32)
    support = 20

    def outputs(prefix, num):
        logits = jnp.log(transforms.scalar_to_support(prefix, support) + 1e-30)
        return ModelOutput(
            value_logits=jnp.zeros((num, 2 * support + 1)),
            reward_logits=logits,
            policy_logits=jnp.zeros((num, rewards.shape[0])),
        )

    def initial_inference(params, observation):
        num = observation.shape[0]
        zero = jnp.zeros((num, 1))
        return outputs(zero[:, 0], num), (observation[:, :1], (zero, zero))

    def recurrent_inference(params, hidden, action):
        state, (c, h) = hidden
        prefix = c[:, 0] + rewards[action]
        return outputs(prefix, state.shape[0]), (state + 1.0, (prefix[:, None], h))

    return MuZeroNetwork(initial_inference, recurrent_inference, value_prefix_horizon=horizon)


def test_search_rewards_are_prefix_differences():
    rewards = [1.0, 3.0]
    network = _counting_network(rewards, horizon=2)
    root = search_model.make_root_fn(network)({}, jax.random.key(0), jnp.zeros((1, 1)))
    step = search_model.make_recurrent_fn(network, discount=1.0, two_player=False)
    embedding = root.embedding
    path = [1, 0, 1, 1, 0]  # crosses the resets at depths 2 and 4
    for depth, action in enumerate(path, start=1):
        out, embedding = step({}, None, jnp.asarray([action]), embedding)
        np.testing.assert_allclose(out.reward, [rewards[action]], rtol=1e-4, err_msg=str(depth))
        assert int(embedding.depth[0]) == depth
        carry = float(embedding.hidden[1][0][0, 0])
        # The carry (the running sum) is zeroed at depths 2 and 4, exactly where the loss resets.
        assert (carry == 0.0) == (depth % 2 == 0)


def test_unroll_resets_the_carry_every_horizon_steps():
    from mz_jax.core.unroll import unroll_model

    network = _counting_network([1.0, 3.0], horizon=2)
    unrolled = unroll_model(network, {}, jnp.zeros((1, 1)), jnp.asarray([[1, 0, 1, 1, 0]]))
    prefixes = transforms.logits_to_scalar(unrolled.predictions.reward_logits[0, 1:])
    # Sums of rewards [3, 1, 3, 3, 1] since the last reset (after steps 2 and 4).
    np.testing.assert_allclose(prefixes, [3, 4, 3, 6, 1], rtol=1e-4)


# ---------------------------------------------------------------------------------------------------
# Targets: exploratory steps, per-term masks, off-policy TD lengths


def _window(reward, root_value, *, exploratory=(), truncated=(), length=None):
    length = length or len(reward)
    rows = np.arange(length)
    return jax.tree.map(
        jnp.asarray,
        Trajectory(
            observation=np.stack([rows, -rows], 1).astype(np.float32),
            action=np.zeros(length, np.int32),
            reward=np.asarray(reward, np.float32),
            terminated=np.zeros(length, bool),
            truncated=np.isin(rows, truncated),
            policy=np.full((length, 2), 0.5, np.float32),
            root_value=np.asarray(root_value, np.float32),
            player=np.zeros(length, np.int32),
            legal_action_mask=np.ones((length, 2), bool),
            bootstrap_value=np.where(np.isin(rows, truncated), 7.0, 0.0).astype(np.float32),
            exploratory=np.isin(rows, exploratory),
            final_observation=np.zeros(length, np.float32),
            final_player=np.zeros(length, np.int32),
        ),
    )


def test_value_targets_stop_at_an_exploratory_step():
    from mz_jax.core.targets import make_targets

    g = 0.5
    window = _window(
        [1.0, 2.0, 4.0, 8.0, 16.0, 32.0], [10.0, 20.0, 30.0, 40.0, 50.0, 60.0], exploratory=[2]
    )
    batch = make_targets(window, num_unroll_steps=2, td_steps=3, discount=g)
    # z_0 = r0 + g r1 + g² v2 (the random action at row 2 is not the search's policy).
    # z_1 = r1 + g v2; z_2 = v2 (its own action was random).
    np.testing.assert_allclose(
        batch.target_value, [1 + g * 2 + g * g * 30, 2 + g * 30, 30.0], rtol=1e-6
    )


def test_value_targets_can_run_through_exploratory_steps():
    from mz_jax.core.targets import make_targets

    g = 0.5
    window = _window(
        [1.0, 2.0, 4.0, 8.0, 16.0, 32.0], [10.0, 20.0, 30.0, 40.0, 50.0, 60.0], exploratory=[2]
    )
    batch = make_targets(
        window, num_unroll_steps=2, td_steps=3, discount=g, stop_at_exploratory=False
    )
    # The random action at row 2 counts like any other: z_k = r_k + g r_{k+1} + g² r_{k+2} + g³ v_{k+3}.
    np.testing.assert_allclose(
        batch.target_value,
        [
            1 + g * 2 + g * g * 4 + g**3 * 40,
            2 + g * 4 + g * g * 8 + g**3 * 50,
            4 + g * 8 + g * g * 16 + g**3 * 60,
        ],
        rtol=1e-6,
    )


def test_reward_after_a_truncation_is_trained():
    from mz_jax.core.targets import make_targets

    window = _window([1.0, 2.0, 4.0, 8.0, 16.0, 32.0], [0.0] * 6, truncated=[1])
    batch = make_targets(window, num_unroll_steps=3, td_steps=2, discount=1.0)
    # Row 1's transition was truncated: step 2 is beyond the data (mask 0) but its reward target,
    # r1 = 2, is real, so the reward term keeps it.
    np.testing.assert_array_equal(batch.mask, [1, 1, 0, 0])
    np.testing.assert_array_equal(batch.reward_mask, [1, 1, 1, 0])
    np.testing.assert_array_equal(batch.target_reward[:3], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(batch.observation_mask, [1, 0, 0])


def test_off_policy_td_lengths_by_hand():
    from mz_jax.core.targets import make_targets
    from mz_jax.training import replay

    state = replay.init(
        jax.tree.map(lambda x: x[0], _window([0.0], [0.0])), capacity=20, num_envs=2
    )
    state = state._replace(write_index=jnp.int32(3), num_written=jnp.int32(10))
    index = replay.ReplayIndex(time=jnp.asarray([2, 1, 5, 4]), env=jnp.zeros(4, jnp.int32))
    # Slots since written: 0, 1, (3 - 1 - 5) mod 10 = 7, 8; two environments per slot.
    age = reanalyse.window_age(state, index, num_envs=2)
    np.testing.assert_array_equal(age, [0, 2, 14, 16])
    td = reanalyse.td_steps_for_age(age, td_steps=5, correction_steps=4)
    # 5 - floor(age / 4) = 5, 5, 2, 1 (at least 1).
    np.testing.assert_array_equal(td, [5, 5, 2, 1])
    assert int(reanalyse.td_steps_for_age(jnp.int32(400), td_steps=5, correction_steps=4)) == 1

    g = 0.5
    window = _window([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0], [10.0 * (i + 1) for i in range(7)])
    batch = make_targets(
        window, num_unroll_steps=1, td_steps=5, discount=g, td_steps_used=jnp.int32(2)
    )
    np.testing.assert_allclose(batch.target_value, [1 + g * 2 + g * g * 30, 2 + g * 4 + g * g * 40])


# ---------------------------------------------------------------------------------------------------
# Reanalyse


def test_reanalysed_policies_are_a_direct_search_with_the_given_params():
    from mz_jax.networks import make_mlp_network

    network, params = make_mlp_network(0, observation_shape=(2,), num_actions=2)
    config = search.SearchConfig(num_simulations=4, discount=0.9, two_player=False)
    b, w, k = 3, 5, 2
    rng = np.random.default_rng(0)
    window = _window([0.0] * w, [0.0] * w)
    windows = jax.tree.map(lambda x: jnp.stack([x] * b), window)
    windows = windows._replace(
        observation=jnp.asarray(rng.normal(size=(b, w, 2)), jnp.float32),
        legal_action_mask=jnp.asarray(rng.random((b, w, 2)) < 0.7) | jnp.eye(2, dtype=bool)[0],
        policy=jnp.full((b, w, 2), -1.0),  # no search gives this
    )
    key = jax.random.key(5)
    refresh = functools.partial(
        reanalyse.refresh_policies,
        network=network,
        search_config=config,
        num_unroll_steps=k,
        count=2,
    )
    out = jax.jit(refresh)(params, key, windows)
    direct = jax.jit(functools.partial(mcts.search, network=network, config=config))(
        params,
        key,
        windows.observation[:2, : k + 1].reshape(-1, 2),
        windows.legal_action_mask[:2, : k + 1].reshape(-1, 2),
    )
    np.testing.assert_allclose(out.policy[:2, : k + 1].reshape(-1, 2), direct.policy, rtol=1e-6)
    np.testing.assert_array_equal(out.policy[:2, k + 1 :], -1.0)  # rows past K untouched
    np.testing.assert_array_equal(out.policy[2:], -1.0)  # windows past the fraction untouched
    np.testing.assert_array_equal(jnp.sum(out.policy[:2, : k + 1], -1), 1.0)


def test_truncation_bootstraps_are_refreshed():
    network, params = _value_network()
    window = _window([1.0] * 4, [0.0] * 4, truncated=[1, 3])
    window = window._replace(
        final_observation=jnp.asarray([[0.0, 0.0], [2.0, 0.0], [0.0, 0.0], [3.0, 0.0]]),
        final_player=jnp.asarray([0, 1, 0, 0], jnp.int32),
        player=jnp.zeros(4, jnp.int32),
    )
    out = reanalyse.refresh_values(
        params, jax.tree.map(lambda x: x[None], window), network=network, final_observations=True
    )
    # Only the first truncation (row 1) is read by the targets; its final player is the other
    # player, so the value h⁻¹(2) of the final observation counts negatively.
    np.testing.assert_allclose(
        out.bootstrap_value[0], [0.0, -float(transforms.h_inv(2.0)), 0.0, 7.0], rtol=1e-4
    )


@pytest.mark.parametrize("policy", ["muzero", "gumbel"])
def test_values_by_search_are_root_values_of_a_lookahead(policy):
    # A model whose root value is 0, whose every other state is worth c = h⁻¹(2) and whose every
    # move earns r = h⁻¹(1), with the discount g that makes c = r + g c. Every simulation then backs
    # up c to the root, whatever the tree, and the root value is the running mean over the root's
    # own value and the N simulations: N c / (N + 1). The network's value would be 0.
    support, n = 4, 6
    r, c = float(transforms.h_inv(1.0)), float(transforms.h_inv(2.0))
    g = 1.0 - r / c
    bins = jnp.arange(-support, support + 1, dtype=jnp.float32)
    one_hot = lambda value, batch: jnp.tile(jnp.where(bins == value, 60.0, -60.0), (batch, 1))

    def initial_inference(params, observation):
        batch = observation.shape[0]
        output = ModelOutput(one_hot(0, batch), one_hot(0, batch), jnp.zeros((batch, 2)))
        return output, observation

    def recurrent_inference(params, hidden, action):
        batch = hidden.shape[0]
        output = ModelOutput(one_hot(2, batch), one_hot(1, batch), jnp.zeros((batch, 2)))
        return output, hidden

    network = MuZeroNetwork(initial_inference, recurrent_inference)
    config = search.SearchConfig(num_simulations=n, discount=g, two_player=False, policy=policy)
    window = _window([1.0] * 4, [-5.0] * 4)
    window = window._replace(legal_action_mask=jnp.ones((4, 2), bool))
    windows = jax.tree.map(lambda x: x[None], window)
    rows = jnp.asarray([[1, 2, 3]])
    refresh = functools.partial(reanalyse.refresh_values, network=network, rows=rows)
    by_search = jax.jit(functools.partial(refresh, search_config=config))({}, windows)
    np.testing.assert_allclose(by_search.root_value[0], [-5.0] + [n * c / (n + 1)] * 3, rtol=1e-4)
    np.testing.assert_allclose(jax.jit(refresh)({}, windows).root_value[0], [-5.0, 0, 0, 0])


def test_values_by_search_are_a_direct_greedy_search_with_the_given_params():
    from mz_jax.networks import make_mlp_network

    network, params = make_mlp_network(0, observation_shape=(2,), num_actions=2)
    config = search.SearchConfig(num_simulations=4, discount=0.9, two_player=False)
    b, w = 3, 5
    rng = np.random.default_rng(1)
    window = _window([0.0] * w, [-7.0] * w, truncated=[3])
    windows = jax.tree.map(lambda x: jnp.stack([x] * b), window)
    windows = windows._replace(
        observation=jnp.asarray(rng.normal(size=(b, w, 2)), jnp.float32),
        legal_action_mask=jnp.asarray(rng.random((b, w, 2)) < 0.7) | jnp.eye(2, dtype=bool)[1],
        final_observation=jnp.asarray(rng.normal(size=(b, w, 2)), jnp.float32),
        final_player=jnp.zeros((b, w), jnp.int32),
        player=jnp.zeros((b, w), jnp.int32),
    )
    # Each window its own rows, one of them twice; the rows not listed keep their stored values.
    rows = np.asarray([[2, 3, 4], [4, 0, 0], [1, 3, 2]])
    refresh = functools.partial(
        reanalyse.refresh_values, network=network, final_observations=True, rows=jnp.asarray(rows)
    )
    out = jax.jit(functools.partial(refresh, search_config=config))(params, windows)
    picked = np.arange(b)[:, None], rows
    direct = jax.jit(functools.partial(mcts.search, network=network, config=config, greedy=True))(
        params,
        jax.random.key(123),  # greedy: the key is not used
        np.asarray(windows.observation)[picked].reshape(-1, 2),
        np.asarray(windows.legal_action_mask)[picked].reshape(-1, 2),
    )
    np.testing.assert_allclose(
        np.asarray(out.root_value)[picked].reshape(-1), direct.root_value, rtol=1e-5
    )
    untouched = np.ones((b, w), bool)
    untouched[picked] = False
    np.testing.assert_array_equal(np.asarray(out.root_value)[untouched], -7.0)
    # The truncation's bootstrap is the network's value of its final observation, as without search.
    by_network = jax.jit(refresh)(params, windows)
    np.testing.assert_array_equal(out.bootstrap_value, by_network.bootstrap_value)
    assert not np.allclose(
        np.asarray(out.root_value)[picked], np.asarray(by_network.root_value)[picked]
    )
    with pytest.raises(ValueError, match=r"rows must have shape \[B, R\] with B = 3"):
        reanalyse.refresh_values(params, windows, network=network, rows=jnp.zeros((2, 3), int))


def test_bootstrap_rows_by_hand():
    from mz_jax.core.targets import bootstrap_rows

    # K = 2, n = 3: z_k bootstraps from row k + 3, unless a return stops first.
    window = _window([0.0] * 6, [0.0] * 6)
    rows = functools.partial(bootstrap_rows, num_unroll_steps=2, td_steps=3)
    np.testing.assert_array_equal(rows(window), [3, 4, 5])
    # An exploratory action at row 3 stops every return that reaches it: z_2 then sums one reward.
    np.testing.assert_array_equal(rows(window._replace(exploratory=jnp.arange(6) == 3)), [3, 3, 3])
    # ... unless the return of the policy that acted is asked for.
    explore = window._replace(exploratory=jnp.arange(6) == 3)
    np.testing.assert_array_equal(rows(explore, stop_at_exploratory=False), [3, 4, 5])
    # An exploratory action at row 1: z_1 bootstraps from its own row (m_1 = 0).
    np.testing.assert_array_equal(rows(window._replace(exploratory=jnp.arange(6) == 1)), [1, 1, 5])
    # Off-policy correction: this window's n is 1.
    np.testing.assert_array_equal(rows(window, td_steps_used=jnp.int32(1)), [1, 2, 3])
    # Only rows 0..3 written: the newest, row 3, ends every return that reaches it.
    np.testing.assert_array_equal(rows(window, written_rows=jnp.int32(4)), [3, 3, 3])


def test_value_targets_read_no_root_value_but_of_the_bootstrap_rows():
    # A property over random windows: with every other row's root_value NaN, the targets are those
    # of the whole window, whatever ends the episodes, stops the returns or cuts n.
    from mz_jax.core.targets import bootstrap_rows, make_targets

    k, n, w = 3, 4, 8
    rng = np.random.default_rng(3)
    for _ in range(30):
        ends = rng.choice(w, size=rng.integers(0, 3), replace=False)
        window = _window(rng.normal(size=w), rng.normal(size=w), truncated=ends[:1])
        window = window._replace(
            terminated=jnp.asarray(np.isin(np.arange(w), ends[1:])),
            exploratory=jnp.asarray(rng.random(w) < 0.2),
            player=jnp.asarray(rng.integers(0, 2, w), jnp.int32),
        )
        cuts = dict(
            td_steps_used=jnp.int32(rng.integers(1, n + 1)),
            written_rows=jnp.int32(rng.integers(k + 1, w + 1)),
            stop_at_exploratory=bool(rng.integers(0, 2)),
        )
        read = np.asarray(bootstrap_rows(window, num_unroll_steps=k, td_steps=n, **cuts))
        assert ((read >= np.arange(k + 1)) & (read <= np.arange(k + 1) + n)).all()
        masked = np.full(w, np.nan, np.float32)
        masked[read] = np.asarray(window.root_value)[read]
        full = make_targets(window, num_unroll_steps=k, td_steps=n, discount=0.9, **cuts)
        only = make_targets(
            window._replace(root_value=jnp.asarray(masked)),
            num_unroll_steps=k,
            td_steps=n,
            discount=0.9,
            **cuts,
        )
        np.testing.assert_array_equal(only.target_value, full.target_value)


def _value_network():
    """Value of observation [x] is exactly h⁻¹(x) for integer x (a one-hot on bin x)."""
    support = 4

    def initial_inference(params, observation):
        bins = jnp.arange(-support, support + 1, dtype=jnp.float32)
        logits = jnp.where(bins[None, :] == observation[:, :1], 60.0, -60.0)
        batch = observation.shape[0]
        return _outputs_with(logits, batch), jnp.zeros((batch, 1))

    return MuZeroNetwork(initial_inference, None), {}


def _outputs_with(value_logits, batch):
    return ModelOutput(value_logits, jnp.zeros_like(value_logits), jnp.zeros((batch, 2)))


# ---------------------------------------------------------------------------------------------------
# Dirichlet noise over the legal actions only; supports and clipping


def test_dirichlet_noise_is_mixed_over_legal_actions_only():
    legal = jnp.zeros((4000, 9), bool).at[:, [2, 5]].set(True)
    # The prior puts everything on action 2 (of the legal ones), so action 5's probability after
    # mixing is the noise alone: fraction * E[Dirichlet share] = 0.25 * 1/2 with two legal moves.
    logits = jnp.zeros((4000, 9)).at[:, 2].set(50.0)
    noisy = mcts._noisy_legal_prior(jax.random.key(0), logits, legal, alpha=0.3, fraction=0.25)
    probs = jax.nn.softmax(jnp.where(legal, noisy, -jnp.inf), axis=-1)
    assert float(jnp.mean(probs[:, 5])) == pytest.approx(0.125, abs=0.01)
    np.testing.assert_allclose(jnp.sum(probs, -1), 1.0, rtol=1e-5)
    assert float(jnp.max(probs[:, [0, 1, 3, 4, 6, 7, 8]])) == 0.0


def test_support_sizes_cover_the_returns():
    from mz_jax import TrainConfig
    from mz_jax.envs import make_env
    from mz_jax.training.network_for_env import network_config_for

    def sizes(**kw):
        c = network_config_for(TrainConfig(**kw), make_env("gymnax:CartPole-v1"))
        return c.value_support_size, c.reward_support_size

    # CartPole: reward 1 for at most 500 steps. At 0.997 returns reach (1 - 0.997^500) / 0.003 =
    # 259.0, h(259.0) = 259 / (sqrt(260) + 1) + 0.259 = 15.29: S = 16. At 0.99: 99.3 -> 9.16: 10.
    assert sizes(discount=0.997) == (16, 10)
    assert sizes(discount=0.99) == (10, 10)
    from mz_jax.config.train import NetworkConfig

    with pytest.raises(ValueError, match=r"network.value_support_size' = 10 .* >= 16"):
        sizes(discount=0.997, network=NetworkConfig(value_support_size=10))
    assert sizes(network=NetworkConfig(value_support_size=20)) == (20, 10)


def test_clipped_targets_are_counted():
    network = _linear_network()
    batch = _batch()._replace(
        target_value=jnp.asarray([[0.0, 20.0, 1.0], [500.0, 0.0, -30.0]]),
        mask=jnp.asarray([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]),
    )
    _, aux = make_loss_fn(network)(_params(), batch)
    # Support [-3, 3] represents |x| <= h⁻¹(3) = 14.9: 20 and 500 are clipped, -30 is masked out.
    assert float(aux.clipped["value_clipped"]) == pytest.approx(2 / 5)
    assert float(aux.clipped["reward_clipped"]) == 0.0
