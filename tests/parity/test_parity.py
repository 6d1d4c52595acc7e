"""The parity proof: with identical judge decisions, `ragas_compat=True` scores equal RAGAS 0.4.3's.

RAGAS's legacy `evaluate()` and our `evaluate()` run on the same `EvaluationDataset`; every judge and
embedder answer on both sides comes from one `Script` (`dataset.build_script()`), found by the content of
the request. Each (metric, our judge_mode, sample) is then one test: equal to 1e-9, NaN equal to NaN.
Our side runs in both judge modes (per-statement `Classify` and RAGAS-style JSON verdicts), except for
the metrics whose requests do not depend on it (answer_similarity, answer_relevancy,
context_entity_recall). A case whose decision has no form in one judge mode (an NV judge that writes no
rating, a slip in a one-call JSON answer) is skipped there, with the reason.

Adding a metric is local:
1. `script.py`: a table for any new kind of decision (or use `put`/`get` with a new table name);
2. `ragas_judge.py`: `@ragas_prompt(...)` handlers for the RAGAS prompts the metric sends;
3. `our_judge.py`: `@our_prompt(...)` handlers for our prompts it sends;
4. `dataset.py`: the decisions (and any column) the cases need;
5. here: one `MetricAdapter` line in `ADAPTERS`.

No request leaves the machine: both libraries get their models passed in explicitly, RAGAS analytics are
off, OPENAI_API_KEY is removed (so an accidental default OpenAI client fails loudly instead of calling
out), and every socket connect or DNS lookup raises during the runs.
"""

from __future__ import annotations

import math
import socket
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("ragas", reason="the parity proof needs ragas==0.4.3 (pip install -e '.[test]')")

import ragas
import ragas._analytics as ragas_analytics  # RAGAS keeps its telemetry switches here
from ragas import EvaluationDataset
from ragas.metrics._answer_correctness import AnswerCorrectness as RagasAnswerCorrectness
from ragas.metrics._answer_relevance import AnswerRelevancy as RagasAnswerRelevancy
from ragas.metrics._answer_similarity import AnswerSimilarity as RagasAnswerSimilarity
from ragas.metrics._context_entities_recall import ContextEntityRecall as RagasContextEntityRecall
from ragas.metrics._context_precision import ContextPrecision as RagasContextPrecision
from ragas.metrics._context_precision import ContextUtilization as RagasContextUtilization
from ragas.metrics._context_recall import ContextRecall as RagasContextRecall
from ragas.metrics._faithfulness import Faithfulness as RagasFaithfulness
from ragas.metrics._noise_sensitivity import NoiseSensitivity as RagasNoiseSensitivity
from ragas.metrics._nv_metrics import AnswerAccuracy as RagasAnswerAccuracy
from ragas.metrics._nv_metrics import ContextRelevance as RagasContextRelevance
from ragas.metrics._nv_metrics import ResponseGroundedness as RagasResponseGroundedness

import ascend_eval
from ascend_eval.metrics import (
    AnswerAccuracy,
    AnswerCorrectness,
    AnswerRelevancy,
    AnswerSimilarity,
    ContextEntityRecall,
    ContextPrecision,
    ContextRecall,
    ContextRelevance,
    ContextUtilization,
    Faithfulness,
    Metric,
    NoiseSensitivity,
    ResponseGroundedness,
)
from tests.parity.dataset import CASES, STRICTNESS, Case, build_script, rows
from tests.parity.our_judge import ScriptedEmbedder, ScriptedJudge
from tests.parity.ragas_judge import (
    ScriptedRagasEmbeddings,
    ScriptedRagasLLM,
    fast_run_config,
)
from tests.parity.script import NV_SCALES, Script, ragas_reading

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::RuntimeWarning")

TOLERANCE = 1e-9
EXACT = 1e-12
"""For scores with no embedding arithmetic, which both libraries compute bit-identically."""
JUDGE_MODES = ("classify", "generate")


