"""Chinese-aware text handling: language detection, normalisation, jieba segmentation, sentence splitting,
truncation to a token or character budget, and judge-free entity extraction.

Importing this package does not import jieba: a `Segmenter` loads it on first use.
"""

from ascend_eval.text.entities import entity_key, extract_entities
from ascend_eval.text.language import Language, cjk_share, detect_language
from ascend_eval.text.normalize import is_punctuation, normalize, normalize_for_match, strip_punctuation
from ascend_eval.text.segment import Segmenter, default_segmenter
from ascend_eval.text.sentences import split_sentences
from ascend_eval.text.truncate import truncate_by_chars, truncate_by_tokens

__all__ = [
    "Language",
    "Segmenter",
    "cjk_share",
    "default_segmenter",
    "detect_language",
    "entity_key",
    "extract_entities",
    "is_punctuation",
    "normalize",
    "normalize_for_match",
    "split_sentences",
    "strip_punctuation",
    "truncate_by_chars",
    "truncate_by_tokens",
]
