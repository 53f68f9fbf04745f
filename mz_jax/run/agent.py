"""A trained agent, ready to act: parameters from a run's newest good checkpoint, search on top.

::

    agent = mz_jax.run.agent.Agent.restore("runs/cartpole")
    action = agent.act(key, observation)            # observation [B, ...] -> action [B] int32

Acting is the evaluation mode of the search (:func:`mz_jax.search` with ``greedy=True``): no
root noise, the deterministic choice of the search, so the action depends on the parameters and the
observation alone. The network, environment and search settings are rebuilt from the run's
``config.json`` exactly as training built them (:func:`mz_jax.training.build`). ``Agent.restore(workdir,
step=S)`` takes an older checkpoint instead, and :func:`restore_run_state` reads a checkpoint's
whole state, its replay included, to look at what a run had collected.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import logging
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.config.search import SearchConfig
from mz_jax.config.train import TrainConfig
from mz_jax.envs import Env
from mz_jax.mcts import baseline
from mz_jax.mcts.policies import SearchOutput, search, search_with_tree
from mz_jax.run import checkpoint as checkpoint_lib
from mz_jax.run.resume import read_config
from mz_jax.training import evaluate as evaluate_lib
from mz_jax.training.build import Components, build
from mz_jax.training.iteration import AXIS
from mz_jax.training.train import abstract_run_state
from mz_jax.types import Array, MuZeroNetwork, Params


class Agent:
    """A MuZero agent: a configuration, its network and search, and trained parameters.

    Args:
      config: the training configuration the parameters belong to.
      params: the network parameters (e.g. ``Agent.restore(workdir).params`` or
        ``run_state.train.params``).
      device: where the agent's programs run; default this process's first device.

    Attributes:
      config: the training configuration.
      env: the environment of ``config`` (a fresh one: use it to play or evaluate).
      network: the MuZero network of ``config``.
      search_config: the search as training used it (discount and two_player set from the env),
        or as :meth:`with_search` changed it.
      params: the network parameters.
      checkpoint_step: the checkpoint the parameters come from (None when not restored).
      updates: the learner updates behind the parameters (None when not restored).
      env_steps: the environment steps of training behind them (None when not restored).
    """

    def __init__(
        self,
        config: TrainConfig,
        params: Params,
        *,
        device: jax.Device | None = None,
    ):
        if not isinstance(config, TrainConfig):
            raise ValueError(f"config must be a TrainConfig; got {type(config).__name__}")
        # build is the one place that turns a config into env, network and search, so the agent
        # searches exactly as training did; it compiles nothing.
        if device is not None:
            params = jax.device_put(params, device)
        self._init(config, params, build(config))

    def _init(self, config: TrainConfig, params: Params, components: Components) -> None:
        self.config: TrainConfig = config
        self.env: Env = components.env
        self.network: MuZeroNetwork = components.network
        self.params: Params = params
        self.checkpoint_step: int | None = None
        self.updates: int | None = None
        self.env_steps: int | None = None
        self._set_search(components.search_config)

    def _set_search(self, search_config: SearchConfig) -> None:
        """Searches with ``search_config`` from now on: its jitted act and no cached evaluators."""
        self.search_config: SearchConfig = search_config
        self._act = jax.jit(
            functools.partial(search, network=self.network, config=search_config, greedy=True)
        )
        self._evaluators: dict[tuple, Any] = {}
        self._search_with_tree: Any = None

    @classmethod
    def restore(
        cls,
        workdir: str | Path,
        *,
        seed_index: int = 0,
        step: int | None = None,
        device: jax.Device | None = None,
    ) -> Agent:
        """The agent of the newest checkpoint in ``workdir`` that restores and verifies, or of the
        checkpoint ``step``.

        Reads only: a training run may be saving into ``workdir`` at the same time, so nothing there
        is cleaned up, moved or created (a checkpoint that fails is reported and skipped).

        Args:
          workdir: the training run's directory.
          seed_index: which run of a multi-seed run (``num_seeds > 1``), ``0 <= seed_index <
            num_seeds``; the agent's ``config`` is then that run's (``seed + seed_index``,
            ``num_seeds = 1``).
          step: a checkpoint's step (the names under ``checkpoints/``: a run keeps its newest
            ``keep_checkpoints`` and, with ``keep_checkpoint_every``, every multiple of it), for
            the parameters partway through the run. None: the newest that restores.
          device: where the agent's programs run; default this process's first device.

        Raises:
          FileNotFoundError: if ``workdir`` has no ``config.json`` or no checkpoint.
          ValueError: if ``seed_index`` is out of range, or ``step`` is not a checkpoint there.
          mz_jax.run.checkpoint.CheckpointError: if it has checkpoints but none restores (or ``step``
            does not).
        """
        workdir = Path(workdir)
        config = read_config(workdir)
        # Checked before the (slower) restore; RestoredRun.agent checks it again.
        _check_seed_index("seed_index", seed_index, config.num_seeds, repr(str(workdir)))
        return restore_run_state(workdir, step=step, device=device, config=config).agent(seed_index)

    def with_search(self, **changes: Any) -> Agent:
        """This agent searching differently: the same configuration, parameters and counters, with
        ``changes`` to the fields of its :class:`~mz_jax.config.search.SearchConfig` (e.g.
        ``agent.with_search(num_simulations=64)`` to play with a deeper search than training's).

        Raises:
          ValueError: a name that is not a field of ``SearchConfig``, or a value it refuses.
        """
        fields = sorted(field.name for field in dataclasses.fields(SearchConfig))
        if unknown := sorted(set(changes).difference(fields)):
            names = ", ".join(map(repr, unknown))
            raise ValueError(f"{names} not a field of SearchConfig; allowed {', '.join(fields)}")
        agent = copy.copy(self)
        agent._set_search(dataclasses.replace(self.search_config, **changes))
        return agent

    def act(self, key: Array, observation: Array, legal_action_mask: Array | None = None) -> Array:
        """Greedy search from each observation; returns the actions ``[B]`` int32.

        An empty batch (``B = 0``) is valid and gives an empty ``[0]`` array of actions, without a
        search.

        Args:
          key: a PRNG key (the greedy search is deterministic; the key is kept for symmetry with
            training and future stochastic modes).
          observation: ``[B, *env.observation_shape]`` (float32 or castable), one row per state.
          legal_action_mask: ``[B, A]`` bool, True where an action is legal; default all legal.
            Every row needs a legal action: the returned action is always one of them.

        Raises:
          ValueError: for shapes that do not match the environment, or a row with no legal action.
        """
        observation, legal_action_mask = self._checked(observation, legal_action_mask)
        if observation.shape[0] == 0:  # nothing to search (and mctx cannot reshape a 0-row tree)
            return jnp.zeros((0,), jnp.int32)
        return self._act(self.params, key, observation, legal_action_mask).action

    def search_with_tree(
        self, key: Array, observation: Array, legal_action_mask: Array | None = None
    ) -> tuple[SearchOutput, Any]:
        """The greedy search of :meth:`act`, all of it: ``(SearchOutput, tree)`` with the action,
        the policy and root value ``[B]``, and the mctx tree it built
        (:func:`mz_jax.mcts.policies.search_with_tree`). Arguments and errors as :meth:`act`; the
        batch must not be empty."""
        observation, legal_action_mask = self._checked(observation, legal_action_mask)
        if observation.shape[0] == 0:
            raise ValueError("observation has an empty batch; search_with_tree needs B >= 1")
        if self._search_with_tree is None:
            self._search_with_tree = jax.jit(
                functools.partial(
                    search_with_tree,
                    network=self.network,
                    config=self.search_config,
                    greedy=True,
                )
            )
        return self._search_with_tree(self.params, key, observation, legal_action_mask)

    def _checked(self, observation: Array, legal_action_mask: Array | None) -> tuple[Array, Array]:
        """``(observation float32 [B, ...], legal_action_mask bool [B, A])``, checked against the
        environment."""
        observation = jnp.asarray(observation)
        expected = tuple(self.env.observation_shape)
        if observation.ndim != len(expected) + 1 or tuple(observation.shape[1:]) != expected:
            hint = (
                " (add a leading batch axis: observation[None])"
                if tuple(observation.shape) == expected
                else ""
            )
            raise ValueError(
                f"observation must have shape [B, *{expected}] for {self.env.name}; got "
                f"{tuple(observation.shape)}{hint}"
            )
        batch_size = observation.shape[0]
        num_actions = self.env.num_actions
        if legal_action_mask is None:
            legal_action_mask = jnp.ones((batch_size, num_actions), bool)
        legal_action_mask = jnp.asarray(legal_action_mask)
        if legal_action_mask.shape != (batch_size, num_actions):
            raise ValueError(
                f"legal_action_mask must have shape [B, A] = {(batch_size, num_actions)}; got "
                f"{tuple(legal_action_mask.shape)}"
            )
        if legal_action_mask.dtype != jnp.bool_:
            legal_action_mask = legal_action_mask != 0
        if not isinstance(legal_action_mask, jax.core.Tracer):
            empty = np.flatnonzero(~np.asarray(legal_action_mask).any(axis=-1))
            if empty.size:
                raise ValueError(
                    f"legal_action_mask rows {empty.tolist()} have no legal action; a finished "
                    "game has no move to choose"
                )
        return observation.astype(jnp.float32), legal_action_mask

    def evaluate(
        self,
        key: Array,
        *,
        num_episodes: int,
        max_steps: int | None = None,
        opponent: str | None = None,
    ) -> evaluate_lib.EvalResult:
        """Greedy episodes in fresh environments (see :func:`mz_jax.training.evaluate.evaluate`).

        Args:
          key: a PRNG key, consumed.
          num_episodes: episodes played in parallel, one per environment.
          max_steps: environment steps each episode may last; default ``config.eval_max_steps``
            (with ``config.action_repeat`` > 1, ``ceil(max_steps / action_repeat)`` decisions).
          opponent: None (single-player, or self-play in a two-player game), ``"random"`` (a
            uniformly random legal player), ``"mcts:N"`` (the MCTS baseline with N simulations on
            the true game, :mod:`mz_jax.mcts.baseline`; pgx games only) or ``"pip_count"`` (the
            pip-count heuristic, :mod:`mz_jax.envs.backgammon`; ``pgx:backgammon`` only); the agent
            moves first in the first half of the episodes.

        Returns:
          :class:`mz_jax.training.evaluate.EvalResult` with leaves ``[num_episodes]``.
        """
        if isinstance(num_episodes, bool) or not isinstance(num_episodes, int) or num_episodes < 1:
            raise ValueError(f"num_episodes must be an integer >= 1; got {num_episodes!r}")
        max_steps = self.config.eval_max_steps if max_steps is None else max_steps
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be an integer >= 1; got {max_steps!r}")
        if opponent is not None:
            baseline.check_opponent_env(self.env, opponent)  # a clear error before compiling
        signature = (num_episodes, max_steps, opponent)
        if signature not in self._evaluators:
            self._evaluators[signature] = jax.jit(
                functools.partial(
                    evaluate_lib.evaluate,
                    env=self.env,
                    network=self.network,
                    search_config=self.search_config,
                    num_episodes=num_episodes,
                    max_steps=self.config.decisions(max_steps),
                    opponent=opponent,
                )
            )
        return self._evaluators[signature](self.params, key)


@contextlib.contextmanager
def _absl_warnings_silenced():
    absl_logger = logging.getLogger("absl")
    level = absl_logger.level
    absl_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        absl_logger.setLevel(level)


class RestoredRun(NamedTuple):
    """A training run's state as one of its checkpoints holds it (:func:`restore_run_state`).

    Attributes:
      config: the run's configuration (``config.json``).
      components: its environment, network and search (``mz_jax.build(config)``).
      step: the checkpoint's step.
      state: the :class:`~mz_jax.training.train.RunState`: parameters, optimiser, actors and replay, with a
        leading seed axis when ``config.num_seeds > 1``.
      meta: what was saved beside it (``env_steps``, ``updates``, ...).
    """

    config: TrainConfig
    components: Components
    step: int
    state: Any
    meta: dict

    def seed_state(self, index: int) -> Any:
        """The state of run ``index`` of a multi-seed run (its leaves without the seed axis); a
        one-seed run's state as it is (``index`` 0).

        Raises:
          ValueError: if ``index`` is not in ``[0, config.num_seeds)`` (a leaf indexed past its end
            would give the last seed's values, not an error).
        """
        return self._of_seed(self.state, index)

    def agent(self, index: int = 0) -> Agent:
        """The agent of run ``index`` (``0 <= index < config.num_seeds``), as
        :meth:`Agent.restore` returns it: that run's ``config`` (``seed + index``, ``num_seeds =
        1``), parameters and counters.

        Raises:
          ValueError: if ``index`` is not in ``[0, config.num_seeds)``.
        """
        params = self._of_seed(self.state.train.params, index)  # only these, not the replay
        config = self.config.replace(seed=self.config.seed + index, num_seeds=1)
        agent = Agent.__new__(Agent)
        agent._init(config, params, self.components)
        agent.checkpoint_step = self.step
        # Counters are the same for every seed of a multi-seed run.
        first = lambda x: int(np.asarray(x).reshape(-1)[0])
        agent.updates = int(self.meta.get("updates", first(self.state.train.step)))
        agent.env_steps = int(
            self.meta.get("env_steps", first(self.state.iteration) * config.env_steps_per_iteration)
        )
        return agent

    def _of_seed(self, tree: Any, index: int) -> Any:
        """``tree`` (a part of ``state``) of run ``index``: its leaves without the seed axis, or as
        they are in a one-seed run; ``index`` checked, since a leaf indexed past its end would give
        the last seed's values rather than an error."""
        _check_seed_index("index", index, self.config.num_seeds, f"checkpoint {self.step}")
        if self.config.num_seeds == 1:
            return tree
        return jax.tree.map(lambda x: x[index], tree)


def open_read_only(workdir: str | Path) -> checkpoint_lib.Checkpointer:
    """A read-only :class:`~mz_jax.run.checkpoint.Checkpointer` of ``workdir`` (close it after
    use), without orbax's warning that a read-only manager is read-only."""
    with _absl_warnings_silenced():
        return checkpoint_lib.Checkpointer(workdir, read_only=True)


def _check_seed_index(name: str, index: object, num_seeds: int, holder: str) -> None:
    """Raises unless ``index`` picks one of the ``num_seeds`` runs that ``holder`` holds."""
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < num_seeds:
        raise ValueError(
            f"{name} {index!r} is invalid: {holder} holds {num_seeds} run(s); allowed an integer "
            f"in [0, {num_seeds - 1}]"
        )


def restore_run_state(
    workdir: str | Path,
    *,
    step: int | None = None,
    device: jax.Device | None = None,
    config: TrainConfig | None = None,
) -> RestoredRun:
    """The whole state of a run's checkpoint, its replay included (what a resumed run continues
    from), for reading: the newest checkpoint that restores and verifies, or the checkpoint
    ``step``. Nothing in ``workdir`` is cleaned up, moved or created.

    Args:
      workdir: the training run's directory.
      step: a checkpoint's step (the names under ``checkpoints/``); None: the newest that restores.
      device: where the state is put; default this process's first device.
      config: the run's configuration if already read (default: read from ``workdir``).

    Raises:
      FileNotFoundError: if ``workdir`` has no ``config.json`` or no checkpoint.
      ValueError: if ``step`` is not one of its checkpoints.
      mz_jax.run.checkpoint.CheckpointError: if it has checkpoints but none restores (or ``step``
        does not).
    """
    workdir = Path(workdir)
    config = read_config(workdir) if config is None else config
    checkpoints = workdir / checkpoint_lib.CHECKPOINT_DIR
    no_checkpoint = FileNotFoundError(
        f"{str(workdir)!r} has no checkpoint in {checkpoint_lib.CHECKPOINT_DIR}/ yet (a run "
        "saves one every checkpoint_every_seconds, at the end and on SIGTERM/SIGINT)"
    )
    if not checkpoints.is_dir():
        raise no_checkpoint
    checkpointer = open_read_only(workdir)
    try:
        steps = checkpointer.steps()
        if not steps:
            raise no_checkpoint
        if step is not None and (isinstance(step, bool) or step not in steps):
            raise ValueError(
                f"step {step!r} is not a checkpoint of {str(workdir)!r}; allowed one of "
                f"{', '.join(map(str, steps))}"
            )
        components = build(config)
        mesh = jax.sharding.Mesh(np.asarray([device or jax.local_devices()[0]]), (AXIS,))
        _, target = abstract_run_state(components, mesh)
        if step is None:
            # Read-only: failed checkpoints are reported and skipped, never moved aside.
            step, state, meta = checkpointer.restore_latest(target)
        else:
            state, meta = checkpointer.restore(step, target)
    finally:
        checkpointer.close()
    return RestoredRun(config, components, int(step), state, meta)
