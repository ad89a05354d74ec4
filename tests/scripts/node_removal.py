"""Run the perturbation job on a two-node ray.cluster_utils.Cluster and remove the worker node mid-run.

Run in its own process (a test's Ray session cannot host a second cluster). Prints a JSON verdict.
"""

import json
import sys
import threading
import time

import ray
from ray.cluster_utils import Cluster

from hades_ray.config import load_config
from hades_ray.perturb.runner import run_perturb


def main(input_path: str, output: str) -> None:
    # The head keeps enough logical CPUs for read/write tasks beside the actors (RAY_NOTES: else it stalls).
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 3, "include_dashboard": False})
    worker = cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
    config = load_config(
        "local",
        overrides=[
            "perturb.rank.num_candidates=2",
            "perturb.read.shard_size=4",
            "perturb.resources.annotate.batch_size=2",
            "perturb.resources.replace.batch_size=2",
            "perturb.resources.rank.batch_size=2",
            "perturb.resources.replace.concurrency=2",
            "perturb.resources.rank.concurrency=2",
        ],
    )
    result: dict = {}
    job = threading.Thread(target=lambda: result.update(run_perturb(config, input_path, output)))
    job.start()
    time.sleep(8)  # actors are up and working on both nodes
    cluster.remove_node(worker)
    removed_at = time.time()
    job.join(timeout=600)
    print(
        json.dumps({"summary": result, "finished_after_removal_s": time.time() - removed_at, "alive": job.is_alive()})
    )
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
    sys.exit(0)
