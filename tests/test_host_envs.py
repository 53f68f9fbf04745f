"""Python environments stepped on the host (``gymnasium:<id>``): the adapter against a hand-written
corridor and against gymnax's CartPole, its errors, and a run that trains, fails and resumes."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _corridor import LENGTH, TIME_LIMIT

from mz_jax.config.overrides import override
from mz_jax.config.presets import load_preset
from mz_jax.envs import make_env
from mz_jax.envs.host import HostEnvError, host_failures
from mz_jax.run.agent import restore_run_state
from mz_jax.run.loop import run_training

CORRIDOR = "gymnasium:_corridor:Corridor-v0"
TESTS = Path(__file__).resolve().parent


def one_hot(cell: int) -> np.ndarray:
    return np.eye(LENGTH, dtype=np.float32)[cell]


def test_the_corridor_by_hand():
    env = make_env(CORRIDOR)
    assert (env.num_actions, env.observation_shape, env.num_players) == (2, (LENGTH,), 1)
    assert env.max_episode_steps == TIME_LIMIT and env.reward_bound is None
    reset = jax.jit(jax.vmap(env.reset))
    step = jax.jit(jax.vmap(env.step))
    state, timestep = reset(jax.random.split(jax.random.key(0), 2))
    np.testing.assert_array_equal(timestep.observation, [one_hot(0), one_hot(0)])
    assert env.host.num_slots == 2
    # Environment 0 walks right to the end (4 steps), environment 1 left into the wall and stays.
    for t in range(4):
        keys = jax.random.split(jax.random.key(t + 1), 2)
        state, timestep = step(keys, state, jnp.asarray([1, 0], jnp.int32))
        done = t == 3
        np.testing.assert_array_equal(timestep.reward, [1.0 if done else 0.0, 0.0])
        np.testing.assert_array_equal(timestep.terminated, [done, False])
        np.testing.assert_array_equal(timestep.truncated, [False, False])
        # The end reached (cell 4) is the final observation; the next episode starts in cell 0.
        np.testing.assert_array_equal(timestep.final_observation[0], one_hot(t + 1))
        np.testing.assert_array_equal(timestep.observation[0], one_hot(0 if done else t + 1))
        np.testing.assert_array_equal(timestep.observation[1], one_hot(0))
        np.testing.assert_array_equal(state.episode_step, [0 if done else t + 1, t + 1])
    # Environment 1 reaches the time limit of 6 steps: truncated, not terminated.
    for t in range(4, TIME_LIMIT):
        keys = jax.random.split(jax.random.key(t + 1), 2)
        state, timestep = step(keys, state, jnp.asarray([0, 0], jnp.int32))
    assert bool(timestep.truncated[1]) and not bool(timestep.terminated[1])
    np.testing.assert_array_equal(state.episode_step, [2, 0])
    # A second reset of the same batch shape replaces the environments of the first.
    reset(jax.random.split(jax.random.key(9), 2))
    assert env.host.num_slots == 2
    # Seeds x environments: one environment per key, whatever the batch axes.
    state, timestep = jax.jit(jax.vmap(jax.vmap(env.reset)))(
        jax.random.split(jax.random.key(1), (2, 3))
    )
    assert state.backend.shape == (2, 3) and timestep.observation.shape == (2, 3, LENGTH)
    assert len(set(np.asarray(state.backend).ravel())) == 6 and env.host.num_slots == 8
    env.host.close()


def test_cartpole_steps_as_gymnax_does():
    """The same start and the same actions give the same observations and rewards through the
    host path (gymnasium's CartPole) as through gymnax's, until the first episode ends."""
    host_env, jax_env = make_env("gymnasium:CartPole-v1"), make_env("gymnax:CartPole-v1")
    assert host_env.reward_bound == jax_env.reward_bound == 1.0
    assert host_env.reflection is jax_env.reflection is not None
    jax_state, jax_timestep = jax_env.reset(jax.random.key(3))
    host_state, host_timestep = jax.jit(host_env.reset)(jax.random.key(3))
    # Start gymnasium's pole where gymnax's starts.
    start = np.asarray(jax_timestep.observation, np.float64)
    host_env.host.environment(int(host_state.backend)).unwrapped.state = start.copy()
    actions = np.random.default_rng(0).integers(0, 2, 200)
    jax_step, host_step = jax.jit(jax_env.step), jax.jit(host_env.step)
    steps = 0
    for t, action in enumerate(actions):
        key = jax.random.key(100 + t)
        jax_state, jax_timestep = jax_step(key, jax_state, jnp.int32(action))
        host_state, host_timestep = host_step(key, host_state, jnp.int32(action))
        np.testing.assert_allclose(
            host_timestep.final_observation, jax_timestep.final_observation, rtol=1e-5, atol=1e-6
        )
        assert float(host_timestep.reward) == float(jax_timestep.reward) == 1.0
        assert bool(host_timestep.terminated) == bool(jax_timestep.terminated)
        steps += 1
        if bool(jax_timestep.terminated):
            break
    assert 8 <= steps < 200  # random pushes topple the pole within a few dozen steps


@pytest.mark.parametrize(
    "name, message",
    [
        ("gymnasium:NoSuchEnv-v0", "gymnasium:NoSuchEnv-v0: "),
        ("gymnasium:no_such_module:Corridor-v0", "importing the module 'no_such_module'"),
        ("gymnasium:Pendulum-v1", "its action space Box"),
        ("gymnasium:_corridor:DictCorridor-v0", "its observation space Dict"),
    ],
)
def test_what_cannot_be_driven_is_refused_in_one_line(name, message):
    with pytest.raises(ValueError, match=None) as error:
        make_env(name)
    text = str(error.value)
    assert message in text and "\n" not in text
    assert name in text


def test_an_environment_that_raises_names_itself_and_its_step():
    env = make_env("gymnasium:_corridor:BrokenCorridor-v0")
    state, _ = jax.jit(env.reset)(jax.random.key(0))
    step = jax.jit(env.step)
    # Left into the wall: the episode is cut at the time limit of 6 steps, and the 11th step
    # since the environment was made is the 5th of its second episode.
    with pytest.raises(HostEnvError, match=r"step 5 of environment \d+ \(action 0\) raised "):
        with host_failures():
            for t in range(11):
                state, _ = step(jax.random.key(t), state, jnp.int32(0))
            jax.block_until_ready(state)


def tiny(env: str, **changes):
    return override(
        load_preset("cartpole"),
        {
            "env": env,
            "augment_reflection": False,
            "num_envs": 4,
            "rollout_length": 4,
            "batch_size": 8,
            "updates_per_iteration": 1,
            "num_unroll_steps": 2,
            "td_steps": 2,
            "replay_capacity": 512,
            "warmup_updates": 0,
            "total_env_steps": 64,
            "eval_every_env_steps": 32,
            "eval_episodes": 2,
            "eval_max_steps": 8,
            "network.hidden_sizes": (16,),
            "network.latent_size": 8,
            "network.value_support_size": 10,
            "network.reward_support_size": 2,
            "search.num_simulations": 4,
            **changes,
        },
    )


def test_a_resumed_run_keeps_its_learning_and_restarts_its_episodes(tmp_path):
    config = tiny(CORRIDOR)
    workdir = tmp_path / "run"
    first = run_training(config, workdir)
    assert first["env_steps"] == 64 and first["eval_return"] is not None
    saved = restore_run_state(workdir)
    # This process's environments are those of the run above; those of a new process are not
    # open: a resumed run must start its own (the run below would fail otherwise).
    longer = override(config, {"total_env_steps": 128})
    second = run_training(longer, workdir)
    assert second["env_steps"] == 128
    resumed = restore_run_state(workdir)
    assert int(resumed.state.iteration) == 2 * int(saved.state.iteration)
    # The replay's rows written before the resume are kept as they were.
    rows = int(saved.state.iteration) * config.rollout_length
    for name in ("observation", "action", "reward", "policy"):
        old = np.asarray(getattr(saved.state.replay.data, name))
        new = np.asarray(getattr(resumed.state.replay.data, name))
        np.testing.assert_array_equal(new[:rows], old[:rows], err_msg=name)
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert max(r.get("env_steps", 0) for r in records) == 128


def test_the_cli_trains_a_users_module_resumes_after_kill_9_and_reports_a_failing_step(tmp_path):
    """``mz-jax train --env gymnasium:module:Id`` in a child process (the module imported by name
    from PYTHONPATH), killed with SIGKILL after its third checkpoint: the same command resumes from
    the newest checkpoint, its updates, optimiser count and replay rows as they were saved. The
    broken corridor, whose environments fail in the third iteration, ends in one line with status
    2, and the checkpoint of its first iteration restores."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    flags = [
        "--num-envs", "4", "--rollout-length", "4", "--batch-size", "8",
        "--updates-per-iteration", "1", "--num-unroll-steps", "2", "--td-steps", "2",
        "--replay-capacity", "512", "--warmup-updates", "0", "--eval-every-env-steps", "0",
        "--no-augment-reflection", "--network.hidden-sizes", "16", "--network.latent-size", "8",
        "--network.value-support-size", "10", "--network.reward-support-size", "2",
        "--search.num-simulations", "4",
    ]  # fmt: skip

    def command(name: str, steps: int, workdir: Path) -> list[str]:
        command = [sys.executable, "-m", "mz_jax.cli.main", "train", "--config", "cartpole"]
        command += ["--env", name, "--workdir", str(workdir), "--total-env-steps", str(steps)]
        return command + flags

    def train(name: str, steps: int, workdir: Path):
        return subprocess.run(
            command(name, steps, workdir), env=env, capture_output=True, text=True, timeout=600
        )

    workdir = tmp_path / "corridor"
    saving = ["--checkpoint-every-seconds", "0", "--keep-checkpoints", "2"]  # every iteration
    child = subprocess.Popen(
        command(CORRIDOR, 16 * 1_000, workdir) + saving,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while not (workdir / "checkpoints" / "3").is_dir() and child.poll() is None:
        assert time.monotonic() < deadline, "no third checkpoint in 300 s"
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=60) == -signal.SIGKILL
    saved = restore_run_state(workdir)  # the newest checkpoint that is complete
    iterations = int(saved.state.iteration)
    assert iterations >= 3
    done = train(CORRIDOR, 16 * (iterations + 1), workdir)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"resumed from checkpoint {iterations} " in done.stdout
    resumed = restore_run_state(workdir)
    assert int(resumed.state.iteration) == iterations + 1
    assert int(resumed.state.train.step) == int(saved.state.train.step) + 1
    rows = iterations * 4  # rollout_length 4: the rows the killed run had written
    for name in ("observation", "action", "reward", "policy", "terminated"):
        old = np.asarray(getattr(saved.state.replay.data, name))[:rows]
        new = np.asarray(getattr(resumed.state.replay.data, name))[:rows]
        np.testing.assert_array_equal(new, old, err_msg=name)

    broken = train("gymnasium:_corridor:BrokenCorridor-v0", 64, tmp_path / "broken")
    assert broken.returncode == 2, broken.stderr[-2000:]
    lines = broken.stderr.strip().splitlines()
    assert len(lines) == 1, broken.stderr
    assert re.search(r"gymnasium:_corridor:BrokenCorridor-v0: step \d+ of environment", lines[0])
    assert "the corridor collapsed" in lines[0]
    saved = restore_run_state(tmp_path / "broken")
    assert int(saved.state.iteration) in (1, 2)  # saved after the first iteration; not the third


