"""evaluate(): validation before any model loads, the whole flow, caching and provenance."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ascend_eval
from ascend_eval.models.errors import ConfigError, DataError
from tests.conftest import SUPPORT_RULE_YES


def test_import_is_light():
    code = (
        "import sys, ascend_eval; ascend_eval.evaluate; "
        "bad = [m for m in ('torch', 'vllm', 'torch_npu', 'transformers', 'pandas') if m in sys.modules]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_column_fails_before_any_model_loads():
    code = textwrap.dedent("""
        import sys, ascend_eval
        from ascend_eval.models.errors import DataError
        try:
            data = {"question": ["q"], "answer": ["a"]}
            ascend_eval.evaluate(data, ["faithfulness"], judge="/no/such/model")
        except DataError as e:
            print(e)
        print("torch loaded:", "torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "faithfulness" in out and "retrieved_contexts" in out and "column_map" in out
    assert "torch loaded: False" in out


def test_unknown_metric_and_language_are_config_errors(rule_judge):
    with pytest.raises(ConfigError, match="Did you mean"):
        ascend_eval.evaluate("bilingual-example", ["faithfulnes"], judge=rule_judge)
    with pytest.raises(ConfigError, match="language="):
        ascend_eval.evaluate("bilingual-example", ["faithfulness"], judge=rule_judge, language="fr")


def test_bundled_example_end_to_end(rule_judge, ngram_embedder, tmp_path):
    rounds = []
    result = ascend_eval.evaluate(
        "bilingual-example",
        ["faithfulness", "answer_similarity"],
        judge=rule_judge,
        embedder=ngram_embedder,
        cache_dir=tmp_path,
        progress=False,
        on_round=rounds.append,
    )
    assert len(result.samples) == 16
    assert result.languages == ["en"] * 8 + ["zh"] * 8
    assert result.metrics == ["faithfulness", "answer_similarity"]
    # round 1: one statement extraction per distinct answer (a retrieval pair's flawed twin keeps the
    # good row's answer: 12 of 16) and one embedding per distinct text (12 answers and 8 references, one
    # Chinese answer word for word its reference: 19); round 2: every verdict in one batch
    assert rounds[0].requests == 16 + 32
    assert rounds[0].batches == {"judge.generate[statements@1]": 12, "embedder.document": 19}
    assert list(rounds[1].batches) == ["judge.classify[statement_support@1]"]
    assert rule_judge.calls[0] == ("generate", 12)
    assert all(0.0 <= s <= 1.0 for s in result["faithfulness"])
    assert result.provenance["models"] == {"judge": "rules-v1", "embedder": "ngram-64"}
    assert result.provenance["prompts"] == ["statement_support@1", "statements@1"]

    again = ascend_eval.evaluate(
        "bilingual-example", ["faithfulness"], judge=rule_judge, cache_dir=tmp_path, progress=False
    )
    assert again["faithfulness"] == result["faithfulness"]
    assert len(rule_judge.calls) == 2  # the re-run was answered entirely from the cache


def test_language_can_be_forced(rule_judge):
    result = ascend_eval.evaluate(
        "bilingual-example",
        ["faithfulness"],
        judge=rule_judge,
        language="zh",
        cache_dir=False,
        progress=False,
    )
    assert set(result.languages) == {"zh"}


def test_only_needed_backends_are_built(rule_judge):
    # answer_similarity alone needs no judge: an unusable judge spec is never touched
    class Unit:
        model_id = "unit"

        def embed(self, texts, *, kind="document"):
            import numpy as np

            return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)

    result = ascend_eval.evaluate(
        "bilingual-example",
        ["answer_similarity"],
        judge="/no/such/model",
        embedder=Unit(),
        cache_dir=False,
        progress=False,
    )
    assert result["answer_similarity"][0] == pytest.approx(1.0)


def test_column_map_reaches_the_loader(rule_judge):
    data = {"query": ["Q?"], "answer": ["A holds."], "docs": [["A holds"]]}
    result = ascend_eval.evaluate(
        data,
        ["faithfulness"],
        judge=rule_judge,
        cache_dir=False,
        progress=False,
        column_map={"user_input": "query", "retrieved_contexts": "docs"},
    )
    # the rule judge's 0.9, calibrated and scored as an expected value (tests/conftest.py)
    assert result["faithfulness"] == [pytest.approx(SUPPORT_RULE_YES)]
    with pytest.raises(DataError):
        ascend_eval.evaluate(data, ["faithfulness"], judge=rule_judge, cache_dir=False, progress=False)


