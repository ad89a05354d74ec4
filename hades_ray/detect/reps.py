"""The span-representation store: what a frozen backbone computes for an instance, computed once.

With ``detect.freeze: all`` nothing of the backbone trains, so an instance's pooled span vector depends
only on the *view* (backbone and revision, mode, window and its unit) and on the instance. A store holds
that vector, max- and mean-pooled from one forward, for every instance of one input (a HaDes file, or
a selection pool), as Parquet parts made by a sharded job on the engine (resumable, a marker per shard,
an actor pool with GPUs where the caller asks for them):

    <the data's folder>/_reps/<file name>-<digest>/parts/part-NNNNN.parquet   row, key, rep_max, rep_mean
    WORKDIR/reps/pool-<digest>/parts/part-NNNNN.parquet                       id, key, rep_max, rep_mean

The digest covers the view and the data (a file's bytes; a pool's shard identities), so a changed view
or changed data names another store and a stale one is never read; two fits, trials or folds that need
the same view of the same data read one store. ``key`` (a digest of an instance's words and span) lets a
fit look its instances up in any store of the same view (a fold's items in the judged set's store, a
round's judged items in the pool's).

The vectors are computed as the live scoring path computes them (``views.pool_views`` beside
``views.score_views``: each distinct view once, equal-length groups, the backbone in eval mode), so a head
trained on them is an ordinary detector folder whose ``score``/``predict``/``serve`` give the p(H) the
store path gave (tests/detect/test_reps.py states the tolerance).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hades_ray.detect.scoring import SCORE_OUTPUTS, SPAN_INPUTS, instances_table, items_from_table
from hades_ray.pipeline import storage
from hades_ray.pipeline.job import ShardJob
from hades_ray.pipeline.lock import OutputLock
from hades_ray.pipeline.stage import Resources, Stage, setup_torch
from hades_ray.pipeline.steps import digest_of
from hades_ray.text.languages import Language, language_of

STORE_FORMAT = 1  # bump when what a part holds, or how a vector is computed, changes
PARTS, STORE_JSON = "parts", "store.json"
POOLINGS = ("max", "mean")
VECTOR = pa.list_(pa.float32())
REP_OUTPUTS = {"rep_max": VECTOR, "rep_mean": VECTOR}


@dataclass(frozen=True)
class View:
    """What a frozen backbone's span vector depends on besides the instance (pooling is not: a store
    holds both)."""

    backbone: str
    revision: str | None
    mode: str
    window: int
    window_unit: str
    layer: int = -1  # detect.layer: the hidden state pooled (-1, the last, is left out of plain: old digests hold)

    @classmethod
    def of(cls, settings: dict) -> View:
        """From a span classifier's settings (``train.transformer.detector_settings``, ``detector.json``)."""
        from hades_ray.detect.spans import window_unit

        return cls(settings["backbone"], settings.get("revision"), settings.get("mode", "offline"),
                   int(settings["window"]), window_unit(settings), int(settings.get("layer", -1)))  # fmt: skip

    kind: ClassVar[str] = "span_reps"
    columns: ClassVar[tuple[str, ...]] = ("rep_max", "rep_mean")

    def plain(self) -> dict:
        """The view as plain data: its digest's, and ``store.json``'s ``view`` (``layer`` where it is not -1)."""
        plain = dataclasses.asdict(self)
        if plain["layer"] == -1:
            del plain["layer"]
        return plain

    def digest(self, data: str) -> str:
        return digest_of([STORE_FORMAT, self.kind, self.plain(), data])

    def stages(self, detect, num_gpus: float = 0.0) -> list[Stage]:
        return [rep_stage(self, detect, num_gpus)]