def test_gymnasium_names_are_listed_with_how_to_find_them(capsys):
    from mz_jax.cli.main import main

    assert main(["envs"]) == 0
    hint = capsys.readouterr().err.strip()  # stdout holds the names alone
    assert hint.startswith("# ") and "gymnasium:<id>" in hint and "gymnasium:<module>:<id>" in hint
    assert "CartPole-v1" in gymnasium.registry  # what the hint points to


def seed_of(key) -> int:
    """The seed a batch's first key gives envpool: its two words as one 64-bit number, mod 2^31 - 1
    (written out here; mz_jax.envs.host derives it the same way)."""
    high, low = (int(x) for x in np.asarray(jax.random.key_data(key), np.uint64))
    return ((high << 32) | low) % (2**31 - 1)


def test_envpool_pong_gives_envpool_frames_channels_last_in_0_1():
    envpool = pytest.importorskip("envpool")
    env = make_env("envpool:Pong-v5")
    assert (env.num_actions, env.observation_shape) == (6, (84, 84, 4))
    keys = jax.random.split(jax.random.key(5), 2)
    state, timestep = jax.jit(jax.vmap(env.reset))(keys)
    raw = envpool.make("Pong-v5", env_type="gymnasium", num_envs=2, seed=seed_of(keys[0]))
    frames, _ = raw.reset()
    assert frames.dtype == np.uint8 and frames.max() > 1
    # The 8-bit pixels times float32(1 / 255).
    pixels = lambda frames: np.moveaxis(frames, 1, -1).astype(np.float32) * np.float32(1 / 255)
    np.testing.assert_array_equal(timestep.observation, pixels(frames))
    step = jax.jit(jax.vmap(env.step))
    for t, action in enumerate([1, 2, 3, 0, 5]):
        actions = np.full(2, action, np.int32)
        state, timestep = step(jax.random.split(jax.random.key(t), 2), state, actions)
        frames, rewards, *_ = raw.step(actions)
        np.testing.assert_array_equal(timestep.observation, pixels(frames))
        np.testing.assert_array_equal(timestep.reward, rewards)
    env.host.close()


