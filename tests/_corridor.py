"""Hand-written gymnasium environments for the host-environment tests; importing this module
registers them (as a user's module does: ``--env gymnasium:_corridor:Corridor-v0``).

* ``Corridor-v0``: cells 0..4, start in 0; action 0 steps left (not below 0), 1 right; reaching
  cell 4 pays 1 and terminates; every other step pays 0. Observed one-hot (a Box of 5). Time limit
  6 steps.
* ``BrokenCorridor-v0``: the corridor whose ``step`` raises on the 11th step since it was made.
* ``DictCorridor-v0``: the corridor observed as a Dict space (not supported).
"""

import gymnasium
import numpy as np
from gymnasium import spaces

LENGTH = 5
TIME_LIMIT = 6


class Corridor(gymnasium.Env):
    def __init__(self):
        self.observation_space = spaces.Box(0.0, 1.0, (LENGTH,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.position = 0
        self.steps = 0

    def _observe(self):
        return np.eye(LENGTH, dtype=np.float32)[self.position]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position, self.steps = 0, 0
        return self._observe(), {}

    def step(self, action):
        self.steps += 1
        self.position = max(0, min(LENGTH - 1, self.position + (1 if action == 1 else -1)))
        terminated = self.position == LENGTH - 1
        return self._observe(), float(terminated), terminated, False, {}


class BrokenCorridor(Corridor):
    def __init__(self):
        super().__init__()
        self.lifetime_steps = 0

    def step(self, action):
        self.lifetime_steps += 1
        if self.lifetime_steps == 11:
            raise RuntimeError("the corridor collapsed")
        return super().step(action)


class DictCorridor(Corridor):
    def __init__(self):
        super().__init__()
        self.observation_space = spaces.Dict({"cell": spaces.Discrete(LENGTH)})


for _name, _entry in (
    ("Corridor-v0", Corridor),
    ("BrokenCorridor-v0", BrokenCorridor),
    ("DictCorridor-v0", DictCorridor),
):
    if _name not in gymnasium.registry:
        gymnasium.register(id=_name, entry_point=_entry, max_episode_steps=TIME_LIMIT)
