"""The smallest CartPole run, trained whole by tests/test_seeds.py and tests/test_suite.py.

Both build it from these overrides of ``TrainConfig()`` with three seeds, so they train the same two
programs (three seeds vmapped and one seed, on every device): whichever test runs second finds them
in the session's compilation cache (tests/conftest.py) instead of compiling them again.
"""

CARTPOLE = {
    "num_envs": 4,
    "rollout_length": 4,
    "batch_size": 8,
    "updates_per_iteration": 2,
    "num_unroll_steps": 3,
    "td_steps": 3,
    "replay_capacity": 400,
    "warmup_updates": 0,
    "total_env_steps": 64,
    "eval_every_env_steps": 32,
    "eval_episodes": 4,
    "eval_max_steps": 40,
    "network.hidden_sizes": [16],
    "network.latent_size": 8,
    "search.num_simulations": 4,
}
NUM_SEEDS = 3
