"""The offline kit before and after, side by side in one run: each arm trains the kit's masked LM and GPT-2
on the demo corpus's training leads with its settings, then takes `hades-ray models evaluate`'s measures on
the same held-out cases (MLM top-1/top-10 recovery of a masked content word, 500 leads; GPT-2 perplexity of
the 994 held-out leads and its preference of the original over a one-content-word swap, 500 pairs).
Writes jobs/results/bench_kit.{json,md} (both arms and models: about 16 min on 2 cores).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hades_ray.models.kit import KitConfig, demo_split  # noqa: E402
from hades_ray.models.train_gpt2 import Gpt2TrainConfig  # noqa: E402
from hades_ray.models.train_mlm import MlmTrainConfig  # noqa: E402
from hades_ray.models.training import TrainLimits  # noqa: E402
from jobs.bench_common import machine_words, options, peak_rss_mib, spec_table, write_results  # noqa: E402


def before() -> KitConfig:
    """The kit at 38b192b: 200 MLM steps of 8 x 128 tokens, 15% masked, every weight trained, MiniLM's 0.1
    dropout; 750 GPT-2 steps with 0.1 dropout."""
    mlm = MlmTrainConfig(max_length=128, batch_size=8, mask_probability=0.15, freeze_embeddings=False,
                         unigram_bias=False, dropout=0.1)  # fmt: skip
    mlm.limits = TrainLimits(max_steps=200, lr=2e-4, warmup_fraction=0.05, log_every=10, fresh_prefixes=("cls.",),
                             fresh_lr_scale=10.0)  # fmt: skip
    gpt2 = Gpt2TrainConfig(dropout=0.1)
    gpt2.limits.max_steps = 750
    return KitConfig(mlm=mlm, gpt2=gpt2)


ARMS = {"before": before, "after": KitConfig}


def run_arm(config: KitConfig, models: list[str], measures: dict, train_texts: list[str]) -> dict:
    import torch

    from hades_ray.models.build import NUM_THREADS, _train_gpt2, _train_mlm

    torch.set_num_threads(NUM_THREADS)
    figures = {}
    for name in models:
        started = time.perf_counter()
        train = _train_mlm if name == "mlm" else _train_gpt2
        model, tokenizer, stats = train(train_texts, getattr(config, name))
        seconds = round(time.perf_counter() - started, 1)
        figures[name] = {"train_seconds": seconds, "steps": stats["steps"], **measures[name](tokenizer, model.eval())}
        print(name, figures[name], flush=True)
    return figures


def markdown(report: dict) -> str:
    def fig(model: str, key: str, n: str = ""):  # a column: "-" where the arm did not train the model
        return lambda arm: "-" if arm[1].get(model, {}).get(key) is None else f"{arm[1][model][key]}" + (
            f" ({arm[1][model][n]})" if n else "")  # fmt: skip

    spec = {"arm": lambda arm: arm[0], "MLM top-1": fig("mlm", "top1"), "MLM top-10 (n)": fig("mlm", "top10", "n"),
            "MLM build s": fig("mlm", "train_seconds"), "GPT-2 held-out ppl": fig("gpt2", "heldout_perplexity"),
            "GPT-2 original preferred (n)": fig("gpt2", "pairwise_accuracy", "n"),
            "GPT-2 build s": fig("gpt2", "train_seconds")}  # fmt: skip
    return "\n".join([f"# The offline kit before and after\n\nOn {machine_words(report)}; peak memory "
                      f"{report['peak_rss_mib']} MiB. Build s: the model's training alone, its folder not "
                      "written.\n", *spec_table(spec, report["arms"].items()), ""])  # fmt: skip


def main() -> None:
    flags = {"--arms": (list(ARMS), "which kits to train", {"choices": list(ARMS)})}
    flags["--models"] = (["mlm", "gpt2"], "which models", {"choices": ["mlm", "gpt2"]})
    args = options(__doc__.splitlines()[0], flags)
    from hades_ray.models.quality import heldout_measures

    _, measures = heldout_measures(KitConfig())
    train_texts = demo_split()[0]
    report = {"arms": {arm: run_arm(ARMS[arm](), args.models, measures, train_texts) for arm in args.arms}}
    report["peak_rss_mib"] = round(peak_rss_mib())
    write_results("bench_kit", report, markdown(report))


if __name__ == "__main__":
    main()
