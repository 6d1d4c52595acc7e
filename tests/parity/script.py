"""The decision script: every judge and embedder decision of a parity run, keyed by content.

Both sides of the parity proof (RAGAS's prompts and ours) are answered from one `Script`, so any score
difference comes from the metric arithmetic and procedure, never from the judge. Decisions are keyed by
what the judge is shown, not by sample position, because the two libraries phrase and order their
requests differently:

| table       | key                          | value                                                    |
| ----------- | ---------------------------- | -------------------------------------------------------- |
| statements  | (question, answer)           | list of statements, or the judge's raw text verbatim     |
| verdict     | (context, statement.strip()) | 0 or 1: does the (joined) context support the statement  |
| embedding   | (text,)                      | the text's vector (float32-exact floats)                 |
| fix         | (bad judge output,)          | what the judge answers when RAGAS asks it to fix that    |

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
        NLI prompt, and ours in `judge_mode="generate"`): one object per statement, in order."""
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


def _key(key: Sequence[str]) -> Key:
    if isinstance(key, str):
        raise TypeError(f"A script key is a tuple of strings, got the string {key!r}.")
    return tuple(str(k) for k in key)


def _verdict_key(context: str, statement: str) -> Key:
    return (context, statement.strip())


def _short(key: Key, limit: int = 60) -> str:
    parts = [k if len(k) <= limit else k[: limit - 1] + "…" for k in key]
    return repr(tuple(parts))
