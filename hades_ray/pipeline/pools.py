"""Actor pools sized to the cluster before any work starts (pipeline/README.md, "Pools start at the size
they run with"). The minimum of every pool is placed first (``check_resources`` has already said it
fits); the rest grows one actor per pool in turn, GPU pools first, then the widest.
"""

from __future__ import annotations

from hades_ray.pipeline.stage import Stage

IO_TASK_CPUS = 0.25  # read and write tasks: a share that keeps them schedulable next to the pools
EPSILON = 1e-9


def free_resources(nodes: list[dict]) -> list[dict[str, float]]:
    """Each live node's CPUs and GPUs, with the read/write tasks' share taken from the largest one."""
    free = [
        {key: float(n.get("Resources", {}).get(key, 0.0)) for key in ("CPU", "GPU")}
        for n in nodes
        if n.get("Alive", True)
    ]
    if free:
        max(free, key=lambda node: node["CPU"])["CPU"] -= IO_TASK_CPUS
    return free


def _place(free: list[dict[str, float]], stage: Stage) -> bool:
    """Take one actor's resources from the first node that has them (first fit)."""
    want = {"CPU": stage.resources.num_cpus, "GPU": stage.resources.num_gpus}
    for node in free:
        if all(node[k] + EPSILON >= v for k, v in want.items()):
            for k, v in want.items():
                node[k] -= v
            return True
    return False


def pool_sizes(stages: list[Stage], nodes: list[dict], blocks: int) -> list[int]:
    """The number of actors to start for each stage (0 for stages that run as tasks): at least its
    ``min_actors``, at most its ``max_actors`` and ``blocks``, as many as fit the nodes together."""
    free = free_resources(nodes)
    sizes = [0] * len(stages)
    caps = [max(1, min(s.resources.max_actors, blocks)) if s.resources.uses_actors else 0 for s in stages]
    for i, stage in enumerate(stages):
        for _ in range(min(stage.resources.min_actors, caps[i])):
            _place(free, stage)  # the smallest pools fit: check_resources said so
            sizes[i] += 1
    order = sorted(
        (i for i, s in enumerate(stages) if s.resources.uses_actors),
        key=lambda i: (-stages[i].resources.num_gpus, -stages[i].resources.max_actors, i),
    )
    grew = True
    while grew:
        grew = False
        for i in order:
            if sizes[i] < caps[i] and _place(free, stages[i]):
                sizes[i] += 1
                grew = True
    return sizes


def describe_pools(stages: list[Stage], sizes: list[int]) -> str:
    """``prepare 1, replace 2, ...`` for the log line that says what started."""
    return ", ".join(f"{s.name} {n}" for s, n in zip(stages, sizes) if s.resources.uses_actors)
