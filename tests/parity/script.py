"""The decision script: every judge and embedder decision of a parity run, keyed by content.

Both sides of the parity proof (RAGAS's prompts and ours) are answered from one `Script`, so any score
difference comes from the metric arithmetic and procedure, never from the judge. Decisions are keyed by
what the judge is shown, not by sample position, because the two libraries phrase and order their
requests differently:

| table       | key                             | value                                                     |
| ----------- | ------------------------------- | --------------------------------------------------------- |
| statements  | (question, answer)              | list of statements, or the judge's raw text verbatim      |
| verdict     | (text, statement.strip())       | 0 or 1: does the text support the statement               |
| embedding   | (text,)                         | the text's vector (float32-exact floats)                  |
| fix         | (bad judge output,)             | what the judge answers when RAGAS asks it to fix that     |
| texts       | (question,)                     | {"response": ..., "reference": ...} of the sample         |
| useful      | (question, context, answer)     | 0 or 1: was the context useful for arriving at the answer |
| entities    | (text,)                         | list of entities, or the judge's raw text verbatim        |
| questions   | (response,)                     | 3 generations: [question, noncommittal] or raw text each  |
| rating      | (metric, judge, *inputs)        | the judge's free text, as RAGAS's NV prompts receive it   |
| slip        | (prompt, *inputs)               | a one-call JSON answer that overrides the derived one     |

Every decision is kept at the finest grain either library asks for, and coarser questions are derived
from it at answer time, so both libraries see the same decisions:

* `verdict` is one (text, statement) pair. The text is the joined contexts (faithfulness, context_recall),
  a single context (noise_sensitivity), the reference (answer_correctness's TP, noise_sensitivity) or the
  response (answer_correctness's FN). RAGAS's one-call prompts are answered from it: the NLI list
  prompt, answer_correctness's TP/FP/FN classifier (`correctness_text`) and context_recall's sentence
  attribution (`attribution_text`, whose sentences are the reference's statements).
* RAGAS's correctness classifier shows only the question and two statement lists; the `texts` table
  (one sample per question) tells which response and reference they were extracted from.
* `rating` holds the text a judge writes in RAGAS's free-text NV prompts. The decision both libraries see
  is the rating RAGAS reads from that text (`ragas_reading`): our Classify label and our JSON rating are
  that number, so "4.0" is the rating 0 for nv_accuracy on both sides. A text with no readable digit is a
  judge that cannot rate: RAGAS retries (the script repeats the text) and scores NaN, our JSON judge
  fails to parse the same text, and our Classify judge has no counterpart (such cases are not compared in
  classify mode).

* `slip` holds a judge's slip in a one-call JSON answer, which no per-statement verdict can express: an
  NLI list shorter than the statements sent, or a classifier that sorts no statement at all. Both sides
  answer it verbatim to that one-call prompt; the per-statement (classify-mode) form has no counterpart.

A metric that needs another kind of decision adds a table (a name, a key tuple and a JSON value) with
`put`/`get`; the typed helpers below are conveniences for the tables above.

A lookup that finds nothing is recorded in `misses` and raises `ScriptMiss`. RAGAS turns any exception in
a job into NaN, so a missing decision would otherwise pass as an "expected" NaN; the parity test asserts
that `misses` is empty.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "ascend-eval parity script"
VERSION = 1

Key = tuple[str, ...]


class ScriptMiss(LookupError):
    """The script has no decision for a request: the dataset is incomplete (a test bug, not a NaN)."""


class Script:
    """Judge and embedder decisions by table and content key, loadable from and savable to JSON."""

    def __init__(self) -> None:
        self._tables: dict[str, dict[Key, Any]] = {}
        self.misses: list[tuple[str, Key]] = []
        """Every lookup that found no decision, in order."""
        self.lookups: Counter[str] = Counter()
        """Successful lookups per table (how many decisions a run consumed)."""

    # -- generic tables -------------------------------------------------------------------------------
    def put(self, table: str, key: Sequence[str], value: Any) -> None:
        """Record a decision. Re-recording the same key with a different value is an error, so two
        samples cannot silently disagree about one judge input."""
        key = _key(key)
        rows = self._tables.setdefault(table, {})
        if key in rows and rows[key] != value:
            raise ValueError(
                f"Conflicting {table!r} decisions for {_short(key)}: {rows[key]!r} vs {value!r}. "
                "Give the samples different texts, or the same decision."
            )
        rows[key] = value

    def get(self, table: str, key: Sequence[str]) -> Any:
        """The decision for `key`; records a miss and raises `ScriptMiss` when there is none."""
        key = _key(key)
        try:
            value = self._tables[table][key]
        except KeyError:
            self.misses.append((table, key))
            raise ScriptMiss(f"the script has no {table!r} decision for {_short(key)}") from None
        self.lookups[table] += 1
        return value

    def find(self, table: str, key: Sequence[str]) -> Any | None:
        """The decision for `key` or None, for optional tables (no miss is recorded)."""
        return self._tables.get(table, {}).get(_key(key))

    def tables(self) -> dict[str, int]:
        """Table name -> number of decisions."""
        return {name: len(rows) for name, rows in self._tables.items()}

    # -- typed helpers for the tables faithfulness and answer_similarity use ----------------------------
    def set_statements(self, question: str, answer: str, statements: list[str] | str) -> None:
        """What the judge answers when asked to split `answer` into statements: a list (answered as the
        canonical JSON `{"statements": [...]}`), or a string answered verbatim (e.g. "garbage")."""
        if not isinstance(statements, str):
            statements = [str(s) for s in statements]
        self.put("statements", (question, answer), statements)

    def statements_text(self, question: str, answer: str) -> str:
        """The judge's raw output for the statement extraction of (question, answer)."""
        value = self.get("statements", (question, answer))
        if isinstance(value, str):
            return value
        return json.dumps({"statements": value}, ensure_ascii=False)

    def set_verdict(self, context: str, statement: str, verdict: int) -> None:
        if verdict not in (0, 1):
            raise ValueError(f"A verdict is 0 or 1, got {verdict!r} for {statement!r}.")
        self.put("verdict", _verdict_key(context, statement), verdict)

    def verdict(self, context: str, statement: str) -> int:
        """Does `context` (the joined retrieved contexts) support `statement`? Surrounding whitespace of
        the statement does not change the decision: RAGAS judges statements as generated, ours strips
        them first."""
        return int(self.get("verdict", _verdict_key(context, statement)))

    def verdicts_text(self, context: str, statements: Sequence[str]) -> str:
        """The judge's raw output when asked for a reason and a verdict on every statement at once (RAGAS's
        NLI prompt, and ours in `judge_mode="generate"`): one object per statement, in order, unless the
        script has a slip for this call (statements compared stripped, blanks dropped)."""
        slip = self.find("slip", _verdicts_slip_key(context, statements))
        if slip is not None:
            return str(slip)
        verdicts = [
            {"statement": s, "reason": "scripted verdict", "verdict": self.verdict(context, s)}
            for s in statements
        ]
        return json.dumps({"statements": verdicts}, ensure_ascii=False)

    def set_embedding(self, text: str, vector: Sequence[float]) -> None:
        """The vector the embedder returns for `text`. Every component must be exactly representable as
        float32: our engine hands embeddings on as float32, and both sides must see identical numbers."""
        values = [float(x) for x in vector]
        exact = np.asarray(values, dtype=np.float32).astype(np.float64).tolist()
        if exact != values or not all(math.isfinite(x) for x in values):
            raise ValueError(f"The vector for {text!r} is not float32-exact and finite: {values!r}.")
        self.put("embedding", (text,), values)

    def embedding(self, text: str) -> list[float]:
        return list(self.get("embedding", (text,)))

    def set_fix(self, bad_output: str, fixed: str) -> None:
        """What the judge answers when RAGAS's output fixer shows it `bad_output`. Without an entry the
        judge repeats its original answer (the deterministic judge making the same decision again)."""
        self.put("fix", (bad_output,), fixed)

    # -- the sample a prompt is about -------------------------------------------------------------------
    def set_texts(self, question: str, response: str, reference: str) -> None:
        """The response and reference of the sample asked `question` (questions are unique per sample)."""
        self.put("texts", (question,), {"response": response, "reference": reference})

    def texts(self, question: str) -> dict[str, str]:
        return dict(self.get("texts", (question,)))

    # -- answer_correctness: RAGAS's one classifier call (and our generate-mode CORRECTNESS) -----------
    def correctness_text(self, question: str, answer: Sequence[str], ground_truth: Sequence[str]) -> str:
        """The TP/FP/FN classification, derived from the per-statement verdicts: an answer statement is
        TP when the reference supports it, else FP; a ground-truth statement is FN when the response does
        not support it."""
        slip = self.find("slip", ("correctness", question))
        if slip is not None:
            return str(slip)
        texts = self.texts(question)

        def judged(statement: str) -> dict[str, str]:
            return {"statement": statement, "reason": "scripted verdict"}

        supported = [self.verdict(texts["reference"], a) for a in answer]
        covered = [self.verdict(texts["response"], g) for g in ground_truth]
        out = {
            "TP": [judged(a) for a, v in zip(answer, supported, strict=True) if v],
            "FP": [judged(a) for a, v in zip(answer, supported, strict=True) if not v],
            "FN": [judged(g) for g, v in zip(ground_truth, covered, strict=True) if not v],
        }
        return json.dumps(out, ensure_ascii=False)

    # -- context_recall: RAGAS's sentence attribution (and our generate-mode CONTEXT_ATTRIBUTION) --------
    def attribution_text(self, question: str, context: str, answer: str) -> str:
        """One classification per statement of the reference (`answer`), attributed when the joined
        context supports it; the statement extraction's raw text verbatim when that is unparseable (the
        judge fails on this reference in both forms)."""
        value = self.get("statements", (question, answer))
        if isinstance(value, str):
            return value
        out = [
            {"statement": s, "reason": "scripted verdict", "attributed": self.verdict(context, s)}
            for s in value
        ]
        return json.dumps({"classifications": out}, ensure_ascii=False)

    # -- context_precision / context_utilization ------------------------------------------------------
    def set_useful(self, question: str, context: str, answer: str, useful: int) -> None:
        if useful not in (0, 1):
            raise ValueError(f"Usefulness is 0 or 1, got {useful!r}.")
        self.put("useful", (question, context, answer), useful)

    def useful(self, question: str, context: str, answer: str) -> int:
        return int(self.get("useful", (question, context, answer)))

    def useful_text(self, question: str, context: str, answer: str) -> str:
        """RAGAS's `Verification` and our CONTEXT_USEFUL_VERDICT: a reason, then the verdict."""
        verdict = self.useful(question, context, answer)
        return json.dumps({"reason": "scripted verdict", "verdict": verdict}, ensure_ascii=False)

    # -- context_entity_recall --------------------------------------------------------------------------
    def set_entities(self, text: str, entities: Sequence[str] | str) -> None:
        """The entities the judge lists for `text` (kept exactly as written: duplicates, case, blanks), or
        a raw unparseable answer."""
        self.put("entities", (text,), entities if isinstance(entities, str) else [str(e) for e in entities])

    def entities_text(self, text: str) -> str:
        value = self.get("entities", (text,))
        if isinstance(value, str):
            return value
        return json.dumps({"entities": value}, ensure_ascii=False)

    # -- answer_relevancy ------------------------------------------------------------------------------
    def set_questions(self, response: str, generations: Sequence[tuple[str, int] | str]) -> None:
        """The judge's generations for `response`, in order: (question, noncommittal) or raw text. RAGAS
        asks once with n=len(generations) and gets them all; ours asks once per seed and gets
        generation `seed`."""
        value = [g if isinstance(g, str) else [str(g[0]), int(g[1])] for g in generations]
        self.put("questions", (response,), value)

    def question_texts(self, response: str) -> list[str]:
        out = []
        for g in self.get("questions", (response,)):
            if isinstance(g, str):
                out.append(g)
            else:
                out.append(json.dumps({"question": g[0], "noncommittal": g[1]}, ensure_ascii=False))
        return out

    # -- judge slips in one-call JSON answers -------------------------------------------------------------
    def set_verdicts_slip(self, context: str, statements: Sequence[str], text: str) -> None:
        """What the judge answers instead of one verdict per statement when asked about `statements`
        against `context` in one call."""
        self.put("slip", _verdicts_slip_key(context, statements), text)

    def set_correctness_slip(self, question: str, text: str) -> None:
        """What the TP/FP/FN classifier answers for the sample asked `question`."""
        self.put("slip", ("correctness", question), text)

    # -- NV ratings -------------------------------------------------------------------------------------
    def set_rating(self, metric: str, judge: int, inputs: Sequence[str], text: str) -> None:
        """What judge 1 or 2 of an NV metric writes for these inputs (see `rating_key`). The rating RAGAS
        reads from it must be one our prompts allow, or none at all."""
        reading = ragas_reading(metric, text)
        if reading is not None and reading not in NV_SCALES[metric]:
            raise ValueError(
                f"RAGAS reads {reading} from {text!r}, which {metric}'s scale {NV_SCALES[metric]} lacks: "
                "ours cannot give that decision."
            )
        self.put("rating", rating_key(metric, judge, inputs), text)

    def rating_text(self, metric: str, judge: int, inputs: Sequence[str]) -> str:
        return str(self.get("rating", rating_key(metric, judge, inputs)))

    # -- JSON -----------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "tables": {
                name: [{"key": list(key), "value": value} for key, value in rows.items()]
                for name, rows in self._tables.items()
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Script:
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            raise ValueError(
                f"Not a version-{VERSION} parity script: format={data.get('format')!r}, "
                f"version={data.get('version')!r}."
            )
        script = cls()
        for name, rows in data["tables"].items():
            for row in rows:
                script.put(name, row["key"], row["value"])
        return script

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        # Python's float repr round-trips exactly, so the vectors come back bit-identical.
        path.write_text(json.dumps(self.to_json(), ensure_ascii=False, indent=1), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Script:
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


NV_SCALES: dict[str, tuple[int, ...]] = {
    "nv_accuracy": (0, 2, 4),
    "nv_context_relevance": (0, 1, 2),
    "nv_response_groundedness": (0, 1, 2),
}


def ragas_reading(metric: str, text: str) -> int | None:
    """The rating RAGAS 0.4.3 reads from a judge's free text, or None when it finds none (it then asks
    again, up to 5 times, and scores NaN). nv_accuracy looks for the digits 0, 1, 2, 3, 4 in that order
    anywhere in the text, the other two for 2, 1, 0: so "4.0" reads as 0 for nv_accuracy, "1.0" as 1.

    >>> ragas_reading("nv_accuracy", "4.0"), ragas_reading("nv_context_relevance", "1.0")
    (0, 1)
    >>> ragas_reading("nv_response_groundedness", "n/a") is None
    True
    """
    order = range(5) if metric == "nv_accuracy" else (2, 1, 0)
    return next((i for i in order if str(i) in text), None)


def rating_key(metric: str, judge: int, inputs: Sequence[str]) -> Key:
    """The decision key of one NV judge: nv_accuracy (question, response, reference), nv_context_relevance
    (question, joined contexts), nv_response_groundedness (joined contexts, response)."""
    if metric not in NV_SCALES or judge not in (1, 2):
        raise ValueError(f"No NV judge {metric!r} #{judge}.")
    return _key((metric, str(judge), *inputs))


def _key(key: Sequence[str]) -> Key:
    if isinstance(key, str):
        raise TypeError(f"A script key is a tuple of strings, got the string {key!r}.")
    return tuple(str(k) for k in key)


def _verdicts_slip_key(context: str, statements: Sequence[str]) -> Key:
    # RAGAS sends statements as extracted, ours stripped and without blanks: the same call either way.
    return ("verdicts", context, *[s.strip() for s in statements if s.strip()])


def _verdict_key(context: str, statement: str) -> Key:
    return (context, statement.strip())


def _short(key: Key, limit: int = 60) -> str:
    parts = [k if len(k) <= limit else k[: limit - 1] + "…" for k in key]
    return repr(tuple(parts))
