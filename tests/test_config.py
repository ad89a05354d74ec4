"""Fuzz table for the config readers (``--set``, a YAML file, ``config_from_dict`` and a saved
``config.resolved.yaml``): one validation on every path, bounds for every numeric key, finite floats;
and for model references: paths never become hub lookups, ``local:`` stays home, revisions pin."""

from __future__ import annotations

import dataclasses
import math
import typing

import pytest
import yaml

from hades_ray.cli import main
from hades_ray.config import ConfigError, config_from_dict, default_config, load_config, load_saved_config, save_config
from hades_ray.config_keys import problem
from hades_ray.models.registry import ModelNotFoundError, model_revision, resolve_model

SHA = "607a30d783dfa663caf39e06633721c8d4cfcd7e"

# (class, --set assignment, what the error says); the issue's list first.
BAD_VALUES = [
    ("infinite temperature", "perturb.replace.temperature=.inf", "perturb.replace.temperature must be a finite"),
    ("zero MLM length", "perturb.replace.max_length=0", "perturb.replace.max_length must be in [8,"),
    ("negative RANK length", "perturb.rank.max_length=-5", "perturb.rank.max_length must be in"),
    ("negative max_chars", "perturb.read.max_chars=-1", "perturb.read.max_chars must be in"),
    ("negative min_spans", "perturb.mask.min_spans=-3", "perturb.mask.min_spans must be in"),
    ("huge shard size", "perturb.read.shard_size=1e9", "perturb.read.shard_size must be in"),
    ("negative ray CPUs", "ray.num_cpus=-2", "ray.num_cpus must be in"),
    ("infinite detector lr", "detect.lr=.inf", "detect.lr must be a finite"),
    ("negative torch threads", "detect.torch_threads=-1", "detect.torch_threads must be in"),
    ("negative stage threads", "perturb.resources.rank.torch_threads=-1", "perturb.resources.rank.torch_threads"),
    ("NaN ratio", "perturb.mask.ratio=.nan", "perturb.mask.ratio must be a finite"),
    ("ratio above 1", "perturb.mask.ratio=1.5", "perturb.mask.ratio must be in (0, 1]"),
    ("negative GPUs", "perturb.resources.replace.num_gpus=-1", "num_gpus must be in"),
    ("min above max actors", "perturb.resources.replace.min_concurrency=9", "min_concurrency must be in"),
    ("NaN in a list", "annotate.split=[1, .nan, 1]", "annotate.split[1] must be a finite"),
    ("negative round size", "select.round_sizes=[200, -1]", "select.round_sizes[1] must be in"),
    ("seed too large", "seed=99999999999", "seed must be in"),
    ("fractional seed", "seed=1.5", "seed: expected an integer"),
    ("boolean as int", "perturb.rank.num_candidates=true", "expected an integer"),
    ("string as number", "perturb.replace.top_p=high", "expected a number"),
    ("list as string", "models.mlm=[a, b]", "expected a string"),
    ("unknown key", "perturb.replace.topk=5", "unknown config key 'perturb.replace.topk'"),
    ("unknown dtype", "perturb.replace.dtype=fp8", "perturb.replace.dtype"),
    ("unknown preset", "preset=huge", "preset: local, paper or multilingual"),
    ("local: outside home", "models.mlm=local:../../x", "local: names one folder"),
    ("empty model", "models.encoder=", "empty model reference"),
    ("branch as revision", "models.revisions.gpt2=main", "is not a commit"),
    ("revision of a local model", f"models.revisions.local:mlm={SHA}", "revisions pin hub ids only"),
    ("YAML error in --set", "perturb.mask.ratio=[1, 2", "not valid YAML"),
    ("no = in --set", "perturb.mask.ratio", "--set expects key=value"),
]