@dataclass(frozen=True)
class MetricAdapter:
    """One metric on both sides.

    Attributes:
        name: the result column, in RAGAS's results and in ours.
        ragas: builds the RAGAS legacy metric, given the scripted LLM and embeddings.
        ours: builds our metric.
        judge_modes: our `judge_mode`s to compare (a metric that never asks the judge needs only one).
        tolerance: the largest difference that counts as equal.
    """

    name: str
    ragas: Callable[[ScriptedRagasLLM, ScriptedRagasEmbeddings], Any]
    ours: Callable[[], Metric]
    judge_modes: tuple[str, ...] = JUDGE_MODES
    tolerance: float = TOLERANCE


def _noise(mode: str) -> MetricAdapter:
    # RAGAS's evaluate() names a metric with a mode "<name>(mode=<mode>)", as we name the column.
    return MetricAdapter(
        f"noise_sensitivity(mode={mode})",
        lambda llm, emb: RagasNoiseSensitivity(llm=llm, mode=mode),  # type: ignore[arg-type]
        lambda: NoiseSensitivity(mode=mode),  # type: ignore[arg-type]
    )


ADAPTERS: tuple[MetricAdapter, ...] = (
    MetricAdapter("faithfulness", lambda llm, emb: RagasFaithfulness(llm=llm), Faithfulness),
    MetricAdapter(
        "answer_similarity",
        lambda llm, emb: RagasAnswerSimilarity(embeddings=emb),
        AnswerSimilarity,
        judge_modes=("classify",),
    ),
    MetricAdapter(
        "answer_correctness",
        lambda llm, emb: RagasAnswerCorrectness(llm=llm, embeddings=emb),
        AnswerCorrectness,
    ),
    # Our answer_relevancy and context_entity_recall ask the same JSON requests in both judge modes.
    MetricAdapter(
        "answer_relevancy",
        lambda llm, emb: RagasAnswerRelevancy(llm=llm, embeddings=emb, strictness=STRICTNESS),
        lambda: AnswerRelevancy(strictness=STRICTNESS),
        judge_modes=("classify",),
    ),
    # RAGAS's 1e-10 in the average precision's denominator changes scores by less than TOLERANCE; judge
    # metrics compute the same float operations on both sides (bit-identical), so compare them closer.
    MetricAdapter(
        "context_precision",
        lambda llm, emb: RagasContextPrecision(llm=llm),
        ContextPrecision,
        tolerance=EXACT,
    ),
    MetricAdapter(
        "context_utilization",
        lambda llm, emb: RagasContextUtilization(llm=llm),
        ContextUtilization,
        tolerance=EXACT,
    ),
    MetricAdapter("context_recall", lambda llm, emb: RagasContextRecall(llm=llm), ContextRecall),
    MetricAdapter(
        "context_entity_recall",
        lambda llm, emb: RagasContextEntityRecall(llm=llm),
        ContextEntityRecall,
        judge_modes=("classify",),
    ),
    _noise("relevant"),
    _noise("irrelevant"),
    MetricAdapter("nv_accuracy", lambda llm, emb: RagasAnswerAccuracy(llm=llm), AnswerAccuracy),
    MetricAdapter("nv_context_relevance", lambda llm, emb: RagasContextRelevance(llm=llm), ContextRelevance),
    MetricAdapter(
        "nv_response_groundedness",
        lambda llm, emb: RagasResponseGroundedness(llm=llm),
        ResponseGroundedness,
    ),
)


@dataclass
class ParityRun:
    script: Script
    ragas_llm: ScriptedRagasLLM
    ragas_embeddings: ScriptedRagasEmbeddings
    our_judges: dict[str, ScriptedJudge]
    """judge_mode -> our scripted judge for that run."""
    our_embedder: ScriptedEmbedder
    ragas_scores: dict[str, list[float]]
    our_results: dict[str, Any]
    """judge_mode -> our `EvaluationResult` (with the adapters that compare in that mode)."""


class NetworkBlocked(RuntimeError):
    pass


BLOCKED: list[str] = []
"""Every network attempt made during the runs. RAGAS swallows errors in its analytics, so an attempt
would otherwise go unnoticed; `test_every_request_was_scripted` asserts this stays empty."""


def _no_network(*args: Any, **kwargs: Any) -> Any:
    BLOCKED.append(repr(args[:2]))
    raise NetworkBlocked(f"the parity test must not touch the network (attempted with {args[:2]!r})")


