"""The cluster specs would work: schema-valid, only keys the schemas name, token auth, KubeRay's
SidecarMode rules, the paper preset's actors fitting the declared nodes, and a Dockerfile and a
`make submit-perturb` that a newcomer can use."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from hades_ray.config import load_config

ROOT = Path(__file__).resolve().parents[2]
RAYJOB = ROOT / "cluster" / "rayjob-perturb.yaml"
LAUNCHER = ROOT / "cluster" / "gpu-cluster.yaml"
KUBERAY_SCHEMA = ROOT.parent / "shared" / "data" / "kuberay" / "rayjob-v1.schema.json"


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def unknown_keys(doc, schema: dict, path: str = "") -> list[str]:
    """Keys of ``doc`` that ``schema`` does not name (Kubernetes prunes those without a word)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    if isinstance(doc, list):
        return [k for i, item in enumerate(doc) for k in unknown_keys(item, schema.get("items", {}), f"{path}[{i}]")]
    if not isinstance(doc, dict):
        return []
    found = []
    for key, value in doc.items():
        if key in schema.get("properties", {}):
            found += unknown_keys(value, schema["properties"][key], f"{path}.{key}")
        elif isinstance(schema.get("additionalProperties"), dict):
            found += unknown_keys(value, schema["additionalProperties"], f"{path}.{key}")
        else:
            found.append(f"{path}.{key}")
    return found


def quantity(value) -> float:
    """A Kubernetes CPU or GPU quantity ("8", "500m", 1) as a number."""
    text = str(value)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def fits(nodes: list[dict], actors: list[dict], spare_cpus: float = 1.0) -> bool:
    """First-fit decreasing placement of ``actors`` on ``nodes`` (both {"CPU", "GPU"}), leaving
    ``spare_cpus`` for Ray Data's read and write tasks (without them the job hangs; hades_ray/docs/ray.md)."""
    free = [dict(n) for n in nodes]
    for actor in sorted(actors, key=lambda a: (a["GPU"], a["CPU"]), reverse=True):
        node = next((n for n in free if n["CPU"] >= actor["CPU"] and n["GPU"] >= actor["GPU"] - 1e-9), None)
        if node is None:
            return False
        node["CPU"] -= actor["CPU"]
        node["GPU"] -= actor["GPU"]
    return sum(n["CPU"] for n in free) >= spare_cpus


def paper_actors() -> list[dict]:
    resources = load_config("paper").perturb.resources
    stages = [f.name for f in dataclasses.fields(resources)]  # every actor-pool stage the config knows
    assert {"prepare", "replace", "rank"} <= set(stages)
    return [
        {"stage": stage, "CPU": res.num_cpus, "GPU": res.num_gpus}
        for stage in stages
        for res in [getattr(resources, stage)]
        for _ in range(res.concurrency)
    ]


def rayjob_nodes(spec: dict) -> list[dict]:
    cluster = spec["spec"]["rayClusterSpec"]
    head = cluster["headGroupSpec"]
    limits = head["template"]["spec"]["containers"][0]["resources"]["limits"]
    nodes = [{"CPU": quantity(head["rayStartParams"].get("num-cpus", limits["cpu"])), "GPU": 0.0}]
    for group in cluster["workerGroupSpecs"]:
        limits = group["template"]["spec"]["containers"][0]["resources"]["limits"]
        params = group.get("rayStartParams") or {}
        count = group["maxReplicas"] if cluster.get("enableInTreeAutoscaling") else group["replicas"]
        node = {
            "CPU": quantity(params.get("num-cpus", limits["cpu"])),
            "GPU": quantity(params.get("num-gpus", limits.get("nvidia.com/gpu", 0))),
        }
        nodes += [dict(node) for _ in range(count)]
    return nodes


def test_fit_check_catches_what_the_issue_found():
    # The old spec: 4 one-GPU workers for 4 REPLACE + 4 RANK actors at one GPU each.
    workers = [{"CPU": 8, "GPU": 1}] * 4
    whole = [{"CPU": 1, "GPU": 1}] * 8
    assert not fits(workers, whole)
    assert fits(workers, [{"CPU": 1, "GPU": 0.5}] * 8)