@pytest.mark.parametrize("name,assignment,expected", BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_bad_value_fails_on_every_path(tmp_path, name, assignment, expected):
    with pytest.raises(ConfigError, match=None) as error:
        load_config(overrides=[assignment])
    assert expected in str(error.value)
    if "=" not in assignment or "not valid YAML" in expected:
        return
    # The same value through a config dict, as every actor and every saved config rebuilds it.
    key, raw = assignment.split("=", 1)
    data = default_config().to_dict()
    cursor = data
    for part in key.split(".")[:-1]:
        cursor = cursor.setdefault(part, {})
    cursor[key.split(".")[-1]] = yaml.safe_load(raw) if raw else ""
    with pytest.raises(ConfigError):
        config_from_dict(data)
    saved = tmp_path / "config.resolved.yaml"
    saved.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_saved_config(saved)
    assert str(error.value).startswith(str(saved))
    with pytest.raises(ConfigError):
        load_config(config_file=saved)


BAD_FILES = [
    ("invalid UTF-8", b"seed: 1\nspacy_model: caf\xe9\n", "not valid UTF-8"),
    ("not a mapping", b"- seed\n- 1\n", "expected a mapping at the top level"),
    ("YAML syntax", b"seed: [1\n", "not valid YAML"),
    ("deeply nested", b"[" * 20_000 + b"]" * 20_000, "nested too deeply"),
    ("alias bomb", b"perturb: {mask: {stopwords: [&a [x, x], &b [*a, *a], &c [*b, *b], *c]}}\n", "expected a string"),
    ("too large", b"# " + b"x" * (1 << 20) + b"\n", "too large for a config file"),
    ("section not a mapping", b"perturb: 5\n", "expected a mapping"),
]


@pytest.mark.parametrize("name,data,expected", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_config_file_is_one_clear_error(tmp_path, name, data, expected):
    path = tmp_path / "bad.yaml"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as error:
        load_config(config_file=path)
    assert expected in str(error.value) and str(path) in str(error.value)


def test_the_tables_cover_the_issue_and_count(capsys):
    value_names, file_names = [b[0] for b in BAD_VALUES], [b[0] for b in BAD_FILES]
    assert len(set(value_names)) == len(value_names) and len(set(file_names)) == len(file_names)
    # Every kind of bad value: non-finite, out of range, wrong type, unknown key or name, bad model reference.
    assert {"infinite temperature", "NaN ratio", "ratio above 1", "fractional seed"} <= set(value_names)
    assert {"boolean as int", "unknown key", "unknown preset", "local: outside home"} <= set(value_names)
    # Every kind of bad file: bytes, structure, and the resource bombs.
    assert {"invalid UTF-8", "not a mapping", "deeply nested", "alias bomb", "too large"} <= set(file_names)
    assert len(BAD_VALUES) >= 30 and len(BAD_FILES) >= 7
    with capsys.disabled():
        print(f"\nconfig: {len(BAD_VALUES)} bad values, {len(BAD_FILES)} bad files")


def numeric_keys(section, prefix: str = ""):
    """``(dotted key, value, its declaration)`` of every numeric key under a config dataclass (an optional
    number left at None skipped)."""
    hints = typing.get_type_hints(type(section))
    for item in dataclasses.fields(section):
        value, key = getattr(section, item.name), prefix + item.name
        inner = [a for a in typing.get_args(hints[item.name]) if a is not type(None)] or [hints[item.name]]
        if dataclasses.is_dataclass(value):
            yield from numeric_keys(value, key + ".")
        elif value is not None and inner in ([int], [float]):
            yield key, value, item.metadata


def test_every_numeric_key_declares_its_range():
    keys = list(numeric_keys(default_config()))
    assert len(keys) > 60
    assert [k for k, _, declared in keys if not declared.get("interval")] == [], (
        "give these keys a range: key(default, '[low, high]')"
    )


def test_presets_and_saved_configs_pass_their_own_bounds(tmp_path):
    for preset in ("local", "paper", "multilingual"):
        config = load_config(preset)
        for key, value, declared in numeric_keys(config):
            for item in value if isinstance(value, list) else [value]:
                assert math.isfinite(item) and problem(key, item, declared) == "", key
        again = load_saved_config(save_config(config, tmp_path / preset))
        assert again.to_dict() == config.to_dict()


def test_cli_config_error_is_one_line_exit_2(tmp_path, capsys):
    code = main(["annotations", "export", "--workdir", str(tmp_path), "--round", "0", "--set", "detect.lr=.inf"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == "hades-ray annotations: error: detect.lr must be a finite number, got inf"


def test_revisions_pin_hub_ids(tmp_path):
    config = load_config("paper")
    assert config.models.revisions["bert-base-cased"] == "cd5ef92a9fb2f889e972770a36d4ed042daf221e"
    assert model_revision("gpt2") == SHA  # pinned for the loaders of this process
    config = load_config(overrides=[f"models.revisions.org/model={SHA}"])
    assert config.models.revisions == {"org/model": SHA} and model_revision("gpt2") is None


def test_path_like_references_never_go_to_the_hub(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    for reference in ("out/mymodel", "./mymodel", "/no/such/model", "~/no-such-model", "a/b/c"):
        with pytest.raises(ModelNotFoundError, match="does not exist"):
            resolve_model(reference)
    (tmp_path / "out" / "empty").mkdir()
    with pytest.raises(ModelNotFoundError, match="no config.json"):
        resolve_model("out/empty")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hf-cache"))  # empty
    for hub_id in ("FacebookAI/roberta-large", "gpt2"):  # no such folder: a hub id, looked up in the cache
        with pytest.raises(ModelNotFoundError, match="not in the Hugging Face cache and HF_HUB_OFFLINE is set"):
            resolve_model(hub_id)


def test_local_names_stay_inside_hades_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HADES_RAY_HOME", str(tmp_path / "home"))
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "config.json").write_text("{}")
    for reference in ("local:../../x", "local:../x", "local:/tmp", "local:a/../../x", "local:"):
        with pytest.raises(ModelNotFoundError, match="local: names one folder|empty"):
            resolve_model(reference)
    with pytest.raises(ModelNotFoundError, match="is not built"):
        resolve_model("local:mlm")