@dataclass(frozen=True)
class FeatureView:
    """What the feature detectors' model-based span features (MLM probability and entropy, spaCy's tags)
    depend on besides the instance: a store of them serves every LR/SVM fit and scoring of a file or pool."""

    mlm: str
    feature_window: int
    spacy_model: str
    language: Language
    kind: ClassVar[str] = "span_features"
    columns: ClassVar[tuple[str, ...]] = ("mlm", "tags")

    @classmethod
    def of(cls, settings: dict) -> FeatureView:
        """From a feature detector's settings (``train.fit.linear_settings``, ``detector.json``; a folder
        from before languages has none: English, as its feature stages read it, detect/features/stages.py)."""
        return cls(settings["mlm"], int(settings["feature_window"]), settings["spacy_model"],
                   language_of(settings))  # fmt: skip

    def plain(self) -> dict:
        """The view as plain data, the language by name (every store's digest and ``store.json`` name it,
        English's too): a feature detector's settings."""
        fields = {item.name: getattr(self, item.name) for item in dataclasses.fields(self)}
        return fields | {"language": self.language.name}

    def digest(self, data: str) -> str:
        return digest_of([STORE_FORMAT, self.kind, self.plain(), data])

    def stages(self, detect, num_gpus: float = 0.0) -> list[Stage]:
        from hades_ray.detect.features.stages import model_feature_stages

        return model_feature_stages(self.plain(), detect)


def store_view_of(settings: dict, detect):
    """The store a detector with ``settings`` reads under ``detect``: a ``View`` (a span classifier with its
    backbone frozen whole), a ``FeatureView`` (LR/SVM: their MLM and spaCy features), or None (the backbone
    trains, or ``detect.reuse_frozen`` is off)."""
    if not detect.reuse_frozen:
        return None
    if settings.get("type", "transformer") in ("lr", "svm"):
        return FeatureView.of(settings)
    return View.of(settings) if reuses_store(settings, detect) else None


def reuses_store(settings: dict, detect) -> bool:
    """Whether a span classifier with ``settings`` reads stored vectors: its backbone is frozen whole and
    ``detect.reuse_frozen`` is on (``last_layer``/``none`` train the backbone: nothing is stored)."""
    return bool(detect.reuse_frozen) and settings.get("type", "transformer") == "transformer" \
        and settings.get("freeze") == "all"  # fmt: skip


def instance_key(words: list[str], start: int, end: int) -> str:
    """An instance's identity in every store: its words and span."""
    return hashlib.sha256(json.dumps([list(words), int(start), int(end)]).encode()).hexdigest()[:32]


def file_digest(path: str | Path) -> str:
    """A file's content (not its time: a judged set written again with the same lines is the same data)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# ---------------------------------------------------------------- the model stage


def span_vectors(backbone, tokenizer, items: list[dict], view: View, forward_batch: int) -> dict[str, np.ndarray]:
    """``{"max": [n, h], "mean": [n, h]}`` span vectors of ``{"words", "start", "end"}`` items in ``view``."""
    from hades_ray.detect.views import pool_views, shared_views

    jobs, places = shared_views(tokenizer, items, view.mode, view.window, view.window_unit)
    pooled = pool_views(backbone, jobs, forward_batch, POOLINGS)
    return {p: np.stack([pooled[job][p][row] for job, row in places]) for p in POOLINGS}


class SpanRepStage(Stage):
    """Model: the frozen backbone's pooled span vectors of each instance (the backbone loads once per actor,
    in eval mode: no dropout)."""

    name = "span_reps"
    inputs = SPAN_INPUTS
    outputs = REP_OUTPUTS

    def __init__(self, resources: Resources, view: View, forward_batch: int = 32):
        super().__init__(resources)
        self.view, self.forward_batch = view, forward_batch

    def setup(self) -> None:
        from hades_ray.detect.model import load_backbone
        from hades_ray.models.registry import resolve_model

        device = setup_torch(self.resources)
        self.tokenizer, backbone = load_backbone(resolve_model(self.view.backbone), self.view.revision, self.view.layer)
        self.backbone = backbone.eval().to(device)

    def process(self, batch: pa.Table) -> dict:
        items = items_from_table(batch)
        vectors = span_vectors(self.backbone, self.tokenizer, items, self.view, self.forward_batch)
        return {"rep_max": list(vectors["max"]), "rep_mean": list(vectors["mean"])}


def rep_stage(view: View, detect, num_gpus: float = 0.0) -> SpanRepStage:
    """The store's model stage with the ``detect`` section's actor resources."""
    resources = Resources(**detect.actor_resources(num_gpus, batch_size=detect.score_batch_size * 8))
    return SpanRepStage(resources, view, detect.score_batch_size)


def write_store_part(output: str, ids: tuple[str, ...], values: tuple[str, ...], index: int, table: pa.Table) -> dict:
    """A worker's write: shard ``index``'s part: ``ids`` (``row`` or ``id``), each instance's ``key`` and the
    store's ``values`` columns."""
    items = items_from_table(table)
    keys = pa.array([instance_key(i["words"], i["start"], i["end"]) for i in items], pa.string())
    part = table.select([*ids, *values])
    part = part.add_column(len(ids), "key", keys)
    storage.write_table(storage.join(output, PARTS, f"part-{index:05d}.parquet"), part)
    return {"counts": {"instances": table.num_rows}}


