"""The sample-first layout (prompts/layout.py): every request of a sample starts with the same preamble and
question, every request that reads the contexts with the same contexts after them, a block shows only what
its task points to, the task and the item come after it, pointers stand for the sample's texts and read back
to them, and a prefix cache computes far fewer tokens than with the task-first layout on the same requests."""

from __future__ import annotations

import json

import pytest

from ascend_eval.data import Sample
from ascend_eval.engine import Backends, Engine
from ascend_eval.metrics import PlanContext, metric_names, resolve_metrics
from ascend_eval.models.base import ClassifyRequest, GenerateRequest
from ascend_eval.models.judge.replay import ReplayJudge
from ascend_eval.prompts import PROMPTS, STATEMENT_SUPPORT, SupportInput
from ascend_eval.prompts.layout import PREAMBLE, SampleBlock, read_block, read_input
from ascend_eval.prompts.nli_json import STATEMENT_VERDICTS, SupportListInput
from benchmarks.datagen import generate
from benchmarks.prefix_tokens import PrefixCache
from tests.conftest import split_sentences

TASK_FIRST_FAMILIES = ("context_useful", "answers_question")
"""The prompts that lost fidelity pairs sample first (docs/metrics.md, "Prompt layout"): context usefulness
on the short pairs, answer_relevancy's coverage verdict on the long English ones."""
WRITER_FAMILIES = ("statements", "entities", "response_question")
"""The prompts that write from a text, which they carry in every layout (`PromptSpec.writes_from`)."""
TASK_FIRST_USES = {"faithfulness": "statement_support"}
"""Metrics whose own requests of a shared prompt stay task first (`PlanContext.task_first`): faithfulness's
support verdicts, measured worse sample first on long Chinese pairs, where answer_correctness's were not."""
CONTEXTS_ONLY_FAMILIES = ("nv_response_groundedness_judge1", "nv_response_groundedness_judge2")
"""The prompts that point to the contexts only, sample first, and keep the answer in their input."""

EN = {
    "user_input": "Who designed the Eiffel Tower, and when did it open?",
    "retrieved_contexts": [
        (
            "The Eiffel Tower was designed by the engineering company of Gustave Eiffel. Its two senior "
            "engineers, Maurice Koechlin and Emile Nouguier, drew the first sketch in 1884, and the "
            "architect Stephen Sauvestre reworked the design, adding the decorative arches at the base."
        ),
        (
            "The tower opened in March 1889 for the World's Fair in Paris, which marked the centenary of the "
            "French Revolution.\nIt is 330 metres tall and was the tallest man-made structure in the world "
            "until the Chrysler Building in New York was finished in 1930."
        ),
        (
            "The Statue of Liberty was a gift from France to the United States. Its iron frame was designed "
            "by Gustave Eiffel, and it was dedicated in New York Harbor in October 1886, three years before "
            "the tower in Paris opened."
        ),
        (
            "Visitors reach the top of the tower by lifts or by climbing the stairs to the second floor. The "
            "tower is repainted every seven years, which takes about sixty tonnes of paint."
        ),
    ],
    "response": "Gustave Eiffel's company designed it. It opened in 1889. It is made of gold.",
    "reference": "The engineering company of Gustave Eiffel designed it, and it opened in March 1889.",
}
ZH = {
    "user_input": "长城在哪里？",
    "retrieved_contexts": [
        (
            "长城位于中国北方，东起河北山海关，西至甘肃嘉峪关，全长两万多公里。现存的长城大多修建于明朝，"
            "用砖石砌成，沿线设有关隘、城台和烽火台，用来传递军情和抵御北方游牧民族的侵扰。"
        ),
        (
            "故宫位于北京中轴线的中心，是明清两代的皇家宫殿，旧称紫禁城。它始建于明朝永乐四年，"
            "占地约七十二万平方米，有大小宫殿七十多座，房屋九千余间，是世界上现存规模最大的木质结构古建筑群之一。"
        ),
        (
            "黄河是中国第二长河，全长约五千四百六十四公里，发源于青海省巴颜喀拉山脉，流经九个省区，"
            "最后在山东省东营市注入渤海。黄河中游流经黄土高原，河水含沙量很大，因此呈黄色。"
        ),
        "八达岭长城位于北京市延庆区，是明长城中保存最好、也最具代表性的一段，每年接待大量中外游客。",
    ],
    "response": "长城在中国北方。长城是用黄金建造的。",
    "reference": "长城位于中国北方，东起山海关，西至嘉峪关。",
}
SHORT = {
    "user_input": "Where is the Eiffel Tower?",
    "retrieved_contexts": ["The Eiffel Tower is in Paris."],
    "response": "It is in Paris.",
    "reference": "Paris.",
}


