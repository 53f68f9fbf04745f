"""Games where a player can move twice in a row (backgammon): who moves next is data, a network can
predict it, the loss trains that prediction, and the search signs values by it instead of
alternating."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mz_jax import make_env
from mz_jax.config.train import NetworkConfig, TrainConfig
from mz_jax.core.loss import make_loss_fn
from mz_jax.core.targets import make_targets
from mz_jax.mcts.model import make_recurrent_fn
from mz_jax.networks import mlp_network
from mz_jax.training.build import build
from mz_jax.training.network_for_env import network_config_for
from mz_jax.types import Batch, ModelOutput, MuZeroNetwork, Trajectory

# Players to move at rows 0..9: player 0 moves twice, then 1 twice, 0 once, 1 three times, ...
PLAYERS = [0, 0, 1, 1, 0, 1, 1, 1, 0, 0]


def _window(terminated_at=None) -> Trajectory:
    length = len(PLAYERS)
    terminated = np.zeros(length, bool)
    if terminated_at is not None:
        terminated[terminated_at] = True
    window = Trajectory(
        observation=np.arange(length, dtype=np.float32)[:, None],
        action=np.zeros(length, np.int32),
        reward=np.zeros(length, np.float32),
        terminated=terminated,
        truncated=np.zeros(length, bool),
        policy=np.full((length, 2), 0.5, np.float32),
        root_value=np.zeros(length, np.float32),
        player=np.asarray(PLAYERS, np.int32),
        legal_action_mask=np.ones((length, 2), bool),
        bootstrap_value=np.zeros(length, np.float32),
        exploratory=np.zeros(length, bool),
        final_observation=np.zeros(length, np.float32),
        final_player=np.zeros(length, np.int32),
    )
    return jax.tree.map(jnp.asarray, window)


def test_same_player_targets_follow_the_recorded_players():
    batch = make_targets(_window(), num_unroll_steps=5, td_steps=2, discount=1.0, same_player=True)
    # Steps 1..5 against the player of the step before: 0->0 same, 0->1, 1->1 same, 1->0, 0->1.
    np.testing.assert_array_equal(batch.target_same_player, [1, 0, 1, 0, 0])
    np.testing.assert_array_equal(batch.observation_mask, [1, 1, 1, 1, 1])
    assert (
        make_targets(_window(), num_unroll_steps=5, td_steps=2, discount=1.0).target_same_player
        is None
    )
    # After the episode ends (row 2 terminates) the rows belong to the next episode: masked out.
    ended = make_targets(
        _window(terminated_at=2), num_unroll_steps=5, td_steps=2, discount=1.0, same_player=True
    )
    np.testing.assert_array_equal(ended.observation_mask, [1, 1, 0, 0, 0])


def _chain(turn_logit: float | None):
    """One action; every transition pays 1 to the player who moved; every value is 0; the turn
    logit of every reached state is ``turn_logit`` (None: no turn prediction)."""
    support = 3

    def scalar_logits(x):
        from mz_jax.core import transforms

        return jnp.log(transforms.scalar_to_support(x, support) + 1e-30)

    def initial_inference(params, observation):
        b = observation.shape[0]
        return ModelOutput(
            scalar_logits(jnp.zeros(b)), scalar_logits(jnp.zeros(b)), jnp.zeros((b, 1))
        ), observation

    def recurrent_inference(params, hidden, action):
        b = hidden.shape[0]
        return ModelOutput(
            scalar_logits(jnp.zeros(b)), scalar_logits(jnp.ones(b)), jnp.zeros((b, 1))
        ), hidden

    turn = (
        None
        if turn_logit is None
        else (lambda params, hidden: jnp.full(hidden.shape[:1], turn_logit))
    )
    return MuZeroNetwork(initial_inference, recurrent_inference, turn_logits=turn)


@pytest.mark.parametrize("turn_logit, sign", [(None, -1.0), (2.0, 1.0), (-2.0, -1.0)])
def test_the_search_discount_follows_the_predicted_turn(turn_logit, sign):
    fn = make_recurrent_fn(_chain(turn_logit), discount=0.9, two_player=True)
    out, _ = fn(None, jax.random.key(0), jnp.zeros(3, jnp.int32), jnp.zeros((3, 1)))
    np.testing.assert_allclose(out.discount, sign * 0.9)
    np.testing.assert_allclose(out.reward, 1.0, rtol=1e-5)
    # One player: always +discount, whatever the network says.
    single = make_recurrent_fn(_chain(turn_logit), discount=0.9, two_player=False)
    np.testing.assert_allclose(
        single(None, jax.random.key(0), jnp.zeros(3, jnp.int32), jnp.zeros((3, 1)))[0].discount, 0.9
    )


def test_the_backed_up_value_counts_the_next_state_for_the_player_who_moves_there():
    import mctx

    from mz_jax.mcts.model import make_root_fn

    for turn_logit, expected in ((3.0, 1.5), (-3.0, 0.5)):
        network = _chain(turn_logit)
        root = make_root_fn(network)(None, None, jnp.zeros((1, 1)))
        tree = mctx.muzero_policy(
            None,
            jax.random.key(0),
            root,
            make_recurrent_fn(network, discount=1.0, two_player=True),
            2,
        ).search_tree
        # Two simulations: the child (value 0) is expanded, then its child (reward 1, value 0):
        # Q = 1 + d * (0 + 1) / 2, with d = +1 (same player) or -1 (the other player).
        np.testing.assert_allclose(
            float(tree.qvalues(jnp.zeros(1, jnp.int32))[0, 0]), expected, rtol=1e-5
        )


def test_the_loss_adds_the_turn_cross_entropy():
    network, init = mlp_network(
        observation_shape=(2,), num_actions=2, hidden_sizes=(8,), latent_size=4, predict_turn=True
    )
    params = init(0)
    # Random turn-head weights, so that the logits differ from 0.
    params["turn_head"] = jax.tree.map(
        lambda x: jax.random.normal(jax.random.key(1), x.shape), params["turn_head"]
    )
    rng = np.random.default_rng(0)
    b, k = 3, 2
    batch = Batch(
        observation=jnp.asarray(rng.normal(size=(b, 2)), jnp.float32),
        actions=jnp.asarray(rng.integers(0, 2, size=(b, k)), jnp.int32),
        target_value=jnp.zeros((b, k + 1)),
        target_reward=jnp.zeros((b, k + 1)),
        target_policy=jnp.full((b, k + 1, 2), 0.5),
        mask=jnp.ones((b, k + 1)),
        weight=jnp.asarray([1.0, 0.5, 2.0]),
        observation_mask=jnp.asarray([[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]),
        target_same_player=jnp.asarray([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
    )
    loss, aux = jax.jit(make_loss_fn(network))(params, batch)
    without, _ = jax.jit(make_loss_fn(network._replace(turn_logits=None)))(params, batch)
    # By hand: the unrolled states along the actions, their turn logits, the masked cross-entropy.
    _, hidden = network.initial_inference(params, batch.observation)
    expected = 0.0
    for step in range(k):
        _, hidden = network.recurrent_inference(params, hidden, batch.actions[:, step])
        x = network.turn_logits(params, hidden)
        t = batch.target_same_player[:, step]
        ce = -(t * jax.nn.log_sigmoid(x) + (1 - t) * jax.nn.log_sigmoid(-x))
        expected = expected + batch.weight * batch.observation_mask[:, step] * ce
    np.testing.assert_allclose(float(loss - without), float(jnp.mean(expected)), rtol=1e-5)
    np.testing.assert_allclose(float(aux.losses["turn"]), float(jnp.mean(expected)), rtol=1e-5)
    with pytest.raises(ValueError, match="target_same_player"):
        make_loss_fn(network)(params, batch._replace(target_same_player=None))


def test_backgammon_predicts_turns_by_default_and_a_one_player_game_refuses_them():
    assert make_env("pgx:backgammon").repeats_player
    assert not make_env("pgx:tic_tac_toe").repeats_player
    config = TrainConfig(env="pgx:backgammon", network=NetworkConfig(kind="mlp"))
    assert network_config_for(config, make_env("pgx:backgammon")).predict_turn is True
    cartpole = TrainConfig(network=NetworkConfig(predict_turn=True))
    with pytest.raises(ValueError, match=r"'network.predict_turn' = True is invalid"):
        build(cartpole)
    tic_tac_toe = dataclasses.replace(config, env="pgx:tic_tac_toe")
    components = build(tic_tac_toe)
    assert (
        components.network_config.predict_turn is False and components.network.turn_logits is None
    )
