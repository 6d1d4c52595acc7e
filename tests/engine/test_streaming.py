"""The streaming engine: no round barrier, plan order, bounded live plans, a commit per answer, progress.

The backends here are real threads with real waits (a judge that holds chosen requests on an event), so
the tests see the engine's concurrency as a user's run would, without a model.
"""

from __future__ import annotations

import threading
import time
from itertools import pairwise

import pytest

from ascend_eval.engine import Backends, Engine, PlanError, Progress, RequestCache
from ascend_eval.metrics import Faithfulness, PlanContext
from ascend_eval.models.base import GenerateResult
from ascend_eval.models.judge.replay import ReplayJudge
from tests.engine.test_scheduler import samples

EN = PlanContext(language="en")


class ThreadedJudge(ReplayJudge):
    """A rule judge that the engine may call from several threads (`max_concurrency`), one request per call,
    and that holds every request whose prompt contains `hold` until `release` is set."""

    max_batch = 1

    def __init__(self, rule_judge: ReplayJudge, *, concurrency: int, hold: str | None = None) -> None:
        super().__init__(rule_judge.generate_rule, rule_judge.classify_rule, model_id=rule_judge.model_id)
        self.max_concurrency = concurrency
        self.hold = hold
        self.release = threading.Event()
        self.prompts: list[tuple[str, str]] = []
        """(kind, the last message) of every request, in the order the calls came."""

    def _wait(self, requests) -> None:
        if self.hold and any(self.hold in r.messages[-1].content for r in requests):
            assert self.release.wait(20), "the held request was never released"

    def generate(self, requests):
        self._wait(requests)
        self.prompts += [("generate", r.messages[-1].content) for r in requests]
        return super().generate(requests)

    def classify(self, requests):
        self._wait(requests)
        self.prompts += [("classify", r.messages[-1].content) for r in requests]
        return super().classify(requests)


def plans(data, metric=None):
    metric = metric or Faithfulness()
    return {(i, metric.name): metric.plan(s, EN) for i, s in enumerate(data)}


def test_a_held_request_holds_back_only_its_own_plan(rule_judge):
    judge = ThreadedJudge(rule_judge, concurrency=4, hold="Fact 0 ")
    done_before_release: list[int] = []

    def watch(progress: Progress) -> None:
        if not judge.release.is_set() and progress.scores_done == 9:
            done_before_release.append(progress.scores_done)
            judge.release.set()

    engine = Engine(Backends(judge=judge), on_progress=watch, progress_interval=0.05)
    out = engine.run(plans(samples(10)))
    # the nine other samples went through both of their steps while sample 0's first request was held
    assert done_before_release == [9]
    assert all(out[(i, "faithfulness")].score == 0.5 for i in range(10))


def test_requests_go_out_in_plan_order(rule_judge):
    judge = ThreadedJudge(rule_judge, concurrency=1)
    judge.max_batch = 3
    Engine(Backends(judge=judge)).run(plans(samples(7)))
    # a lane takes the earliest plans first: the statement calls are samples 0-2, 3-5, 6, in that order
    generated = [text for kind, text in judge.prompts if kind == "generate"]
    order = [next(i for i in range(7) if f"Fact {i} " in text) for text in generated]
    assert order == list(range(7))


def test_live_plans_are_bounded(rule_judge):
    engine = Engine(Backends(judge=rule_judge), max_live_plans=2)
    out = engine.run(plans(samples(6)))
    assert max(n for _, n in rule_judge.calls) <= 2 * 2  # two live plans, at most two verdicts each
    assert all(out[(i, "faithfulness")].score == 0.5 for i in range(6))


def test_unanswered_requests_bound_new_plans_and_plans_fed_as_a_stream_all_finish(rule_judge):
    seen: list[tuple[int, object]] = []
    engine = Engine(Backends(judge=rule_judge), max_pending=1)
    data = samples(6)
    stream = (((i, "faithfulness"), Faithfulness().plan(s, EN)) for i, s in enumerate(data))
    out = engine.run(stream, total=6, on_outcome=lambda pid, o: seen.append((pid[0], o)))
    assert out == {}  # handed over, not kept
    assert sorted(i for i, _ in seen) == list(range(6)) and all(o.score == 0.5 for _, o in seen)
    # one unanswered request at a time: each plan starts only once the previous one's are answered
    assert max(n for _, n in rule_judge.calls) <= 2


def test_a_window_full_of_answers_no_plan_waits_for_still_lets_the_next_plans_start(rule_judge):
    """Sample 0's verdicts fail as a whole call while sample 1's are still out: the window is held by
    requests whose plans have ended, and the run must still reach the samples after them."""

    class FailingFirst(ThreadedJudge):
        def classify(self, requests):
            if any("Fact 0 " in r.messages[-1].content for r in requests):
                return ["backend down"] * len(requests)
            time.sleep(0.05)
            return super().classify(requests)

    judge = FailingFirst(rule_judge, concurrency=2)
    engine = Engine(Backends(judge=judge), max_pending=2, max_live_plans=2)
    out = engine.run(plans(samples(5)))
    assert isinstance(out[(0, "faithfulness")], PlanError)
    assert all(out[(i, "faithfulness")].score == 0.5 for i in range(1, 5))


