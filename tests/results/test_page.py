"""The run report's HTML on a hand-built run: every section, the lowest samples, each detail shape, and
user text escaped (the data is whatever the user's dataset and judge produced)."""

from __future__ import annotations

import math
import re

import pytest

from ascend_eval.data import Sample
from ascend_eval.engine.stats import StageStats
from ascend_eval.metrics import MetricResult
from ascend_eval.results import EvaluationResult
from ascend_eval.results.details import details_html
from ascend_eval.results.page import (
    REPORT_FILE,
    SECTIONS,
    anchor,
    lowest_samples,
    render_run_report,
    write_run_report,
)
from ascend_eval.results.svg import histogram_svg

SCRIPT = "<script>alert('x')</script>"
FAITHFULNESS = [0.9, 0.2, 0.7, 0.1, 0.5, math.nan]
"""Sample 5 is NaN; the three lowest are samples 3, 1 and 4, in that order."""


def hand_built() -> EvaluationResult:
    """Six samples (three en, three zh) and four metric kinds, with a NaN and user text holding markup."""
    samples = [
        Sample(id="en-0", user_input="Who built it?", response="Eiffel's company.", reference="Eiffel."),
        Sample(id="en-1", user_input=f"What is {SCRIPT}?", response="A tag & more", reference="markup"),
        Sample(id="en-2", user_input="When?", response="1889.", retrieved_contexts=("Built 1887-1889.",)),
        Sample(
            id="zh-3",
            user_input="水的化学式是什么？",
            response="水的化学式是H₂O。",
            retrieved_contexts=("水由两个氢原子和一个氧原子组成。", "水在100摄氏度沸腾。"),
        ),
        Sample(id="zh-4", user_input="长城有多长？", response="很长。"),
        Sample(id="zh-5", user_input="谁写了红楼梦？", response="曹雪芹。"),
    ]
    faithfulness = [MetricResult(s, details={"statements": ["s"], "p_supported": [s]}) for s in FAITHFULNESS]
    faithfulness[1] = MetricResult(
        0.2, details={"statements": [f"It is {SCRIPT}", "A tag"], "p_supported": [0.2, 0.9], SCRIPT: "k"}
    )
    faithfulness[3] = MetricResult(
        0.1, details={"statements": ["水的化学式是H₂O。"], "p_supported": [0.1], "note": "x" * 900}
    )
    faithfulness[5] = MetricResult.nan("parse_failure: not JSON", raw=f"I think {SCRIPT}", statements=[])
    precision = [MetricResult(1.0, details={"p_useful": [0.8], "verdicts": [1]}) for _ in samples]
    precision[3] = MetricResult(0.5, details={"p_useful": [0.3, 0.7], "verdicts": [0, 1]})
    accuracy = [MetricResult(0.75, details={"probs": [[0.1, 0.2, 0.7]] * 2, "ratings": [0.8, 0.7]})] * 6
    accuracy[0] = MetricResult(
        0.25, details={"probs": [[0.7, 0.2, 0.1], None], "ratings": [0.2, None], "failures": [None, None]}
    )
    relevancy = [
        MetricResult(0.6, details={"questions": ["Who?"], "noncommittal": [0], "similarities": [0.6]})
    ] * 6
    relevancy[2] = MetricResult(
        0.0, details={"questions": ["谁？"], "noncommittal": [1], "similarities": [0.4]}
    )
    entities = [
        MetricResult(0.5, details={"reference_entities": ["Paris", "1889"], "matched": ["Paris"]})
    ] * 6
    return EvaluationResult(
        samples=samples,
        results={
            "faithfulness": faithfulness,
            "context_precision": precision,
            "nv_accuracy": accuracy,
            "answer_relevancy": relevancy,
            "context_entity_recall": entities,
        },
        languages=["en", "en", "en", "zh", "zh", "zh"],
        stages={
            "judge.generate[statements@1]": StageStats(
                requests=12,
                unique=6,
                cache_hits=2,
                sent=4,
                tokens_in=12345,
                tokens_out=678,
                backend_seconds=3.5,
            ),
            "embedder.query": StageStats(requests=6, unique=6, sent=6, failed=1, backend_seconds=0.25),
        },
        provenance={
            "models": {"judge": "tiny-judge@abc", "embedder": "tiny-embedder@def"},
            "judge_mode": "classify",
            "dataset": {"source": f"file 'a{SCRIPT}.json'", "samples": 6},
        },
        wall_seconds=42.5,
    )


@pytest.fixture(scope="module")
def page() -> str:
    return render_run_report(hand_built())


def section(page: str, metric: str) -> str:
    """The lowest-samples block of one metric: from its <h3> to the next heading."""
    start = page.index(f'<h3 id="{anchor(metric)}">')
    end = re.compile(r"<h[23] ").search(page, start + 1)
    return page[start : end.start() if end else None]


