"""Judge-free named-entity extraction for context_entity_recall, in Chinese, English and mixed text.

Two sources, merged by position:

- jieba part-of-speech tags for Chinese words: people (`nr`, `nrfg`, `nrt`: matched on the `nr` prefix),
  places (`ns`), organisations (`nt`) and other proper nouns (`nz`). Single-character words are skipped
  (jieba tags "京" as a place), and the parts of a person's name that jieba tags separately are merged
  when they touch or are joined by "·" ("卡尔·马克思", "库比蒂诺").
- Patterns, for what jieba does not tag: quantities with a unit or percent ("8848.86米", "25%", "3.5 km",
  "$3.5 billion"), dates ("2020年", "1889年3月", "March 1889", "14 March 1879", "2024-01-01", "the 1990s",
  a bare year after "in", "since" and the like), works in book-title marks ("《战争与和平》" gives
  "战争与和平") and Latin proper names: runs of capitalised words ("Marie Curie", "University of
  Oxford"), acronyms ("NASA", "U.S."), and words with inner capitals ("OpenAI", "iPhone", "GPT-4").

Latin runs lose leading function words ("The Eiffel Tower" gives "Eiffel Tower"), and a run that is only a
function word ("It", "This") or a bare month name is dropped. Sentence-initial capitalised common words
outside that list ("Scientists found ...") are kept: telling them from names needs a model.

Patterns run on a width-folded copy of the text (full-width ASCII to ASCII, which keeps every offset), so
"２０２０年" is a date; entities are returned as written in the text. Compare them with `entity_key`.
"""

from __future__ import annotations

import re

from ascend_eval.text.normalize import normalize_for_match
from ascend_eval.text.segment import Segmenter, default_segmenter

_TAGGED_ENTITY_FLAGS = frozenset({"ns", "nt", "nz"})
_PERSON_PREFIX = "nr"
_NAME_JOINERS = frozenset("·•・‧")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df]")

# Full-width ASCII (U+FF01-U+FF5E) and the ideographic space map one-to-one onto ASCII, so offsets into
# the folded text are offsets into the original.
_WIDTH_FOLD = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


def _alternatives(words: str) -> str:
    """A regex alternation of space-separated words, longest first (so "km/h" is tried before "km")."""
    return "|".join(re.escape(w) for w in sorted(words.split(), key=len, reverse=True))


_NUMBER = r"[0-9]+(?:[.,][0-9]+)*"
_ZH_MAGNITUDES = _alternatives("万亿 亿 万 千 百")
_ZH_UNITS = _alternatives(
    "平方公里 平方千米 平方米 立方米 公里 千米 厘米 毫米 纳米 微米 米 公斤 千克 毫克 克 吨 毫升 升 "
    "摄氏度 度 元 美元 欧元 英镑 日元 港元 人民币 岁 小时 分钟 秒钟 秒 天 周 个月 倍 人 名 次 ℃ % ‰"
)
_EN_MAGNITUDES = _alternatives("thousand million billion trillion")
_EN_UNITS = _alternatives(
    "percent % km/h km² km kg cm mm nm μm m² m/s m mph miles mile mi meters metres meter metre kilometers "
    "kilometres feet ft lbs lb tons tonnes °C °F Hz kHz MHz GHz kW MW GW kWh W V mAh GB MB KB TB GiB MiB "
    "ms s sec seconds second minutes minute min hours hour h days day weeks week months month years year "
    "USD EUR RMB CNY yuan dollars euros"
)
_QUANTITY = re.compile(
    rf"(?<![A-Za-z0-9.,])(?:(?:US\$|[$€£¥]) ?)?{_NUMBER}"
    rf"(?: ?(?:{_EN_MAGNITUDES})(?![A-Za-z])|{_ZH_MAGNITUDES})?"
    rf"(?: ?(?:{_EN_UNITS})(?![A-Za-z0-9])| ?(?:{_ZH_UNITS}))?"
)
_BARE_NUMBER = re.compile(r"[0-9.,]+")

