"""The learner: data-parallel updates against an independent one-device reference, pmap against
shard_map, skipped non-finite updates, the learning-rate schedule, and the whole training iteration
under shard_map and pmap.

conftest.py forces four CPU devices, so the data-parallel paths really run on four devices here.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import mz_jax
from mz_jax.config.search import SearchConfig
from mz_jax.config.train import NetworkConfig, TrainConfig
from mz_jax.networks import make_mlp_network
from mz_jax.training import learner
from mz_jax.training.train import make_train
from mz_jax.types import Batch

NUM_DEVICES = 4
OBSERVATION_SHAPE = (4,)
NUM_ACTIONS = 3
NUM_UNROLL_STEPS = 2
SUPPORT_SIZE = 5
GLOBAL_BATCH = 16  # four examples per device
NUM_UPDATES = 4

LEARNING_RATE = 0.1
MOMENTUM = 0.9
MAX_GRAD_NORM = 1.5  # between the gradient norms of the four batches: clips some updates only


def _random_batch(rng: np.random.Generator, batch_size: int) -> Batch:
    # numpy draws: eager jax.random would compile a program per distinct shape.
    k = NUM_UNROLL_STEPS
    mask = (rng.uniform(size=(batch_size, k + 1)) < 0.8).astype(np.float32)
    mask[:, 0] = 1.0
    logits = 2.0 * rng.normal(size=(batch_size, k + 1, NUM_ACTIONS))
    policy = np.exp(logits) / np.sum(np.exp(logits), axis=-1, keepdims=True)
    return Batch(
        observation=rng.normal(size=(batch_size, *OBSERVATION_SHAPE)).astype(np.float32),
        actions=rng.integers(0, NUM_ACTIONS, size=(batch_size, k)).astype(np.int32),
        target_value=rng.uniform(-4.0, 4.0, size=(batch_size, k + 1)).astype(np.float32),
        target_reward=rng.uniform(-2.0, 2.0, size=(batch_size, k + 1)).astype(np.float32),
        target_policy=policy.astype(np.float32),
        mask=mask,
        weight=rng.uniform(0.5, 1.5, size=(batch_size,)).astype(np.float32),
    )


def _make_reference_step(loss_fn):
    """One update on one device: the full-batch gradient by plain ``jax.grad``, then global-norm
    clipping and SGD with momentum written out by hand (no optax, no shard_map)."""

    @jax.jit
    def step(params, trace, batch):
        loss, grads = jax.value_and_grad(lambda p: loss_fn(p, batch)[0])(params)
        norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree.leaves(grads)))
        clip = jnp.minimum(1.0, MAX_GRAD_NORM / norm)
        trace = jax.tree.map(lambda t, g: MOMENTUM * t + clip * g, trace, grads)
        params = jax.tree.map(lambda p, t: p - LEARNING_RATE * t, params, trace)
        return params, trace, loss, norm

    def run(params, batches):
        trace = jax.tree.map(np.zeros_like, params)
        losses, norms = [], []
        for batch in batches:
            params, trace, loss, norm = step(params, trace, batch)
            losses.append(float(loss))
            norms.append(float(norm))
        return params, losses, norms

    return run


def _leaves_close(actual, expected, **tolerance) -> None:
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), **tolerance)


@pytest.fixture(scope="module")
def data_parallel_run():
    """Four shard_map updates over four devices, with everything needed to check them."""
    assert len(jax.devices()) == NUM_DEVICES
    network, params = make_mlp_network(
        0,
        observation_shape=OBSERVATION_SHAPE,
        num_actions=NUM_ACTIONS,
        hidden_sizes=(16,),
        latent_size=16,
        value_support_size=SUPPORT_SIZE,
        reward_support_size=SUPPORT_SIZE,
    )
    loss_fn = mz_jax.make_loss_fn(network, value_loss_weight=0.25, weight_decay=1e-3)
    schedule = learner.make_schedule(
        learning_rate=LEARNING_RATE, warmup_updates=0, decay_updates=None
    )
    optimizer = learner.make_optimizer(
        optimizer="sgd",
        learning_rate=LEARNING_RATE,
        momentum=MOMENTUM,
        max_grad_norm=MAX_GRAD_NORM,
    )
    mesh = jax.sharding.Mesh(np.asarray(jax.devices()), ("data",))
    update_fn = learner.make_data_parallel_update(loss_fn, optimizer, schedule, mesh)
    rng = np.random.default_rng(1)
    batches = [_random_batch(rng, GLOBAL_BATCH) for _ in range(NUM_UPDATES)]
    init_state = learner.init_train_state(params, optimizer)

    state = jax.device_put(init_state, NamedSharding(mesh, P()))
    states, metrics = [], []
    for batch in batches:
        state, m = update_fn(state, jax.device_put(batch, NamedSharding(mesh, P("data"))))
        states.append(state)
        metrics.append(m)
    return dict(
        loss_fn=loss_fn,
        reference=_make_reference_step(loss_fn),
        optimizer=optimizer,
        schedule=schedule,
        mesh=mesh,
        update_fn=update_fn,
        batches=batches,
        init_state=init_state,
        states=states,
        state=state,
        metrics=metrics,
    )


def test_four_devices_match_a_one_device_reference(data_parallel_run):
    run = data_parallel_run
    expected, losses, grad_norms = run["reference"](run["init_state"].params, run["batches"])
    # Clipped and unclipped updates both: an unclipped one shows a data-parallel gradient of the
    # wrong scale (a sum over devices instead of a mean), which clipping would hide.
    assert min(grad_norms) < MAX_GRAD_NORM < max(grad_norms)
    moved = max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
        for a, b in zip(
            jax.tree.leaves(expected), jax.tree.leaves(run["init_state"].params), strict=True
        )
    )
    assert moved > 1e-2  # the comparison below is far from vacuous

    state = run["state"]
    _leaves_close(state.params, expected, rtol=1e-4, atol=2e-6)
    assert int(state.step) == NUM_UPDATES
    np.testing.assert_allclose(
        [float(m["loss"]["total"]) for m in run["metrics"]], losses, rtol=1e-5
    )
    np.testing.assert_allclose(
        [float(m["optim"]["grad_norm"]) for m in run["metrics"]], grad_norms, rtol=1e-4
    )
    for m in run["metrics"]:
        assert float(m["optim"]["finite"]) == 1.0
        np.testing.assert_allclose(float(m["optim"]["learning_rate"]), LEARNING_RATE, rtol=1e-6)
    # Replicated outputs: every device holds the same parameters.
    for leaf in jax.tree.leaves(state.params):
        shards = [np.asarray(s.data) for s in leaf.addressable_shards]
        assert len(shards) == NUM_DEVICES
        for shard in shards[1:]:
            np.testing.assert_array_equal(shard, shards[0])


def test_pmap_update_matches_shard_map_update(data_parallel_run):
    run = data_parallel_run
    update_fn = learner.make_pmap_update(run["loss_fn"], run["optimizer"], run["schedule"])
    # Placed as pmap places its outputs, so that the second call does not compile again.
    state = jax.device_put(
        jax.tree.map(lambda x: np.broadcast_to(x, (NUM_DEVICES, *x.shape)), run["init_state"]),
        NamedSharding(run["mesh"], P("data")),
    )
    for batch, sharded_metrics in zip(run["batches"], run["metrics"], strict=True):
        per_device = jax.tree.map(
            lambda x: x.reshape(NUM_DEVICES, x.shape[0] // NUM_DEVICES, *x.shape[1:]), batch
        )
        state, metrics = update_fn(state, per_device)
        assert metrics["loss"]["total"].shape == (NUM_DEVICES,)
        _leaves_close(
            metrics,
            jax.tree.map(lambda x: np.broadcast_to(x, (NUM_DEVICES,)), sharded_metrics),
            rtol=1e-6,
            atol=1e-7,
        )
    _leaves_close(
        jax.tree.map(lambda x: x[0], state.params), run["state"].params, rtol=1e-6, atol=1e-7
    )
    for leaf in jax.tree.leaves(state.params):
        for copy in leaf[1:]:
            np.testing.assert_array_equal(copy, leaf[0])


def test_nonfinite_batch_skips_the_update_and_is_counted(data_parallel_run):
    run = data_parallel_run
    mesh = run["mesh"]
    update_fn = run["update_fn"]  # already compiled for these shapes
    put = lambda batch: jax.device_put(batch, NamedSharding(mesh, P("data")))
    good = run["batches"][0]
    # One NaN target on one example of the second device poisons the averaged gradient everywhere.
    target_value = good.target_value.copy()
    target_value[5, 1] = np.nan
    bad = good._replace(target_value=target_value)
    state = jax.device_put(run["init_state"], NamedSharding(mesh, P()))
    before = jax.tree.map(np.asarray, state.params)

    expected_counts = [(1, 1), (2, 2)]
    for consecutive, total in expected_counts:
        state, metrics = update_fn(state, put(bad))
        assert float(metrics["optim"]["finite"]) == 0.0
        assert not np.isfinite(float(metrics["optim"]["grad_norm"]))
        for a, b in zip(jax.tree.leaves(state.params), jax.tree.leaves(before), strict=True):
            np.testing.assert_array_equal(np.asarray(a), b)
        assert tuple(int(c) for c in learner.nonfinite_counts(state.opt_state)) == (
            consecutive,
            total,
        )

    state, metrics = update_fn(state, put(good))
    assert float(metrics["optim"]["finite"]) == 1.0
    assert tuple(int(c) for c in learner.nonfinite_counts(state.opt_state)) == (0, 2)
    # The skipped updates left the parameters and the momentum untouched: the same program on the
    # same batch and state repeats the fixture's first update exactly.
    first = run["states"][0]
    for a, e in zip(
        jax.tree.leaves((state.params, state.opt_state.inner_state)),
        jax.tree.leaves((first.params, first.opt_state.inner_state)),
        strict=True,
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(e))
    assert int(state.step) == 3


def test_data_parallel_update_needs_the_named_axis():
    mesh = jax.sharding.Mesh(np.asarray(jax.devices()), ("batch",))
    with pytest.raises(ValueError, match="no axis named 'data'"):
        learner.make_data_parallel_update(lambda p, b: None, optax.sgd(0.1), lambda s: 0.1, mesh)


def test_schedule_warms_up_linearly_then_decays_by_cosine_to_a_tenth():
    peak, warmup, decay = 2.0, 4, 10
    schedule = learner.make_schedule(learning_rate=peak, warmup_updates=warmup, decay_updates=decay)
    expected = {
        0: 0.0,
        1: 0.5,
        3: 1.5,
        4: 2.0,  # the peak, the first step of the decay
        6: 2.0 * (0.9 * 0.5 * (1 + math.cos(math.pi * 2 / 10)) + 0.1),
        9: 2.0 * (0.9 * 0.5 + 0.1),  # halfway: cos(pi / 2) = 0
        14: 0.2,
        1000: 0.2,
    }
    for step, value in expected.items():
        np.testing.assert_allclose(
            float(schedule(step)), value, rtol=1e-6, atol=1e-7, err_msg=f"step {step}"
        )

    constant = learner.make_schedule(learning_rate=peak, warmup_updates=2, decay_updates=None)
    for step, value in {0: 0.0, 1: 1.0, 2: 2.0, 500: 2.0}.items():
        np.testing.assert_allclose(float(constant(step)), value, rtol=1e-6)
    no_warmup = learner.make_schedule(learning_rate=peak, warmup_updates=0, decay_updates=None)
    assert float(no_warmup(0)) == peak


def test_a_run_decays_its_learning_rate_to_a_tenth_by_its_last_update():
    # 2,000 env steps at 16 x 4 per iteration: 32 iterations (31.25 rounded up) of 2 updates.
    config = TrainConfig(
        total_env_steps=2_000,
        num_envs=16,
        rollout_length=4,
        updates_per_iteration=2,
        learning_rate=1e-3,
        warmup_updates=4,
        lr_decay_updates="run",
    )
    schedule = mz_jax.build(config).schedule
    last = 32 * 2
    np.testing.assert_allclose(float(schedule(4)), 1e-3, rtol=1e-6)
    np.testing.assert_allclose(float(schedule(4 + (last - 4) // 2)), 0.55e-3, rtol=1e-5)
    np.testing.assert_allclose(float(schedule(last)), 1e-4, rtol=1e-5)
    assert float(schedule(last - 2)) > 1e-4


def test_optimizer_applies_the_schedule_and_clips():
    # SGD without momentum on a constant gradient g: each update is exactly -lr_t * g.
    optimizer = learner.make_optimizer(
        optimizer="sgd",
        learning_rate=learner.make_schedule(learning_rate=1.0, warmup_updates=2, decay_updates=4),
        momentum=0.0,
        max_grad_norm=100.0,
    )
    grads = {"w": jnp.asarray([1.0, -2.0, 2.0])}  # norm 3
    params = {"w": jnp.zeros(3)}
    state = optimizer.init(params)
    expected_lr = [0.0, 0.5, 1.0, 0.9 * 0.5 * (1 + math.cos(math.pi / 4)) + 0.1, 0.55]
    for lr in expected_lr:
        updates, state = optimizer.update(grads, state, params)
        np.testing.assert_allclose(updates["w"], -lr * grads["w"], rtol=1e-6, atol=1e-7)

    clipping = learner.make_optimizer(
        optimizer="sgd", learning_rate=1.0, momentum=0.0, max_grad_norm=1.5
    )
    updates, _ = clipping.update(grads, clipping.init(params), params)
    np.testing.assert_allclose(updates["w"], -0.5 * grads["w"], rtol=1e-6)  # norm 3 -> 1.5

    with pytest.raises(ValueError, match="'adam' or 'sgd'"):
        learner.make_optimizer(optimizer="lamb")


def _tiny_train_config() -> TrainConfig:
    return TrainConfig(
        env="gymnax:CartPole-v1",
        num_envs=8,
        batch_size=8,
        rollout_length=2,
        updates_per_iteration=1,
        num_unroll_steps=2,
        td_steps=2,
        replay_capacity=8 * 6,
        warmup_updates=0,
        network=NetworkConfig(hidden_sizes=(16,), latent_size=16),
        search=SearchConfig(num_simulations=2),
    )


def _plain(tree):
    """Host numpy copies, with typed PRNG keys as their key data."""
    as_data = lambda x: (
        jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x
    )
    return jax.tree.map(lambda x: np.asarray(as_data(x)), tree)


def test_train_step_and_pmap_step_agree():
    trainer = make_train(_tiny_train_config())
    assert trainer.mesh.devices.size == NUM_DEVICES
    state = trainer.init(0)
    initial = _plain(state)
    pmap_state = jax.tree.map(jnp.copy, state)  # `step` donates its input

    # Windows of K + td + 1 = 5 steps need three iterations of two steps before the first update.
    num_iterations = 3
    updates = 0
    for _ in range(num_iterations):
        state, metrics = trainer.step(state)
        pmap_state, pmap_metrics = trainer.pmap_step(pmap_state)
        _leaves_close(pmap_metrics, metrics, rtol=1e-5, atol=1e-6)
        updates += int(metrics["optim"]["updates"][0])
    assert updates >= 1

    sharded, pmapped = _plain(state), _plain(pmap_state)
    _leaves_close(pmapped.train, sharded.train, rtol=1e-5, atol=1e-6)
    _leaves_close(pmapped.replay, sharded.replay, rtol=1e-5, atol=1e-6)
    _leaves_close(pmapped.actor, sharded.actor, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(pmapped.key, sharded.key)
    assert int(sharded.iteration) == int(pmapped.iteration) == num_iterations
    assert int(sharded.replay.num_written) == num_iterations * 2
    changed = [
        not np.array_equal(a, b)
        for a, b in zip(
            jax.tree.leaves(sharded.train.params),
            jax.tree.leaves(initial.train.params),
            strict=True,
        )
    ]
    assert any(changed)


def test_an_unrolled_learner_computes_what_its_loops_compute():
    # unroll_learner traces the loss's K model steps and an iteration's updates as straight-line
    # code (for convolutional networks, whose gradients inside a loop are slow on a CPU).
    config = _tiny_train_config().replace(updates_per_iteration=2)
    looped = make_train(config.replace(unroll_learner=False))
    unrolled = make_train(config.replace(unroll_learner=True))
    assert not make_train(config).components.unroll_learner  # None: a plain MLP keeps its loops

    states = [looped.init(0), unrolled.init(0)]
    looped_text, unrolled_text = (
        trainer.step.lower(state).as_text()
        for trainer, state in zip((looped, unrolled), states, strict=True)
    )
    # The looped step has the updates' loop, and inside it the loss's unroll and its gradient's
    # (a scan's transpose is another loop), behind the conditional that skips the updates until
    # the replay is ready; unrolled, none of them.
    for op, fewer in (("stablehlo.while", 3), ("stablehlo.case", 1)):
        assert looped_text.count(op) == unrolled_text.count(op) + fewer, op
    for _ in range(4):  # updates start in the third iteration
        states = [
            trainer.step(state)[0]
            for trainer, state in zip((looped, unrolled), states, strict=True)
        ]
    a, b = (_plain(state) for state in states)
    assert int(a.train.step) == int(b.train.step) == 4
    _leaves_close(b.train, a.train, rtol=1e-4, atol=1e-6)
    _leaves_close(b.replay, a.replay, rtol=1e-4, atol=1e-6)