_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    # Unix sockets stay local (the event loop's self-pipe); everything else is refused.
    if self.family == socket.AF_UNIX:
        return _real_connect(self, address)
    return _no_network(address)


@pytest.fixture(scope="module")
def parity(tmp_path_factory: pytest.TempPathFactory) -> ParityRun:
    folder = tmp_path_factory.mktemp("parity")
    # The decisions travel through their JSON form, so what runs is what a recorded script replays.
    script = Script.load(build_script().save(folder / "script.json"))
    dataset = EvaluationDataset.from_list(rows())

    ragas_llm = ScriptedRagasLLM(script)
    ragas_embeddings = ScriptedRagasEmbeddings(script)
    our_judges = {mode: ScriptedJudge(script) for mode in JUDGE_MODES}
    our_embedder = ScriptedEmbedder(script)

    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("RAGAS_DO_NOT_TRACK", "true")
            mp.delenv("OPENAI_API_KEY", raising=False)
            # RAGAS writes a user-id file under the user data dir the first time it builds an event.
            mp.setenv("XDG_DATA_HOME", str(folder / "xdg"))
            ragas_analytics.do_not_track.cache_clear()
            ragas_analytics.get_userid.cache_clear()
            mp.setattr(socket.socket, "connect", _guarded_connect)
            mp.setattr(socket, "create_connection", _no_network)
            mp.setattr(socket, "getaddrinfo", _no_network)

            ragas_result = ragas.evaluate(
                dataset,
                metrics=[a.ragas(ragas_llm, ragas_embeddings) for a in ADAPTERS],
                llm=ragas_llm,
                embeddings=ragas_embeddings,
                run_config=fast_run_config(),
                raise_exceptions=False,
                show_progress=False,
            )
            our_results = {
                mode: ascend_eval.evaluate(
                    dataset,
                    [a.ours() for a in ADAPTERS if mode in a.judge_modes],
                    judge=our_judges[mode].judge,
                    embedder=our_embedder,
                    ragas_compat=True,
                    judge_mode=mode,
                    cache_dir=False,
                    progress=False,
                )
                for mode in JUDGE_MODES
            }
    finally:
        # Forget what RAGAS cached under the patched environment.
        ragas_analytics.do_not_track.cache_clear()
        ragas_analytics.get_userid.cache_clear()

    ragas_scores = {a.name: [float(row[a.name]) for row in ragas_result.scores] for a in ADAPTERS}
    return ParityRun(script, ragas_llm, ragas_embeddings, our_judges, our_embedder, ragas_scores, our_results)


def _same(a: float, b: float, tolerance: float = TOLERANCE) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tolerance


def _cases() -> list[Any]:
    params = []
    for adapter in ADAPTERS:
        for mode in adapter.judge_modes:
            for index, case in enumerate(CASES):
                # A known mismatch is keyed by metric, or by "metric/judge_mode" when only one mode has it.
                reason = case.known_mismatch.get(
                    f"{adapter.name}/{mode}", case.known_mismatch.get(adapter.name)
                )
                skip = case.comparability().get(f"{adapter.name}/{mode}")
                marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
                if skip:
                    marks = [pytest.mark.skip(reason=f"not comparable: {skip}")]
                param_id = f"{adapter.name}-{mode}-{case.id}"
                params.append(pytest.param(adapter.name, mode, index, id=param_id, marks=marks))
    return params


def _describe(case: Case, metric: str, mode: str, theirs: float, ours: float, detail: Any) -> str:
    return (
        f"{metric} (judge_mode={mode}) on {case.id!r}: RAGAS {theirs!r} vs ascend-eval {ours!r} "
        f"(difference {abs(theirs - ours) if not (math.isnan(theirs) or math.isnan(ours)) else 'nan'})\n"
        f"  ours: reason={detail.reason!r} details={detail.details!r}\n"
        f"  question={case.question!r}\n  response={case.response!r}\n  reference={case.reference!r}\n"
        f"  statements={case.statements!r} verdicts={case.verdicts!r} raw={case.raw!r}\n"
        f"  ref_statements={case.ref_statements!r} tp={case.tp!r} covered={case.covered!r}\n"
        f"  vectors={case.vectors!r}"
    )


