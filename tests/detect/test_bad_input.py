"""Fuzz table for detector folders: each broken folder is a one-line input error (the CLI's exit 2),
never a traceback and never a model with silently missing weights; exports are staged and renamed."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from hades_ray.cli import USER_ERRORS

SETTINGS = {"backbone": "local:mlm", "revision": None, "mode": "offline", "window": 32}
SETTINGS |= {"pooling": "max", "mlp_layers": 2, "freeze": "last_layer"}


@pytest.fixture(scope="module")
def good_detector(micro_home, tmp_path_factory):
    from hades_ray.detect.model import build_classifier, export_detector, trainable_state
    from hades_ray.models.registry import resolve_model

    tokenizer, model = build_classifier(resolve_model("local:mlm"), SETTINGS)
    return export_detector(tmp_path_factory.mktemp("det") / "detector", trainable_state(model), SETTINGS, tokenizer)


def _meta(folder, **changes):
    path = folder / "detector.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def _weights(folder, change):
    state = load_file(str(folder / "weights.safetensors"))
    change(state)
    save_file(state, str(folder / "weights.safetensors"))


def _drop_one(state):
    state.pop(sorted(state)[0])


def _add_one(state):
    state["head.extra.weight"] = torch.zeros(2)


def _reshape(state):
    name = next(n for n in sorted(state) if n.startswith("head."))
    state[name] = torch.zeros(3, 3)


# (class, how to break a good folder, what the error says)
BAD_FOLDERS = [
    ("no detector.json", lambda f: (f / "detector.json").unlink(), "is not a detector folder"),
    ("detector.json not JSON", lambda f: (f / "detector.json").write_text("{nope"), "not a valid detector description"),
    ("detector.json invalid UTF-8", lambda f: (f / "detector.json").write_bytes(b'{"a": "\xff"}'), "not a valid"),
    ("detector.json a list", lambda f: (f / "detector.json").write_text("[]"), "not a valid detector description"),
    ("foreign format", lambda f: _meta(f, format="other/1"), "field 'format'"),
    ("missing field", lambda f: _strip(f, "pooling"), "missing field(s) pooling"),
    ("no weights", lambda f: (f / "weights.safetensors").unlink(), "no weights.safetensors"),
    ("weights not safetensors", lambda f: (f / "weights.safetensors").write_bytes(b"\x80\x04pickle"), "not readable"),
    ("weights truncated", lambda f: _truncate(f / "weights.safetensors"), "not readable"),
    ("a missing key", lambda f: _weights(f, _drop_one), "1 missing, 0 unexpected"),
    ("an unexpected key", lambda f: _weights(f, _add_one), "0 missing, 1 unexpected"),
    ("a wrong shape", lambda f: _weights(f, _reshape), "has shape (3, 3)"),
    ("backbone path missing", lambda f: _meta(f, backbone="./no/such/backbone"), "does not exist"),
    ("backbone outside home", lambda f: _meta(f, backbone="local:../../x"), "local: names one folder"),
]


def _strip(folder, key):
    meta = json.loads((folder / "detector.json").read_text())
    meta.pop(key)
    (folder / "detector.json").write_text(json.dumps(meta))


def _truncate(path):
    path.write_bytes(path.read_bytes()[:100])


@pytest.mark.parametrize("name,damage,expected", BAD_FOLDERS, ids=[b[0] for b in BAD_FOLDERS])
def test_broken_detector_folder_is_one_clear_error(good_detector, tmp_path, name, damage, expected):
    from hades_ray.detect.detector import Detector

    folder = shutil.copytree(good_detector, tmp_path / "broken")
    damage(folder)
    with pytest.raises(USER_ERRORS) as error:
        Detector.open(folder).load_model()
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_good_detector_loads_and_count(good_detector, capsys):
    from hades_ray.detect.detector import Detector

    detector = Detector.open(good_detector)
    _, model = detector.load_model()
    assert detector.meta["backbone"] == "local:mlm" and not model.training
    with capsys.disabled():
        print(f"\ndetector folders: {len(BAD_FOLDERS)} bad-input classes")


def test_export_is_staged_and_renamed_into_place(good_detector, tmp_path):
    from hades_ray.detect.detector import Detector
    from hades_ray.detect.model import export_detector, load_tokenizer
    from hades_ray.models.registry import resolve_model

    folder = shutil.copytree(good_detector, tmp_path / "again")
    state = {k: v + 1 for k, v in load_file(str(folder / "weights.safetensors")).items()}
    export_detector(folder, state, SETTINGS, load_tokenizer(resolve_model("local:mlm")))
    assert sorted(p.name for p in folder.iterdir()) == ["detector.json", "tokenizer", "weights.safetensors"]
    reloaded = load_file(str(folder / "weights.safetensors"))
    assert all(torch.equal(reloaded[k], state[k]) for k in state)
    Detector.open(folder).load_model()


def test_a_detector_describes_itself_and_gives_its_scoring_stages(good_detector, tmp_path):
    from hades_ray.config import default_config
    from hades_ray.detect.detector import Detector
    from hades_ray.errors import UserError

    detector = Detector.open(shutil.copytree(good_detector, tmp_path / "described"))
    assert (detector.kind, detector.mode, detector.backbone, detector.revision) == (
        "transformer",
        "offline",
        "local:mlm",
        None,
    )
    assert detector.threshold == 0.5  # nothing stored: the argmax, as before thresholds were stored
    detector.store_threshold({"threshold": 0.25, "chosen_by": "max G-Mean on validation"})
    assert Detector.open(detector.folder).threshold == 0.25
    assert sorted(p.name for p in detector.folder.iterdir()) == ["detector.json", "tokenizer", "weights.safetensors"]
    [stage] = detector.stages(default_config().detect, num_gpus=0.0)
    assert stage.name == "detector" and stage.detector.folder == detector.folder.resolve()
    with pytest.raises(UserError, match="needs an online detector"):
        detector.require_online()
    with pytest.raises(UserError, match="scores offline only"):
        Detector(detector.folder, {"type": "lr", "mode": "offline"}).scoring_mode("online")