def test_rayjob_is_valid_for_kuberay():
    if not KUBERAY_SCHEMA.is_file():
        pytest.skip("../shared/data/kuberay is absent")
    import jsonschema

    schema = json.loads(KUBERAY_SCHEMA.read_text(encoding="utf-8"))
    spec = _load(RAYJOB)
    jsonschema.validate(spec, schema)
    # The CRD leaves the top-level ObjectMeta to the API server, which knows these fields.
    assert set(spec["metadata"]) <= {"name", "namespace", "labels", "annotations"}
    assert unknown_keys({k: v for k, v in spec.items() if k != "metadata"}, schema) == []
    assert unknown_keys({"spec": {"submitMode": "x"}}, schema) == [".spec.submitMode"]  # the walk does catch typos


def test_rayjob_submits_from_the_head_pod_with_token_auth():
    job = _load(RAYJOB)["spec"]
    cluster = job["rayClusterSpec"]
    # KubeRay's own rules for SidecarMode (ray-operator validation): no submitter pod or config, head
    # restartPolicy Never or unset; token auth needs Ray >= 2.52.
    assert job["submissionMode"] == "SidecarMode"
    assert "submitterPodTemplate" not in job and "submitterConfig" not in job and "clusterSelector" not in job
    assert cluster["headGroupSpec"]["template"]["spec"].get("restartPolicy", "Never") == "Never"
    assert cluster["authOptions"]["mode"] == "token"
    assert tuple(int(x) for x in cluster["rayVersion"].split(".")) >= (2, 52, 0)
    # The operator polls the dashboard through the head service: it must not be bound to loopback.
    assert cluster["headGroupSpec"]["rayStartParams"].get("dashboard-host", "0.0.0.0") != "127.0.0.1"
    assert re.search(r"--input s3://\S+ --output s3://\S+", job["entrypoint"])


def test_paper_preset_fits_the_rayjob():
    nodes = rayjob_nodes(_load(RAYJOB))
    actors = paper_actors()
    assert sum(a["GPU"] for a in actors) <= sum(n["GPU"] for n in nodes)
    assert fits(nodes, actors)


def test_gpu_cluster_is_valid_for_the_ray_launcher():
    import jsonschema
    import ray

    schema = json.loads((Path(ray.__file__).parent / "autoscaler" / "ray-schema.json").read_text(encoding="utf-8"))
    spec = _load(LAUNCHER)
    jsonschema.validate(spec, schema)
    for command in spec["head_start_ray_commands"] + spec["worker_start_ray_commands"]:
        assert "ray start" not in command or "RAY_AUTH_MODE=token" in command
    assert "/home/ubuntu/.ray/auth_token" in spec["file_mounts"]
    assert "--dashboard-host=127.0.0.1" in " ".join(spec["head_start_ray_commands"])


def test_paper_preset_fits_the_gpu_cluster_from_its_start():
    spec = _load(LAUNCHER)
    types = spec["available_node_types"]
    nodes = [{"CPU": types[spec["head_node_type"]]["resources"]["CPU"], "GPU": 0}]
    for name, node in types.items():
        if name != spec["head_node_type"]:
            nodes += [{"CPU": node["resources"]["CPU"], "GPU": node["resources"].get("GPU", 0)}] * node["min_workers"]
    assert fits(nodes, paper_actors())


def test_dockerfile_builds_the_specs_image_with_their_ray():
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    base = re.search(r"^FROM rayproject/ray:(\d+\.\d+\.\d+)-py3\d+-gpu$", dockerfile, re.M)
    assert base, "an official Ray GPU image with a named version tag"
    assert base.group(1) == _load(RAYJOB)["spec"]["rayClusterSpec"]["rayVersion"]
    assert re.search(r"pip install [^\n]*/app", dockerfile)


def test_submit_perturb_uses_the_venv_a_limit_and_the_token():
    done = subprocess.run(["make", "-n", "submit-perturb"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    command = done.stdout.replace("\\\n", " ")
    assert done.returncode == 0, done.stderr
    assert "RAY_AUTH_MODE=token" in command
    assert re.search(r"/\.venv/bin/python -m hades_ray perturb .*--limit 50", command)
    cluster = subprocess.run(
        ["make", "-n", "submit-perturb", "JOB_PYTHON=python", "LIMIT=", "PRESET=paper"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.replace("\\\n", " ")
    assert "python -m hades_ray perturb" in cluster and "--limit" not in cluster and "models build" not in cluster
