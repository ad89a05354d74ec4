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

from hades_ray.annotate.settings import AnnotateConfig
from hades_ray.config_keys import check, coerce, key
from hades_ray.detect.settings import DetectConfig
from hades_ray.errors import ConfigError
from hades_ray.guard.settings import GuardConfig
from hades_ray.models.settings import ModelsConfig, pin_revisions
from hades_ray.perturb.settings import PerturbConfig
from hades_ray.reproduce.settings import ReproduceConfig
from hades_ray.score.settings import ScoreConfig
from hades_ray.select.settings import SelectConfig
from hades_ray.serve.settings import ServeConfig
from hades_ray.text.languages import AUTO, DEFAULT_LANGUAGE, NAMES, Language, language, language_from_path, language_of

PRESETS = ("local", "paper", "multilingual")
RESOLVED_NAME = "config.resolved.yaml"
MAX_CONFIG_BYTES = 1 << 20  # a config file is a few KiB; anything this large is not one


@dataclass
class RayConfig:
    """How jobs reach Ray; every sharded job reads it, so it belongs to no one package."""

    address: str = ""  # empty: RAY_ADDRESS if set, else a fresh local cluster on 127.0.0.1
    num_cpus: int = key(0, "[0, 100000]")  # 0: the machine's cores (local clusters only)
    # Before any work, fail fast when no node can host one actor of some stage (else Ray waits forever).
    # Turn off on autoscaling clusters whose GPU nodes only start on demand.
    check_resources: bool = True


