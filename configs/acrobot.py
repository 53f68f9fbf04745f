"""Acrobot-v1 (gymnax): swing the tip above the bar; -1 a step until then, at most 500 steps.

The `cartpole` preset learns nothing here (greedy -500 on every seed, every variant of search,
network and loss tried): the reward is the same everywhere until the goal, a random policy reaches
it in about 1.5% of episodes, and three things kept the goal out of the values. What this preset
changes, each needed:

* εz-greedy exploration (``random_action_probability`` 0.3, ``exploration_repeat_exponent`` 2):
  random actions repeated for n ~ Zeta(2) steps reach the goal in about 18% of episodes (all
  exploratory), where one-step random actions reach it in 1.5%;
* value targets that run through the exploratory steps (``stop_value_targets_at_exploration``
  False) and reach far (``td_steps`` 50, stored search values): stopped or 5-step bootstrapped
  targets left the value flat across states (-97.7 ± 0.009, as near the goal as far from it);
* AdamW (``decoupled_weight_decay``): the L2 term under Adam drove every representation weight to 0;
* 16 updates of batch 128 for every 64 environment steps (1 update per 4 steps), ε annealed from
  0.3 to 0.02 over the first 60% of the run (``random_action_anneal``), and 300k steps. Held-out
  seeds 10-12 as one program, mean of the last five evaluations (20 greedy episodes every 5,000
  steps): 4 updates per 64 steps and 200k steps (the earlier preset) -108, -434, -124; 400k steps
  -97, -107, -124; 16 updates, 200k steps -96, -102, -108; with the anneal -97, -101, -93; 300k
  steps -99, -98, -93 (this preset, 838 s for the three seeds beside other work).

Tried and worse (seeds 10-12, 200k steps): no LayerNorm on the observation features (-383, -356,
-166); ε 1 or 0.5 annealed to 0.05 over half the run (-493, -203, -271 and -500, -183, -287); 32
simulations (-163, -481, -125); fresh value targets (``reanalyse_values``) with ``td_steps`` 20
(-500 on every seed) or, with 16 updates, ``td_steps`` 50 (about -330 at 165k steps). Seeds 0-1
(200k steps, the earlier preset): -103 and -160 with ε 0.5, discount 0.997 and ``td_steps`` 100;
ε 0.2 left seed 0 at -500.

The classic suite (seeds 0-2, never tuned on with these settings) ends at -75, -93 and -91;
the README has the tables (greedy evaluations of 20 episodes every 5,000 steps).
"""

from mz_jax import NetworkConfig, SearchConfig, TrainConfig

TOTAL_ENV_STEPS = 300_000
NUM_ENVS, ROLLOUT_LENGTH, UPDATES_PER_ITERATION = 16, 4, 16


def config() -> TrainConfig:
    # The cartpole preset's settings but for the changes above.
    return TrainConfig(
        env="gymnax:Acrobot-v1",
        discount=0.99,
        num_envs=NUM_ENVS,
        rollout_length=ROLLOUT_LENGTH,
        updates_per_iteration=UPDATES_PER_ITERATION,
        batch_size=128,
        total_env_steps=TOTAL_ENV_STEPS,
        td_steps=50,
        reanalyse_values=False,
        random_action_probability=0.3,
        random_action_anneal=(0.02, 0.6),
        exploration_repeat_exponent=2.0,
        stop_value_targets_at_exploration=False,
        decoupled_weight_decay=True,
        priority_alpha=0.5,
        learning_rate=3e-3,
        lr_decay_updates=TOTAL_ENV_STEPS // (NUM_ENVS * ROLLOUT_LENGTH) * UPDATES_PER_ITERATION,
        eval_every_env_steps=5_000,
        eval_episodes=20,
        eval_max_steps=500,
        search=SearchConfig(policy="gumbel", num_simulations=16, rescale_values=False),
        network=NetworkConfig(hidden_sizes=(64, 64), latent_size=64),
    )