class Recorder:
    """A rule judge that keeps every request: statements are the sentences of the text asked about,
    verdicts lean "yes"."""

    def __init__(self) -> None:
        self.sent: list[GenerateRequest | ClassifyRequest] = []

    def generate(self, request: GenerateRequest) -> str:
        self.sent.append(request)
        data = read_input(request.messages[-1].content)
        name = request.tag.split("@")[0]
        if name == "statements":
            return json.dumps({"statements": split_sentences(data["answer"])}, ensure_ascii=False)
        if name == "entities":
            return json.dumps({"entities": data["text"].split()[:3]}, ensure_ascii=False)
        return json.dumps({"question": data["response"][:30], "noncommittal": 0}, ensure_ascii=False)

    def classify(self, request: ClassifyRequest) -> list[float]:
        self.sent.append(request)
        return [0.3] * (len(request.labels) - 1) + [0.7]

    def judge(self) -> ReplayJudge:
        return ReplayJudge(self.generate, self.classify, model_id="layout-rules")


def _sent(
    row: dict, ngram_embedder, language: str, metrics: list[str] | None = None
) -> list[GenerateRequest | ClassifyRequest]:
    """Every request the metrics (default: the twelve) send for `row`, rendered sample first where the
    sample pays off."""
    recorder = Recorder()
    sample = Sample(**row)
    engine = Engine(Backends(judge=recorder.judge(), embedder=ngram_embedder))
    block = SampleBlock.of(sample)
    ctx = PlanContext(language, block=block if block.pays_off else None)  # type: ignore[arg-type]
    engine.run({m.name: m.plan(sample, ctx) for m in resolve_metrics(metrics or metric_names())})
    assert recorder.sent
    return recorder.sent


def _view(content: str, language: str) -> SampleBlock:
    read = read_block(content)
    assert read is not None and read[1] == language
    return read[0]


@pytest.mark.parametrize(("row", "language"), [(EN, "en"), (ZH, "zh")])
def test_every_request_that_reads_the_contexts_starts_with_the_same_block(row, language, ngram_embedder):
    sent = _sent(row, ngram_embedder, language)
    full = SampleBlock.of(Sample(**row))
    head = full.render(language, frozenset({"contexts"})).rstrip("\n")  # preamble, question, contexts
    assert head.startswith(PREAMBLE[language]) and all(c in head for c in row["retrieved_contexts"])
    own_question = [r for r in sent if r.tag.startswith("response_question")]
    # the prompts measured worse sample first, those that write from a text, and the metrics' own uses
    # measured worse sample first, stay task first
    kept = [r for r in sent if not read_block(r.messages[-1].content)]
    families = {*TASK_FIRST_FAMILIES, *WRITER_FAMILIES, *TASK_FIRST_USES.values()}
    assert {r.tag.split("@")[0] for r in kept} == families
    assert all(r in kept for r in sent if not PROMPTS[r.tag].lays_out_sample_first)
    others = [r for r in sent if r not in kept]
    assert own_question and len({r.tag.split("@")[0] for r in others}) >= 7
    readers = [r for r in others if _view(r.messages[-1].content, language).contexts]
    assert len({r.tag.split("@")[0] for r in readers}) >= 3
    assert all(r.messages[-1].content.startswith(head) for r in readers)
    # the rest start with the preamble and the question, then the part they read
    question = full.render(language, frozenset()).rstrip("\n")
    assert all(r.messages[-1].content.startswith(question) for r in others)
    # answer_relevancy writes a question from the answer alone: the sample's own question is not in view
    assert not any(row["user_input"] in r.messages[-1].content for r in own_question)
    # each context appears at most once per request, in the block: the task's input points to it
    for r in others:
        assert all(r.messages[-1].content.count(c) <= 1 for c in row["retrieved_contexts"])