def test_every_answer_is_committed_as_it_comes_back(rule_judge, tmp_path):
    """One request per call, 50 ms each: when a call starts, every answer but the one just back (which
    the engine's thread may be committing at that moment) is in the file already."""
    seen: list[int] = []
    path = tmp_path / "c.sqlite"
    cache = RequestCache(path)

    def stored() -> int:  # what another process would find in the file now
        with RequestCache(path) as reader:
            return len(reader)

    class Counting(ThreadedJudge):
        def generate(self, requests):
            seen.append(stored())
            time.sleep(0.05)
            return super().generate(requests)

        def classify(self, requests):
            seen.append(stored())
            time.sleep(0.05)
            return super().classify(requests)

    judge = Counting(rule_judge, concurrency=1)
    with cache:
        Engine(Backends(judge=judge), cache).run(plans(samples(3)))
        assert len(cache) == 9
    # with one worker the calls run one after another: call n starts with n - 1 or n answers stored
    assert all(n - 1 <= found <= n for n, found in enumerate(seen)), seen


def test_progress_is_reported_while_a_call_is_in_progress(rule_judge):
    judge = ThreadedJudge(rule_judge, concurrency=1, hold="Fact 1 ")
    times: list[float] = []

    def watch(progress: Progress) -> None:
        times.append(time.perf_counter())
        if len(times) == 6:
            judge.release.set()

    Engine(Backends(judge=judge), on_progress=watch, progress_interval=0.1).run(plans(samples(2)))
    gaps = [b - a for a, b in pairwise(times)]
    assert len(times) >= 6 and max(gaps) < 1.0


def test_a_failed_request_ends_its_plan_at_once(rule_judge):
    def flaky(request):
        if "Fact 2 " in request.messages[-1].content:
            return GenerateResult.failed("HTTP 500")
        return rule_judge.generate_rule(request)

    judge = ReplayJudge(flaky, rule_judge.classify_rule)
    engine = Engine(Backends(judge=judge))
    out = engine.run(plans(samples(4)))
    assert out[(2, "faithfulness")] == PlanError("backend_error: HTTP 500")
    assert [out[(i, "faithfulness")].score for i in (0, 1, 3)] == [0.5] * 3
    assert engine.stages["judge.generate[statements@1]"].failed == 1


def test_an_interrupt_in_a_backend_keeps_what_came_back(rule_judge, tmp_path):
    n = {"calls": 0}

    def interrupt_late(request):
        n["calls"] += 1
        if n["calls"] > 3:
            raise KeyboardInterrupt
        return rule_judge.classify_rule(request)

    judge = ThreadedJudge(rule_judge, concurrency=1)
    judge.classify_rule = interrupt_late
    with RequestCache(tmp_path / "c.sqlite") as cache, pytest.raises(KeyboardInterrupt):
        Engine(Backends(judge=judge), cache).run(plans(samples(3)))
    with RequestCache(tmp_path / "c.sqlite") as cache:
        assert len(cache) == 3 + 3  # three statement lists and the three verdicts before the interrupt


def test_stage_stats_add_up(rule_judge):
    engine = Engine(Backends(judge=rule_judge))
    engine.run(plans(samples(5)))
    stages = engine.stages
    assert stages["judge.generate[statements@1]"].sent == 5
    assert sum(s.sent for s in stages.values()) == sum(r.sent for r in engine.rounds) == 15


def test_stage_stats_count_what_an_in_process_judge_computed(tiny_llama_dir):
    """A TorchJudge counts the prompt tokens it ran; the engine shares each call's count out over its
    stages: a sample's verdicts share its long prefix, so far fewer tokens are computed than sent."""
    pytest.importorskip("torch")
    from ascend_eval.models.base import ClassifyRequest, Message
    from ascend_eval.models.judge.torch import TorchJudge, TorchJudgeConfig
    from ascend_eval.models.lazy import LazyJudge

    context = "The river floods every spring, so the town builds its houses on stilts. " * 12

    def plan(claim):
        request = ClassifyRequest((Message("user", f"{context}\nClaim: {claim}\nSupported?"),), ("Yes", "No"))
        results = yield [request]
        return results[0]

    runtime = TorchJudge(TorchJudgeConfig(model=tiny_llama_dir, device="cpu"))
    judge = LazyJudge(runtime.model_id, lambda: runtime)  # loads on the first call, as `evaluate` builds it
    engine = Engine(Backends(judge=judge))
    engine.run({claim: plan(claim) for claim in ("It floods.", "Houses stand on stilts.", "It is dry.")})
    (stage,) = engine.stages.values()
    assert stage.sent == 3
    assert stage.computed_prompt_tokens is not None
    assert 0 < stage.computed_prompt_tokens < stage.tokens_in * 0.6
    assert abs(stage.computed_prompt_tokens - runtime.computed_prompt_tokens) <= 1