def test_a_killed_evaluation_resumes_from_its_cache(rule_judge, tmp_path):
    """kill -9 in the middle of the verdict round; the re-run pays only for what was not answered."""
    repo = Path(__file__).resolve().parents[1]
    script = textwrap.dedent(f"""
        import os, signal
        import ascend_eval
        from ascend_eval.models.judge.replay import ReplayJudge
        from tests.conftest import statements_rule

        def die(request):
            os.kill(os.getpid(), signal.SIGKILL)

        judge = ReplayJudge(statements_rule, die, model_id="rules-v1")
        ascend_eval.evaluate("bilingual-example", ["faithfulness"], judge=judge, cache_dir={str(tmp_path)!r},
                             progress=False)
    """)
    run = subprocess.run([sys.executable, "-c", script], cwd=repo, capture_output=True, text=True)
    assert run.returncode == -9, run.stderr

    rounds = []
    result = ascend_eval.evaluate(
        "bilingual-example",
        ["faithfulness"],
        judge=rule_judge,
        cache_dir=tmp_path,
        progress=False,
        on_round=rounds.append,
    )
    assert rounds[0].cache_hits == 12 and rounds[0].sent == 0  # the 12 distinct answers' statements
    assert [kind for kind, _ in rule_judge.calls] == ["classify"]
    assert result.aggregates()[0]["count"] == 16


def test_calibration_and_scoring_are_checked_before_any_model_loads(rule_judge):
    for kwargs, match in [
        ({"calibration": "platt"}, "calibration="),
        ({"calibration": "anchored", "ragas_compat": True}, "ragas_compat"),
        ({"calibration": "content_free", "judge_mode": "generate"}, "generate mode"),
        ({"scoring": "soft"}, "scoring="),
        ({"scoring": "expected", "judge_mode": "generate"}, "classify"),
    ]:
        with pytest.raises(ConfigError, match=match):
            ascend_eval.evaluate("bilingual-example", ["faithfulness"], judge=rule_judge, **kwargs)
    assert rule_judge.calls == []


def test_calibration_and_expected_scores_are_the_defaults_and_recorded(rule_judge, tmp_path):
    data = {
        "user_input": ["Where is the tower?"],
        "retrieved_contexts": [["The tower is in Paris. It opened in 1889."]],
        "response": ["The tower is in Paris. It is 500 metres tall."],
    }
    run = ascend_eval.evaluate(data, ["faithfulness"], judge=rule_judge, cache_dir=tmp_path, progress=False)
    assert run.provenance["calibration"] == "anchored" and run.provenance["scoring"] == "expected"
    # The rule judge answers 0.9 or 0.2, so its anchors put the threshold at their log-odds midpoint.
    details = run.rows(details=True)[0]["faithfulness_details"]
    odds = (0.9 / 0.1 * 0.2 / 0.8) ** 0.5
    assert details["calibration"]["threshold"] == pytest.approx(odds / (1 + odds), abs=1e-6)  # 0.6
    p = details["p_supported"]  # calibrated: above 0.5 for the supported statement, below for the other
    assert p[0] > 0.5 > p[1] and run["faithfulness"] == [pytest.approx(sum(p) / 2)]
    asked = sum(n for kind, n in rule_judge.calls if kind == "classify")
    assert asked == 2 + 6  # two statements, three yes-anchors and three no-anchors

    rule_judge.calls.clear()
    hard = ascend_eval.evaluate(
        data, ["faithfulness"], judge=rule_judge, cache_dir=tmp_path, progress=False, calibration="off",
        scoring="threshold",
    )  # fmt: skip
    assert hard["faithfulness"] == [0.5] and rule_judge.calls == []  # the same verdicts, from the cache
    compat = ascend_eval.evaluate(
        data, ["faithfulness"], judge=rule_judge, cache_dir=tmp_path, progress=False, ragas_compat=True
    )
    assert (
        compat.provenance["calibration"] == "off"
        and compat.provenance["scoring"] == "threshold"
        and "calibration" not in compat.rows(details=True)[0]["faithfulness_details"]
    )
    generate = ascend_eval.evaluate(
        data, ["faithfulness"], judge=rule_judge, cache_dir=False, progress=False, judge_mode="generate"
    )
    assert generate.provenance["calibration"] == "off" and generate.provenance["scoring"] == "threshold"
