"""Atari 100k (envpool, Pong by default; ``--env envpool:Breakout-v5`` for another game) with
EfficientZero's settings (Ye et al., 2021): 100k agent steps of 4 frames, 96x96 RGB frames stacked
4 deep, the downsampling ResNet (64 channels, one block), the value-prefix LSTM, the consistency
loss, reanalysed values and policies with the off-policy correction, 50 simulations, and 32
full-game evaluation episodes. Needs ``pip install 'mz-jax[atari]'`` and a GPU to run in hours.

Where it differs from EfficientZero (no image augmentation, no life-loss terminals or reward
clipping: MuZero's scaled value support instead) is written in its tuning record.

Tuning record: benchmarks/tuning/atari100k.md. Results: benchmarks/RESULTS-gpu.md.
"""

from mz_jax.config import TrainConfig
from mz_jax.config.overrides import override

NUM_ENVS, ROLLOUT_LENGTH = 8, 2


def config() -> TrainConfig:
    return override(
        TrainConfig(),
        {
            "env": "envpool:Pong-v5",
            # envpool's Atari: 4 frames a step, 30 no-ops at a reset, 27k steps (108k frames) at
            # most; EfficientZero's 96x96 colour frames, 4 of them stacked (12 channels).
            "env_options": (("img_height", "96"), ("img_width", "96"), ("gray_scale", "False")),
            "total_env_steps": 100_000,
            "discount": 0.997,
            "num_envs": NUM_ENVS,
            "rollout_length": ROLLOUT_LENGTH,
            # One update of 256 sequences a step, as EfficientZero's 100k updates.
            "updates_per_iteration": NUM_ENVS * ROLLOUT_LENGTH,
            "batch_size": 256,
            "num_unroll_steps": 5,
            "td_steps": 5,
            "replay_capacity": 100_000,
            "replay_observation_dtype": "uint8",
            "min_replay_steps": 2_000 // NUM_ENVS,  # 2,000 transitions before the first update
            "priority_alpha": 0.6,
            "priority_beta": (0.4, 1.0),
            "optimizer": "sgd",
            "learning_rate": 0.2,
            "momentum": 0.9,
            "weight_decay": 1e-4,
            "decoupled_weight_decay": False,
            "warmup_updates": 1_000,
            "lr_decay_updates": None,
            "max_grad_norm": 5.0,
            "value_loss_weight": 0.25,
            "consistency_loss_weight": 2.0,
            "reanalyse_values": True,
            "reanalyse_policy_fraction": 0.99,
            "off_policy_correction_steps": 30_000,
            "target_update_every": 200,
            "unroll_learner": False,  # loops: 16 updates unrolled take too long to compile
            "search.policy": "muzero",
            "search.num_simulations": 50,
            "search.dirichlet_alpha": 0.3,
            "search.dirichlet_fraction": 0.25,
            "network.kind": "resnet",
            "network.downsample": True,
            "network.channels": 64,
            "network.num_blocks": 1,
            "network.value_support_size": 300,
            "network.reward_support_size": 300,
            "network.value_prefix_horizon": 5,
            "network.lstm_size": 512,
            "network.projection_size": 1024,
            "eval_every_env_steps": 100_000,
            "eval_episodes": 32,
            "eval_max_steps": 27_000,
        },
    )