def test_envpool_cartpole_resets_where_an_episode_ends():
    envpool = pytest.importorskip("envpool")
    env = make_env("envpool:CartPole-v1")
    assert env.reward_bound == 1.0 and env.max_episode_steps == 500
    keys = jax.random.split(jax.random.key(2), 3)
    state, timestep = jax.jit(jax.vmap(env.reset))(keys)
    raw = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=3, seed=seed_of(keys[0]))
    raw.reset()
    step = jax.jit(jax.vmap(env.step))
    ended = 0
    for t in range(40):  # pushing right topples every pole within a few dozen steps
        actions = np.ones(3, np.int32)
        state, timestep = step(jax.random.split(jax.random.key(t), 3), state, actions)
        reached, rewards, terminated, truncated, _ = raw.step(actions)
        np.testing.assert_allclose(timestep.final_observation, reached, rtol=1e-6)
        np.testing.assert_array_equal(timestep.reward, rewards)
        np.testing.assert_array_equal(timestep.terminated, terminated)
        # Where an episode ended, the next one has started already: the raw pool's reset of it.
        done = np.flatnonzero(terminated | truncated)
        expected = reached.copy()
        if len(done):
            expected[done] = raw.reset(done)[0]
            ended += len(done)
        np.testing.assert_allclose(timestep.observation, expected, rtol=1e-6)
        np.testing.assert_array_equal(state.episode_step == 0, terminated | truncated)
    assert ended >= 3


