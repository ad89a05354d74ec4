"""`hades-ray tune --space FILE.yaml`: the user's sweep space; a bad file is one line naming file, line and key."""

from __future__ import annotations

import pytest

from hades_ray.cli import main
from hades_ray.config import load_config
from hades_ray.train.space import SpaceError, load_space, space_values

SPACE = """\
# 2 x 2 x 2 head configurations
detect.pooling: {choice: [mean, max]}
detect.mlp_hidden: {grid_search: [32, 64]}
detect.lr: {loguniform: [1.0e-4, 1.0e-2]}
detect.mlp_layers: {randint: [1, 4]}
detect.freeze: all
"""


def _space(tmp_path, text: str) -> dict:
    path = tmp_path / "space.yaml"
    path.write_text(text)
    return load_space(path, load_config().to_dict())


def test_a_space_file_becomes_tune_domains(tmp_path):
    space = _space(tmp_path, SPACE)
    assert list(space["detect.pooling"].categories) == ["mean", "max"]
    assert space["detect.mlp_hidden"] == {"grid_search": [32, 64]}
    assert (space["detect.lr"].lower, space["detect.lr"].upper) == (1e-4, 1e-2)
    assert (space["detect.mlp_layers"].lower, space["detect.mlp_layers"].upper) == (1, 4)
    assert space["detect.freeze"] == "all"
    assert space_values(space, "detect.freeze", "none") == ["all"]
    assert space_values(space, "detect.window", 160) == [160] and space_values(space, "detect.lr", 0) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("detect.pooling: {choice: [mean, max]}\ndetect.nope: {choice: [1, 2]}\n", ":2: key 'detect.nope'"),
        ("detect.freeze: {choice: [all, sometimes]}\n", ":1: key 'detect.freeze': value 'sometimes'"),
        ("detect.lr: {loguniform: [0, 0.1]}\n", ":1: key 'detect.lr': loguniform needs"),
        ("detect.lr: {normal: [0, 1]}\n", ":1: key 'detect.lr': expected one of choice"),
        ("detect.mlp_layers: {randint: [1, 99]}\n", ":1: key 'detect.mlp_layers': value 98"),
        ("detect.pooling: {choice: []}\n", ":1: key 'detect.pooling': choice takes a non-empty list"),
        ("detect.pooling: [mean\n", "not valid YAML"),
        ("- detect.pooling\n", "a search space is a mapping"),
    ],
)
def test_a_bad_space_file_is_one_line_naming_file_line_and_key(tmp_path, text, expected):
    with pytest.raises(SpaceError) as error:
        _space(tmp_path, text)
    message = str(error.value)
    assert "\n" not in message and str(tmp_path / "space.yaml") in message and expected in message


def test_the_command_reports_a_bad_space_without_a_traceback(tmp_path, capsys):
    (tmp_path / "space.yaml").write_text("detect.window: {choice: [2]}\n")
    code = main(["tune", "--train", "t.txt", "--valid", "v.txt", "--output", str(tmp_path / "out"),
                 "--space", str(tmp_path / "space.yaml")])  # fmt: skip
    err = capsys.readouterr().err
    assert code != 0 and "space.yaml:1: key 'detect.window': value 2" in err and "Traceback" not in err
