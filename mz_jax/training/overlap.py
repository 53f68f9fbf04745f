"""Acting overlapped with learning: an actor thread beside the learner (Hessel et al., 2021,
"Podracer architectures for scalable reinforcement learning", Sebulba).

An iteration (:func:`mz_jax.training.iteration.iteration`) is two halves, compiled as two programs
here: :func:`~mz_jax.training.iteration.act` plays a rollout, and
:func:`~mz_jax.training.iteration.learn` adds it to the replay and updates. In turn, iteration j
acts with the parameters of iteration j - 1's updates and then learns. Overlapped
(:class:`OverlappedStep`), an actor thread plays rollout j + 1 while the learner (the calling
thread) runs iteration j's updates on rollout j, so rollout j + 1 uses the parameters from before
iteration j's updates: one iteration older than in turn, the delay of Sebulba's actors. Each
program waits only for its own inputs, so when the environment is stepped in Python (an
environment stepped on the host, :mod:`mz_jax.envs.host`) the host's steps and the search run beside
the learner's updates.

The state an overlapped step returns has the meaning of the in-turn one after the same
iterations (its actor state is the one rollout j ended in, its replay holds rollouts 1..j), so it
is saved, evaluated and restored as any other; only the rollout in flight is not in it. The keys
and schedules of iteration j are those of the in-turn iteration j. With parameters that do not
change (no updates), the overlapped run is the in-turn run.

Each iteration's record gains ``overlap/learner_wait``: the share of the iteration's wall time
(from the end of the previous iteration to the end of its updates) the learner waited for the
actor's rollout, and ``overlap/actor_wait``: the share of it the actor thread had no rollout to
play (it waited for the learner to hand over the next parameters).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import threading
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.sharding import PartitionSpec as P

from mz_jax.training import iteration as iteration_lib
from mz_jax.training.build import Components
from mz_jax.training.iteration import AXIS, IterationMetrics, RunState


@dataclasses.dataclass(frozen=True)
class Halves:
    """The two compiled halves of an iteration over a mesh (leaves as in ``RunState``'s specs).

    Attributes:
      act: ``act(params, actor, key, iteration) -> (actor, trajectory, actor_metrics, next_key,
        next_iteration)``: :func:`~mz_jax.training.iteration.act`, with the iteration count after it.
      learn: ``learn(train, target_params, replay, trajectory, key, iteration) -> (train,
        target_params, replay, metrics)``: :func:`~mz_jax.training.iteration.learn` (it donates
        ``target_params`` and ``replay``).
    """

    act: Callable
    learn: Callable


def make_halves(components: Components, mesh: jax.sharding.Mesh, specs: RunState) -> Halves:
    """The two halves of an iteration under ``shard_map`` over ``mesh`` (vmapped over the seeds of
    a multi-seed run), with ``specs`` the partition specs of the run state."""

    def act(params, actor, key, iteration):
        actor, trajectory, metrics, next_key = iteration_lib.act(
            components, params, actor, key, iteration
        )
        return actor, trajectory, metrics, next_key, iteration + 1

    learn = functools.partial(iteration_lib.learn, components)
    seeded = components.config.num_seeds > 1
    if seeded:
        act, learn = jax.vmap(act), jax.vmap(learn)
    # Trajectory leaves [T, E, ...] (after a seed axis), sharded along the environments.
    trajectory_spec = P(None, None, AXIS) if seeded else P(None, AXIS)
    shard = functools.partial(jax.shard_map, mesh=mesh, check_vma=False)
    act_step = shard(
        act,
        in_specs=(specs.train.params, specs.actor, specs.key, specs.iteration),
        out_specs=(specs.actor, trajectory_spec, P(), specs.key, specs.iteration),
    )
    learn_step = shard(
        learn,
        in_specs=(
            specs.train,
            specs.target_params,
            specs.replay,
            trajectory_spec,
            specs.key,
            specs.iteration,
        ),
        out_specs=(specs.train, specs.target_params, specs.replay, P()),
    )
    return Halves(act=jax.jit(act_step), learn=jax.jit(learn_step, donate_argnums=(1, 2)))


class OverlappedStep:
    """``step(state) -> (state, metrics)`` as :attr:`mz_jax.training.train.Trainer.step` gives it
    (``iterations_per_call`` iterations, metrics with a leading axis of them, as numpy arrays),
    with each rollout played by an actor thread while the learner trains on the one before.

    The rollout in flight continues the state this object returned last; a step given any other
    state (a restored one, a state with restarted actors) first plays that state's rollout and
    discards the one in flight. :meth:`close` waits for the rollout in flight and stops the
    thread; a step after it starts a new one.
    """

    def __init__(self, halves: Halves, *, iterations_per_call: int):
        self._halves = halves
        self._iterations_per_call = iterations_per_call
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._in_flight: concurrent.futures.Future | None = None
        self._continues: RunState | None = None  # the state the rollout in flight continues
        self._lock = threading.Lock()
        self._busy: list[tuple[float, float]] = []  # the actor's finished rollouts (start, end)
        self._running_since: float | None = None
        self._iteration_end: float | None = None

    def compile(self, state: RunState) -> None:
        """Compiles both halves for ``state`` (or finds them in the persistent compilation cache)
        without running them."""
        act_args = (state.train.params, state.actor, state.key, state.iteration)
        compiled_act = self._halves.act.lower(*act_args).compile()
        trajectory = compiled_act.out_info[1]
        self._halves.learn.lower(
            state.train, state.target_params, state.replay, trajectory, state.key, state.iteration
        ).compile()

    def __call__(self, state: RunState) -> tuple[RunState, IterationMetrics]:
        records = []
        for _ in range(self._iterations_per_call):
            state, metrics = self._one_iteration(state)
            records.append(jax.device_get(metrics))
        return state, jax.tree.map(lambda *xs: np.stack(xs), *records)

    def close(self) -> None:
        """Waits for the rollout in flight (its result is dropped) and stops the actor thread."""
        self._drop_in_flight()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def _play(self, params, actor, key, iteration):
        """The actor thread's work: one rollout, waited for, with its start and end noted."""
        with self._lock:
            self._running_since = time.perf_counter()
        try:
            return jax.block_until_ready(self._halves.act(params, actor, key, iteration))
        finally:
            with self._lock:
                self._busy.append((self._running_since, time.perf_counter()))
                self._running_since = None

    def _submit(self, params, actor, key, iteration) -> None:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="actor")
        self._in_flight = self._executor.submit(self._play, params, actor, key, iteration)

    def _drop_in_flight(self) -> None:
        if self._in_flight is not None:
            concurrent.futures.wait([self._in_flight])
            self._in_flight = self._continues = None

    def _one_iteration(self, state: RunState) -> tuple[RunState, IterationMetrics]:
        start = time.perf_counter()
        window_start = self._iteration_end if self._continues is state else start
        if self._continues is not state:
            self._drop_in_flight()
            self._submit(state.train.params, state.actor, state.key, state.iteration)
        future, self._in_flight, self._continues = self._in_flight, None, None
        actor, trajectory, actor_metrics, next_key, next_iteration = future.result()
        received = time.perf_counter()
        # The next rollout, with the parameters from before this iteration's updates.
        self._submit(state.train.params, actor, next_key, next_iteration)
        train, target_params, replay, metrics = self._halves.learn(
            state.train, state.target_params, state.replay, trajectory, state.key, state.iteration
        )
        new_state = RunState(
            train=train,
            target_params=target_params,
            actor=actor,
            replay=replay,
            key=next_key,
            iteration=next_iteration,
        )
        jax.block_until_ready((train, metrics))
        end = time.perf_counter()
        self._continues, self._iteration_end = new_state, end
        metrics = iteration_lib.with_actor_metrics(metrics, actor_metrics)
        metrics["overlap"] = self._waits(
            window_start, received - start, end, shape=np.shape(actor_metrics["temperature"])
        )
        return new_state, metrics

    def _waits(self, window_start: float, learner_waited: float, end: float, *, shape) -> dict:
        """The iteration's wait shares over ``[window_start, end]`` (one per seed: ``shape``)."""
        length = max(end - window_start, 1e-9)
        with self._lock:
            intervals = [*self._busy]
            if self._running_since is not None:
                intervals.append((self._running_since, end))
            self._busy = [(s, e) for s, e in self._busy if e > end]
        busy = sum(max(0.0, min(e, end) - max(s, window_start)) for s, e in intervals)
        return {
            "actor_wait": np.full(shape, max(0.0, 1.0 - busy / length), np.float32),
            "learner_wait": np.full(shape, min(1.0, learner_waited / length), np.float32),
        }


def overlaps(components: Components) -> bool:
    """``config.overlap_acting`` resolved: where None, whether the environment is stepped on the
    host."""
    if components.config.overlap_acting is not None:
        return components.config.overlap_acting
    return components.env.host is not None


def close(step: Any) -> None:
    """Closes ``step`` if it is an :class:`OverlappedStep` (a compiled in-turn step has nothing
    to close)."""
    if isinstance(step, OverlappedStep):
        step.close()