@pytest.mark.parametrize(("row", "language"), [(EN, "en"), (ZH, "zh")])
def test_faithfulness_asks_its_support_verdicts_task_first_and_the_other_metrics_sample_first(
    row, language, ngram_embedder
):
    """The support prompt is shared; faithfulness's own verdicts carry the contexts in their input in every
    layout, while context_recall's, answer_correctness's and noise_sensitivity's point to the sample."""
    support = [r for r in _sent(row, ngram_embedder, language, ["faithfulness"]) if r.tag.startswith(
        "statement_support")]  # fmt: skip
    assert support and not any(read_block(r.messages[-1].content) for r in support)
    joined = Sample(**row).joined_contexts
    assert all(read_input(r.messages[-1].content)["context"] == joined for r in support)
    for name in ("context_recall", "answer_correctness", "noise_sensitivity"):
        theirs = [r for r in _sent(row, ngram_embedder, language, [name]) if r.tag.startswith(
            "statement_support")]  # fmt: skip
        assert theirs and all(read_block(r.messages[-1].content) for r in theirs), name


@pytest.mark.parametrize(("row", "language"), [(EN, "en"), (ZH, "zh")])
def test_the_groundedness_ratings_share_the_contexts_block_and_keep_the_answer_in_their_input(
    row, language, ngram_embedder
):
    """Sample first, nv_response_groundedness's two ratings point to the contexts only: they start with the
    block every contexts reader starts with, and the answer they rate is their input's text, not a pointer
    (pointing to it too made both members of a fidelity pair rate alike)."""
    sent = _sent(row, ngram_embedder, language)
    head = SampleBlock.of(Sample(**row)).render(language, frozenset({"contexts"}))
    ratings = [r for r in sent if r.tag.split("@")[0] in CONTEXTS_ONLY_FAMILIES]
    assert {r.tag.split("@")[0] for r in ratings} == set(CONTEXTS_ONLY_FAMILIES)
    for r in ratings:
        content = r.messages[-1].content
        assert content.startswith(head.rstrip("\n")) and not _view(content, language).answer
        item = next(x for x in reversed(content.splitlines()) if x.startswith(("Input: {", "输入: {")))
        assert json.dumps(row["response"], ensure_ascii=False) in item  # the answer, as text
        assert read_input(content)["context"] == Sample(**row).joined_contexts


@pytest.mark.parametrize(("row", "language"), [(EN, "en"), (ZH, "zh")])
def test_a_block_shows_the_question_and_only_the_parts_its_task_points_to(row, language, ngram_embedder):
    """A verdict about the contexts does not see the reference answer, nor one about the answer the
    contexts: nothing outside the task can sway the judge."""
    sample = Sample(**row)
    full = SampleBlock.of(sample)
    seen: dict[str, set[tuple[bool, bool, bool]]] = {}
    for request in _sent(row, ngram_embedder, language):
        content = request.messages[-1].content
        if not PROMPTS[request.tag].lays_out_sample_first:
            assert read_block(content) is None
            continue
        if read_block(content) is None:  # a metric's own use kept task first: faithfulness's verdicts
            assert request.tag.split("@")[0] in TASK_FIRST_USES.values()
            continue
        view = _view(content, language)
        assert view.question == full.question
        assert view.contexts in ((), full.contexts) and view.answer in ("", full.answer)
        assert view.reference in ("", full.reference)
        data = read_input(content)
        assert "in the sample above" not in json.dumps(data) and "上方样本" not in json.dumps(data)
        texts = {"contexts": [sample.joined_contexts, *row["retrieved_contexts"]],
                 "answer": [sample.response], "reference": [sample.reference]}  # fmt: skip
        pointed = {part for part, xs in texts.items() if any(v in xs for v in data.values())}
        pointed &= PROMPTS[request.tag].sample_first_parts  # the rest stays in the input as text
        shown = {part for part, on in (("contexts", view.contexts), ("answer", view.answer),
                                       ("reference", view.reference)) if on}  # fmt: skip
        assert shown == pointed, f"{request.tag} shows {shown}, points to {pointed}: {data}"
        seen.setdefault(request.tag.split("@")[0], set()).add(
            (bool(view.contexts), bool(view.answer), bool(view.reference))
        )
    assert seen["statement_support"] >= {(True, False, False)}  # context_recall: contexts only
    assert seen["nv_context_relevance_judge1"] == {(True, False, False)}
    assert seen["nv_accuracy_judge1"] == {(False, True, True)}  # answer and reference, no contexts