def test_every_request_was_scripted(parity: ParityRun) -> None:
    """A missing decision or an unknown prompt would turn into an unexplained NaN on either side."""
    assert BLOCKED == []
    assert parity.script.misses == []
    assert parity.ragas_llm.errors == []
    assert parity.ragas_embeddings.errors == []
    for judge in parity.our_judges.values():
        assert judge.errors == []
    assert parity.our_embedder.errors == []


def _parses(c: Case, which: str) -> bool:
    """Does RAGAS get a statement list for the response / the reference (directly or after its fixer)?"""
    if which == "response":
        return c.raw is None or bool(c.statements)
    return c.ref_raw is None


def _needs_fix(c: Case, which: str) -> bool:
    """Does RAGAS's first parse of that statement extraction fail (one fixer call)? A fenced answer
    parses directly; full-width JSON parses after the fix; unparseable text fails again after it."""
    if which == "response":
        return c.raw is not None and (c.fix is not None or not c.statements)
    return c.ref_raw is not None


def _nv_asked(c: Case, metric: str) -> bool:
    """RAGAS legacy's shortcuts: nv_context_relevance and nv_response_groundedness skip the judges."""
    joined = c.joined.strip()
    if metric == "nv_context_relevance":
        return bool(c.question.strip()) and bool(joined) and joined not in c.question.strip()
    if metric == "nv_response_groundedness":
        return bool(c.response.strip()) and bool(joined) and c.response.strip() not in joined
    return True


def expected_ragas_calls(cases: tuple[Case, ...]) -> Counter[tuple[str, int]]:
    """(handler, n) -> the LLM calls RAGAS's legacy metrics make on these cases, from their control flow
    (ragas/metrics/_*.py): which prompts each metric sends, in which order, and where it stops."""
    calls: Counter[tuple[str, int]] = Counter()
    for c in cases:
        response_ok, reference_ok = _parses(c, "response"), _parses(c, "reference")
        fixes = 0
        # faithfulness: response statements, then NLI over them if there are any.
        calls["statement_generator", 1] += 1
        fixes += _needs_fix(c, "response")
        calls["nli_statements", 1] += response_ok and bool(c.statements)
        # answer_correctness: response statements, reference statements, then the classifier.
        calls["statement_generator", 1] += 1 + response_ok
        fixes += _needs_fix(c, "response") + (response_ok and _needs_fix(c, "reference"))
        both = response_ok and reference_ok
        calls["correctness_classifier", 1] += both and bool(c.statements or c.ref_statements)
        # noise_sensitivity, each mode: only with every column non-empty; reference first, then the
        # response, then 2K + 1 NLI calls.
        if c.question and c.response and c.reference and c.contexts:
            calls["statement_generator", 1] += 2 * (1 + reference_ok)
            fixes += 2 * (_needs_fix(c, "reference") + (reference_ok and _needs_fix(c, "response")))
            calls["nli_statements", 1] += 2 * both * (2 * len(c.contexts) + 1)
        # answer_relevancy: one call for all generations; a failed one is fixed (once: it then raises).
        calls["response_relevance", STRICTNESS] += 1
        fixes += any(isinstance(g, str) for g in c.questions or ())
        # context_precision and context_utilization: one call per context each.
        calls["context_precision", 1] += 2 * len(c.contexts)
        # context_recall: one attribution call over the reference.
        calls["context_recall", 1] += 1
        fixes += _needs_fix(c, "reference")
        # context_entity_recall: the reference's entities, then the joined contexts'.
        calls["entities", 1] += 1 + (not isinstance(c.ref_entities, str))
        fixes += isinstance(c.ref_entities, str) or isinstance(c.ctx_entities, str)
        # The NV metrics: both judges unless a shortcut applies; a judge with no rating is asked 5 times.
        for metric in ("nv_accuracy", "nv_context_relevance", "nv_response_groundedness"):
            if _nv_asked(c, metric):
                for judge in (1, 2):
                    text = c.ratings.get(f"{metric}/{judge}", "0")
                    calls[f"{metric}_judge{judge}", 1] += 5 if ragas_reading(metric, text) is None else 1
        calls["fix_output_format", 1] += fixes
    return +calls


