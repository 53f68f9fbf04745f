"""The golden cases: fixed inputs through the library's main paths, recorded once and compared after.

Each case returns a flat ``{name: numpy array}``, kept in ``tests/golden/<case>.npz`` beside
``tests/golden/machine.json``, the machine and XLA flags they were recorded with.
``tests/test_golden.py`` computes them again and compares: bit for bit on the machine that recorded
them, to a float tolerance on another (XLA:CPU's vector width changes the rounding between
processors). A refactor that moves or splits code must leave every case unchanged; a change meant to
alter the numbers records them again, in the test's own environment (tests/conftest.py's XLA flags),
and says so in its commit::

    MZ_JAX_RECORD_GOLDEN=1 python -m pytest -n 2 tests/test_golden.py

The cases: the MuZero loss and its gradients on a fixed batch; the Stochastic MuZero loss and its
gradients; the targets of a fixed trajectory; a MuZero and a Gumbel search; a short CartPole run
through the host loop (its metrics, and its final checkpoint as ``Agent.restore`` reads it); three
iterations of a small 2048 run (Stochastic MuZero) and of a small tic-tac-toe run (two players).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import platform
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import mz_jax
from mz_jax.config.presets import load_preset

GOLDEN_DIR = Path(__file__).parent / "golden"
MACHINE_FILE = GOLDEN_DIR / "machine.json"

# Fields of a metrics record that measure the clock, not the computation.
TIMING_FIELDS = ("wall_s", "time", "seconds", "per_s", "_ms", "compile")


def machine() -> dict:
    """What decides the bits of a float result: the processor (its model, family and the vector
    instructions XLA may compile for: one "AMD EPYC" name covers generations with and without
    AVX-512), jax, jaxlib and XLA's flags."""
    model, family, vector = platform.processor(), "", []
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        fields = {}
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
        model = fields.get("model name", model)
        family = f"family {fields.get('cpu family', '?')} model {fields.get('model', '?')}"
        vector = sorted(f for f in fields.get("flags", "").split() if f.startswith(("avx", "fma")))
    return {
        "processor": model,
        "cpu": family,
        "vector_extensions": vector,
        "jax": jax.__version__,
        "jaxlib": importlib.metadata.version("jaxlib"),
        "xla_flags": sorted(os.environ.get("XLA_FLAGS", "").split()),
    }


def _flat(prefix: str, tree) -> dict[str, np.ndarray]:
    leaves = jax.tree_util.tree_leaves_with_path(jax.device_get(tree))
    return {
        prefix + jax.tree_util.keystr(path): np.asarray(leaf)
        for path, leaf in leaves
        if leaf is not None
    }


def _batch(rng: np.random.Generator, *, B: int, K: int, A: int, obs: int, stochastic: bool):
    policy = rng.random((B, K + 1, A)).astype(np.float32)
    mask = (rng.random((B, K + 1)) > 0.2).astype(np.float32)
    mask[:, 0] = 1.0
    fields = dict(
        observation=rng.normal(size=(B, obs)).astype(np.float32),
        actions=rng.integers(0, A, size=(B, K)).astype(np.int32),
        target_value=rng.normal(scale=3.0, size=(B, K + 1)).astype(np.float32),
        target_reward=rng.normal(scale=2.0, size=(B, K + 1)).astype(np.float32),
        target_policy=policy / policy.sum(-1, keepdims=True),
        mask=mask,
        weight=rng.uniform(0.5, 1.5, size=(B,)).astype(np.float32),
    )
    if stochastic:
        fields["next_observation"] = rng.normal(size=(B, K, obs)).astype(np.float32)
    return mz_jax.Batch(**{k: jnp.asarray(v) for k, v in fields.items()})


def loss_case() -> dict[str, np.ndarray]:
    """The MuZero loss, its aux and its gradients on a fixed batch, with the consistency term."""
    network, params = mz_jax.make_mlp_network(
        jax.random.key(0),
        observation_shape=(6,),
        num_actions=3,
        hidden_sizes=(16,),
        latent_size=8,
        projection_size=8,
    )
    loss_fn = mz_jax.make_loss_fn(
        network, value_loss_weight=0.25, weight_decay=1e-4, consistency_loss_weight=2.0
    )
    rng = np.random.default_rng(0)
    batch = _batch(rng, B=5, K=4, A=3, obs=6, stochastic=True)
    (loss, aux), grads = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))(params, batch)
    return {"loss": np.asarray(loss), **_flat("aux", aux), **_flat("grads", grads)}


def stochastic_loss_case() -> dict[str, np.ndarray]:
    """The Stochastic MuZero loss, its aux and its gradients on a fixed batch."""
    network, init = mz_jax.networks.stochastic_mlp_network(
        observation_shape=(6,),
        num_actions=3,
        num_chance_outcomes=4,
        hidden_sizes=(16,),
        latent_size=8,
        value_support_size=5,
        reward_support_size=5,
    )
    params = init(jax.random.key(1))
    loss_fn = mz_jax.make_stochastic_loss_fn(network, value_loss_weight=0.5, weight_decay=1e-4)
    rng = np.random.default_rng(1)
    batch = _batch(rng, B=5, K=3, A=3, obs=6, stochastic=True)
    (loss, aux), grads = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))(params, batch)
    return {"loss": np.asarray(loss), **_flat("aux", aux), **_flat("grads", grads)}