# ---------------------------------------------------------------- making a store


@dataclass(frozen=True)
class Store:
    """A store folder and what its making did (``made_now``: shards computed by this call)."""

    folder: str
    view: View | FeatureView
    made_now: int = 0
    reused: int = 0


def _build(job: ShardJob, view, executor, instances: int, num_gpus: float) -> Store:
    # A store of at most one scoring shard's instances gains nothing from Ray: its actors would spend most
    # of its time starting processes and loading the model. It runs in this process unless it asks for GPUs.
    from hades_ray.detect.scoring import SHARD_ROWS

    if instances <= SHARD_ROWS and not num_gpus and executor.kind == "ray":
        executor = dataclasses.replace(executor, kind="local")
    # Trials and folds that need one store may start at once: the second waits for the first and then
    # finds every shard finished.
    with OutputLock(storage.join(job.output, "_build"), wait=True):
        summary = executor.run(job)
    shards = summary["shards"]
    return Store(job.output, view, shards["processed_now"], shards["skipped_finished"])


def file_store_folder(path: str | Path, view) -> str:
    """Beside the data (``_reps/`` in its folder), or under ``$HADES_RAY_HOME/reps`` where that folder is
    read-only (a shared dataset): the name is the digest either way."""
    import os

    from hades_ray.models.registry import hades_home

    path = Path(path).resolve()
    parent = path.parent / "_reps"
    if not os.access(parent if parent.is_dir() else path.parent, os.W_OK):
        parent = hades_home() / "reps"
    return str(parent / f"{path.name}-{view.digest(file_digest(path))}")


def file_store(path: str | Path, view, detect, executor, num_gpus: float = 0.0) -> Store:
    """The store of every valid instance of the HaDes file ``path`` in ``view`` (a ``View``: span vectors;
    a ``FeatureView``: the feature detectors' model features), made where it is missing."""
    from hades_ray.detect.data import LoadReport, numbered_instances
    from hades_ray.detect.file_shards import read_scoring_shard

    source, folder = str(Path(path).resolve()), file_store_folder(path, view)
    num_gpus = num_gpus or (1.0 if detect.use_gpu else 0.0)  # a GPU per actor where training has GPUs
    content = Path(folder).name.rsplit("-", 1)[1]
    rows = [row for row, _ in numbered_instances(path, detect.skip_bad, LoadReport())]
    job = ShardJob(
        name=view.kind.replace("_", " "),
        output=folder,
        digest=view.digest(content),
        plan=functools.partial(_plan_file, source, rows, content),
        read=functools.partial(read_scoring_shard, False),
        stages=functools.partial(view.stages, detect, num_gpus),
        write=functools.partial(write_store_part, folder, ("row",), view.columns),
        resolved={STORE_JSON: _described(view, source)},
        rows_verb="instances",
    )
    return _build(job, view, executor, len(rows), num_gpus)


