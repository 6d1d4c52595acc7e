"""Chinese word segmentation and part-of-speech tags from jieba, on a tokenizer of our own.

jieba keeps a global tokenizer (`jieba.dt`) that any other library in the process may reconfigure (a user
dictionary, a different cache file). `Segmenter` builds a private `jieba.Tokenizer` instead, keeps its
prefix-dictionary cache under our cache directory rather than the system temp directory, and turns jieba's
debug logging down to warnings.

jieba is imported only when a segmenter is first used: loading its dictionary takes about a second and
English-only runs never need it.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jieba
    import jieba.posseg


class Segmenter:
    """Word segmentation (`words`) and part-of-speech tagging (`tagged`) with a private jieba tokenizer.

    Construction is cheap; jieba is imported and its dictionary loaded on first use, once, under a lock,
    so one instance can be shared between threads. `default_segmenter()` returns the shared instance.

    Args:
        cache_dir: Where jieba caches its prefix dictionary. Defaults to `cache_root()/jieba`
            (`$ASCEND_EVAL_HOME/jieba`, else `~/.cache/ascend-eval/jieba`).
    """

    def __init__(self, cache_dir: str | Path | None = None) -> None:
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        # Re-entrant: building the POS tokenizer needs the word tokenizer while holding the lock.
        self._lock = threading.RLock()
        self._tokenizer: jieba.Tokenizer | None = None
        self._pos_tokenizer: jieba.posseg.POSTokenizer | None = None

    @property
    def tokenizer(self) -> jieba.Tokenizer:
        """The private, initialised `jieba.Tokenizer` (loaded on first access)."""
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    self._tokenizer = self._load_tokenizer()
        return self._tokenizer

    @property
    def pos_tokenizer(self) -> jieba.posseg.POSTokenizer:
        """A `jieba.posseg.POSTokenizer` over `tokenizer` (built on first access)."""
        if self._pos_tokenizer is None:
            with self._lock:
                if self._pos_tokenizer is None:
                    import jieba.posseg

                    self._pos_tokenizer = jieba.posseg.POSTokenizer(self.tokenizer)
        return self._pos_tokenizer

    def _load_tokenizer(self) -> jieba.Tokenizer:
        import jieba

        # Imported here rather than at the top so that `import ascend_eval.text` stays free of numpy,
        # which `ascend_eval.models` pulls in.
        from ascend_eval.base.paths import cache_root

        jieba.setLogLevel(logging.WARNING)
        cache_dir = self._cache_dir if self._cache_dir is not None else cache_root() / "jieba"
        cache_dir.mkdir(parents=True, exist_ok=True)
        tokenizer = jieba.Tokenizer()
        # jieba joins these two itself; the version in the name keeps a cache from another jieba's
        # dictionary from being loaded (jieba trusts an existing cache of its default dictionary blindly).
        tokenizer.tmp_dir = str(cache_dir)
        tokenizer.cache_file = f"jieba-{jieba.__version__}.cache"
        tokenizer.initialize()
        return tokenizer

    def words(self, text: str) -> list[str]:
        """Segment `text` into words (jieba's precise mode with HMM for unknown words).

        Whitespace tokens are dropped; every other character of `text`, punctuation included, ends up in
        exactly one word, in order.

        Args:
            text: Any text; Latin words and numbers come out whole.

        Returns:
            The words.
        """
        return [word for word in self.tokenizer.cut(text) if word and not word.isspace()]

    def tagged(self, text: str) -> list[tuple[str, str]]:
        """Segment `text` and tag each word with jieba's part-of-speech flag.

        The flags follow jieba's (ICTCLAS-style) tag set: `nr*` people (`nr`, `nrfg`, `nrt`), `ns` places,
        `nt` organisations, `nz` other proper nouns, `m` numerals, `eng` Latin words, `x` punctuation and
        other symbols. Whitespace tokens are dropped, as in `words`.

        Args:
            text: Any text.

        Returns:
            `(word, flag)` pairs in text order.
        """
        return [(pair.word, pair.flag) for pair in self.pos_tokenizer.cut(text) if not pair.word.isspace()]


_default: Segmenter | None = None
_default_lock = threading.Lock()


def default_segmenter() -> Segmenter:
    """The process-wide shared `Segmenter`, created on the first call (thread-safe).

    Returns:
        The same instance on every call.
    """
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Segmenter()
    return _default
