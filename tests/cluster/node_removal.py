"""Run the perturbation job on a two-node ray.cluster_utils.Cluster and remove the worker node mid-run,
once that node hosts stage actors and while the job is still running.

Run in its own process (a test's Ray session cannot host a second cluster). Prints a JSON verdict.
"""

import json
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


def main(input_path: str, output: str) -> None:
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
    job = threading.Thread(target=lambda: result.update(run_perturb(config, input_path, output)))
    job.start()
    deadline = time.time() + 300
    while actors_on(worker.node_id) == 0 and time.time() < deadline:
        time.sleep(0.5)
    actors_at_removal = actors_on(worker.node_id)
    markers_at_removal = len(list((Path(output) / "_markers").glob("part-*.json")))
    running_at_removal = job.is_alive() and not result
    cluster.remove_node(worker)
    removed_at = time.time()
    job.join(timeout=600)
    verdict = {
        "summary": result,
        "actors_on_removed_node": actors_at_removal,
        "job_running_at_removal": running_at_removal,
        "markers_at_removal": markers_at_removal,
        "finished_after_removal_s": round(time.time() - removed_at, 1),
        "alive": job.is_alive(),
    }
    print(json.dumps(verdict))
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
    sys.exit(0)