def test_every_section_and_the_run_facts_are_there(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page
    for heading in SECTIONS:
        assert f'<h2 id="{anchor(heading)}">{heading}</h2>' in page
    for fact in ("tiny-judge@abc", "tiny-embedder@def", "classify", "42.5s", "en 3, zh 3"):
        assert fact in page
    assert "<dt>samples</dt><dd>6</dd>" in page
    # Engine stages: prompt tokens, computed (unknown here), generated, backend seconds, and the total.
    assert "<td>12,345</td>" in page and "<td>678</td>" in page and "<td>3.5</td>" in page
    assert "all stages" in page and "<td>3.8</td>" in page  # 3.5 + 0.25 backend seconds, rounded
    assert "&quot;judge_mode&quot;: &quot;classify&quot;" in page  # provenance, as escaped JSON


def test_the_aggregate_table_counts_nan_with_its_reason(page: str) -> None:
    row = re.search(r'<tr><td class="label"><a href="#m-faithfulness">faithfulness</a>.*?</tr>', page)
    assert row, "no faithfulness row"
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0))
    # count, mean, its 95% interval, min, max, NaN, mean en, mean zh, reasons
    assert cells[1:3] == ["5", "0.480"] and cells[4:7] == ["0.100", "0.900", "1"]
    low, high = hand_built().intervals()["faithfulness"]  # the interval of table() and summary.json
    assert cells[3] == f"{low:.3f} – {high:.3f}" and low < 0.48 < high
    assert cells[7:9] == ["0.600", "0.300"]
    assert cells[9] == "parse_failure: not JSON &times;1"


def test_the_lowest_samples_are_the_lowest(page: str) -> None:
    assert lowest_samples(hand_built()["faithfulness"]) == ([3, 1, 4], [5])
    block = section(page, "faithfulness")
    shown = re.findall(r"sample <b>([^<]+)</b>", block)
    assert shown == ["zh-3", "en-1", "zh-4", "zh-5"]  # the three lowest, lowest first, then the NaN one
    assert "parse_failure: not JSON" in block and "raw judge output" in block


def test_user_text_and_names_are_escaped(page: str) -> None:
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "A tag &amp; more" in page
    assert "水的化学式是什么？" in page  # Chinese as it is, not as entities


def test_no_external_reference_and_no_script(page: str) -> None:
    targets = re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]+)""", page, flags=re.IGNORECASE)
    assert targets and all(t.startswith("#") for t in targets), targets
    assert "http://" not in page and "https://" not in page
    assert "@import" not in page and "url(" not in page


def test_each_detail_shape_is_explained(page: str) -> None:
    faith = section(page, "faithfulness")
    assert 'class="low">0.200</td>' in faith and "<td>0.900</td>" in faith  # p(supported), low marked
    assert "x" * 400 + "… (900 chars)" in faith  # an unknown key, truncated
    precision = section(page, "context_precision")
    assert "水由两个氢原子和一个氧原子组成。" in precision and 'class="low">0.300</td>' in precision
    accuracy = section(page, "nv_accuracy")
    assert "judge 2" in accuracy and "[0.7, 0.2, 0.1]" in accuracy and "label probabilities" in accuracy
    relevancy = section(page, "answer_relevancy")
    assert "谁？" in relevancy and "similarity" in relevancy and 'class="low">1</td>' in relevancy
    entities = section(page, "context_entity_recall")
    assert "<td>yes</td>" in entities and 'class="low">no</td>' in entities


def test_details_of_an_unknown_shape_are_listed_generically() -> None:
    out = details_html({"tp": 1, "nested": {"a": [1, 2]}, "empty": None})
    assert "<dt>tp</dt><dd>1</dd>" in out and "{&quot;a&quot;: [1, 2]}" in out and "<dd>–</dd>" in out
    assert details_html({}) == ""


def test_histograms_give_their_counts_as_text() -> None:
    svg = histogram_svg("m<1>", {"en": [0.95, 1.0, 0.05], "zh": [math.nan, 0.5]})
    assert svg.startswith("<svg") and "m&lt;1&gt;" in svg
    assert "<title>en [0.9, 1.0]: 2</title>" in svg and "<title>zh [0.5, 0.6): 1</title>" in svg
    assert "en (n=3)" in svg and "zh (n=1)" in svg  # NaN is not drawn


def test_a_saved_and_loaded_run_gives_the_same_report(tmp_path) -> None:
    result = hand_built()
    paths = result.save(tmp_path / "run")
    assert paths["report"] == tmp_path / "run" / REPORT_FILE

    def stable(text: str) -> str:
        return re.sub(r"Report written [^<]*", "", text)

    again = write_run_report(EvaluationResult.load(tmp_path / "run"), tmp_path / "again")
    assert stable(again.read_text("utf-8")) == stable(paths["report"].read_text("utf-8"))