def _plan_file(source: str, rows: list[int], content: str, mapper) -> list:
    from hades_ray.detect.file_shards import plan_scoring

    # The content names the shards' input (a file rewritten with the same lines is the same input).
    return [dataclasses.replace(s, identity=content) for s in plan_scoring(source, rows, mapper)]


def pool_store(workdir, shards: list, view, detect, executor, num_gpus: float = 0.0) -> Store:
    """The store of a selection pool (its shards, ``pool.readers.pool_shards``), its part k beside pool shard k."""
    from hades_ray.pool.readers import read_pool_part

    # Each part by its place in the work folder, not its absolute path (a copied or moved work folder keeps
    # its store), and by its marker's digest (a redone part is a new one).
    data = digest_of([[s.index, _inside(str(workdir), s.source), s.rows, s.identity] for s in shards])
    folder = storage.join(str(workdir), "reps", f"pool-{view.kind}-{view.digest(data)}")
    job = ShardJob(
        name=f"pool {view.kind.replace('_', ' ')}",
        output=folder,
        digest=view.digest(data),
        plan=functools.partial(_planned, shards),
        read=functools.partial(read_pool_part, columns=("id", "words", "start", "end")),
        stages=functools.partial(view.stages, detect, num_gpus),
        write=functools.partial(write_store_part, folder, ("id",), view.columns),
        resolved={STORE_JSON: _described(view, f"pool ({len(shards)} shards)")},
        rows_verb="instances",
    )
    return _build(job, view, executor, sum(s.rows for s in shards), num_gpus)


def _inside(workdir: str, path: str) -> str:
    root = workdir.rstrip("/") + "/"
    return path[len(root) :] if path.startswith(root) else path


def _planned(shards: list, _mapper) -> list:
    return shards


def _described(view, data: str) -> str:
    return json.dumps({"kind": view.kind, "view": view.plain(), "data": data}, indent=2)


# ---------------------------------------------------------------- reading


def made_for(folder: str, view) -> bool:
    """Whether the store folder holds ``view``'s kind of values for that view."""
    path = storage.join(folder, STORE_JSON)
    if not storage.exists(path):
        return False
    described = json.loads(storage.read_text(path))
    return described.get("kind", View.kind) == view.kind and described["view"] == view.plain()


