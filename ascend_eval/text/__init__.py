"""Chinese-aware text handling: language detection (more arrives with the metrics work)."""

from ascend_eval.text.language import Language, cjk_share, detect_language

__all__ = ["Language", "cjk_share", "detect_language"]