@dataclass
class HadesConfig:
    """Every section, typed; each is defined in its own package's ``settings.py`` (``ray`` above)."""

    preset: str = key("local", choices=PRESETS)
    seed: int = key(0, "[0, 4294967295]", help="random seed")  # numpy and torch both take 32-bit seeds
    # Wiki-40B's config name of the text's language; auto: the one the input path names (wiki40b/de/...).
    language: str = key(
        DEFAULT_LANGUAGE.name,
        choices=(*NAMES, AUTO),
        help="the text's language: a Wiki-40B name (en, de, zh-cn, ...), or auto: the one the input path names",
    )
    # spaCy pipeline for sentences, entities and lemmas: auto (the language's own, text/languages.py), blank
    # (its tokenizer and sentence splitter, no entities), or a pipeline name or folder (text/pipeline.py).
    spacy_model: str = key(AUTO, help="spaCy pipeline: auto (the language's own), blank (no entities), name or folder")
    # Per-language overrides of any key above or below, applied when a run is of that language:
    # {ja: {spacy_model: blank, models: {mlm: ...}}} (resolve_language).
    languages: dict[str, dict] = field(default_factory=dict)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    perturb: PerturbConfig = field(default_factory=PerturbConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    detect: DetectConfig = field(default_factory=DetectConfig)
    select: SelectConfig = field(default_factory=SelectConfig)
    annotate: AnnotateConfig = field(default_factory=AnnotateConfig)
    score: ScoreConfig = field(default_factory=ScoreConfig)
    guard: GuardConfig = field(default_factory=GuardConfig)
    reproduce: ReproduceConfig = field(default_factory=ReproduceConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def lang(self) -> Language:
        """The run's ``Language`` value (``language`` is its name, the config key): made concrete by
        ``resolve_language``; ``auto`` not yet resolved is a one-line error."""
        return language(self.language)


# Keys that moved: naming the old one is refused with the new name, never silently ignored.
RENAMED = {"perturb.resources.annotate": "perturb.resources.prepare"}


def default_config() -> HadesConfig:
    """Every section at its defaults (no preset applied)."""
    return HadesConfig()


def key_field(dotted: str) -> tuple[Any, dataclasses.Field]:
    """The type and the field that declare config key ``dotted`` (``score.threshold``)."""
    *sections, name = dotted.split(".")
    section = HadesConfig
    for part in sections:
        section = typing.get_type_hints(section)[part]
    fields = {item.name: item for item in dataclasses.fields(section)}
    return typing.get_type_hints(section)[name], fields[name]


def _merge(target: Any, overrides: dict[str, Any], prefix: str) -> None:
    if not isinstance(overrides, dict):
        raise ConfigError(f"{prefix or 'config'}: expected a mapping, got {overrides!r}")
    hints = typing.get_type_hints(type(target))
    for name, value in overrides.items():
        path = f"{prefix}{name}"
        if path in RENAMED:
            raise ConfigError(f"{path} was renamed: use {RENAMED[path]}")
        if name not in hints:
            raise ConfigError(f"unknown config key {path!r}; known keys here: {', '.join(sorted(hints))}")
        current = getattr(target, name)
        if dataclasses.is_dataclass(current):
            _merge(current, value, f"{path}.")
        elif isinstance(current, dict):  # mappings merge key by key (nested ones too), so --set adds one entry
            setattr(target, name, _merged_mapping(current, coerce(value, hints[name], path)))
        else:
            setattr(target, name, coerce(value, hints[name], path))


def _merged_mapping(current: dict, update: dict) -> dict:
    merged = dict(current)
    for name, value in update.items():
        both = isinstance(value, dict) and isinstance(merged.get(name), dict)
        merged[name] = _merged_mapping(merged[name], value) if both else value
    return merged


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
    pin_revisions(config.models.revisions)
    return config


def validate(config: HadesConfig) -> None:
    """Check every value whose type is right but whose meaning is not: each key against its declaration
    (``config_keys.key``), then each section's rules between keys, then each language's overrides."""
    check(config)
    for item in dataclasses.fields(config):
        rules = getattr(getattr(config, item.name), "validate", None)
        if rules:
            rules()
    for name, overrides in config.languages.items():
        language(name)
        if not isinstance(overrides, dict) or "language" in overrides or "languages" in overrides:
            raise ConfigError(f"languages.{name}: expected a mapping of config keys (not language or languages)")
        trial = copy.deepcopy(config)
        trial.languages = {}
        _merge(trial, overrides, f"languages.{name}.")
        try:
            check(trial)
        except ConfigError as error:
            raise ConfigError(f"languages.{name}: {error}") from None
    source = config.perturb.mask.stopwords
    if config.language != AUTO and source not in (lang := language(config.language)).stop_word_sources:
        raise ConfigError(
            f"perturb.mask.stopwords={source} is English only; {lang.name} takes {' or '.join(lang.stop_word_sources)}"
        )


def resolve_language(config: HadesConfig, input_path: str | Path | None = None) -> HadesConfig:
    """The config of one language's run: ``language`` made concrete (``auto``: the one ``input_path``
    names) and that language's overrides (``languages.LANG``) applied; every other language's dropped, so
    the settings digest and config.resolved.yaml hold only what this run used."""
    name = config.language
    if name == AUTO:
        name = language_from_path(str(input_path or ""))
        if name is None:
            raise ConfigError(
                f"language auto: the input path {str(input_path)!r} names no Wiki-40B language folder "
                f"(wiki40b/de/...); give --language NAME"
            )
    resolved = copy.deepcopy(config)
    overrides = resolved.languages.get(name, {})
    resolved.languages = {}
    resolved.language = name
    _merge(resolved, copy.deepcopy(overrides), f"languages.{name}.")
    validate(resolved)
    pin_revisions(resolved.models.revisions)
    return resolved


def resolved_yaml(config: HadesConfig) -> str:
    """The resolved configuration as YAML, loadable with ``--config`` (written beside every output)."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False)


def recorded_language(folder: str | Path) -> Language:
    """The language an output folder (a pool, a perturbation run: a folder or URI) was written in: its
    ``config.resolved.yaml``'s ``language``; a folder without one (written before languages, or by hand)
    is in the default language (``text.languages.language_of``)."""
    from hades_ray.pipeline import storage

    path = storage.join(folder, RESOLVED_NAME)
    if not storage.exists(path):
        return DEFAULT_LANGUAGE
    try:
        data = yaml.safe_load(storage.read_text(path))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: unreadable YAML ({' '.join(str(error).split())[:160]})") from None
    return language_of(data if isinstance(data, dict) else {})


def save_config(config: HadesConfig, directory: str | Path, name: str = RESOLVED_NAME) -> Path:
    """Write the resolved configuration into a local folder (a job's output URI: ``resolved_yaml``)."""
    from hades_ray.pipeline import storage  # here, not above: building a config imports no pyarrow

    path = Path(directory) / name
    storage.write(path, resolved_yaml(config))
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
    pin_revisions(config.models.revisions)
    return config


def load_saved_config(path: str | Path) -> HadesConfig:
    """A ``config.resolved.yaml`` written beside an output, read and validated; errors name the file."""
    path = Path(path)
    try:
        return config_from_dict(_read_yaml(path))
    except ConfigError as error:
        message = str(error)
        raise ConfigError(message if message.startswith(str(path)) else f"{path}: {message}") from None
