"""CartPole-v1 (gymnax) from few environment steps: EfficientZero's consistency loss, one learner
update per environment step, 16 environments.

The ``cartpole`` preset acts fast (16 environments x 4 steps per iteration, 0.06 updates per
environment step) and needs tens of thousands of environment steps. This one spends compute on
learning instead: 16 environments x 1 step and 16 updates of batch 128 per iteration, so every
environment step meets one update, evaluated (20 greedy episodes) every 500 steps. Otherwise it is
the ``cartpole`` preset (fresh value targets with ``td_steps`` 5 from the current parameters,
discount 0.99, Gumbel search with 16 simulations and ``rescale_values=False``), with:

* ``consistency_loss_weight`` 5 (EfficientZero §4.1 uses 2), ``value_loss_weight`` 0.5 and hidden
  layers of 128 x 128 (the latent state stays 64 wide): below;
* ``augment_reflection``: half of every batch mirrored (the cart's position, the pole's angle and
  their velocities negated, left and right swapped), so what the model learns leaning one way
  holds leaning the other; below;
* ``network.observation_layer_norm=False``: no LayerNorm after the representation's first layer.
  A per-example LayerNorm there rescales every observation's features to one size, so how far
  the pole leans reaches the network only through biases. Seeds 100-102 as one program, 4,000
  env steps, learning rate 1e-3: with it none reached a greedy 475 (best evaluations 296, 201,
  195); without it two did (2,512 and 3,504 steps);
* learning rate 1e-3 rather than 3e-3: with 3e-3, one seed of three reached 475 within 4,000 steps;
* 16 environments x 1 step rather than 8 x 2 (the same updates per step): 475 reached in 3 of 3
  seeds (1,504, 2,512, 3,008 steps) rather than 2 of 3; 32 x 1: 2 of 3; 16 x 1 with half the
  updates per step: 0 of 3.

**The consistency weight, the value weight and the width.** The version before had weights 2 and
0.25 and 64 x 64 layers. Five sets of five seeds, each set as one program, 4,000 env steps, 20
greedy episodes every 500 steps (``python benchmarks/ablation.py --seeds 5 --first-seed S
--total-env-steps 4000 --only preset``, with ``--variant`` for the version before). Each cell: the
mean of every evaluation of the five seeds (the area under their curves), then each seed's env
steps to its first evaluation >= 475 (- for none within 4,000):

| seeds | the version before | this preset |
|---|---|---|
| 200-204 | 286: 2,000, 1,504, 2,000, 4,000, - | 255: 4,000, 3,008, 1,504, -, - |
| 400-404 | 251: 4,000, 2,000, 1,504, 4,000, 2,512 | 306: 1,008, 1,008, 1,008, -, - |
| 600-604 | 218: 2,512, 2,000, -, -, - | 284: 2,000, 1,008, -, 1,504, 2,512 |
| 800-804 | 186: -, 2,000, -, -, - | 262: 1,008, 2,512, 3,008, 3,504, - |
| 1000-1004 | 194: -, -, 3,008, -, 3,504 | 260: 3,008, 3,008, 3,504, 3,504, - |

Over the 25 seeds: 18 reach 475 within 4,000 steps against 14, with a median of 3,008 steps against
4,000, and 32 of the 61 evaluations after a seed's first 475 stay at 475, against 15 of 39. It is
ahead on four sets of five. The combination came out of a random search over twenty fields on seeds
400-404; the other four sets were not searched on. Around it, on seeds 800-804 and 1000-1004 (this
preset: 262 and 260): the two weights with 64-wide layers, 232 and 240; consistency weight 10, 322
and 195; 256-wide layers, 227 and 165; the gradient clipped at a global norm of 20 rather than 5,
179 (seeds 800-804), or of 2, 198 (seeds 1000-1004; 209 with the next change too); the hidden
state's gradient not halved between unrolled steps (``hidden_grad_scale=1.0``), 277 and 259, with
every seed of 800-804 reaching 475 (median 2,512) but one of 1000-1004 (against four); prioritised
replay with exponent 1 rather than 0.5, 246 (seeds 800-804); the first update after 256 env steps
rather than as soon as a sequence fits (``min_replay_steps=16``), 225; a learning-rate warm-up of
1,000 updates rather than 100, 208; ``td_steps`` 3 or 8 rather than 5, 181 and 237; 8 simulations
rather than 16, 260 (the last five on seeds 800-804); learning rate 2e-3, 270 on seeds 800-804 but 115
on 1000-1004, where no seed reached 475. An update takes 9.9 ms against the version before's 6.0
(two quiet cores). The targets of a median of 1,500 steps and 80% of the later evaluations at 475
are not met.

With a value prefix (``network.value_prefix_horizon=5``, 1.35x the time per update), which had
brought all three ablation seeds 100-102 to 475, the five sets scored 288, 290, 256, 260 and 200
(259 on average against 273); 17 of 25 seeds reached 475 (median 2,512 steps), and 26 of 63 later
evaluations stayed at 475 against 32 of 61. Not adopted.

Each action held for two environment steps (``action_repeat=2``, frame skip as in MuZero's Atari
agent; the discount then spans twice the steps, which could let the value see the cart drift to the
end of the track), on seeds 400-404 (this preset: 306; 1,008, 1,008, 1,008, -, -): 241 (-, 4,000,
3,520, -, 2,528) at half an update per environment step, 203 (-, -, -, 4,000, 3,520) with 32 updates
per iteration to keep one. Not adopted.

Tried on the version before, seeds 200-204 (the mean of every evaluation; that version: 286) and not
adopted; those marked * were patched in for the test, not options: the hidden state without min-max
scaling* (247); a residual dynamics MLP* (the state plus the MLP's output, as LightZero's
``res_connection_in_dynamics``; 260); decoupled weight decay (220); K = 10 (124), K = 8 (116 on
seeds 400-404; 137 with learning rate 5e-4), K = 3 (249); ``td_steps`` 20 with an off-policy
correction of 500 steps (197); discount 0.97 (204); the observation divided by (2.4, 2, 0.21, 3)*
(248); a reconstruction of the next observations from the unrolled states* in place of the
consistency loss (230); a search at most 2 deep (210) or 4 deep (262); 128-wide layers with a 128
latent (266); reanalysed policies for every window (116); an exponential moving average (0.05 per
update) as the target parameters* (211); rewards x 10* (199; with the Gumbel value_scale / 10, 210);
the Gumbel value_scale 0.03 (345, but 133 against the version's 218 on seeds 600-604). On trained
networks of that version (seeds 200-204, 4,000 steps, 40 greedy episodes each) no number of
simulations of 2, 4, 16 and 64 was best throughout, and 64 scored lowest on two seeds (293 and 170,
against 452 and 500 with 16): a deeper search does not repair the model.

Earlier, tried and not adopted, each from the 8 x 2 variant, seeds 100-102: pUCT search with 25
simulations and discount 0.997, batch 256, 128-wide network, uniform replay and target parameters
100 updates old (LightZero's CartPole settings: evaluations stayed under 150); min-max rescaled
Gumbel Q-values; discount 0.997; target parameters 100 updates old. From the version with
consistency weight 2, seeds 100-102 as one program, 6,000 steps (env steps to 475; that version: -,
1,008, 3,008): pUCT with 25 simulations at discount 0.99 (none reached 475); batch 256 (4,512,
1,504, 5,504); a cosine learning-rate decay over the run (-, -, 3,008); value prefix with the
off-policy correction (2,000, -, 5,504); reanalysed policies for 25% of each batch (3,008, 3,008,
2,000, at 1.7x the time per update).

On seeds 200-204 (4,000 steps; the README has the table) none of twenty-one further changes lowered
that version's median (1,504 then): the Gumbel value_scale 0.02 or 0.005 (not 0.1), target
parameters 100 updates old, a value prefix, 32 simulations, learning rate 5e-4, td_steps 10 and 15,
value loss weight 1, discount 0.995, a 2,000-transition replay, uniform replay, two combinations, 4
environments x 4 or x 1 steps (longer episodes in the data), two updates per step, Gumbel noise
scaled by 0.5 or 0.25 when acting, a 128-wide network, and reanalysed policies for half of each
batch, which kept every later evaluation at 475 there (9 of 9, against 4 of 18; 2.2x the wall time)
but not on seeds 300-304 (12 of 17, against 14 of 23). In the two runs examined, the greedy episodes
that ended early ended with the cart at the end of the track.

**Mirrored batches** (``augment_reflection``, :mod:`mz_jax.augment`), added last, on four sets of
five seeds not used for it before (800-804 and 1000-1004 had checked the weights above, 1200-1204
and 1400-1404 were new), 4,000 env steps, each set as one program, beside another run on two
cores (``python benchmarks/ablation.py --seeds 5 --first-seed S --total-env-steps 4000 --only
preset``, with and without it). Each cell: the mean of every evaluation of the five seeds, then
each seed's env steps to its first evaluation >= 475:

| seeds | without | with (this preset) |
|---|---|---|
| 800-804 | 221.8: 3,008, -, 3,504, 3,008, - | 268.2: 2,000, 2,000, -, 2,512, - |
| 1000-1004 | 202.2: 1,008, 3,008, -, -, - | 224.9: 2,000, -, -, -, - |
| 1200-1204 | 272.4: 1,008, -, 512, -, - | 284.0: 1,008, 3,504, -, 3,008, 3,504 |
| 1400-1404 | 240.7: 2,000, 4,000, 3,504, 2,512, - | 287.1: 2,512, -, 3,504, 3,008, - |

Ahead on all four sets: 266.1 against 234.3 on average; 11 of 20 seeds reach 475 either way, at a
median of 2,512 steps against 3,008; 22 of the 31 evaluations after a seed's first 475 stay there,
against 17 of 34; the mean of each seed's last five evaluations is 330 against 280. Not timed: it
adds one select over the batch to each update.

**Two updates of batch 64 per environment step** (``updates_per_iteration`` 32, ``batch_size`` 64)
rather than one of 128: the same sequences sampled per environment step, twice the optimiser
steps. Three sets of five seeds never used before, 4,000 env steps, each set as one program
(``python benchmarks/ablation.py --seeds 5 --first-seed S --total-env-steps 4000 --only preset
--no-additions --variant "batch_size=64 updates_per_iteration=32"``). Each cell: the mean of every
evaluation of the five seeds, then each seed's env steps to its first evaluation >= 475:

| seeds | this preset | two updates of 64 |
|---|---|---|
| 1600-1604 | 247.2: -, 1,504, 2,512, -, - | 290.1: -, 2,000, 1,008, 1,008, - |
| 1800-1804 | 251.6: -, -, -, 2,512, 2,512 | 339.8: 2,000, 2,512, 1,008, -, 2,512 |
| 2000-2004 | 319.9: 3,008, 1,504, -, -, 3,504 | 352.6: 3,008, 512, 3,504, 1,504, 1,008 |

Ahead on each set (327.5 against 272.9 on average; 12 of 15 seeds reach 475 against 7, at a
median of 1,752 steps against 2,512; 31 of 53 later evaluations stay there against 13 of 22), at
about 1.2x the seconds (438 s against 363 s for the first set). But on seeds 0-4 over 8,000 steps
(``python benchmarks/learning.py --config cartpole_sample_efficient --seeds 0 1 2 3 4 --set
batch_size=64 --set updates_per_iteration=32``) it first reached 475 after 4,000, 1,008, 6,512 and
1,008 steps, and seed 4 not at all (best 269), against this preset's 3,504, 2,000, 2,000, 1,504
and 3,504 (README). Ahead on three sets of five and well behind on the fourth: not adopted until
more seeds decide it. One update of batch 64 per step (seeds 1600-1604): 187.6, one seed reaching
475.

``python benchmarks/learning.py --config cartpole_sample_efficient --seeds 0 1 2 3 4`` measures it;
the README gives the table and ``benchmarks/ablation.py`` each term's share.
"""

import dataclasses
from pathlib import Path

from mz_jax import TrainConfig
from mz_jax.presets import load_preset

TOTAL_ENV_STEPS = 8_000
NUM_ENVS, ROLLOUT_LENGTH, UPDATES_PER_ITERATION = 16, 1, 16


def config() -> TrainConfig:
    cartpole = load_preset(str(Path(__file__).with_name("cartpole.py")))
    return dataclasses.replace(
        cartpole,
        num_envs=NUM_ENVS,
        rollout_length=ROLLOUT_LENGTH,
        updates_per_iteration=UPDATES_PER_ITERATION,
        batch_size=128,
        learning_rate=1e-3,
        lr_decay_updates=None,
        total_env_steps=TOTAL_ENV_STEPS,
        replay_capacity=TOTAL_ENV_STEPS,
        eval_every_env_steps=500,
        value_loss_weight=0.5,
        consistency_loss_weight=5.0,
        augment_reflection=True,
        network=dataclasses.replace(
            cartpole.network, hidden_sizes=(128, 128), observation_layer_norm=False
        ),
    )
