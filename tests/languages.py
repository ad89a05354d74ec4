"""Test material per language: the Wiki-40B-layout leads under ``tests/data/wiki40b/LANG/test.jsonl`` and
micro spaCy pipelines that find named entities in them with an ``entity_ruler`` (no trained model needed).

``save_ner_pipeline(lang, folder)`` writes a real spaCy pipeline folder (``spacy_model`` takes it): the
language's blank pipeline with its segmenter, a sentencizer and a ruler whose patterns are entities of
that language's test text, multi-word ones among them, so "an entity is masked whole" is tested per
language. ``save_multilingual_pipeline`` writes the same patterns behind spaCy's multilingual (``xx``)
tokenizer, as ``xx_ent_wiki_sm`` would come.
"""

from __future__ import annotations

import json
from pathlib import Path

from hades_ray.text.segment import first_paragraph

DATA = Path(__file__).resolve().parent / "data" / "wiki40b"
LANGUAGES = ("de", "ru", "ar", "hi", "zh-cn", "ja")

# label -> entities of each language's test text (first paragraphs), several of them past the first two sentences
ENTITIES: dict[str, dict[str, tuple[str, ...]]] = {
    "de": {
        "PER": ("Max Planck", "Werner von Siemens", "Johann Georg Halske"),
        "LOC": ("Hamburg", "Berlin", "München", "Nordsee", "Bodensee", "Obere Mittelrheintal", "Hamburger Hafen"),
        "ORG": ("Kaiser-Wilhelm-Gesellschaft", "Max-Planck-Gesellschaft", "Siemens Healthineers", "Hapag-Lloyd"),
        "MISC": ("UNESCO", "Zweiten Weltkrieg", "Elbphilharmonie", "Nobelpreis für Physik"),
    },
    "ru": {
        "PER": ("Дмитрий Иванович Менделеев",),
        "LOC": ("Санкт-Петербурге", "Нижний Новгород", "Каспийское море", "Тверской области", "Шереметьево"),
        "ORG": ("Российской академии наук", "Главной палатой мер и весов", "Главном педагогическом институте"),
        "MISC": ("Транссибирская магистраль", "Куйбышевское водохранилище", "SkyTeam", "СССР"),
    },
    "ar": {
        "PER": ("جوهر الصقلي", "المعز لدين الله", "الحاكم بأمر الله", "روجر بيكون"),
        "LOC": ("القاهرة", "ميدان التحرير", "بحيرة تانا", "الخرطوم", "البحر الأبيض المتوسط", "حقل الغوار"),
        "ORG": ("الجامع الأزهر", "منظمة اليونسكو", "المتحف المصري", "ستاندرد أويل أوف كاليفورنيا"),
        "MISC": ("كتاب المناظر", "النيل الأزرق"),
    },
    "hi": {
        "PER": ("सवाई जयसिंह द्वितीय", "चंद्रशेखर वेंकट रमन", "नारायण मूर्ति"),
        "LOC": ("राजस्थान", "तिरुचिरापल्ली", "प्रयागराज", "वाराणसी", "बंगाल की खाड़ी", "मैसूरु", "दिल्ली"),
        "ORG": ("यूनेस्को", "प्रेसीडेंसी कॉलेज", "नैस्डैक", "इन्फ़ोसिस"),
        "MISC": ("हवा महल", "जंतर मंतर", "रमन प्रभाव", "नोबेल पुरस्कार", "भारत रत्न"),
    },
    "zh-cn": {
        "PER": ("屠呦呦", "马可·波罗", "任正非"),
        "LOC": ("浙江省", "京杭大运河", "西湖", "临安", "宁波市", "唐古拉山脉", "宜昌市", "武汉", "南京", "东海"),
        "ORG": ("北京医学院", "中国中医研究院", "二十国集团", "美国政府"),
        "MISC": ("亚洲运动会", "青蒿素", "三峡大坝"),
    },
    "ja": {
        "PER": ("湯川秀樹", "桓武天皇", "セシル・パウエル", "豊田喜一郎"),
        "LOC": ("京都府", "清水寺", "金閣寺", "八坂神社", "甲武信ヶ岳", "新潟県", "日本海", "長岡市"),
        "ORG": ("京都大学", "任天堂", "京都帝国大学", "ユネスコ", "豊田自動織機"),
        "MISC": ("祇園祭", "ノーベル物理学賞", "プリウス", "トヨタ生産方式"),
    },
}


def lead_file(lang: str) -> Path:
    return DATA / lang / "test.jsonl"


def records(lang: str) -> list[dict]:
    """The language's test records, as the Wiki-40B files hold them."""
    with open(lead_file(lang), encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def leads(lang: str) -> list[str]:
    """The first paragraphs the perturbation reads."""
    return [first_paragraph(record["text"]) for record in records(lang)]


def all_texts() -> list[str]:
    """Every test text of every language (the multilingual micro tokenizer's training text)."""
    return [record["text"] for lang in LANGUAGES for record in records(lang)]


def patterns(lang: str) -> list[dict]:
    return [{"label": label, "pattern": text} for label, texts in ENTITIES[lang].items() for text in texts]


def _blank(lang: str):
    import spacy

    from hades_ray.text.languages import language

    found = language(lang)
    if found.segmenter and found.segmenter.module == "jieba":
        import logging

        import jieba

        jieba.setLogLevel(logging.WARNING)  # its dictionary's loading steps, as text/pipeline.py keeps them quiet
    tokenizer = found.segmenter.tokenizer if found.segmenter else {}
    return spacy.blank(found.spacy, config={"nlp": {"tokenizer": tokenizer}} if tokenizer else {})


def save_ner_pipeline(lang: str, folder: Path) -> Path:
    """A spaCy pipeline folder of language ``lang``: its tokenizer, a sentencizer and an entity ruler."""
    nlp = _blank(lang)
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("entity_ruler").add_patterns(patterns(lang))
    nlp.to_disk(folder)
    return folder


def save_multilingual_pipeline(folder: Path, langs: tuple[str, ...] = LANGUAGES) -> Path:
    """A multilingual (``xx``) pipeline folder: an entity ruler with every language's patterns, no sentencizer."""
    import spacy

    nlp = spacy.blank("xx")
    nlp.add_pipe("entity_ruler").add_patterns([p for lang in langs for p in patterns(lang)])
    nlp.to_disk(folder)
    return folder


def save_english_pipeline(folder: Path) -> Path:
    """An English pipeline folder (for the check that a German run refuses it)."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.to_disk(folder)
    return folder
