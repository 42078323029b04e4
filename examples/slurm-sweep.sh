#!/bin/bash
# A sweep as a Slurm job array: each array task runs one shard into a shared directory;
# a dependent job merges when every shard has finished. A killed or requeued task
# resumes: cells already in DIR/cells are skipped.
#
#   sbatch --array=1-8 examples/slurm-sweep.sh examples/sweep.toml /shared/sweep-out
#   sbatch --dependency=afterok:<array job id> --wrap \
#       "schedlab sweep examples/sweep.toml --out /shared/sweep-out --merge"
#
#SBATCH --job-name=schedlab-sweep
#SBATCH --cpus-per-task=4
#SBATCH --time=01:00:00
#SBATCH --output=schedlab-sweep-%A_%a.log
set -euo pipefail
spec="${1:?usage: slurm-sweep.sh SPEC.toml OUT_DIR}"
out="${2:?usage: slurm-sweep.sh SPEC.toml OUT_DIR}"
: "${SLURM_ARRAY_TASK_ID:?run me with sbatch --array=1-N}"
: "${SLURM_ARRAY_TASK_COUNT:?run me with sbatch --array=1-N}"
# Array ids from 1 (--array=1-N), so the task id is the shard's index.
exec schedlab sweep "$spec" --out "$out" \
    --shard "${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT}" \
    --jobs "${SLURM_CPUS_PER_TASK:-1}"
