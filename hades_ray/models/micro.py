"""Tiny random-weight models with real tokenizers, for tests: built in seconds, loaded like hub checkpoints.

Their weights are the same bits on every machine (``portable_init``), so what differs between two
machines' test runs is the arithmetic alone.
"""

from __future__ import annotations

import math
from pathlib import Path

from hades_ray.pipeline import storage


def portable_init(model, seed: int, std: float, only=None) -> None:
    """Draw every matrix of ``model`` (or the parameters ``only`` names) again, uniform with standard
    deviation ``std``, from integers (numpy's PCG64) scaled by a power of two. torch's ``normal_`` is
    vectorised per CPU kernel: the same seed gives other last bits without AVX2
    (``ATEN_CPU_CAPABILITY=default``, most ARM machines) than with it, and the tests' models would then
    differ from machine to machine. Vectors (LayerNorm weights, biases) keep their constant
    initialisation; an embedding's padding row stays zero."""
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    bound = std * math.sqrt(3.0)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() < 2 or (only is not None and name not in only):
                continue
            draws = rng.integers(0, 2**24, size=param.numel(), dtype=np.int64).astype(np.float64)
            values = (draws / 2**23 - 1.0) * bound  # exact up to the one product's rounding, everywhere
            param.copy_(torch.from_numpy(values.reshape(tuple(param.shape))).to(param.dtype))
        for module in model.modules():
            if isinstance(module, torch.nn.Embedding) and module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()


def _tokenizer():
    from transformers import AutoTokenizer

    from hades_ray.models.registry import minilm_path

    return AutoTokenizer.from_pretrained(str(minilm_path()))


def build_micro_mlm(directory: str | Path, seed: int = 0, initializer_range: float = 0.02) -> Path:
    """A 2-layer, 32-wide ``BertForMaskedLM`` with MiniLM's WordPiece vocabulary. At BERT's initializer
    range (0.02) its predictions are nearly uniform over the vocabulary (every word's entropy within
    1e-5 of the uniform's); a wider range (0.1) makes them differ from word to word by about 1e-3, far
    more than two CPUs' rounding (tests/golden/jobs.py uses one for its LR detector's features)."""
    from transformers import BertConfig, BertForMaskedLM

    tokenizer = _tokenizer()
    sizes = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, max_position_embeddings=512, initializer_range=initializer_range, **sizes
    )
    return _save(directory, BertForMaskedLM, config, tokenizer, seed)


def build_micro_causal_lm(directory: str | Path, seed: int = 0) -> Path:
    """A 2-layer, 32-wide ``GPT2LMHeadModel`` sharing MiniLM's vocabulary."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = _tokenizer()
    sizes = {"n_embd": 32, "n_layer": 2, "n_head": 2, "n_positions": 512}
    config = GPT2Config(
        vocab_size=tokenizer.vocab_size,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        **sizes,
    )
    return _save(directory, GPT2LMHeadModel, config, tokenizer, seed)


def _save(directory: str | Path, model_class, config, tokenizer, seed: int) -> Path:
    import torch

    torch.manual_seed(seed)
    model = model_class(config)
    portable_init(model, seed, config.initializer_range)
    storage.save_pretrained(model, directory)
    storage.save_pretrained(tokenizer, directory)
    return Path(directory)


def build_micro_kit(home: str | Path) -> Path:
    """Lay out ``home/models/{mlm,gpt2}`` the way ``hades-ray models build`` does."""
    models = Path(home) / "models"
    build_micro_mlm(models / "mlm")
    build_micro_causal_lm(models / "gpt2")
    return models


# ---- the multilingual micro kit: a WordPiece vocabulary that covers the test languages' scripts -------

MULTILINGUAL_VOCAB_SIZE = 3000
MULTILINGUAL_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
ENGLISH_LEADS = 300  # the demo corpus's first leads (sorted by title) join the training text


def train_multilingual_tokenizer(texts, vocab_size: int = MULTILINGUAL_VOCAB_SIZE):
    """A cased WordPiece ``BertTokenizer`` trained on ``texts`` (offline, the same vocabulary on every
    machine). Accents are kept (never NFD-split and stripped: Devanagari vowel signs and Arabic marks are
    parts of words) and CJK ideographs are one token each, as multilingual BERT does."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import BertTokenizer

    backend = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False
    )
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    texts = list(texts)
    # tokenizers' trainer numbers the "##x" pieces in hash-map order and breaks ties between merges by
    # those numbers, so the same text gives another vocabulary from run to run (huggingface/tokenizers
    # issue 1794). Handing it every "##x" up front, in code-point order, fixes their numbers and the ties.
    specials = [*MULTILINGUAL_SPECIALS, *_continuing_pieces(backend, texts)]
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    backend.train_from_iterator(texts, trainer)
    # ids in the trainer's order; BertTokenizer rebuilds the same normalizer, pre-tokenizer and [CLS]/[SEP] template
    vocab = dict(sorted(backend.get_vocab().items(), key=lambda item: item[1]))
    return BertTokenizer(vocab=vocab, do_lower_case=False, strip_accents=False, tokenize_chinese_chars=True)


def _continuing_pieces(backend, texts: list[str]) -> list[str]:
    """``##c`` for every character ``c`` that goes on a word (the trainer's continuing pieces), in code-point order."""
    found: set[str] = set()
    for text in texts:
        for word, _ in backend.pre_tokenizer.pre_tokenize_str(backend.normalizer.normalize_str(text)):
            found.update(word[1:])
    return [f"##{char}" for char in sorted(found)]


def _english_leads(count: int = ENGLISH_LEADS) -> list[str]:
    from hades_ray.io.demo_corpus import read_demo_records

    return [record["text"] for record in read_demo_records()[:count] if isinstance(record["text"], str)]


def build_micro_multilingual_kit(home: str | Path, texts) -> Path:
    """Lay out ``home/models/{mlm-multi,gpt2-multi}`` (``local:mlm-multi``, ``local:gpt2-multi``): a micro
    ``BertForMaskedLM`` and ``GPT2LMHeadModel`` (the English kit's sizes) sharing one WordPiece vocabulary
    trained on ``texts`` (the tests' non-English leads) and the demo corpus's English leads."""
    from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel

    tokenizer = train_multilingual_tokenizer([*texts, *_english_leads()])
    models = Path(home) / "models"
    bert = BertConfig(
        vocab_size=tokenizer.vocab_size,
        max_position_embeddings=512,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
    )
    _save(models / "mlm-multi", BertForMaskedLM, bert, tokenizer, seed=0)
    gpt2 = GPT2Config(
        vocab_size=tokenizer.vocab_size,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=512,
    )
    _save(models / "gpt2-multi", GPT2LMHeadModel, gpt2, tokenizer, seed=0)
    return models
