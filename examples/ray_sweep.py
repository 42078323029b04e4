"""A sweep on a Ray cluster: one Ray task per shard, each running `schedlab sweep --shard
I/N` into a directory the workers share; then the merge.

    python examples/ray_sweep.py examples/sweep.toml sweep-out [--shards 4] [--schedlab PATH]

With RAY_ADDRESS set (or `--address`), the tasks go to that cluster; otherwise a local Ray
instance is started. The shard partition is schedlab's own, so re-running resumes: cells
already in DIR/cells are skipped, and the merge equals an unsharded run row for row.
"""
import argparse
import os
import shutil
import subprocess
import sys

import ray


@ray.remote(num_cpus=1)
def run_shard(schedlab, spec, out, index, count):
    """One shard, on whichever worker Ray chose; its summary line."""
    done = subprocess.run(
        [schedlab, "sweep", spec, "--out", out, "--shard", f"{index}/{count}", "--jobs", "1"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"shard {index}/{count}: {done.stderr.strip()}")
    return done.stdout.strip()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("spec")
    p.add_argument("out")
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--schedlab", default=shutil.which("schedlab") or "schedlab")
    p.add_argument("--address", default=os.environ.get("RAY_ADDRESS"))
    a = p.parse_args()
    spec, out = os.path.abspath(a.spec), os.path.abspath(a.out)
    ray.init(address=a.address, include_dashboard=False, log_to_driver=False)
    try:
        for line in ray.get(
            [run_shard.remote(a.schedlab, spec, out, i, a.shards) for i in range(1, a.shards + 1)]
        ):
            print(line)
    finally:
        ray.shutdown()
    merged = subprocess.run([a.schedlab, "sweep", spec, "--out", out, "--merge"])
    sys.exit(merged.returncode)


if __name__ == "__main__":
    main()