def vectors(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """``[n, h]`` float32 from a list<float32> column."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(array)
    flat = array.flatten().to_numpy(zero_copy_only=False).astype(np.float32)
    return flat.reshape(n, -1) if n else np.zeros((0, 0), dtype=np.float32)


def lookup(folders: list[str], keys: list[str], pooling: str, view: View) -> np.ndarray | None:
    """``[len(keys), h]`` span vectors (``pooling``) of ``keys`` from the stores in ``folders`` made for
    ``view`` (others are passed over); None when some key is in none of them."""
    found = lookup_columns(folders, keys, (f"rep_{pooling}",), view)
    return None if found is None else found[f"rep_{pooling}"]


def lookup_columns(folders: list[str], keys: list[str], columns: tuple[str, ...], view) -> dict | None:
    """``{column: [len(keys), width]}`` of ``keys`` from the stores in ``folders`` made for ``view``; None
    when some key is in none of them. Reads only the matching rows of each part."""
    import pyarrow.dataset as ds

    found: dict[str, list[np.ndarray]] = {}
    for folder in folders:
        missing = sorted(set(keys) - set(found))
        if not missing:
            break
        if not made_for(folder, view):
            continue
        fs, inner = storage.resolve(storage.join(folder, PARTS))
        table = ds.dataset(inner, format="parquet", filesystem=fs).to_table(
            columns=["key", *columns], filter=pc.field("key").isin(missing)
        )
        values = [vectors(table.column(c)) for c in columns]
        found.update({k: [v[i] for v in values] for i, k in enumerate(table.column("key").to_pylist())})
    if any(k not in found for k in keys):
        return None
    if not keys:
        return {c: np.zeros((0, 0), dtype=np.float32) for c in columns}
    return {c: np.stack([found[k][j] for k in keys]) for j, c in enumerate(columns)}


def instance_vectors(instances: list, path, settings: dict, detect, executor, sources=()) -> tuple[np.ndarray, Store]:
    """The span vectors of ``instances`` (read from the HaDes file ``path``) in the view of ``settings``,
    pooled as ``settings["pooling"]``: from ``sources`` (store folders) where they hold every instance,
    else from ``path``'s own store, made now if it is missing."""
    view = View.of(settings)
    keys = [instance_key(i.words, i.start, i.end) for i in instances]
    found = lookup(list(sources), keys, settings["pooling"], view)
    if found is not None:
        return found, Store(str(sources[0]) if sources else "", view, 0, 0)
    store = file_store(path, view, detect, executor)
    found = lookup([store.folder], keys, settings["pooling"], view)
    if found is None:  # the file changed between its read and its store (the digest is of the bytes read)
        raise RuntimeError(f"{path} changed while its span representations were made; run the command again")
    return found, store


# ---------------------------------------------------------------- scoring with a head


class HeadScoreStage(Stage):
    """CPU: a frozen span classifier's head on stored span vectors (``rep``): its p(H) without the backbone."""

    name = "head"
    inputs = {"rep": VECTOR}
    outputs = SCORE_OUTPUTS
    drops = ("rep",)

    def __init__(self, resources: Resources, detector):
        super().__init__(resources)
        self.detector = detector

    def setup(self) -> None:
        setup_torch(self.resources)
        self.head = self.detector.load_head()

    def process(self, batch: pa.Table) -> dict:
        p = head_scores(self.head, vectors(batch.column("rep")))
        return {"p_hallucination": p, "pred": (p >= 0.5).astype(np.int8)}


def head_scores(head, reps: np.ndarray) -> np.ndarray:
    """p(H) of span vectors by a head (as ``views.score_views`` applies it)."""
    import torch

    from hades_ray.detect.stable import head_probabilities

    device = next(head.parameters()).device
    with torch.no_grad():
        p = head_probabilities(head, torch.as_tensor(np.asarray(reps, dtype=np.float32), device=device))
    return p.cpu().numpy().astype(np.float64)


def store_executor(config):
    """The executor that makes stores: on Ray from a driver; in this process inside a Ray worker (a Tune
    trial, a grid cell), where a nested Ray Data job would compete with the trials for the CPUs."""
    from hades_ray.pipeline.executor import Executor

    return Executor.of(config.ray, "local" if _in_ray_worker() else "ray")


def _in_ray_worker() -> bool:
    import ray

    return ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE


def head_stages(detector) -> list[Stage]:
    """A frozen span classifier's scoring stages on stored vectors: its head alone, a light CPU task."""
    return [HeadScoreStage(Resources(num_cpus=0.25, batch_size=4096), detector)]


def stored_scoring(detector, view) -> tuple[dict[str, str], list[Stage]]:
    """How a detector scores from its store: ``{store column: the column its stages read}`` and those
    stages (a span classifier's head on ``rep``; a feature detector's linear stage on ``mlm`` and ``tags``)."""
    if isinstance(view, FeatureView):
        from hades_ray.detect.features.stages import LinearScoreStage

        linear = LinearScoreStage(Resources(num_cpus=0.25, batch_size=1024), str(detector.folder.resolve()))
        return {"mlm": "mlm", "tags": "tags"}, [linear]
    return {f"rep_{detector.meta['pooling']}": "rep"}, head_stages(detector.located())


def take_columns(table: pa.Table, part: pa.Table, on: str, columns: dict[str, str], where: str) -> pa.Table:
    """``table`` with ``columns`` (store name -> name here) of its rows from a store part (matched on ``on``)."""
    index = {value: i for i, value in enumerate(part.column(on).to_pylist())}
    wanted = table.column(on).to_pylist()
    if any(v not in index for v in wanted):
        raise RuntimeError(f"{where}: the store lacks some of these rows; delete that store to remake it")
    rows = pa.array([index[v] for v in wanted], pa.int64())
    for source, name in columns.items():
        table = table.append_column(name, part.column(source).take(rows))
    return table


def head_on_stored(detector, instances: list, sources, detect) -> np.ndarray | None:
    """p(H) of ``instances`` by a detector on their stored values in the stores ``sources`` (a frozen span
    classifier's head on span vectors, a feature detector's linear model on its model features); None
    where the detector stores nothing, or some instance is in none of the stores."""
    view = detector.store_view(detect)
    if not sources or view is None:
        return None
    keys = [instance_key(i.words, i.start, i.end) for i in instances]
    columns, stages = stored_scoring(detector, view)
    found = lookup_columns(list(sources), keys, tuple(columns), view)
    if found is None:
        return None
    if isinstance(view, View):
        return head_scores(detector.load_head(), next(iter(found.values())))
    from hades_ray.pipeline.executor import run_stages

    table = with_stored(instances_table(instances), {columns[c]: v for c, v in found.items()})
    return run_stages(table, stages).column("p_hallucination").to_numpy().astype(np.float64)


def with_stored(table: pa.Table, values: dict[str, np.ndarray]) -> pa.Table:
    """``table`` with list<float32> columns from ``[rows, width]`` arrays."""
    for name, array in values.items():
        table = table.append_column(name, pa.array(list(np.asarray(array, dtype=np.float32)), VECTOR))
    return table


def stored_features(instances: list, paths: list, settings: dict, config, sources=(), executor=None) -> pa.Table | None:
    """The span table of ``instances`` (read from the HaDes files ``paths``) with their model features
    (``mlm``, ``tags``) from the stores ``sources`` or the files' own stores (made where missing), as
    ``feature_matrix`` computes them live; None where ``detect.reuse_frozen`` is off."""
    view = store_view_of(settings, config.detect)
    if not isinstance(view, FeatureView):
        return None
    keys = [instance_key(i.words, i.start, i.end) for i in instances]
    found = lookup_columns(list(sources), keys, view.columns, view)
    if found is None:
        executor = executor or store_executor(config)
        folders = [file_store(p, view, config.detect, executor).folder for p in paths]
        found = lookup_columns(folders, keys, view.columns, view)
    if found is None:
        raise RuntimeError(f"{', '.join(map(str, paths))} changed while their features were stored; run again")
    return with_stored(instances_table(instances), found)


def stored_file_scores(detector, instances: list, path, config) -> np.ndarray | None:
    """p(H) of ``instances`` (read from the HaDes file ``path``) by a frozen detector's head on that file's
    store (made where missing: a test split scored by every cell of a grid is one store per view); None
    where the detector runs its backbone."""
    if not detector.reads_store(config.detect):
        return None
    store = file_store(path, View.of(detector.meta), config.detect, store_executor(config))
    return head_on_stored(detector, instances, (store.folder,), config.detect)


def file_stores(paths: list, settings: dict, config) -> tuple[str, ...]:
    """The stores of the HaDes files ``paths`` in the view of a span classifier's ``settings``, made where
    missing (what fits on subsets of those files look their instances up in); () where nothing is stored."""
    if not reuses_store(settings, config.detect):
        return ()
    executor, view = store_executor(config), View.of(settings)
    return tuple(file_store(p, view, config.detect, executor).folder for p in paths)
