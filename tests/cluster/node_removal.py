"""Run the perturbation job on a two-node ray.cluster_utils.Cluster and remove the worker node mid-run,
once that node hosts stage actors and while the job is still running (a SEED, when given, draws how many
shards, 0 to 2, finish first: the fault campaign's node_removal kind, tests/pipeline/chaos.py).

Run in its own process (a test's Ray session cannot host a second cluster). Prints a JSON verdict.
"""

import json
import random
import sys
import threading
import time
from pathlib import Path

import ray
from ray.cluster_utils import Cluster

from hades_ray.config import load_config
from hades_ray.perturb.runner import run_perturb


def actors_on(node_id: str) -> int:
    """Alive actors placed on ``node_id``, from the GCS actor table (the State API needs a dashboard)."""
    table = ray._private.state.actors(actor_state_name="ALIVE")
    return sum(1 for info in table.values() if info["Address"]["NodeID"] == node_id)


def main(input_path: str, output: str, seed: int | None = None) -> None:
    # The head keeps logical CPUs for read/write tasks beside the actors (hades_ray/pipeline/README.md).
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 3, "include_dashboard": False})
    worker = cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
    config = load_config(
        "local",
        overrides=[
            "perturb.rank.num_candidates=2",
            "perturb.read.shard_size=2",
            "perturb.resources.replace.concurrency=3",
            "perturb.resources.replace.min_concurrency=3",
            "perturb.resources.rank.concurrency=2",
            "perturb.resources.rank.min_concurrency=2",
        ],
    )
    result: dict = {}
    failed: list[str] = []

    def run() -> None:
        try:
            result.update(run_perturb(config, input_path, output))
        except Exception as error:  # the verdict says how the run stopped; the campaign reruns it
            failed.append(f"{type(error).__name__}: {error}"[:500])

    job = threading.Thread(target=run)
    job.start()
    deadline = time.time() + 300
    while actors_on(worker.node_id) == 0 and time.time() < deadline:
        time.sleep(0.5)
    actors_seen = actors_on(worker.node_id)
    if seed is not None:  # then until a drawn number of shards (0 to 2) has finished, or the job ends
        wanted = random.Random(seed).randrange(3)
        while job.is_alive() and len(list((Path(output) / "_markers").glob("part-*.json"))) < wanted:
            time.sleep(0.05)
    actors_at_removal = actors_on(worker.node_id)
    markers_at_removal = len(list((Path(output) / "_markers").glob("part-*.json")))
    running_at_removal = job.is_alive() and not result
    cluster.remove_node(worker)
    removed_at = time.time()
    job.join(timeout=600)
    verdict = {
        "summary": result,
        "actors_on_removed_node": actors_at_removal,
        "actors_seen_on_node": actors_seen,
        "job_running_at_removal": running_at_removal,
        "markers_at_removal": markers_at_removal,
        "finished_after_removal_s": round(time.time() - removed_at, 1),
        "alive": job.is_alive(),
        "error": failed[0] if failed else "",
    }
    print(json.dumps(verdict))
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else None)
    sys.exit(0)
