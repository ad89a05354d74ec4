"""``Detector.open`` of a hub id: pinned by ``ID@COMMIT`` or ``revision=``, read from the Hugging Face
cache when offline, and a detector missing there (or a folder given a revision) one line saying what to do."""

from __future__ import annotations

import shutil

import pytest

from hades_ray import Detector
from hades_ray.models.registry import HubModelUnavailableError

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub_cache(encoder_online, tmp_path, monkeypatch):
    """A Hugging Face cache holding ``org/detector`` at ``COMMIT`` (as a download leaves it), offline."""
    from huggingface_hub import constants

    repo = tmp_path / "hub" / "models--org--detector"
    shutil.copytree(encoder_online, repo / "snapshots" / COMMIT)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return repo / "snapshots" / COMMIT


def test_a_pinned_hub_detector_opens_from_the_cache_and_scores_as_its_folder(hub_cache, encoder_online):
    for det in (Detector.open(f"org/detector@{COMMIT}"), Detector.open("org/detector", revision=COMMIT)):
        assert det.folder == hub_cache
    text = "Marie Curie was born in Warsaw."
    assert Detector.open(f"org/detector@{COMMIT}").score(text) == Detector.open(encoder_online).score(text)


@pytest.mark.parametrize(
    "reference, revision, error, message",
    [
        ("org/missing@" + COMMIT, None, HubModelUnavailableError, "is not in the Hugging Face cache"),
        ("org/detector@main", None, ValueError, "a revision is a commit (40 lowercase hex digits)"),
        ("org/detector@" + COMMIT, "f" * 40, ValueError, "two revisions given"),
        ("./no/such/folder", None, FileNotFoundError, "does not exist"),
        ("local:mlm", None, ValueError, "local: names the offline kit's models"),
    ],
)
def test_bad_references_are_one_line_errors(hub_cache, reference, revision, error, message):
    with pytest.raises(error) as raised:
        Detector.open(reference, revision=revision)
    assert message in str(raised.value) and len(str(raised.value).splitlines()) == 1


def test_a_folder_takes_no_revision(encoder_online):
    with pytest.raises(ValueError, match="is a folder: a revision pins a hub id only"):
        Detector.open(str(encoder_online), revision=COMMIT)