_MONTHS = "January February March April May June July August September October November December"
_MONTH = rf"(?:{_alternatives(_MONTHS + ' Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec')})\.?"
_MONTH_NAMES = _word_set(f"{_MONTHS} Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
_DAY = r"[0-9]{1,2}(?:st|nd|rd|th)?"
_YEAR = r"[0-9]{4}"
_DATES = [
    # Chinese: 1889年3月14日, 1889年3月, 2020年, 公元前221年, 3月14日, 3月, 20世纪, 1990年代
    re.compile(
        r"(?<![0-9])(?:[0-9]{2,4} ?年代|[0-9]{1,2} ?世纪"
        r"|(?:公元前?)?[0-9]{1,4} ?年(?:[0-9]{1,2}月(?:[0-9]{1,2}[日号])?)?"
        r"|[0-9]{1,2}月(?:[0-9]{1,2}[日号])?)"
    ),
    # ISO-like: 2024-01-01, 2024/1/1, 2024.01.01 (one separator throughout)
    re.compile(r"(?<![0-9.])[0-9]{4}([-/.])[0-9]{1,2}\1[0-9]{1,2}(?![0-9])"),
    # English: March 14, 1879 / 14 March 1879 / 14th of March, 1879 / March 1889 / March 14 / 14 March
    re.compile(
        rf"(?<![A-Za-z0-9])(?:{_MONTH} {_DAY},? {_YEAR}|{_DAY} (?:of )?{_MONTH},? {_YEAR}|{_MONTH},? {_YEAR}"
        rf"|{_MONTH} {_DAY}|{_DAY} (?:of )?{_MONTH})(?![A-Za-z0-9])"
    ),
    # Decades: the 1990s
    re.compile(r"(?<![A-Za-z0-9])[12][0-9]{2}0s(?![A-Za-z])"),
]
# A bare year is a date only after a preposition ("in 1889"); elsewhere a four-digit number is too
# ambiguous. Group 1 is the year.
_YEAR_AFTER_PREPOSITION = re.compile(
    r"(?<![A-Za-z])(?:[Ii]n|[Ss]ince|[Bb]y|[Ff]rom|[Uu]ntil|[Tt]ill|[Bb]efore|[Aa]fter|[Aa]round|[Cc]irca"
    r"|[Dd]uring) (1[0-9]{3}|20[0-9]{2})(?![0-9])"
)
_BOOK_TITLE = re.compile(r"《([^《》\n]{1,50})》")

_LETTER = "A-Za-zÀ-ÖØ-öø-ɏ"
_LATIN_TOKEN = re.compile(rf"(?:[A-Z]\.){{2,}}|[{_LETTER}0-9]+(?:[-'’&][{_LETTER}0-9]+)*")
# Lowercase words that may sit inside a name: "University of Oxford", "Leonardo da Vinci".
_NAME_CONNECTORS = _word_set("of de da di du del della der den van von la le y bin al")
# Capitalised function words (mostly sentence-initial) and titles: never the start of a name.
_NOT_NAMES = _word_set(
    "The A An In On At To For From By With Of As Into Over Under It Its This That These Those There Here "
    "He She They We I You His Her Their Our My Your Him Them Me Us When Where What Who Whom Whose Why How "
    "Which While If But And Or Nor So Yet Also However Then Thus Therefore After Before During Since Until "
    "Although Though Because Yes No Not Some Many Most All Each Every Both Any One Today Yesterday Tomorrow "
    "Is Are Was Were Be Been Do Does Did Has Have Had Can Could Will Would Should Might Must Shall "
    "According About Please Note See Mr Mrs Ms Dr Prof Sir"
)


def entity_key(entity: str) -> str:
    """The key under which two entities count as the same: `normalize_for_match` (NFKC, casefolded,
    punctuation removed, whitespace collapsed).

    Args:
        entity: An entity as extracted or as written by a judge.

    Returns:
        The comparison key.

    >>> entity_key("ＮＡＳＡ") == entity_key("nasa")
    True
    >>> entity_key("８８４８．８６ 米")
    '8848.86米'
    """
    return normalize_for_match(entity)


def _tagged_spans(text: str, segmenter: Segmenter) -> list[tuple[int, int]]:
    """Spans of words that jieba tags as people, places, organisations or other proper nouns."""
    tokens: list[tuple[str, str, int, int]] = []
    cursor = 0
    for word, flag in segmenter.tagged(text):
        start = text.find(word, cursor)
        if start < 0:  # never expected: jieba returns the text's own characters, in order
            continue
        cursor = start + len(word)
        tokens.append((word, flag, start, cursor))

    spans = []
    k = 0
    while k < len(tokens):
        word, flag, start, end = tokens[k]
        k += 1
        if flag.startswith(_PERSON_PREFIX):
            merged = False
            # A transliterated name whose parts jieba tags separately: "卡尔" "·" "马克思" (joined by a
            # middle dot), "库比" "蒂诺" (side by side).
            while k < len(tokens):
                if tokens[k][1].startswith(_PERSON_PREFIX) and tokens[k][2] == end:
                    end = tokens[k][3]
                    k += 1
                elif (
                    tokens[k][0] in _NAME_JOINERS
                    and tokens[k][2] == end
                    and k + 1 < len(tokens)
                    and tokens[k + 1][1].startswith(_PERSON_PREFIX)
                    and tokens[k + 1][2] == tokens[k][3]
                ):
                    end = tokens[k + 1][3]
                    k += 2
                else:
                    break
                merged = True
            if merged or len(word) > 1:
                spans.append((start, end))
        elif flag in _TAGGED_ENTITY_FLAGS and len(word) > 1:
            spans.append((start, end))
    return spans


def _is_name_token(token: str) -> bool:
    return any(ch.isupper() for ch in token)


def _latin_name_spans(folded: str) -> list[tuple[int, int]]:
    """Spans of capitalised word runs, acronyms and words with inner capitals."""
    tokens = list(_LATIN_TOKEN.finditer(folded))
    spans = []
    k = 0
    while k < len(tokens):
        if not _is_name_token(tokens[k].group()):
            k += 1
            continue
        run = [tokens[k]]
        k += 1
        while k < len(tokens) and folded[run[-1].end() : tokens[k].start()] == " ":
            if _is_name_token(tokens[k].group()):
                run.append(tokens[k])
                k += 1
            elif (
                tokens[k].group() in _NAME_CONNECTORS
                and k + 1 < len(tokens)
                and folded[tokens[k].end() : tokens[k + 1].start()] == " "
                and _is_name_token(tokens[k + 1].group())
            ):
                run.extend(tokens[k : k + 2])
                k += 2
            else:
                break
        while run and (run[0].group() in _NOT_NAMES or run[0].group() in _NAME_CONNECTORS):
            run.pop(0)
        if not run or (len(run) == 1 and run[0].group() in _MONTH_NAMES):
            continue  # a month alone is a date only with a day or a year, which the date patterns take
        end = run[-1].end()
        if folded[end - 2 : end] in ("'s", "’s"):
            end -= 2  # the possessive: "Curie's" names Curie
        spans.append((run[0].start(), end))
    return spans


def _pattern_spans(folded: str) -> list[tuple[int, int]]:
    spans = []
    for match in _QUANTITY.finditer(folded):
        if not _BARE_NUMBER.fullmatch(match.group()):  # a number alone is not an entity
            spans.append(match.span())
    for pattern in _DATES:
        spans.extend(match.span() for match in pattern.finditer(folded))
    spans.extend(match.span(1) for match in _YEAR_AFTER_PREPOSITION.finditer(folded))
    spans.extend(match.span(1) for match in _BOOK_TITLE.finditer(folded))
    return spans


def extract_entities(text: str, *, segmenter: Segmenter | None = None) -> list[str]:
    """Named entities, quantities and dates in `text`, without a judge.

    Overlapping candidates are resolved left to right, the longer winning at the same start ("1889年3月"
    over "1889年", "March 1889" over "March"). Entities come back as written in the text, distinct by
    `entity_key` and in order of first appearance.

    Args:
        text: Chinese, English or mixed text.
        segmenter: The jieba segmenter for the Chinese part; `default_segmenter()` when None. jieba is
            only loaded when the text contains Han characters.

    Returns:
        The entities.

    >>> extract_entities("The Eiffel Tower in Paris was completed in March 1889.")
    ['Eiffel Tower', 'Paris', 'March 1889']
    >>> extract_entities("NASA paid $3.5 billion in 2020; the rover weighs 1,025 kg.")
    ['NASA', '$3.5 billion', '2020', '1,025 kg']
    """
    folded = text.translate(_WIDTH_FOLD)
    spans = _pattern_spans(folded) + _latin_name_spans(folded)
    if _HAN.search(text):
        spans += _tagged_spans(text, segmenter if segmenter is not None else default_segmenter())

    entities: list[str] = []
    seen: set[str] = set()
    taken_until = 0
    for start, end in sorted(spans, key=lambda span: (span[0], span[0] - span[1])):
        if start < taken_until:
            continue  # overlaps an entity already taken
        taken_until = end
        entity = text[start:end].strip()
        key = entity_key(entity)
        if key and key not in seen:
            seen.add(key)
            entities.append(entity)
    return entities
