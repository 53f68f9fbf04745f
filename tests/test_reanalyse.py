"""Target parameters of ``reanalyse_values``: a copy of the parameters, refreshed every N updates."""

import dataclasses
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
from _batches import capture_batches

from mz_jax.config.search import SearchConfig
from mz_jax.config.train import NetworkConfig, TrainConfig
from mz_jax.training.train import make_train

CONFIG = TrainConfig(
    env="gymnax:CartPole-v1",
    num_envs=4,
    rollout_length=4,
    batch_size=8,
    updates_per_iteration=1,
    num_unroll_steps=2,
    td_steps=2,
    replay_capacity=200,
    warmup_updates=0,
    reanalyse_values=True,
    target_update_every=2,
    network=NetworkConfig(hidden_sizes=(8,), latent_size=4),
    search=SearchConfig(num_simulations=2),
)


def _same(a, b) -> bool:
    return all(
        np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


def _iterations(config, count=6):
    """Runs ``count`` iterations of ``config`` (one update each once the replay is ready), yielding
    ``(updates, params, target, previous_params, previous_target)`` after each, on the host."""
    trainer = make_train(config, devices=jax.devices()[:1])
    state = trainer.init(0)
    params, target = jax.device_get((state.train.params, state.target_params))
    assert _same(target, params)  # a new run starts from a copy
    for _ in range(count):
        state, _ = trainer.step(state)
        previous_params, previous_target = params, target
        params, target = jax.device_get((state.train.params, state.target_params))
        yield int(state.train.step), params, target, previous_params, previous_target


def test_target_parameters_follow_the_parameters_every_n_updates():
    seen = {"refreshed": 0, "stale": 0}
    for step, params, target, previous_params, previous_target in _iterations(CONFIG):
        if step == 0:  # the replay is still warming up: nothing changed
            assert _same(target, previous_target) and _same(params, previous_params)
        elif step % 2 == 0:  # refreshed by this iteration's update
            assert _same(target, params)
            seen["refreshed"] += 1
        else:  # the copy made two updates ago, i.e. the previous iteration's parameters
            assert _same(target, previous_params) and not _same(target, params)
            seen["stale"] += 1
    assert seen["refreshed"] >= 2 and seen["stale"] >= 2


def test_polyak_target_moves_a_fixed_share_of_the_way_to_the_parameters_at_each_refresh():
    seen = {"refreshed": 0, "stale": 0}
    # Refreshed every second update: target <- 0.75 target + 0.25 params.
    for step, params, target, _, previous_target in _iterations(
        CONFIG.replace(target_ema_decay=0.75)
    ):
        if step > 0 and step % 2 == 0:
            pairs = zip(jax.tree.leaves(previous_target), jax.tree.leaves(params), strict=True)
            expected = [0.75 * t + 0.25 * p for t, p in pairs]
            for actual, want in zip(jax.tree.leaves(target), expected, strict=True):
                np.testing.assert_allclose(actual, want, rtol=1e-6, atol=1e-7)
            assert not _same(target, params)
            seen["refreshed"] += 1
        else:
            assert _same(target, previous_target)
            seen["stale"] += 1
    assert seen["refreshed"] >= 2 and seen["stale"] >= 2


def test_values_by_search_are_the_bootstraps_of_the_value_targets(monkeypatch):
    # The search replaced by one that gives every root the value c: nothing differs before the
    # first update between c = 0 and c = 1, so it samples the same windows in both runs, and each
    # value target z_k = sum_{i<n} γ^i r_{k+i} + γ^n v_{k+n} moves by γ^n = γ² (n = td_steps)
    # where it bootstraps, and by 0 where the episode ends first.
    from mz_jax.training import reanalyse

    batches = capture_batches(monkeypatch)
    config = dataclasses.replace(CONFIG, reanalyse_values_by_search=True)
    targets = {}
    for c in (0.0, 1.0):
        monkeypatch.setattr(
            reanalyse,
            "search",
            lambda params, key, observation, *_, c=c, **__: SimpleNamespace(
                root_value=jnp.full(observation.shape[:1], c)
            ),
        )
        trainer = make_train(config, devices=jax.devices()[:1])
        state = trainer.init(0)
        batches.clear()
        while not batches:
            state, _ = trainer.step(state)
        targets[c] = batches[0].target_value
    shift = targets[1.0] - targets[0.0]
    bootstrapped = np.isclose(shift, config.discount**config.td_steps, rtol=0, atol=1e-6)
    assert np.all(bootstrapped | (np.abs(shift) <= 1e-6)), shift
    assert bootstrapped.mean() > 0.5, shift  # CartPole's random episodes last about 20 steps


def test_refreshing_only_the_bootstrap_rows_trains_as_refreshing_every_row(monkeypatch):
    # The learner refreshes only the rows each window's value targets read (targets.bootstrap_rows),
    # which here vary by window: off-policy correction shortens old windows' returns, exploratory
    # actions and the newest written step stop them. Refreshing every row instead must train the
    # same, loss for loss; a row passed wrongly (a stale value read) would change the value loss.
    from mz_jax.training import build as build_lib

    config = CONFIG.replace(
        td_steps=4,
        off_policy_correction_steps=40,
        random_action_probability=0.3,
        stop_value_targets_at_exploration=True,
        sample_newest_steps=True,
        target_update_every=1,
    )

    def value_losses():
        trainer = make_train(config, devices=jax.devices()[:1])
        state, losses = trainer.init(0), []
        for _ in range(8):
            state, metrics = trainer.step(state)
            losses.append(float(jax.device_get(metrics["loss"]["value"])[0]))
        return losses

    some_rows = value_losses()
    every_row = lambda window, **_: jax.numpy.arange(window.reward.shape[0])
    monkeypatch.setattr(build_lib, "bootstrap_rows", every_row)
    all_rows = value_losses()
    assert sum(loss != 0 for loss in some_rows) >= 4
    np.testing.assert_allclose(some_rows, all_rows, rtol=1e-5)
