"""A generated test set: its rows, and the counts that say how it was made (rows per kind and language,
candidates tried, drops per reason, whether the corpus ran out)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascend_eval.writing import replaced

ROW_FIELDS = (
    "question",
    "ground_truth",
    "reference_contexts",
    "source_chunks",
    "query_kind",
    "language",
    "persona",
)
"""A row's fields, in order; `persona` only when personas were given. `question` and `ground_truth` are
the RAGAS v0.1 / NeMo names `evaluate` and job specs read as `user_input` and `reference`; the other fields
beyond `reference_contexts` travel as each sample's metadata."""


@dataclass
class Testset:
    """What `generate` made.

    Attributes:
        rows: the accepted rows (`ROW_FIELDS`), in the order they were accepted.
        size: how many rows were asked for.
        available: candidates the corpus offers per kind.
        tried: candidates sent to the judge per kind.
        drops: dropped candidates per reason (`DROP_REASONS`).
        examples: the first detail seen per drop reason (a parse failure's reason, a verdict's p(Yes)).
        rounds: generation rounds run.
    """

    __test__ = False  # a library class, not a pytest test class

    rows: list[dict[str, Any]]
    size: int
    available: dict[str, int]
    tried: Counter[str] = field(default_factory=Counter)
    drops: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    rounds: int = 0

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def complete(self) -> bool:
        """Whether `size` rows passed; False when the corpus's candidates ran out first."""
        return len(self.rows) >= self.size

    def kinds(self) -> Counter[str]:
        """Rows per query kind."""
        return Counter(row["query_kind"] for row in self.rows)

    def languages(self) -> Counter[str]:
        """Rows per language."""
        return Counter(row["language"] for row in self.rows)

    def summary(self) -> str:
        """What was made and what was dropped, in a few lines (what the command line prints)."""
        lines = [
            (
                f"{len(self.rows)} of {self.size} rows in {self.rounds} round(s); "
                f"{sum(self.tried.values())} candidates tried of {sum(self.available.values())}"
            ),
            "rows per kind: " + (_counts(self.kinds()) or "none"),
            "rows per language: " + (_counts(self.languages()) or "none"),
            "candidates tried per kind: " + (_counts(self.tried) or "none"),
        ]
        if self.drops:
            lines.append(f"dropped {sum(self.drops.values())}: " + _counts(self.drops))
            lines += [f"  {reason}, e.g.: {self.examples[reason]}" for reason in self.drops]
        if not self.complete:
            lines.append(
                f"The corpus's candidates ran out at {len(self.rows)} of {self.size} rows: every candidate "
                "was tried. Add documents, lower --chunk-size (more chunks, more candidates), or use a "
                "stronger judge (fewer drops)."
            )
        return "\n".join(lines)

    def to_jsonl(self, path: str | Path) -> Path:
        """Write the rows as JSON Lines (UTF-8, Chinese as written), in one step: the whole file or none.

        Raises:
            OutputError: the file cannot be written (the message names it and the fix).
        """
        target = Path(path)
        with replaced(target) as f:
            for row in self.rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        return target

    def to_list(self) -> list[dict[str, Any]]:
        """The rows, as `evaluate` takes a list of rows."""
        return [dict(row) for row in self.rows]


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counter.most_common())
