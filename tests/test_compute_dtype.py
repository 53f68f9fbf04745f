"""``network.compute_dtype``: bfloat16 matmuls and convolutions under float32 parameters, optimizer
state, logits and loss. The loss and its gradient against float32's on a fixed batch, a short run
that stays finite and checkpoints float32, and the refusals."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _params import perturb
from _xla import LEVEL_1

from mz_jax.config.overrides import override
from mz_jax.config.presets import load_preset
from mz_jax.config.search import SearchConfig
from mz_jax.config.train import NetworkConfig, TrainConfig
from mz_jax.run import loop
from mz_jax.run.agent import restore_run_state
from mz_jax.run.metrics import LOSS, UPDATES
from mz_jax.run.records import read_metrics
from mz_jax.training.build import build
from mz_jax.types import Batch

K = 3  # unroll steps


def _batch(observation_shape, num_actions, batch=8, seed=0) -> Batch:
    """A fixed batch of random observations and targets (policies on the simplex, masks that end
    one sequence early)."""
    rng = np.random.default_rng(seed)
    policy = rng.dirichlet(np.ones(num_actions), size=(batch, K + 1))
    mask = np.ones((batch, K + 1), np.float32)
    mask[0, -1] = 0.0
    return Batch(
        observation=jnp.asarray(rng.normal(size=(batch, *observation_shape)), jnp.float32),
        actions=jnp.asarray(rng.integers(0, num_actions, size=(batch, K)), jnp.int32),
        target_value=jnp.asarray(rng.uniform(-3, 3, size=(batch, K + 1)), jnp.float32),
        target_reward=jnp.asarray(rng.uniform(-1, 1, size=(batch, K + 1)), jnp.float32),
        target_policy=jnp.asarray(policy, jnp.float32),
        mask=jnp.asarray(mask),
        weight=jnp.asarray(rng.uniform(0.5, 1.0, size=batch), jnp.float32),
    )


@pytest.mark.parametrize(
    "env, network",
    [
        ("gymnax:CartPole-v1", {"network.hidden_sizes": (32, 32), "network.latent_size": 16}),
        (
            "gymnax:Breakout-MinAtar",
            {"network.kind": "resnet", "network.channels": 8, "network.num_blocks": 1},
        ),
    ],
    ids=["mlp", "resnet"],
)
def test_the_bfloat16_loss_and_gradient_are_float32s_to_bfloat16s_precision(env, network):
    # The same float32 parameters, noise added so that no head is zero, and the same batch through
    # both dtypes. bfloat16 keeps 8 significant bits (relative rounding up to 2^-9): the loss stays
    # within 2% of float32's and the gradient within 20% in norm, while a head left in bfloat16 or
    # a transform of bfloat16 logits would be off by far more. (The ResNet's at XLA's level 1: see
    # tests/_xla.py.)
    base = override(TrainConfig(), {"env": env, "num_unroll_steps": K, "td_steps": K, **network})
    losses, grads = {}, {}
    env_is_image = "MinAtar" in env
    for dtype in ("float32", "bfloat16"):
        components = build(override(base, {"network.compute_dtype": dtype}))
        # XLA's RngBitGenerator: threefry compiles a sampler per parameter shape, slowly.
        params = components.init_params(jax.random.key(0, impl="rbg"))
        params = perturb(params, seed=1)
        env_spec = components.env
        batch = _batch(env_spec.observation_shape, env_spec.num_actions)
        loss_and_grad = jax.value_and_grad(components.loss_fn, has_aux=True)
        options = LEVEL_1 if env_is_image else None
        (loss, _), grad = jax.jit(loss_and_grad, compiler_options=options)(params, batch)
        losses[dtype], grads[dtype] = float(loss), grad
        assert all(g.dtype == jnp.float32 for g in jax.tree.leaves(grad))
    assert np.isfinite(losses["float32"]) and losses["float32"] > 0
    assert 0 < abs(losses["bfloat16"] - losses["float32"]) <= 0.02 * losses["float32"], losses
    flat = {d: np.concatenate([np.ravel(g) for g in jax.tree.leaves(grads[d])]) for d in grads}
    error = np.linalg.norm(flat["bfloat16"] - flat["float32"]) / np.linalg.norm(flat["float32"])
    assert 0 < error <= 0.20, error


def test_a_bfloat16_run_stays_finite_and_checkpoints_float32(tmp_path):
    config = TrainConfig(
        env="gymnax:CartPole-v1",
        total_env_steps=6 * 4 * 4,
        num_envs=4,
        rollout_length=4,
        updates_per_iteration=2,
        batch_size=8,
        num_unroll_steps=2,
        td_steps=2,
        replay_capacity=64,
        warmup_updates=0,
        consistency_loss_weight=1.0,
        search=SearchConfig(num_simulations=4),
        network=NetworkConfig(hidden_sizes=(16,), latent_size=8, compute_dtype="bfloat16"),
        eval_every_env_steps=0,
        log_every_seconds=0.0,
    )
    loop.run_training(config, tmp_path)
    records = read_metrics(tmp_path)
    losses = [r[LOSS] for r in records if r.get(UPDATES, 0) > 0]
    assert losses and np.all(np.isfinite(losses))
    restored = restore_run_state(tmp_path)
    assert restored.config.network.compute_dtype == "bfloat16"
    state = restored.state
    floats = [
        (jax.tree_util.keystr(path), x.dtype)
        for path, x in jax.tree_util.tree_leaves_with_path((state.train, state.target_params))
        if jnp.issubdtype(x.dtype, jnp.floating)
    ]
    assert floats and all(dtype == jnp.float32 for _, dtype in floats), floats
    assert restored.state.train.step > 0


def test_the_stochastic_mlp_refuses_bfloat16_naming_the_field():
    config = override(load_preset("game_2048"), {"network.compute_dtype": "bfloat16"})
    assert config.network.kind == "mlp" and config.network.num_chance_outcomes
    with pytest.raises(
        ValueError, match=r"'network.compute_dtype' = 'bfloat16' is invalid.*'float32'"
    ):
        build(config)
    with pytest.raises(ValueError, match=r"compute_dtype.*'float16'.*allowed"):
        NetworkConfig(compute_dtype="float16")