def test_envpool_refuses_what_it_cannot_make():
    pytest.importorskip("envpool")
    with pytest.raises(ValueError, match=r"envpool:Pongg-v5: envpool has no task .*Pong-v5"):
        make_env("envpool:Pongg-v5")
    with pytest.raises(ValueError, match="envpool:Pendulum-v1: its action space Box"):
        make_env("envpool:Pendulum-v1")


def test_env_options_reach_the_constructor_read_as_literals():
    pytest.importorskip("envpool")
    from mz_jax.config import TrainConfig
    from mz_jax.training.build import make_run_env

    options = (("img_height", "96"), ("img_width", "96"), ("gray_scale", "False"), ("x", "y z"))
    config = TrainConfig(env="envpool:Pong-v5", env_options=options)
    assert config.env_kwargs == {"img_height": 96, "img_width": 96, "gray_scale": False, "x": "y z"}
    colour = override(config, {"env_options": options[:3]})
    env = make_run_env(colour)
    # 96x96 colour frames, 4 of them stacked: 12 channels, last.
    assert env.observation_shape == (96, 96, 12)
    with pytest.raises(ValueError, match=r"envpool refused the options \['x'"):
        make_run_env(override(config, {"env_options": (("x", "1"),)}))
    with pytest.raises(ValueError, match=r"'env_options' = \(\('img height', '96'\),\) is invalid"):
        TrainConfig(env_options=(("img height", "96"),))
