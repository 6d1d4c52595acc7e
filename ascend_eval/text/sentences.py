"""Split Chinese, English and mixed text into sentences, without a model.

Rules, in order of strength:

- A line break always ends a sentence (and closes any quote left open on that line).
- Nothing splits inside quotes: “…”, 「…」, 『…』, 《…》 and straight double quotes.
- Chinese terminators `。！？；…` (and runs of them, like `……` or `！？`) end a sentence wherever they stand.
- ASCII terminators `.!?;` end one only when followed by whitespace, the end of the text, or a CJK character
  (not a digit), so `3.14`, `example.com` and `GPT-4.5` stay whole. A `.` does not end one after an
  abbreviation from a short list (`e.g.`, `Dr.`, `U.S.`, ...) or a single capital initial (`J. K. Rowling`);
  `.!?` do not end one when the next word starts with a lowercase letter (`Wait... what`).
- Closing quotes and brackets right after a terminator stay with its sentence; a closing title mark (`》`)
  never ends one (`《你好！》这本书`).
"""

from __future__ import annotations

import re

_STRONG_TERMINALS = frozenset("。！？；…⋯｡")
_ASCII_TERMINALS = frozenset(".!?;．")  # the full-width point behaves like "." (it also appears in decimals)
_QUOTE_OPEN = frozenset("“「『《")
_QUOTE_CLOSE = frozenset("”」』》")
_TITLE_CLOSE = frozenset("》〉")  # a title that ends in "！" is still inside its sentence: 《你好！》这本书
# Closers that may follow a terminator but are not tracked as quotes: a lone "(" or "'" (an apostrophe)
# would otherwise keep a quote open to the end of the line.
_OTHER_CLOSERS = frozenset(")）]】〕〉’'")
# CJK radicals to Han (incl. CJK punctuation and kana), Hangul, compatibility ideographs, full-width forms,
# and the supplementary Han planes.
_CJK_RANGES = ((0x2E80, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF), (0x20000, 0x2FFFF))
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")

# Lowercase, without the final point: words after which "." is not the end of a sentence.
_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "e.g", "i.e", "cf", "al", "u.s", "u.k"}
)
# Abbreviations that announce a number: "No. 5", "Fig. 3", "pp. 12".
_BEFORE_NUMBER = frozenset({"no", "nos", "vol", "fig", "figs", "p", "pp", "ch", "sec", "art", "eq"})
_WORD_BEFORE_POINT = re.compile(r"[A-Za-z][A-Za-z.]*$")


def _is_cjk(ch: str) -> bool:
    """CJK scripts and CJK punctuation/full-width forms: text that follows a sentence without a space."""
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _ascii_cluster_ends_sentence(text: str, i: int, j: int, sentence_start: int) -> bool:
    """Whether ASCII terminators at text[i:j] (with any closers) end the sentence."""
    following = text[j] if j < len(text) else ""
    if following and (following.isdigit() or not (following.isspace() or _is_cjk(following))):
        return False  # "3.14", "３．１４", "example.com"
    next_char = text[j:].lstrip()[:1]
    if "a" <= next_char <= "z" and not any(c in ";；" for c in text[i:j]):
        # The sentence goes on: "Wait... what", '"Yes!" she said'. Not after ";", whose next clause
        # usually starts in lowercase.
        return False
    if text[i] in ".．" and (j - i == 1 or text[i + 1] not in ".．"):  # a single point, not an ellipsis
        match = _WORD_BEFORE_POINT.search(text, max(sentence_start, i - 16), i)
        if match:
            word = match.group()
            if word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper()):
                return False
            if word.lower() in _BEFORE_NUMBER and next_char.isdigit():
                return False
    return True


def split_sentences(text: str) -> list[str]:
    """Split `text` into sentences, keeping each sentence's terminal punctuation and closing quotes.

    See the module docstring for the rules. Sentences are stripped of surrounding whitespace and empty
    ones are dropped, so a text of only whitespace gives `[]`.

    Args:
        text: Chinese, English or mixed text.

    Returns:
        The sentences, in order.

    >>> split_sentences("爱因斯坦生于1879年。他提出了相对论！你知道吗？")
    ['爱因斯坦生于1879年。', '他提出了相对论！', '你知道吗？']
    >>> split_sentences("Pi is about 3.14. Dr. Smith agrees, e.g. in his book.")
    ['Pi is about 3.14.', 'Dr. Smith agrees, e.g. in his book.']
    >>> split_sentences("他说：“今天下雨。我们不去了。”然后走了。")
    ['他说：“今天下雨。我们不去了。”', '然后走了。']
    >>> split_sentences("第一行\\n第二行")
    ['第一行', '第二行']
    """
    sentences: list[str] = []

    def emit(start: int, end: int) -> None:
        sentence = text[start:end].strip()
        if sentence:
            sentences.append(sentence)

    start = 0
    depth = 0  # nesting of paired quotes
    straight_open = False  # inside an ASCII double quote
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _LINE_BREAKS:
            emit(start, i)
            start, depth, straight_open = i + 1, 0, False
        elif ch in _QUOTE_OPEN:
            depth += 1
        elif ch in _QUOTE_CLOSE:
            depth = max(0, depth - 1)
        elif ch == '"':
            straight_open = not straight_open
        elif ch in _STRONG_TERMINALS or ch in _ASCII_TERMINALS:
            # Take the whole cluster: more terminators ("……", "?!") and the closers that follow them.
            strong = ch in _STRONG_TERMINALS
            closes_title = False
            j = i + 1
            while j < n:
                c = text[j]
                closes_title = closes_title or c in _TITLE_CLOSE
                if c in _STRONG_TERMINALS:
                    strong = True
                elif c in _QUOTE_CLOSE:
                    depth = max(0, depth - 1)
                elif c == '"' and straight_open:
                    straight_open = False
                elif c not in _ASCII_TERMINALS and c not in _OTHER_CLOSERS:
                    break
                j += 1
            inside_quote = depth > 0 or straight_open or closes_title
            if not inside_quote and (strong or _ascii_cluster_ends_sentence(text, i, j, start)):
                emit(start, j)
                start = j
            i = j
            continue
        i += 1
    emit(start, n)
    return sentences
