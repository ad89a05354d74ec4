"""The LR/SVM feature detectors and the learnability labels in languages other than English: spaCy per
language (blank pipelines here: no trained non-English pipeline is installed offline), the language kept
in the detector's settings, and each language's own stop words."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hades_ray.config import load_config
from hades_ray.detect.features.span_features import TAG_NAMES, tag_spans
from hades_ray.io.hades_format import Instance
from hades_ray.text.languages import language
from hades_ray.text.pipeline import load_pipeline
from hades_ray.text.words import words

SENTENCES = {
    "de": "Die alte Brücke über den Rhein wurde im Jahr 1850 gebaut.",
    "ru": "Старый мост через реку был построен в 1850 году.",
    "ar": "بني الجسر القديم فوق النهر في عام 1850.",
    "hi": "नदी पर पुराना पुल सन 1850 में बनाया गया था।",
    "zh-cn": "这座古老的桥建于1850年。",
    "ja": "この古い橋は1850年に建てられました。",
}


def _items(language: str) -> list[dict]:
    cut = words(SENTENCES[language], language)
    return [{"words": cut, "start": 1, "end": 2}, {"words": cut, "start": 0, "end": 0}]


@pytest.mark.parametrize("language", sorted(SENTENCES))
def test_span_tags_of_a_blank_pipeline_count_every_word_untagged(language):
    tags = tag_spans(load_pipeline(language, "blank"), _items(language))
    names = list(TAG_NAMES)
    assert tags.shape == (2, len(names))
    assert np.all(tags[:, names.index("pos_X")] == 1.0) and np.all(tags[:, names.index("ner_O")] == 1.0)


def test_a_person_named_per_counts_as_a_person():
    import spacy

    nlp = spacy.blank("de")  # German and multilingual (xx) pipelines name persons PER, English ones PERSON
    nlp.add_pipe("entity_ruler").add_patterns([{"label": "PER", "pattern": "Angela Merkel"}])
    tags = tag_spans(nlp, [{"words": ["Angela", "Merkel", "sprach", "lange"], "start": 0, "end": 1}])
    assert tags[0, list(TAG_NAMES).index("ner_PERSON")] == 1.0


def _config(language: str):
    overrides = [f"language={language}", "spacy_model=blank"] if language != "en" else []
    return load_config(overrides=overrides)


def test_a_feature_detector_remembers_its_language_and_english_ones_stay_as_they_were():
    from hades_ray.train.fit import _linear_settings

    german = _linear_settings(_config("de"), "lr")
    assert german["language"] == "de" and german["spacy_model"] == "blank"
    english = _linear_settings(_config("en"), "lr")
    assert list(english) == ["type", "mode", "mlm", "feature_window", "spacy_model"]


@pytest.mark.parametrize("language", ["zh-cn", "hi"])
def test_features_of_non_english_instances(micro_home, language):
    from hades_ray.detect.features.lexical import LexicalStats
    from hades_ray.detect.features.stages import FEATURE_NAMES, feature_matrix

    config = _config(language)
    settings = {"mlm": "local:mlm", "feature_window": 32, "spacy_model": "blank", "language": language}
    instances = [Instance(it["words"], it["start"], it["end"], 1, {"language": language}) for it in _items(language)]
    lexical = LexicalStats.fit([i.words for i in instances], vocab_size=50, window=2)
    X = feature_matrix(instances, lexical, settings, config.detect)
    assert X.shape == (2, len(FEATURE_NAMES)) and np.all(np.isfinite(X))
    assert X[:, FEATURE_NAMES.index("tfidf")].min() > 0


def test_learnability_negatives_skip_the_languages_stop_words():
    from hades_ray.train.learnability import doc_instances

    text = "Die Brücke und der Turm stehen in der Stadt am Fluss."
    start = text.index("Turm")
    spans = [{"start": start, "end": start + 4, "original": "Dom", "replacement": "Turm"}]
    made = doc_instances("d1", text, spans, random.Random(0), negatives_per_positive=10, language=language("de"))
    negatives = {i.words[i.start] for i in made if i.label == 0}
    assert negatives == {"Brücke", "stehen", "Stadt", "Fluss"}  # not und, der, in, am (German stop words)
    assert all(i.extra["language"] == "de" for i in made)


def test_learnability_negatives_keep_hindi_words_with_vowel_signs():
    from hades_ray.train.learnability import doc_instances

    text = "नदी पर पुराना पुल सन 1850 में बनाया गया था।"
    start = text.index("पुल")
    spans = [{"start": start, "end": start + 3, "original": "सेतु", "replacement": "पुल"}]
    made = doc_instances("d1", text, spans, random.Random(0), negatives_per_positive=10, language=language("hi"))
    negatives = {i.words[i.start] for i in made if i.label == 0}
    assert {"नदी", "पुराना", "बनाया"} <= negatives  # vowel signs (ी, ु, ा) are letters' marks, not punctuation
    assert not negatives & {"पर", "में", "गया", "था", "1850", "।"}  # stop words, a number, the danda
