#!/usr/bin/env bash
# Multi-node GPU training of mz_jax under SLURM (see docs/scaling_out.md). Not run by CI.
#
#   sbatch examples/slurm_launch.sh                    # the cartpole preset
#   PRESET=tic_tac_toe sbatch examples/slurm_launch.sh
#
# One process per node owns all of that node's GPUs; every process runs the same program, and
# make_train builds one mesh axis 'data' over the GPUs of all nodes. The work directory must be on
# a filesystem that every node sees (checkpoints are written by all processes together).
#
#SBATCH --job-name=mz_jax
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=16
#SBATCH --time=04:00:00
#SBATCH --output=%x-%j.out

set -euo pipefail

# The coordinator runs inside process 0, on the first node of the allocation.
nodes="${SLURM_JOB_NODELIST:?submit this script with sbatch}"
first_node=$(scontrol show hostnames "${nodes}" | head -n 1)
export MZ_JAX_COORDINATOR="${first_node}:${COORDINATOR_PORT:-23456}"
export MZ_JAX_PRESET="${PRESET:-cartpole}"
export MZ_JAX_WORKDIR="${WORKDIR:-runs/${SLURM_JOB_NAME}-${SLURM_JOB_ID}}"

# SLURM_NTASKS and SLURM_PROCID are set by srun for each process. Detection is turned off because
# JAX's own SLURM detection would give each process only the GPU numbered SLURM_LOCALID (it assumes
# one process per GPU); with explicit arguments, each process keeps all GPUs of its node.
srun --kill-on-bad-exit=1 python -c '
import os
import sys

import jax

jax.distributed.initialize(
    coordinator_address=os.environ["MZ_JAX_COORDINATOR"],
    num_processes=int(os.environ["SLURM_NTASKS"]),
    process_id=int(os.environ["SLURM_PROCID"]),
    cluster_detection_method="deactivate",
)

from mz_jax.config.presets import load_preset
from mz_jax.run.loop import run_training

config = load_preset(os.environ["MZ_JAX_PRESET"])
# num_envs and batch_size are totals over all GPUs: they must divide by jax.device_count().
print(f"process {jax.process_index()} of {jax.process_count()}: {jax.local_device_count()} local "
      f"of {jax.device_count()} devices", flush=True)
summary = run_training(config, os.environ["MZ_JAX_WORKDIR"])
# 75: stopped by a signal after saving (a preemption): resubmit to resume (mz-jax train does the same).
sys.exit(75 if summary["stopped_by_signal"] else 0)
'
