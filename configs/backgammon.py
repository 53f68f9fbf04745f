"""Backgammon (pgx) with Stochastic MuZero: the dice are the chance events, one move per die, so the
same player often moves twice in a row (the turn head tells the search who moves next).

Settings: an MLP of 128 x 128 with a 64-wide latent state, C = 32 chance codes, supports of 3 (a
game pays +-1, 2 or 3 at its end), discount 1 with value targets over 10 steps, Gumbel search with
chance nodes and 16 simulations (:mod:`mz_jax.stochastic_gumbel`), 16 environments x 4 steps and 4
updates of batch 128 per iteration, the value and afterstate value terms weighted 2 (the default
is 0.25), 1M environment steps (about 5,000 games). Evaluated greedily every 50k steps against
the uniformly random player, 32 games with the agent in each seat half the time; the suite file
``configs/stochastic.toml`` then plays it 500 games.

Over 1M steps (seeds 10 and 11 as one program, 5,517 s on two CPU cores beside other runs) it won
**0.872 and 0.894** of 500 games against the random player, each seat in half of them (436 and 447;
seed 11 226 of 250 moving first, 221 moving second), against 0.812 and 0.846 after 400k steps, the
preset's length before: 0.883 on average, closer to the target (0.90) than any change below. On the
held-out seeds 40 and 41 (4,222 s, stopped once and resumed) it won **0.852 and 0.834** (426 and
417; 218 and 212 of 250 moving first, 208 and 205 moving second), against 0.770 and 0.790 at 400k:
0.863 over the four seeds, against 0.805 at 400k. At weight 0.25 the longer run had gained too
(below). Twice as long again (``--total-env-steps 2000000``, the learning rate decayed over the 2M
steps; seeds 10 and 11, 8,391 s, a CI run beside it from 290k to 450k steps) it won **0.902 and
0.878** of 500 games (451 and 439; 235 and 223 of 250 moving first, 216 and 216 moving second):
0.890 against 0.883 at 1M, +0.030 on one seed and -0.016 on the other, within what 500 games resolve
(a standard error of about 0.014 a seed at these rates). The gain from more games has flattened, so
the preset stays at 1M steps. A learning rate of 1e-3 rather than 3e-3 (``--learning-rate 1e-3``,
seeds 10 and 11, 1M steps, 4,748 s, tests and a 2048 probe beside it for part of the run) won
**0.882 and 0.904** of 500 games (441 and 452; 227 and 232 of 250 moving first, 214 and 220 moving
second): 0.893 against 0.883 on the same seeds, +0.010 and +0.010, again within what 500 games
resolve. On the held-out seeds 40 and 41 (5,918 s, tests beside it for 23 minutes) it won **0.860
and 0.806** (430 and 403; 219 and 207 of 250 moving first, 211 and 196 moving second) against the
preset's 0.852 and 0.834: 0.863 over the four seeds, the preset's own average. Not adopted. Nor does
a deeper search when playing help: seed 40's network of that run, searching with 64 simulations a
move rather than 16, won 0.852 (426; 210 and 216) against 0.860. Trained on the dice themselves
rather than learned codes (``--chance-codes environment``: the roll that starts the next turn or
none, 22 outcomes; seeds 10 and 11, 1M steps, 5,705 s beside other runs) it won **0.884 and 0.842**
of 500 games (442 and 421): 0.863 against 0.883 on the same seeds (held-out seeds 40 and 41: 0.864
and 0.804 against 0.852 and 0.834; 0.849 over four seeds against 0.863), and its model ranked moves
no better (a rank correlation of +0.184 with the true one-ply values on seed 10;
docs/stochastic_muzero.md). Not adopted. The rows below are 400k-step runs.

Measured on seeds 10 and 11 as one program (1,481 s on two CPU cores), then against the random
player: 256 games, the seat as pgx draws it (``python benchmarks/one_ply.py --workdir RUN
--seed-index I --games 256 --players search prior``, the same games for every row), and 500 games,
each seat in half of them (``mz-jax eval --workdir RUN --episodes 500 --seed-index I``):

| value weight, how the agent moves | wins of 256, seed 10 / 11 | mean result | wins of 500 |
|---|---|---|---|
| 2 (this preset, 1M steps) | | | **0.872 / 0.894** |
| 2 (this preset, 1M steps), held-out seeds 40 / 41 | | | **0.852 / 0.834** |
| 2, 2M steps (``--total-env-steps 2000000``) | | | 0.902 / 0.878 |
| 2, learning rate 1e-3 (``--learning-rate 1e-3``), 1M steps | | | 0.882 / 0.904 |
| 2, learning rate 1e-3, 1M steps, held-out seeds 40 / 41 | | | 0.860 / 0.806 |
| 2 (this preset at 400k steps): the search, 16 simulations | 0.887 / 0.863 | 1.46 / 1.37 | 0.812 / 0.846 |
| 2: its prior alone (the Gumbel search with 1 simulation) | 0.797 / 0.805 | 1.10 / 1.07 | |
| 2, value targets over 1 step rather than 10 (``--td-steps 1``; 2,339 s) | | | 0.780 / 0.740 |
| 2, residual afterstate and chance dynamics (patched in; 2,251 s) | | | 0.760 / 0.812 |
| 2, held-out seeds 40 / 41 (1,584 s): the search / the prior | 0.766 / 0.766, 0.750 / 0.793 | 1.04 / 0.97 (search) | 0.770 / 0.790 |
| 4: the search / the prior | 0.824 / 0.852, 0.719 / 0.836 | 1.15 / 1.32 (search) | 0.796 / 0.822 |
| 1 (the preset before): the search / the prior | 0.762 / 0.727, 0.723 / 0.703 | 1.14 / 1.00 (search) | 0.732 / 0.726 |
| 1, held-out seeds 40 / 41: the search | 0.812 / 0.832 | 1.18 / 1.27 | 0.788 / 0.812 |
| 0.25 (the preset before that): the search / the prior | 0.66 / 0.62, 0.58 / 0.54 | 0.68 / 0.55 (search) | |

(A gammon counts 2 in the mean result; 500 games give a binomial standard error of about 0.017.)
At 400k steps with the weight at 2 it won 77-85% of 500 games over the four seeds, about level in
both seats (seed 10: 207 and 199 of 250 moving first and second), and missed its target (90% wins
against the random player). Over the four seeds it won 0.805 of the games against 0.765 with the
weight at 1: ahead by 0.08 and 0.12 on seeds 10 and 11, behind by 0.02 on the held-out seeds 40 and
41, so the gain from 1 to 2 is within the seeds' spread, and 4 is no better than 2. The value weight
is the one change of the many below that moved it: from 0.25 the prior rose most, and on seeds 10
and 11 the search added more to it at 2 (0.07-0.09 against 0.02-0.04 at 1; on seeds 40 and 41
nothing), while the model's move values still rank moves little better than before (``one_ply.py
--agreement-games 16 --max-steps 300``, seed 10: rank correlation with the true one-ply values
+0.132 for ``Q(as)``, +0.106 through the chance step; +0.090 and +0.076 at weight 1; +0.05 to +0.18
below). Also at weight 2, and not adopted: the move given to the afterstate dynamics as features
(its source point, target point and die as one-hots rather than a one-hot of 156; seeds 10 and 11)
won 0.866 and 0.776 of 500 games, 0.821 on average against this preset's 0.829 there, with a rank
correlation of +0.196; 64 simulations when playing rather than 16 (seed 10) won 0.801 of 256 games
against 0.816; and EfficientZero's consistency loss weighted 5 won 0.816 and 0.840 of 500 (0.828 on
average), with a rank correlation of +0.187; twice the updates per environment step
(``--updates-per-iteration 8``, 2,251 s against 1,481) won 0.824 and 0.788 of 500 (0.806), so the
longer run's gain came from new games, not from more updates. docs/stochastic_muzero.md has all
four. Nor did value targets over one step (``--td-steps 1``; seeds 10 and 11, 400k steps): 0.780
and 0.740 of 500 games against 0.812 and 0.846. Within a turn a move is deterministic, so the
afterstate value's one-step target ``v(s')`` differs between moves as the network's value of the
real next positions does (one-ply lookahead on the true game with it wins 0.98 of 128 games on
seed 10), where a 10-step target adds the dice of the turns after; yet the model ranked moves no
better (rank correlation +0.168 on seed 10, 893 positions), its search won 0.727 of 128 games and
always moving the first legal checker 0.781. Nor did residual dynamics (the afterstate as the state
plus the afterstate MLP's output, the next state as the afterstate plus the chance MLP's, as
LightZero's ``res_connection_in_dynamics``; patched in for the test, not an option; seeds 10 and
11, 400k steps, 2,251 s), which would make "the same position but for the moved checker" easy to
express: 0.760 and 0.812 of 500 games, rank correlation +0.188 on seed 10 (550 positions).
Everything below was measured with the weight at 0.25.

What changed it from losing to random play: the Gumbel search. With pUCT (16 simulations; seeds 0
and 1, 100k steps) the mean result ended at -1 and the search won 0.41 of 128 games (seed 0), since
pUCT's visits followed a prior that ranked moves by how often they are legal; Gumbel's Sequential
Halving visits every legal move and plays the one whose searched value is highest, and its
improved-policy target teaches the prior the same. At 100k steps (the learning rate decayed over
100k) this preset's search won 0.57 of 256 games (seed 10). The evaluations every 50k steps (32
games) swing between 0 and 1.1, so they say little on their own.

Longer is better, slowly: with ``--total-env-steps 1000000`` (seeds 10 and 11, 2,024 s) the search
won 0.70 and 0.72 of 256 games (mean results 0.68 and 0.96), its prior alone 0.63 and 0.68.

Tried and not adopted: 8 updates per iteration instead of 4 (seeds 10 and 11, 400k steps, 1,234 s):
the search won 0.52 and 0.66 of 256 games, the prior alone 0.52 and 0.60.
A floor of 0.1 on the range by which Gumbel's sigma rescales Q-values
(``search.rescale_min_range=0.1``; seeds 10 and 11, 400k steps, 917 s): the search won 0.63 and
0.61 of 256 games, the prior alone 0.52 and 0.61. Its policy targets stayed as peaked as the
preset's (the largest weight 0.89 on average, over 4.5 legal moves), so the moves' Q-values differ
by more than 0.1 wherever the floor could have flattened them.
Value targets over 50 steps instead of 10 (``--td-steps 50``; seeds 30 and 31, 400k steps,
2,571 s beside other work): the search won 0.65 and 0.69 of 256 games (mean results 0.58 and
0.82), level with the preset's.
EfficientZero's consistency loss (``--consistency-loss-weight 2``; seeds 30 and 31, 400k steps,
1,803 s): the search won 0.60 and 0.70 of 128 games. ``python benchmarks/one_ply.py`` shows why
none of these moved it: one step of lookahead on the true game with this network's value wins
91-98% of games, its learned model's afterstate values no more than always moving the first legal
checker (0.55-0.75 against 0.78); docs/stochastic_muzero.md has the table.
Neither did exploration (``--random-action-probability 0.2``, seeds 10 and 11, 400k steps: the
search won 0.60 and 0.63 of 128 games) nor a wider network (hidden layers 256 x 256, latent 128:
0.63 and 0.62); ``one_ply.py --agreement-games`` shows the model's move values spread as much as
the true ones but barely correlate with them (rank correlation +0.05 to +0.18), in every run, and
``benchmarks/chance_codes.py`` that the chance encoder gives the 21 rolls 3-5 of its 32 codes: the
codebook has collapsed, and the model's next states do not know the dice.
The straight-through gradient on the encoder's logits rather than its softmax
(``--chance-straight-through logits``; seeds 10 and 11, 400k steps, 1,400 s) gave the rolls 8.2 and
9.4 codes, and its search won 0.68 and 0.61 of 256 games: the codes were not what held it back.
With the consistency loss (weight 2) as well: 9.8 and 10.5 codes, 0.59 and 0.60 of 256 games.
The reward term weighted 16 (``reward_loss_weight=16``, which taught the connect-four model what
wins; seeds 10 and 11, 400k steps): the search won 0.54 and 0.63 of 256 games, the prior alone 0.52
and 0.53.
"""

import dataclasses
from pathlib import Path

from mz_jax import TrainConfig
from mz_jax.presets import load_preset


def config() -> TrainConfig:
    # The game_2048 recipe (Stochastic MuZero, C = 32, Gumbel search), for a game scored +-1, 2 or
    # 3 at its end: longer, 16 simulations, without the consistency term.
    recipe = load_preset(str(Path(__file__).with_name("game_2048.py")))
    return dataclasses.replace(
        recipe,
        env="pgx:backgammon",
        discount=1.0,
        total_env_steps=1_000_000,
        consistency_loss_weight=0.0,
        eval_every_env_steps=50_000,
        search=dataclasses.replace(recipe.search, num_simulations=16),
        network=dataclasses.replace(
            recipe.network, hidden_sizes=(128, 128), value_support_size=3, reward_support_size=3
        ),
        value_loss_weight=2.0,
    )
