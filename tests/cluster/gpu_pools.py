"""Run the perturbation job with the paper preset's pools (4 REPLACE and 4 RANK actors of half a GPU,
``min_concurrency`` 1) on a local cluster that declares 4 logical GPUs, the stages on CPU with micro
models, 16 shards. Run in its own process (a test's Ray session cannot host a second cluster); prints
a JSON verdict: the summary and, per stage, the actors the shards' markers name.
"""

import json
import sys
from pathlib import Path

import ray
from ray.data import DataContext

from hades_ray.config import load_config
from hades_ray.perturb.runner import run_perturb

# Micro models on CPU in place of the paper's; one MASK actor (spaCy) is plenty for 32 leads on 2 cores.
OVERRIDES = [
    "models.mlm=local:mlm",
    "models.causal_lm=local:gpt2",
    "perturb.read.shard_size=2",
    "perturb.rank.num_candidates=8",  # enough work per block that blocks queue at the model pools
    "perturb.resources.prepare.concurrency=1",
    "perturb.replace.dtype=float32",
    "perturb.rank.dtype=float32",
]


def main(input_path: str, output: str) -> None:
    # 16 logical CPUs: the paper preset's actors ask for a whole CPU each beside their half GPU.
    ray.init(
        address="local", num_cpus=16, num_gpus=4, include_dashboard=False, log_to_driver=False, logging_level="ERROR"
    )
    # Each pool's actors are up before its first block (Ray Data dispatches to the ready ones, and on two
    # real cores under other tests' load three actors drained the 16-shard backlog before the fourth had
    # loaded its model): the test is about the pool reaching its size, not about start-up races.
    DataContext.get_current().wait_for_min_actors_s = 600
    config = load_config("paper", overrides=OVERRIDES)
    summary = run_perturb(config, input_path, output)
    actors: dict[str, set] = {}
    for marker in sorted((Path(output) / "_markers").glob("part-*.json")):
        for stage, names in json.loads(marker.read_text())["actors"].items():
            actors.setdefault(stage, set()).update(names)
    print(json.dumps({"summary": summary, "actors": {k: sorted(v) for k, v in actors.items()}}))
    ray.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
    sys.exit(0)