def targets_case() -> dict[str, np.ndarray]:
    """The n-step targets of a fixed 12-step window with an episode end and an exploratory step."""
    rng = np.random.default_rng(2)
    W, A = 12, 3
    terminated = np.zeros(W, bool)
    terminated[6] = True
    exploratory = np.zeros(W, bool)
    exploratory[3] = True
    policy = rng.random((W, A)).astype(np.float32)
    window = mz_jax.Trajectory(
        observation=jnp.asarray(rng.normal(size=(W, 4)).astype(np.float32)),
        action=jnp.asarray(rng.integers(0, A, size=W).astype(np.int32)),
        reward=jnp.asarray(rng.normal(size=W).astype(np.float32)),
        terminated=jnp.asarray(terminated),
        truncated=jnp.zeros(W, bool),
        policy=jnp.asarray(policy / policy.sum(-1, keepdims=True)),
        root_value=jnp.asarray(rng.normal(size=W).astype(np.float32)),
        player=jnp.zeros(W, jnp.int32),
        legal_action_mask=jnp.ones((W, A), bool),
        bootstrap_value=jnp.asarray(rng.normal(size=W).astype(np.float32)),
        exploratory=jnp.asarray(exploratory),
        final_observation=jnp.asarray(rng.normal(size=(W, 4)).astype(np.float32)),
        final_player=jnp.zeros(W, jnp.int32),
    )
    out = {}
    for name, stop in (("stop", True), ("through", False)):
        targets = mz_jax.make_targets(
            window,
            num_unroll_steps=4,
            td_steps=5,
            discount=0.97,
            next_observation=True,
            stop_at_exploratory=stop,
        )
        out.update(_flat(name, targets))
    return out


def search_case() -> dict[str, np.ndarray]:
    """A MuZero and a Gumbel MuZero search of four roots, one action illegal in two of them."""
    network, params = mz_jax.make_mlp_network(
        jax.random.key(3), observation_shape=(4,), num_actions=3, hidden_sizes=(16,), latent_size=8
    )
    # Output layers start at zero: perturb every parameter so the search sees a real model.
    leaves, treedef = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.key(4), len(leaves))
    params = treedef.unflatten(
        [
            leaf + 0.3 * jax.random.normal(k, leaf.shape, leaf.dtype)
            for leaf, k in zip(leaves, keys, strict=True)
        ]
    )
    observation = jnp.asarray(np.random.default_rng(5).normal(size=(4, 4)).astype(np.float32))
    legal = jnp.asarray([[1, 1, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1]], bool)
    out = {}
    for policy in ("muzero", "gumbel"):
        config = mz_jax.SearchConfig(
            policy=policy, num_simulations=8, discount=0.97, two_player=False
        )
        result = mz_jax.search(
            params, jax.random.key(6), observation, legal, network=network, config=config
        )
        out.update(_flat(policy, result))
    return out


def _tiny(config, **network):
    return config.replace(
        num_envs=4,
        rollout_length=4,
        batch_size=8,
        updates_per_iteration=2,
        num_unroll_steps=3,
        td_steps=3,
        replay_capacity=400,
        warmup_updates=0,
        eval_episodes=4,
        search=dataclasses.replace(config.search, num_simulations=4),
        network=dataclasses.replace(config.network, hidden_sizes=(16,), latent_size=8, **network),
    )


def _metrics(records: list[dict]) -> dict[str, np.ndarray]:
    """The records' numbers, those of the clock left out, as one array per field."""
    fields = {}
    for record in records:
        for path, value in jax.tree_util.tree_leaves_with_path(record):
            name = jax.tree_util.keystr(path)
            if any(word in name for word in TIMING_FIELDS) or isinstance(value, str):
                continue
            fields.setdefault(name, []).append(np.asarray(value, np.float64))
    return {"metrics" + name: np.stack(values) for name, values in fields.items()}


def cartpole_run_case(workdir: Path) -> dict[str, np.ndarray]:
    """A 128-step run of the ``cartpole`` preset through ``run_training``, and its checkpoint."""
    config = _tiny(load_preset("cartpole")).replace(
        total_env_steps=128,
        eval_every_env_steps=64,
        eval_max_steps=40,
        lr_decay_updates=16,
        log_every_seconds=0.0,
    )
    mz_jax.run_training(config, workdir)
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    agent = mz_jax.Agent.restore(workdir)
    return {**_metrics(records), **_flat("checkpoint", agent.params)}


def _iterations(config, iterations: int) -> dict[str, np.ndarray]:
    trainer = mz_jax.make_train(config)
    state = trainer.init(config.seed)
    out = {}
    for i in range(iterations):
        state, metrics = trainer.step(state)
        out.update(_flat(f"iteration{i}", metrics))
    out.update(_flat("params", state.train.params))
    return out


def stochastic_run_case() -> dict[str, np.ndarray]:
    """Three iterations of a small Stochastic MuZero run on 2048."""
    config = _tiny(load_preset("game_2048"), value_support_size=20, reward_support_size=20)
    return _iterations(config.replace(num_unroll_steps=2, td_steps=3), 3)


def two_player_run_case() -> dict[str, np.ndarray]:
    """Three iterations of a small tic-tac-toe run (two players, pgx)."""
    return _iterations(_tiny(load_preset("tic_tac_toe")), 3)


CASES = {
    "loss": loss_case,
    "stochastic_loss": stochastic_loss_case,
    "targets": targets_case,
    "search": search_case,
    "cartpole_run": cartpole_run_case,
    "stochastic_run": stochastic_run_case,
    "two_player_run": two_player_run_case,
}
NEEDS_WORKDIR = ("cartpole_run",)


def compute(name: str, tmp: Path) -> dict[str, np.ndarray]:
    """Case ``name``'s arrays, with its keys prefixed ``name/``."""
    case = CASES[name]
    values = case(tmp / name) if name in NEEDS_WORKDIR else case()
    return {f"{name}/{key}": value for key, value in values.items()}
