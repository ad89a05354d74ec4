"""One config: every section is a typed field of ``HadesConfig`` defined in its package's
``settings.py``; unknown and renamed keys are refused; digests derived from the config keep their
values, so the markers of outputs written before stay valid."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing

import pytest
import yaml

from hades_ray.config import ConfigError, HadesConfig, config_from_dict, default_config, load_config
from hades_ray.perturb.runner import config_digest
from hades_ray.pool.feature_job import features_digest

# Computed on main before the sections moved (and before score/guard had sections).
DIGESTS = {
    "local": ("e8fb40b2555cfa273860b424643e30d606cf25d5b9ca2072dee22b564095acd6", "c5686cb579ef9d34"),
    "paper": ("3c3b4be30dc7bedc66b1003b85f023fc1e8f1138fb22c2089c8c89b5a6356eee", "f25024fa7f4a964d"),
}
CENTRAL = {"ray"}  # read by every sharded job, so defined in config.py itself


def test_every_section_is_a_typed_attribute_from_its_package():
    config = load_config()
    hints = typing.get_type_hints(HadesConfig)
    sections = [f.name for f in dataclasses.fields(HadesConfig) if dataclasses.is_dataclass(hints[f.name])]
    assert {"models", "perturb", "ray", "detect", "select", "annotate"} <= set(sections)
    for name in sections:
        section = getattr(config, name)
        assert type(section) is hints[name], name
        home = "hades_ray.config" if name in CENTRAL else f"hades_ray.{name}.settings"
        assert type(section).__module__ == home, name
    assert not hasattr(config, "extra") and not hasattr(HadesConfig, "__getattr__")


def test_building_a_config_imports_no_model_or_data_library():
    code = "import sys, hades_ray.config as c; c.load_config('paper'); print(sorted(sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    heavy = [m for m in ("torch", "ray", "transformers", "pandas", "pyarrow", "numpy") if f"'{m}'" in loaded]
    assert heavy == []


@pytest.mark.parametrize("key", ["nosuch", "detect.nosuch", "perturb.resources.replace.gpus"])
def test_unknown_key_is_refused_naming_it(key):
    with pytest.raises(ConfigError, match=f"unknown config key '{key}'; known keys here: "):
        load_config(overrides=[f"{key}=1"])


def test_renamed_key_is_one_line_naming_the_new_one(tmp_path):
    expected = "perturb.resources.annotate was renamed: use perturb.resources.prepare"
    with pytest.raises(ConfigError) as error:
        load_config(overrides=["perturb.resources.annotate.num_cpus=1"])
    assert str(error.value) == expected
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump({"perturb": {"resources": {"annotate": {"num_cpus": 1}}}}), encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_config(config_file=path)
    assert str(error.value) == f"{path}: {expected}"
    data = default_config().to_dict()
    data["perturb"]["resources"]["annotate"] = data["perturb"]["resources"].pop("prepare")
    with pytest.raises(ConfigError, match=expected):
        config_from_dict(data)
    assert load_config(overrides=["perturb.resources.prepare.num_cpus=1"]).perturb.resources.prepare.num_cpus == 1


# RANK's shared prefix (perturb.rank.share_prefix, default true) moves perplexities' last bits: outputs written
# before it are the share_prefix=false run's and keep their digest; the default's is new, so they are refused
# rather than mixed with shared shards.
SHARED_PREFIX_DIGESTS = {
    "local": "c682c2841699b5db72182c4a212dd332e9a59ea0f9eb6faa1430370de1b85ee3",
    "paper": "bca360f708ce5f2d11e4c90cb9f564cbf1343102a8d89ef0726e2ab3540c50d0",
}


@pytest.mark.parametrize("preset", sorted(DIGESTS))
def test_digests_keep_their_values(preset):
    config = load_config(preset, overrides=["perturb.rank.share_prefix=false"])
    assert (config_digest(config), features_digest(config)) == DIGESTS[preset]
    assert config_digest(load_config(preset)) == SHARED_PREFIX_DIGESTS[preset]


def test_perturb_digest_ignores_other_sections_and_resources():
    base = config_digest(load_config())
    others = ["ray.num_cpus=3", "detect.epochs=9", "select.p_low=0.1", "annotate.judges=3"]
    others += ["perturb.resources.replace.concurrency=3"]
    assert config_digest(load_config(overrides=others)) == base
    assert config_digest(load_config(overrides=["perturb.mask.ratio=0.2"])) != base


def _config(argv: list[str]):
    from hades_ray.cli import build_parser
    from hades_ray.cli_common import config_from_args

    return config_from_args(build_parser().parse_args(argv))


SCORE = ["score", "--model", "m", "--text", "t", "--output", "o"]
GENERATE = ["generate", "--prompts", "p", "--output", "o"]
# (command, a flag as typed, the same as --set)
FLAG_FORMS = [
    (SCORE, "--threshold 0.7", "score.threshold=0.7"),
    (SCORE, "--mode online", "score.mode=online"),
    (SCORE, "--words all", "score.words=all"),
    (SCORE, "--max-chars 500", "score.max_chars=500"),
    (SCORE, "--shard-size 8", "score.shard_size=8"),
    (SCORE, "--num-gpus 0.5", "score.num_gpus=0.5"),
    (SCORE, "--stride 1", "score.stride=1"),
    (SCORE, "--html", "score.html=true"),
    (GENERATE, "--threshold 0.7", "guard.threshold=0.7"),
    (GENERATE, "--max-retries 0", "guard.max_retries=0"),
    (GENERATE, "--words all", "guard.words=all"),
    (GENERATE, "--max-new-tokens 12", "guard.max_new_tokens=12"),
    (GENERATE, "--no-end", "guard.no_end=true"),
    (GENERATE, "--temperature 0.8", "guard.temperature=0.8"),
    (GENERATE, "--top-k 30", "guard.top_k=30"),
    (GENERATE, "--top-p 0.9", "guard.top_p=0.9"),
    (GENERATE, "--dtype auto", "guard.dtype=auto"),
    (GENERATE, "--batch-size 2", "guard.batch_size=2"),
    (GENERATE, "--shard-size 6", "guard.shard_size=6"),
    (GENERATE, "--actors 2", "guard.actors=2"),
    (GENERATE, "--num-gpus 0.25", "guard.num_gpus=0.25"),
    (GENERATE, "--html", "guard.html=true"),
]


@pytest.mark.parametrize("command,flag,assignment", FLAG_FORMS, ids=[f[1] for f in FLAG_FORMS])
def test_score_and_generate_flags_are_their_sections_set_forms(command, flag, assignment):
    section = command[0].replace("generate", "guard")
    by_flag = getattr(_config([*command, *flag.split()]), section)
    by_set = getattr(_config([*command, "--set", assignment]), section)
    assert by_flag == by_set != getattr(_config(command), section)


def test_flag_defaults_are_the_sections_and_the_last_one_given_wins():
    assert _config(SCORE).score == default_config().score and default_config().score.threshold is None
    assert _config(GENERATE).guard == default_config().guard and default_config().guard.max_retries == 3
    assert _config([*SCORE, "--set", "score.threshold=0.2", "--threshold", "0.7"]).score.threshold == 0.7
    assert _config([*SCORE, "--threshold", "0.7", "--set", "score.threshold=null"]).score.threshold is None


@pytest.mark.parametrize(
    "assignment,expected",
    [
        ("score.threshold=1.5", "score.threshold must be in [0, 1], got 1.5"),
        ("score.mode=both", "score.mode: offline or online (or null: the detector's)"),
        ("guard.top_p=0", "guard.top_p must be in (0, 1], got 0.0"),
        ("guard.words=some", "guard.words: content or all"),
        ("guard.temperature=hot", "guard.temperature: expected a number, got 'hot'"),
        # Any key, against its declaration (config_keys.key): one line naming the key and what it allows.
        ("detect.pooling=sum", "detect.pooling: max or mean"),
        ("select.detector=bert", "select.detector: transformer, lr or svm"),  # at load, not when a round trains
        ("perturb.replace.packing=tight", "perturb.replace.packing: auto, exact or binned"),
        ("perturb.read.shard_size=0", "perturb.read.shard_size must be in [1, 1000000], got 0 (or auto)"),
        ("select.schedule.rounds=1", "select.schedule.rounds must be in [2, 10000], got 1 (or 0)"),
        ("reproduce.modes=[offline, both]", "reproduce.modes[1]: offline or online"),
        ("serve.port=70000", "serve.port must be in [1, 65535], got 70000"),
    ],
)
def test_values_are_checked_against_their_declaration(assignment, expected):
    with pytest.raises(ConfigError) as error:
        load_config(overrides=[assignment])
    assert str(error.value) == expected