def test_ragas_took_the_expected_paths(parity: ParityRun) -> None:
    """The harness really exercises what the cases claim: every prompt RAGAS sends, how often, with which
    n (answer_relevancy's one call with n=3), its fixer calls, and its NV retries."""
    assert parity.ragas_llm.generations == expected_ragas_calls(CASES)
    reaches_similarity = [c for c in CASES if _parses(c, "response") and _parses(c, "reference")]
    relevancy_scored = [
        c
        for c in CASES
        if c.questions is None
        or (
            not any(isinstance(g, str) for g in c.questions)
            and not all(not isinstance(g, str) and g[0] == "" for g in c.questions)
        )
    ]
    assert parity.ragas_embeddings.calls == {
        # answer_similarity, and answer_correctness once its F-beta is computed: one call per text.
        "aembed_documents": 2 * len(CASES) + 2 * len(reaches_similarity),
        # answer_relevancy: the question as a query, the generated questions as documents.
        "embed_query": len(relevancy_scored),
        "embed_documents": len(relevancy_scored),
    }


GENERATE_ONLY = {
    "statement_verdicts",
    "correctness",
    "context_useful_verdict",
    "context_attribution",
    *(f"{m}_judge{j}_json" for m in NV_SCALES for j in (1, 2)),
}
CLASSIFY_ONLY = {
    "statement_support",
    "context_useful",
    *(f"{m}_judge{j}" for m in NV_SCALES for j in (1, 2)),
}


def test_ours_took_the_expected_paths(parity: ParityRun) -> None:
    """Each judge mode sends its own form of every verdict and rating (and never the other's), three
    seeded question generations per response, and no NV retries."""
    for mode, result in parity.our_results.items():
        assert result.provenance["ragas_compat"] is True
        assert result.provenance["judge_mode"] == mode
    classify, generate = (parity.our_judges[mode].calls for mode in JUDGE_MODES)
    assert set(classify) >= CLASSIFY_ONLY and not set(classify) & GENERATE_ONLY
    assert set(generate) >= GENERATE_ONLY and not set(generate) & CLASSIFY_ONLY
    assert classify["response_question"] == STRICTNESS * len(CASES)
    for metric in NV_SCALES:
        asked = sum(_nv_asked(c, metric) for c in CASES)
        for judge in (1, 2):
            assert classify[f"{metric}_judge{judge}"] == generate[f"{metric}_judge{judge}_json"] == asked


@pytest.mark.parametrize(("metric", "mode", "index"), _cases())
def test_parity(parity: ParityRun, metric: str, mode: str, index: int) -> None:
    case = CASES[index]
    theirs = parity.ragas_scores[metric][index]
    detail = parity.our_results[mode].results[metric][index]
    ours = float(detail.score)
    tolerance = next(a.tolerance for a in ADAPTERS if a.name == metric)
    assert _same(theirs, ours, tolerance), _describe(case, metric, mode, theirs, ours, detail)


def test_script_json_round_trip(tmp_path: Any) -> None:
    script = build_script()
    again = Script.load(script.save(tmp_path / "script.json"))
    assert again.to_json() == script.to_json()
    assert again.tables() == script.tables()
    case = next(c for c in CASES if c.id == "en-real-vectors")
    assert again.embedding(case.reference) == list(case.vectors[0])  # bit-identical floats


def test_script_rejects_conflicts_and_inexact_vectors() -> None:
    script = Script()
    script.set_verdict("ctx", "s", 1)
    script.set_verdict("ctx", " s ", 1)  # the same decision: whitespace around a statement is not content
    with pytest.raises(ValueError, match="Conflicting"):
        script.set_verdict("ctx", "s", 0)
    with pytest.raises(ValueError, match="float32-exact"):
        script.set_embedding("t", [0.1, 0.2])
    with pytest.raises(LookupError):
        script.verdict("ctx", "unknown")
    assert script.misses == [("verdict", ("ctx", "unknown"))]
