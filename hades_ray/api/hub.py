"""Where ``Detector.open`` finds a detector: a folder, or a hub repository holding one, at a revision.

The rules are the models' (``hades_ray/models/registry.py``): anything that looks like a path must exist
(a typo is never looked up on the hub); a hub id loads at the commit given (``ID@COMMIT`` or
``revision=``), else at the one ``models.revisions`` pins, else the latest (with a warning); with
``HF_HUB_OFFLINE`` set, or the hub not answering, only the Hugging Face cache is read, and a detector
missing there is one line saying what to do.
"""

from __future__ import annotations

import logging
from pathlib import Path

from hades_ray.models.settings import COMMIT, LOCAL_PREFIX, looks_like_path, model_revision, reference_problem

log = logging.getLogger(__name__)


def split_revision(reference: str, revision: str | None) -> tuple[str, str | None]:
    """``ID@COMMIT`` as (``ID``, ``COMMIT``); a folder keeps its name whole."""
    if "@" in reference and not looks_like_path(reference) and not Path(reference).exists():
        reference, pinned = reference.rsplit("@", 1)
        if revision is not None and revision != pinned:
            raise ValueError(f"detector {reference!r}: two revisions given ({pinned!r} and revision={revision!r})")
        revision = pinned
    return reference, revision


def detector_folder(reference, revision: str | None = None) -> Path:
    """The local folder of the detector ``reference`` names: a folder as it is, a hub id's snapshot."""
    from hades_ray.models.registry import ModelNotFoundError

    if not isinstance(reference, (str, Path)) or not str(reference).strip():
        raise ValueError(f"Detector.open: give a detector folder or a hub id (got {reference!r})")
    reference, revision = split_revision(str(reference), revision)
    if reference.startswith(LOCAL_PREFIX):
        raise ValueError(f"{reference!r}: local: names the offline kit's models; give a detector folder or hub id")
    if looks_like_path(reference) or Path(reference).expanduser().exists():
        if revision is not None:
            raise ValueError(f"{reference!r} is a folder: a revision pins a hub id only")
        folder = Path(reference).expanduser()
        if not folder.is_dir():
            raise ModelNotFoundError(f"detector folder {str(folder)!r} does not exist (a path is never looked up)")
        return folder
    problem = reference_problem(reference)
    if problem:
        raise ValueError(f"detector {problem}")
    revision = revision or model_revision(reference)
    if revision is not None and not COMMIT.match(revision):
        raise ValueError(f"detector {reference}@{revision}: a revision is a commit (40 lowercase hex digits)")
    if revision is None:
        log.warning("hub detector %r is not pinned to a revision: it loads the latest", reference)
    return Path(_snapshot(reference, revision))


def _snapshot(reference: str, revision: str | None) -> str:
    from huggingface_hub import constants, snapshot_download

    from hades_ray.models.registry import HubModelUnavailableError, hub_unreachable

    offline = bool(constants.HF_HUB_OFFLINE) or bool(hub_unreachable())
    where = f"{reference}@{revision}" if revision else reference
    try:
        return snapshot_download(reference, revision=revision, local_files_only=offline)
    except Exception as error:  # noqa: BLE001 - not cached, not found, refused: all one line saying what to do
        why = "is not in the Hugging Face cache and the hub is not reachable" if offline else "cannot be fetched"
        raise HubModelUnavailableError(
            f"detector {where!r} {why} ({type(error).__name__}); give a detector folder, or download it once "
            "where the hub is reachable (HF_HUB_OFFLINE=1 then opens it from the cache)"
        ) from None
