"""The parity proof: with identical judge decisions, `ragas_compat=True` scores equal RAGAS 0.4.3's.

RAGAS's legacy `evaluate()` and our `evaluate()` run on the same `EvaluationDataset`; every judge and
embedder answer on both sides comes from one `Script` (`dataset.build_script()`), found by the content of
the request. Each (metric, our judge_mode, sample) is then one test: equal to 1e-9, NaN equal to NaN.
Our side runs in both judge modes (per-statement `Classify` and RAGAS-style JSON verdicts).

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("ragas", reason="the parity proof needs ragas==0.4.3 (pip install -e '.[test]')")

import ragas
import ragas._analytics
from ragas import EvaluationDataset
from ragas.metrics._answer_similarity import AnswerSimilarity as RagasAnswerSimilarity
from ragas.metrics._faithfulness import Faithfulness as RagasFaithfulness

import ascend_eval
from ascend_eval.metrics import AnswerSimilarity, Faithfulness, Metric
from tests.parity.dataset import CASES, Case, build_script, rows
from tests.parity.our_judge import ScriptedEmbedder, ScriptedJudge
from tests.parity.ragas_judge import (
    ScriptedRagasEmbeddings,
    ScriptedRagasLLM,
    fast_run_config,
)
from tests.parity.script import Script

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::RuntimeWarning")

TOLERANCE = 1e-9
JUDGE_MODES = ("classify", "generate")


@dataclass(frozen=True)
class MetricAdapter:
    """One metric on both sides.

    Attributes:
        name: the result column, in RAGAS's results and in ours.
        ragas: builds the RAGAS legacy metric, given the scripted LLM and embeddings.
        ours: builds our metric.
        judge_modes: our `judge_mode`s to compare (a metric that never asks the judge needs only one).
    """

    name: str
    ragas: Callable[[ScriptedRagasLLM, ScriptedRagasEmbeddings], Any]
    ours: Callable[[], Metric]
    judge_modes: tuple[str, ...] = JUDGE_MODES


ADAPTERS: tuple[MetricAdapter, ...] = (
    MetricAdapter("faithfulness", lambda llm, emb: RagasFaithfulness(llm=llm), Faithfulness),
    MetricAdapter(
        "answer_similarity",
        lambda llm, emb: RagasAnswerSimilarity(embeddings=emb),
        AnswerSimilarity,
        judge_modes=("classify",),
    ),
)


@dataclass
class ParityRun:
    script: Script
    ragas_llm: ScriptedRagasLLM
    ragas_embeddings: ScriptedRagasEmbeddings
    our_judge: ScriptedJudge
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
    our_judge = ScriptedJudge(script)
    our_embedder = ScriptedEmbedder(script)

    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("RAGAS_DO_NOT_TRACK", "true")
            mp.delenv("OPENAI_API_KEY", raising=False)
            # RAGAS writes a user-id file under the user data dir the first time it builds an event.
            mp.setenv("XDG_DATA_HOME", str(folder / "xdg"))
            ragas._analytics.do_not_track.cache_clear()
            ragas._analytics.get_userid.cache_clear()
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
                    judge=our_judge.judge,
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
        ragas._analytics.do_not_track.cache_clear()
        ragas._analytics.get_userid.cache_clear()

    ragas_scores = {a.name: [float(row[a.name]) for row in ragas_result.scores] for a in ADAPTERS}
    return ParityRun(script, ragas_llm, ragas_embeddings, our_judge, our_embedder, ragas_scores, our_results)


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= TOLERANCE


def _cases() -> list[Any]:
    params = []
    for adapter in ADAPTERS:
        for mode in adapter.judge_modes:
            for index, case in enumerate(CASES):
                # A known mismatch is keyed by metric, or by "metric/judge_mode" when only one mode has it.
                reason = case.known_mismatch.get(
                    f"{adapter.name}/{mode}", case.known_mismatch.get(adapter.name)
                )
                marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
                param_id = f"{adapter.name}-{mode}-{case.id}"
                params.append(pytest.param(adapter.name, mode, index, id=param_id, marks=marks))
    return params


def _describe(case: Case, metric: str, mode: str, theirs: float, ours: float, detail: Any) -> str:
    return (
        f"{metric} (judge_mode={mode}) on {case.id!r}: RAGAS {theirs!r} vs ascend-eval {ours!r} "
        f"(difference {abs(theirs - ours) if not (math.isnan(theirs) or math.isnan(ours)) else 'nan'})\n"
        f"  ours: reason={detail.reason!r} details={detail.details!r}\n"
        f"  question={case.question!r}\n  response={case.response!r}\n"
        f"  statements={case.statements!r} verdicts={case.verdicts!r} raw={case.raw!r}\n"
        f"  vectors={case.vectors!r}"
    )


def test_every_request_was_scripted(parity: ParityRun) -> None:
    """A missing decision or an unknown prompt would turn into an unexplained NaN on either side."""
    assert BLOCKED == []
    assert parity.script.misses == []
    assert parity.ragas_llm.errors == []
    assert parity.ragas_embeddings.errors == []
    assert parity.our_judge.errors == []
    assert parity.our_embedder.errors == []


def test_ragas_took_the_expected_paths(parity: ParityRun) -> None:
    """The harness really exercises what the cases claim: one statement call per sample, NLI only after
    a non-empty list, one fixer call per unparseable output, and one embedding call per text."""
    to_nli = [c for c in CASES if c.statements]
    # RAGAS cannot parse these: unparseable text (the judge repeats it when asked to fix it) and
    # full-width JSON (the script's fix answers valid JSON). A fenced answer parses directly.
    repeated = [c for c in CASES if c.raw is not None and c.fix is None and not c.statements]
    fixed = [c for c in CASES if c.fix is not None]
    calls = parity.ragas_llm.calls
    assert repeated and fixed
    assert calls["fix_output_format"] == len(repeated) + len(fixed)
    # Re-answering a repeated output asks the statement handler once more.
    assert calls["statement_generator"] == len(CASES) + len(repeated)
    assert calls["nli_statements"] == len(to_nli)
    assert parity.ragas_embeddings.calls == {"aembed_documents": 2 * len(CASES)}


def test_ours_took_the_expected_paths(parity: ParityRun) -> None:
    """Ours asks for statements once per non-empty response in each judge mode (never retrying a failed
    parse), then one classify request per statement, or one JSON verdict request per sample."""
    non_empty = [c for c in CASES if c.response.strip()]
    calls = parity.our_judge.calls
    assert calls["statements"] == len(non_empty) * len(JUDGE_MODES)
    assert calls["statement_support"] > 0
    assert calls["statement_verdicts"] > 0
    for mode, result in parity.our_results.items():
        assert result.provenance["ragas_compat"] is True
        assert result.provenance["judge_mode"] == mode


@pytest.mark.parametrize(("metric", "mode", "index"), _cases())
def test_parity(parity: ParityRun, metric: str, mode: str, index: int) -> None:
    case = CASES[index]
    theirs = parity.ragas_scores[metric][index]
    detail = parity.our_results[mode].results[metric][index]
    ours = float(detail.score)
    assert _same(theirs, ours), _describe(case, metric, mode, theirs, ours, detail)


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
