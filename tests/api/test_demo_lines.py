"""``make demo``'s last lines: the offline kit's models named as small ones trained here, with their
held-out figures, and the command that runs the paper's models."""

from __future__ import annotations

import json

from hades_ray.config import load_config
from hades_ray.perturb.console import kit_lines


def _kit(home, quality: dict | None) -> None:
    for name, seconds in (("mlm", 150.0), ("gpt2", 240.0)):
        folder = home / "models" / name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")
        (folder / "build_info.json").write_text(json.dumps({"seconds": seconds, "steps": 100}))
    if quality is not None:
        (home / "models" / "quality.json").write_text(json.dumps(quality))


def test_the_kit_is_named_with_its_held_out_figures_and_the_paper_command(tmp_path, monkeypatch):
    monkeypatch.setenv("HADES_RAY_HOME", str(tmp_path))
    _kit(tmp_path, {"swapped_words": 1, "mlm": {"top1": 0.152, "top10": 0.4133, "n": 500},
                    "gpt2": {"pairwise_accuracy": 0.785, "n": 500}})  # fmt: skip
    text = "\n".join(kit_lines(load_config().models))
    assert "small ones trained here in minutes" in text
    assert (
        "local:mlm (REPLACE's masked LM): trained 2.5 min, held-out recovery of a masked content word "
        "top-1 15.2%, top-10 41.3% (n=500)" in text
    )
    assert "local:gpt2 (RANK's GPT-2): trained 4.0 min" in text and "one content word swapped 78.5% (n=500)" in text
    assert (
        text.splitlines()[-1].strip()
        == "hades-ray perturb --input demo --limit 200 --output out/demo-paper --preset paper"
    )


def test_without_a_quality_report_it_says_how_to_make_one(tmp_path, monkeypatch):
    monkeypatch.setenv("HADES_RAY_HOME", str(tmp_path))
    _kit(tmp_path, None)
    assert "held-out quality not measured (hades-ray models evaluate)" in "\n".join(kit_lines(load_config().models))


def test_a_run_on_the_papers_models_prints_no_kit_lines():
    assert kit_lines(load_config("paper").models) == []