def test_a_short_sample_keeps_the_task_first_layout(ngram_embedder):
    """Its texts cost less than the task text that sample first would compute again for it."""
    assert SampleBlock.of(Sample(**EN)).pays_off and SampleBlock.of(Sample(**ZH)).pays_off
    assert not SampleBlock.of(Sample(**SHORT)).pays_off
    sent = _sent(SHORT, ngram_embedder, "en")
    assert not any(read_block(r.messages[-1].content) for r in sent)
    assert all(r.messages[-1].content.startswith(PROMPTS[r.tag].instruction["en"]) for r in sent)


def test_an_input_that_names_no_sample_text_keeps_the_task_first_layout():
    block = SampleBlock.of(Sample(**EN))
    inputs = SupportInput(context="A text from elsewhere.", statement="It holds.")
    assert STATEMENT_SUPPORT.render(inputs, "en", block) == STATEMENT_SUPPORT.render(inputs, "en")
    content = STATEMENT_SUPPORT.render(inputs, "en")[0].content
    assert content.startswith(STATEMENT_SUPPORT.instruction["en"]) and "Example 1" in content


def test_classify_prompts_drop_their_examples_and_json_prompts_keep_them():
    block = SampleBlock.of(Sample(**EN))
    nli = STATEMENT_SUPPORT.render(SupportInput(context=EN["reference"], statement="s"), "en", block)
    verdicts = STATEMENT_VERDICTS.render(
        SupportListInput(context=EN["reference"], statements=["s"]), "en", block
    )
    assert "Example 1" not in nli[0].content
    assert "Example 1" in verdicts[0].content
    assert verdicts[0].content.index("### Sample") < verdicts[0].content.index("Example 1")
    assert (
        nli[0]
        .content.rstrip()
        .endswith('Input: {"context": "the reference answer in the sample above", "statement": "s"}\nOutput:')
    )


def _requests(samples: list[Sample], block: bool) -> list[list[GenerateRequest | ClassifyRequest]]:
    """Each sample's requests, every metric's plan run with and without the sample block."""
    out = []
    for sample in samples:
        recorder = Recorder()
        engine = Engine(Backends(judge=recorder.judge()))
        metrics = [m for m in resolve_metrics(metric_names()) if m.name not in ("answer_similarity",)]
        metrics = [m for m in metrics if "embedder" not in m.roles]
        language = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in sample.user_input or "") else "en"
        ctx = PlanContext(language, block=SampleBlock.of(sample) if block else None)
        engine.run({m.name: m.plan(sample, ctx) for m in metrics})
        out.append(recorder.sent)
    return out


def test_a_prefix_cache_computes_far_fewer_tokens_than_with_the_task_first_layout():
    """The layout's reason to be, on a model of vLLM's prefix cache (blocks of 32 "tokens", here UTF-8 bytes),
    for generated samples of the size of a real retrieval (three or five contexts, English and Chinese).

    Measured here (2026-12-07): the requests outside TASK_FIRST_FAMILIES compute 0.69x of their task-first
    selves (each sample's block is computed once, by its first reader), the whole plan 0.73x: what stays
    task first in every layout (TASK_FIRST_FAMILIES, the writers, faithfulness's support verdicts) reads its
    texts again and shares nothing across a sample. answer_relevancy needs an embedder and is left out here.
    With the groundedness ratings task first too, as before 2026-12-06, the plan was 0.86x."""
    data = generate(6, seed=0, languages=("en", "zh"), k="mixed")
    samples = [
        Sample(user_input=q, retrieved_contexts=c, response=a, reference=r)
        for q, c, a, r in zip(
            data["question"], data["contexts"], data["answer"], data["ground_truth"], strict=True
        )
    ]
    assert all(SampleBlock.of(s).pays_off for s in samples)
    computed, readers = {}, {}
    for block in (False, True):
        cache = PrefixCache(32)
        total = reading = 0
        for i, sent in enumerate(_requests(samples, block)):
            for r in sent:
                n = cache.compute(list(r.messages[-1].content.encode()))
                if i < 2:  # the steady state: the first samples also compute the preambles
                    continue
                total += n
                reading += 0 if r.tag.split("@")[0] in TASK_FIRST_FAMILIES else n
        computed[block], readers[block] = total, reading
    assert readers[True] < 0.7 * readers[False], readers
    assert computed[True] < 0.8 * computed[False], computed
