"""``make_train``: the compiled, data-parallel training step around :func:`mz_jax.training.iteration.iteration`.

The per-device iteration (act, store, learn) is wrapped here for the devices at hand: in
``jax.shard_map`` over all devices (of all processes after ``jax.distributed.initialize()``), with
the same function also runnable under ``jax.pmap`` (:meth:`Trainer.pmap_step`, a thin wrapper that
re-lays the state out, not a second code path). With ``config.num_seeds > 1`` it is vmapped over a
leading seed axis of the whole state: independent runs in one program. With
``config.iterations_per_call = N > 1`` one call runs N iterations in a ``lax.scan``, so the host
fetches metrics once per N iterations; the results are those of N calls of one iteration.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from mz_jax.config.search import SearchConfig
from mz_jax.config.train import TrainConfig
from mz_jax.envs import Env
from mz_jax.training import actor as actor_lib
from mz_jax.training import evaluate as evaluate_lib
from mz_jax.training import iteration as iteration_lib
from mz_jax.training import overlap as overlap_lib
from mz_jax.training import replay as replay_lib
from mz_jax.training.build import Components, build, make_run_env
from mz_jax.training.iteration import AXIS, IterationMetrics, RunState
from mz_jax.types import Array, MuZeroNetwork, Params


@dataclasses.dataclass(frozen=True)
class Trainer:
    """A compiled training run (see :func:`make_train`).

    Attributes:
      components: what the run is made of (:func:`mz_jax.training.build`).
      mesh: the device mesh, one axis ``'data'``.
      init: ``init(seed) -> RunState``, sharded over the mesh.
      step: ``step(state) -> (state, metrics)``: ``config.iterations_per_call`` iterations on every
        device (the input state is donated). Metrics (:mod:`mz_jax.run.metrics`) have leaves
        ``[iterations_per_call]``, one entry per iteration. Where acting overlaps learning
        (``config.overlap_acting``), an :class:`mz_jax.training.overlap.OverlappedStep` (numpy
        metrics, with ``overlap``'s wait shares; call :meth:`close` when done).
      compile_step: ``compile_step(state)`` compiles ``step`` for ``state`` (or finds it in the
        persistent compilation cache) without running it; ``step(state)`` then runs at once.
      evaluate: ``evaluate(params, key) -> EvalResult``, greedy episodes on separate environments.
      per_device_step: the per-device function that ``step`` wraps in ``shard_map``.
      state_specs: the ``PartitionSpec`` of every leaf of the run state over ``'data'``.
      abstract_state: the run state's shapes, dtypes and shardings (``jax.ShapeDtypeStruct``
        leaves), e.g. to restore a checkpoint onto the mesh.
      bytes_per_transition: replay memory per stored transition.
      restart_actors: ``restart_actors(state) -> state`` with every self-play environment reset
        (keys from the run's key and iteration): how a resumed run of an environment stepped on
        the host (:mod:`mz_jax.envs.host`), whose environments no checkpoint holds, starts new
        episodes; the parameters, optimiser, replay and counters are kept.

    With ``config.num_seeds = S > 1`` the run state holds S independent runs, seeds ``seed`` to
    ``seed + S - 1``: ``init(seed)`` gives every leaf a leading axis ``[S]``, ``step`` advances all of
    them (metrics ``[iterations_per_call, S]``), and ``evaluate`` takes parameters ``[S, ...]`` and
    keys ``[S]`` and returns episodes ``[S, num_episodes]``. Run ``i`` equals the plain run of seed
    ``seed + i`` up to float rounding.
    """

    components: Components
    mesh: jax.sharding.Mesh
    init: Callable[[int], RunState]
    step: Callable[[RunState], tuple[RunState, IterationMetrics]]
    compile_step: Callable[[RunState], Any]
    evaluate: Callable[[Params, Array], evaluate_lib.EvalResult]
    per_device_step: Callable[[RunState], tuple[RunState, IterationMetrics]]
    state_specs: Any
    abstract_state: Any
    bytes_per_transition: int
    restart_actors: Callable[[RunState], RunState]

    @property
    def config(self) -> TrainConfig:
        return self.components.config

    @property
    def env(self) -> Env:
        return self.components.env

    @property
    def network(self) -> MuZeroNetwork:
        return self.components.network

    @property
    def search_config(self) -> SearchConfig:
        return self.components.search_config

    @property
    def env_steps_per_iteration(self) -> int:
        """Environment steps of one iteration, all devices together."""
        return self.config.env_steps_per_iteration

    def close(self) -> None:
        """Stops the actor thread of an overlapped step (nothing to do for one in turn)."""
        overlap_lib.close(self.step)

    def pmap_step(self, state: RunState) -> tuple[RunState, IterationMetrics]:
        """The same iterations as :attr:`step` in turn, run by ``jax.pmap`` over the mesh's
        devices."""
        devices = list(self.mesh.devices.flat)
        per_device = to_device_major(state, self.state_specs, len(devices))
        new_state, metrics = _pmapped(self.per_device_step, tuple(devices))(per_device)
        return (
            from_device_major(new_state, self.state_specs),
            jax.tree.map(lambda x: x[0], metrics),
        )


@functools.cache
def _pmapped(fn, devices):
    return jax.pmap(fn, axis_name=AXIS, devices=list(devices))


def _spec_axis(spec: P) -> int | None:
    """The axis of an array that a spec shards over 'data', or None if replicated."""
    for axis, name in enumerate(spec):
        if name == AXIS:
            return axis
    return None


def to_device_major(state: Any, specs: Any, num_devices: int) -> Any:
    """The pmap layout of a global state: a leading device axis on every leaf."""

    def split(x, spec):
        axis = _spec_axis(spec)
        if axis is None:
            return np.broadcast_to(x, (num_devices, *x.shape))
        shape = (*x.shape[:axis], num_devices, x.shape[axis] // num_devices, *x.shape[axis + 1 :])
        return np.moveaxis(x.reshape(shape), axis, 0)

    return jax.tree.map(
        lambda x, spec: _on_host(split, x, spec), state, specs, is_leaf=lambda x: isinstance(x, P)
    )


def from_device_major(state: Any, specs: Any) -> Any:
    """Inverse of :func:`to_device_major` (replicated leaves are taken from device 0)."""

    def merge(x, spec):
        axis = _spec_axis(spec)
        if axis is None:
            return x[0]
        moved = np.moveaxis(x, 0, axis)
        shape = (
            *moved.shape[:axis],
            moved.shape[axis] * moved.shape[axis + 1],
            *moved.shape[axis + 2 :],
        )
        return moved.reshape(shape)

    return jax.tree.map(
        lambda spec, x: _on_host(merge, x, spec), specs, state, is_leaf=lambda x: isinstance(x, P)
    )


def _on_host(relayout: Callable, x: Any, spec: P) -> Any:
    """``relayout(numpy_x, spec)``; a typed PRNG key array (which numpy cannot hold) goes through its
    key data, whose extra trailing axis the leading-axis relayouts leave alone, and back."""
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        data = relayout(np.asarray(jax.random.key_data(x)), spec)
        return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
    return relayout(np.asarray(x), spec)


def state_specs(state: RunState, *, seeded: bool) -> RunState:
    """The partition specs of a run state; ``seeded``: every leaf has a leading (unsharded) seed
    axis."""
    replicated = lambda tree: jax.tree.map(lambda _: P(), tree)
    specs = RunState(
        train=replicated(state.train),
        target_params=replicated(state.target_params),
        actor=jax.tree.map(lambda _: P(AXIS), state.actor),
        replay=replay_lib.partition_specs(state.replay, AXIS),
        key=P(),
        iteration=P(),
    )
    if not seeded:
        return specs
    return jax.tree.map(lambda spec: P(None, *spec), specs, is_leaf=lambda x: isinstance(x, P))


def make_train(config: TrainConfig | Components, *, devices: list | None = None) -> Trainer:
    """The compiled, data-parallel training step of a run (nothing is compiled until first called).

    Args:
      config: the run's configuration, or its components (:func:`mz_jax.training.build`) if already built.
      devices: the devices of the mesh; default all devices of all processes.
    """
    components = config if isinstance(config, Components) else build(config)
    config = components.config
    devices = list(jax.devices() if devices is None else devices)
    config.check_devices(len(devices))
    mesh = jax.sharding.Mesh(np.asarray(devices), (AXIS,))
    num_seeds = config.num_seeds

    one_iteration = functools.partial(iteration_lib.iteration, components)
    if num_seeds > 1:
        # Seeds as a leading axis of every leaf. A `lax.cond` whose predicate is batched becomes a
        # select, so while the replay warms up the updates are computed and discarded (the
        # predicate is the same for every seed).
        one_iteration = jax.vmap(one_iteration)
    per_device_step = functools.partial(
        _iterations, one_iteration, num_iterations=config.iterations_per_call
    )

    specs, abstract_state = abstract_run_state(components, mesh)
    shardings = jax.tree.map(lambda s: s.sharding, abstract_state)
    if overlap_lib.overlaps(components):
        step = overlap_lib.OverlappedStep(
            overlap_lib.make_halves(components, mesh, specs),
            iterations_per_call=config.iterations_per_call,
        )
        compile_step = step.compile
    else:
        step = jax.jit(
            jax.shard_map(
                per_device_step,
                mesh=mesh,
                in_specs=(specs,),
                out_specs=(specs, P()),
                check_vma=False,
            ),
            donate_argnums=0,
        )
        compile_step = lambda state: step.lower(state).compile()
    evaluate = functools.partial(
        evaluate_lib.evaluate,
        # An environment stepped on the host evaluates in environments of its own (its reset
        # replaces the environments of the last reset of the same batch shape).
        env=make_run_env(config) if components.env.host is not None else components.env,
        network=components.network,
        search_config=components.search_config,
        num_episodes=config.eval_episodes,
        max_steps=config.eval_max_decisions,
        opponent="random" if components.env.num_players == 2 else None,
    )
    return Trainer(
        components=components,
        mesh=mesh,
        init=_jit_placed(run_init(components), shardings, on_host=components.env.host is not None),
        step=step,
        compile_step=compile_step,
        evaluate=jax.jit(jax.vmap(evaluate) if num_seeds > 1 else evaluate),
        per_device_step=per_device_step,
        state_specs=specs,
        abstract_state=abstract_state,
        bytes_per_transition=replay_lib.bytes_per_transition(
            actor_lib.transition_spec(
                components.env,
                final_observation=components.acting.record_final_observation,
                observation_dtype=config.replay_observation_dtype,
            )
        ),
        restart_actors=_jit_placed(
            _restart_actors(components), shardings, on_host=components.env.host is not None
        ),
    )


def _jit_placed(fn: Callable, shardings: Any, *, on_host: bool) -> Callable:
    """``fn`` compiled with its outputs placed by ``shardings``. An environment stepped on the host
    resets in one callback on one device, so its program is compiled for one device and its
    outputs are then moved (sharding the callback's results inside the program would replicate
    them first, which XLA warns of)."""
    if not on_host:
        return jax.jit(fn, out_shardings=shardings)
    compiled = jax.jit(fn)
    return lambda *args: jax.device_put(compiled(*args), shardings)


def _restart_actors(components: Components) -> Callable[[RunState], RunState]:
    """``restart(state)``: the state with new self-play environments (see ``Trainer``)."""
    acting = components.acting

    def restart(state: RunState) -> RunState:
        key = jax.random.fold_in(jax.random.fold_in(state.key, 1), state.iteration)
        actor = actor_lib.init_actor(
            components.env,
            key,
            num_envs=acting.num_envs,
            repeat_exploration=acting.exploration_repeat_exponent is not None,
        )
        return state._replace(actor=actor)

    return jax.vmap(restart) if components.config.num_seeds > 1 else restart


def abstract_run_state(components: Components, mesh: jax.sharding.Mesh) -> tuple[Any, Any]:
    """The run state's partition specs and its shapes, dtypes and shardings on ``mesh``
    (``jax.ShapeDtypeStruct`` leaves; nothing is computed), e.g. to restore a checkpoint."""
    shapes = jax.eval_shape(run_init(components), 0)
    specs = state_specs(shapes, seeded=components.config.num_seeds > 1)
    abstract_state = jax.tree.map(
        lambda s, spec: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=NamedSharding(mesh, spec)),
        shapes,
        specs,
    )
    return specs, abstract_state


def run_init(components: Components) -> Callable[[int | Array], RunState]:
    """``init(seed)``: the state of a new run; with ``num_seeds = S > 1``, of the S runs of seeds
    ``seed .. seed + S - 1`` stacked along a leading axis of every leaf."""
    init = functools.partial(iteration_lib.init, components)
    num_seeds = components.config.num_seeds
    if num_seeds == 1:
        return lambda seed: _definite_dtypes(init(seed))
    return lambda seed: _definite_dtypes(jax.vmap(init)(seed + jnp.arange(num_seeds)))


def _definite_dtypes(tree: Any) -> Any:
    """``tree`` without weakly typed leaves. An environment's state may hold one (gymnax's
    ``time = 0``), which a checkpoint restores strongly typed: the step of a resumed run would then
    be another program, compiled again and cached under another key."""

    def definite(x: Array) -> Array:
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            return x
        return jax.lax.convert_element_type(x, x.dtype)  # weak_type=False

    return jax.tree.map(definite, tree)


def _iterations(
    one_iteration: Callable, state: RunState, *, num_iterations: int
) -> tuple[RunState, IterationMetrics]:
    """``num_iterations`` iterations; metrics stacked along a new leading axis."""

    def one(state: RunState) -> tuple[RunState, IterationMetrics]:
        state, metrics = one_iteration(state)
        return _definite_dtypes(state), metrics

    if num_iterations == 1:
        state, metrics = one(state)
        return state, jax.tree.map(lambda x: x[None], metrics)
    return jax.lax.scan(lambda s, _: one(s), state, None, length=num_iterations)
