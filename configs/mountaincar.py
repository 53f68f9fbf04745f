"""MountainCar-v0 (gymnax): drive an underpowered car up the right hill; -1 a step, 200 at most.

The ``acrobot`` preset's recipe (its docstring says why each part is needed) with εz-greedy's
exponent μ 1.5 instead of 2: longer repeats, since the car must be pushed one way for many steps to
build momentum. Exploratory play (ε 1) reaches the goal in 3.2% of episodes at μ 1.5, 1.7% at μ 2
and never with one-step random actions (``python benchmarks/exploration.py``). No reward shaping.

Seeds 0-1, 200k steps, mean of the last five greedy evaluations (20 episodes every 5,000 steps):
-121 and -143; -150 and -143 with ε 0.5, discount 0.997 and ``td_steps`` 100; -168 and -160 with
ε 0.5. The ``cartpole`` preset stays at -200 on every seed.
"""

import dataclasses
from pathlib import Path

from mz_jax import TrainConfig
from mz_jax.presets import load_preset


def config() -> TrainConfig:
    acrobot = load_preset(str(Path(__file__).with_name("acrobot.py")))
    return dataclasses.replace(
        acrobot, env="gymnax:MountainCar-v0", exploration_repeat_exponent=1.5, eval_max_steps=200
    )
