"""The sample-first prompt layout: one preamble, the sample block, then the task and its own item.

A sample's requests all read the same texts (its question, contexts, answer and reference) and differ in
the task and in one small item (a statement, a context's number). Rendered task first, every prompt family
carried its own copy of those texts after its instruction, so a prefix-caching server (vLLM, TorchJudge's
prefix tree) computed a sample's contexts once per family: 12 metrics read them 5-8 times over. Rendered
sample first, every request of a sample starts with the same tokens:

    <preamble>                    the same for every request of a language: computed once per run
    Sample: question, contexts,   the same for every request of the sample: computed once per sample
            answer, reference
    Task: instruction, format     the same for the requests of one prompt family and sample
    Input: the item               each request's own tokens

An input field whose text is one of the sample's parts is written as a pointer to it ("the answer in the
sample above") instead of a second copy. The block shows the question and the parts the request's input
points to, no others, always in the order question, contexts, answer, reference: a request about one
context shows all of them, so that every request that reads the contexts starts with the same tokens and the
contexts, the long part of a sample, are computed once per sample. A judge sees what its task is about and
nothing that could sway it: a faithfulness verdict sees the question and the contexts, not the reference
answer (with every part in view, the Qwen2.5-Coder-1.5B judge got 4 of 10 WikiEval faithfulness pairs right
instead of 9, as the reference leaked into verdicts about the contexts). The answer and the reference, being
short, are computed once per view that shows them. Inputs that point to nothing (a list of statements judged
against itself, texts from outside the sample) keep the task-first layout.

A prompt that writes from a text (the statements of an answer, the entities of a text, the question a
response answers: `PromptSpec.writes_from`) is never laid out sample first: its text is in its own request,
in every layout. Pointed to "the answer in the sample above", Qwen2.5-Coder-1.5B wrote the pointers back as
the statements of long answers (16 of 16 Chinese samples, 12 of 16 English ones), and a good answer and its
flawed twin scored alike. What such a prompt writes is also checked for the layout's wording (`echoed`): an
answer that reads the prompt back is NaN with an "echo: ..." reason, never a score. A prompt family whose
verdicts were measured worse sample first opts out
(`PromptSpec.sample_first=False`) and is task first in every layout (context usefulness; answer_relevancy's
coverage verdict, on long English inputs); one that judges well only with its
short inputs written out points to the contexts alone (`PromptSpec.sample_first_parts`, `CONTEXTS_ONLY`). A
metric whose own use of a shared prompt was measured worse sample first asks it task first
(`PlanContext.task_first`): faithfulness's support verdicts, on long Chinese inputs.

Classify prompts drop their few-shot examples in this layout: the answer is read from the probabilities of
the prompt's labels, so the examples no longer teach the format, and after the sample block they would be
computed again for every sample. JSON prompts keep theirs (they teach the output's shape), after the task.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ascend_eval.choices import LAYOUT_SETTINGS, Layout
from ascend_eval.errors import ConfigError
from ascend_eval.text.language import Language

Part = Literal["question", "contexts", "answer", "reference"]
PARTS: frozenset[Part] = frozenset(get_args(Part))
"""A sample's parts; a block shows them in this order: question, contexts, answer, reference."""
CONTEXTS_ONLY: frozenset[Part] = frozenset({"contexts"})
"""For a prompt that points to the contexts only (`PromptSpec.sample_first_parts`): its other inputs stay in
the input as text, and its block is the one that every request reading the contexts starts with."""


AUTO_LAYOUT: Layout = "sample_first"
"""What "auto" picks. Sample first passed the fidelity check on a real judge (`benchmarks/fidelity.py`,
Qwen2.5-Coder-1.5B through a vLLM server, 2026-12-04: no metric lost a pair, 328 of 348 pairs right against
326 task first) with the families that had lost a pair in it kept task first (`PromptSpec.sample_first`):
context usefulness and the context entities (a writer since 2026-12-06: `PromptSpec.writes_from`);
nv_response_groundedness's two ratings joined on 2026-12-06,
pointing to the contexts only (38 of 38 pairs, as task first; docs/metrics.md, "Prompt layout"). The
check ran in classify mode; generate mode and `ragas_compat` stay task first."""


def resolve_layout(value: str, *, ragas_compat: bool, judge_mode: str = "classify") -> Layout:
    """The layout a run renders its prompts in: "sample_first" renders each sample whose texts are long
    enough (`SampleBlock.pays_off`) sample first; "auto" is `AUTO_LAYOUT` in classify mode, and task first
    under `ragas_compat` (as RAGAS lays out its own prompts) or in generate mode (the JSON verdicts have not
    been through the fidelity check sample first).

    >>> resolve_layout("auto", ragas_compat=False), resolve_layout("auto", ragas_compat=True)
    ('sample_first', 'task_first')
    >>> resolve_layout("auto", ragas_compat=False, judge_mode="generate")
    'task_first'
    """
    if value not in LAYOUT_SETTINGS:
        raise ConfigError(f"prompt_layout={value!r}; valid: {', '.join(map(repr, LAYOUT_SETTINGS))}.")
    if value == "auto":
        return "task_first" if ragas_compat or judge_mode == "generate" else AUTO_LAYOUT
    return value  # type: ignore[return-value]


SAMPLE_FIRST_MIN_TOKENS = 256
"""A sample whose texts are shorter than this (estimated tokens) keeps the task-first layout. Sample first,
each prompt family's task text (instruction, format, examples: about 160 tokens on average over the twelve
metrics' families) is computed once per sample instead of once per run, while the sample's texts are
computed once instead of once per family that reads them (6-8 times with all twelve metrics). On a model of
a prefix cache over the twelve metrics' requests the two cost the same at about 270 tokens of sample text:
the bundled example's samples (about 140 tokens) cost 1.8x the task-first tokens sample first, generated
samples with three contexts (about 670 tokens) 0.6x."""

PREAMBLE: dict[Language, str] = {
    "en": (
        "You evaluate one sample of a retrieval-augmented question answering system. The sample comes "
        "first: the user's question, the retrieved contexts, the system's answer and a reference answer, as "
        "far as the task needs them. A task about the sample follows. Where the task's input names a part "
        "of the sample, read that part above. Do only the task, and judge only from what it points to."
    ),
    "zh": (
        "你负责评估检索增强问答系统的一个样本。先给出样本：用户的问题、检索到的上下文、系统的回答和参考答案"
        "（只给出任务需要的部分）。之后是关于该样本的任务。任务输入中提到样本的某一部分时，请阅读上方样本中的"
        "那一部分。只完成该任务，并且只根据任务指向的内容作出判断。"
    ),
}

_WORDS: dict[Language, dict[str, str]] = {
    "en": {
        "sample": "### Sample",
        "task": "### Task",
        "question": "Question",
        "context": "Context {k}",
        "answer": "Answer",
        "reference": "Reference answer",
        "to_question": "the question in the sample above",
        "to_contexts": "all the contexts in the sample above",
        "to_context": "context {k} in the sample above",
        "to_answer": "the answer in the sample above",
        "to_reference": "the reference answer in the sample above",
        "no_contexts": "(no contexts were retrieved)",
    },
    "zh": {
        "sample": "### 样本",
        "task": "### 任务",
        "question": "问题",
        "context": "上下文 {k}",
        "answer": "回答",
        "reference": "参考答案",
        "to_question": "上方样本中的问题",
        "to_contexts": "上方样本中的全部上下文",
        "to_context": "上方样本中的上下文 {k}",
        "to_answer": "上方样本中的回答",
        "to_reference": "上方样本中的参考答案",
        "no_contexts": "（没有检索到上下文）",
    },
}


@dataclass(frozen=True)
class SampleBlock:
    """The texts of one sample that its requests share, and the pointers that stand for them."""

    question: str = ""
    contexts: tuple[str, ...] = ()
    answer: str = ""
    reference: str = ""

    @classmethod
    def of(cls, sample: Any) -> SampleBlock:
        """The block of a `Sample` (its missing columns are empty)."""
        return cls(
            question=sample.user_input or "",
            contexts=tuple(sample.retrieved_contexts or ()),
            answer=sample.response or "",
            reference=sample.reference or "",
        )

    @classmethod
    def of_input(cls, data: dict[str, Any]) -> SampleBlock:
        """A block made of an input's own fields ("question", "context", "answer" or "response",
        "reference" or "reference_answer"): a made-up sample, to render a calibration anchor as the requests
        it calibrates are rendered.

        >>> SampleBlock.of_input({"question": "Q?", "context": "c", "answer": "A."})
        SampleBlock(question='Q?', contexts=('c',), answer='A.', reference='')
        """

        def text(*names: str) -> str:
            return next((data[n] for n in names if isinstance(data.get(n), str)), "")

        context = text("context")
        return cls(text("question"), (context,) if context else (), text("answer", "response"),
                   text("reference", "reference_answer"))  # fmt: skip

    @property
    def pays_off(self) -> bool:
        """Whether the sample's texts are long enough for the sample-first layout to compute fewer tokens
        (`SAMPLE_FIRST_MIN_TOKENS`, estimated as UTF-8 bytes / 4: about right for English and Chinese).

        >>> SampleBlock("Q?", ("short",), "A.", "R.").pays_off, SampleBlock("Q?", ("x" * 1100,)).pays_off
        (False, True)
        """
        texts = (self.question, *self.contexts, self.answer, self.reference)
        return sum(len(t.encode("utf-8")) for t in texts) / 4 >= SAMPLE_FIRST_MIN_TOKENS

    def pointer(self, text: str, language: Language) -> str | None:
        """The words that point to `text` when it is one of the sample's texts, else None.

        >>> block = SampleBlock(question="Q?", contexts=("a", "b"), answer="A.", reference="R.")
        >>> block.pointer("b", "en"), block.pointer("a\\nb", "en")
        ('context 2 in the sample above', 'all the contexts in the sample above')
        >>> block.pointer("R.", "zh")
        '上方样本中的参考答案'
        >>> block.pointer("something else", "en") is None, block.pointer("  ", "en") is None
        (True, True)
        """
        found = self.find(text, language)
        return None if found is None else found[1]

    def find(self, text: str, language: Language) -> tuple[Part, str] | None:
        """The part `text` is and the words that point to it, or None."""
        if not text.strip():
            return None
        words = _WORDS[language]
        if text == self.question:
            return "question", words["to_question"]
        if self.contexts and text == "\n".join(self.contexts):
            return "contexts", words["to_contexts"]
        for k, context in enumerate(self.contexts, start=1):
            if text == context:
                return "contexts", words["to_context"].format(k=k)
        if text == self.answer:
            return "answer", words["to_answer"]
        if text == self.reference:
            return "reference", words["to_reference"]
        return None

    def pointers(self, language: Language) -> dict[str, str]:
        """Each pointer this block writes, with the text it stands for."""
        words = _WORDS[language]
        table = {
            words["to_question"]: self.question,
            words["to_answer"]: self.answer,
            words["to_reference"]: self.reference,
            words["to_contexts"]: "\n".join(self.contexts),
        }
        for k, context in enumerate(self.contexts, start=1):
            table[words["to_context"].format(k=k)] = context
        return table

    def render(self, language: Language, view: frozenset[Part] = PARTS) -> str:
        """The preamble and the block's parts in `view` (empty ones left out, the question always shown),
        in the order question, contexts, answer, reference, ending with a blank line.

        >>> block = SampleBlock(question="Q?", contexts=("a", "b"), answer="A.", reference="R.")
        >>> print(block.render("en", frozenset({"reference", "contexts"})).split("### Sample\\n")[1].strip())
        Question: Q?
        Context 1: a
        Context 2: b
        Reference answer: R.
        """
        words = _WORDS[language]
        lines = [PREAMBLE[language], "", words["sample"]]
        if self.question.strip():
            lines.append(f"{words['question']}: {self.question}")
        if "contexts" in view:
            if not self.contexts:
                lines.append(f"{words['context'].format(k=1)}: {words['no_contexts']}")
            for k, context in enumerate(self.contexts, start=1):
                lines.append(f"{words['context'].format(k=k)}: {context}")
        if "answer" in view and self.answer.strip():
            lines.append(f"{words['answer']}: {self.answer}")
        if "reference" in view and self.reference.strip():
            lines.append(f"{words['reference']}: {self.reference}")
        return "\n".join(lines) + "\n\n"


def point(
    data: dict[str, Any], block: SampleBlock | None, language: Language, parts: frozenset[Part] = PARTS
) -> tuple[str, dict[str, Any]] | None:
    """The block text and `data` with the sample's texts written as pointers, or None when no field of
    `data` is one of the sample's texts in `parts` (the request then keeps the task-first layout). The
    block shows the question and the parts that `data` points to.

    >>> block = SampleBlock(question="Q?", contexts=("a", "b"), answer="A.", reference="R.")
    >>> text, data = point({"context": "a\\nb", "statement": "x"}, block, "en")
    >>> data
    {'context': 'all the contexts in the sample above', 'statement': 'x'}
    >>> text.rstrip().endswith("Question: Q?\\nContext 1: a\\nContext 2: b")
    True
    >>> point({"statements": ["x"]}, block, "en") is None
    True
    >>> point({"text": "R."}, block, "en", frozenset({"contexts"})) is None
    True
    """
    if block is None:
        return None
    out, view = dict(data), set()
    for key, value in data.items():
        found = block.find(value, language) if isinstance(value, str) else None
        if found is not None and found[0] in parts:
            view.add(found[0])
            out[key] = found[1]
    return (block.render(language, frozenset(view)), out) if view else None


def _layout_wording() -> re.Pattern[str]:
    """What the layout writes around a sample's texts, in every language: its pointers ("the answer in
    the sample above", "上方样本中的回答", "context 3 in the sample above") and the block's and task's
    headings. None of it is ever the content of a sample."""
    phrases = []
    for words in _WORDS.values():
        phrases += [re.escape(words["sample"]), re.escape(words["task"])]
        pointers = [v for k, v in words.items() if k.startswith("to_")]
        phrases += [re.escape(v).replace(re.escape("{k}"), r"\d+") for v in pointers]
    return re.compile("|".join(sorted(phrases, key=len, reverse=True)), re.IGNORECASE)


_LAYOUT_WORDING = _layout_wording()
_NOT_WORD = re.compile(r"[\W_]+")
QUESTION_PIECE = 16
"""A written question (it ends in "?" or "？") whose letters (without case, spaces or punctuation) are this
many or more and stand in the sample's question as they are is a piece of the question copied back: on a long
answer pointed to sample first, the judge wrote "What happened in the fire at Ostrand station in February
2009?" and "How did the wintering team get off the island?", the two halves of the question, as the answer's
statements. A statement that stands in the question is not one: a user may paste a passage into the question,
and the answer may say it again."""


def echoed(texts: Sequence[str], question: str = "") -> str | None:
    """Why the texts a judge wrote (statements, entities, a question) are the prompt read back rather than
    an answer, or None: one of them repeats the layout's wording (a pointer or a heading), or is the
    sample's `question` or a question that is a piece of it (`QUESTION_PIECE`; compared without case, spaces
    or punctuation).
    A judge asked to rewrite a long answer that the prompt pointed to wrote the pointer back as its
    statements; such an answer is unreadable, never a score.

    >>> echoed(["The river is 300 km long.", "the answer in the sample above"])
    "the judge wrote the prompt's own wording ('the answer in the sample above') instead of its answer"
    >>> echoed(["上方样本中的问题", "上方样本中的回答"])
    "the judge wrote the prompt's own wording ('上方样本中的问题') instead of its answer"
    >>> echoed(["Who built it?"], question="who built it ?")
    "the judge wrote the sample's question ('Who built it?') as its answer"
    >>> echoed(["How did they leave the island?"], question="What burned? How did they leave the island?")
    "the judge wrote the sample's question ('How did they leave the island?') as its answer"
    >>> echoed(["Paris is the capital of France."], question="What is the capital of France?") is None
    True
    >>> echoed(["The tower opened in 1889."], question="'The tower opened in 1889.' Is that right?") is None
    True
    """
    asked = _NOT_WORD.sub("", question).casefold()
    for text in texts:
        found = _LAYOUT_WORDING.search(text)
        if found:
            return f"the judge wrote the prompt's own wording ({found.group(0)!r}) instead of its answer"
        letters = _NOT_WORD.sub("", text).casefold()
        piece = text.rstrip().endswith(("?", "？")) and len(letters) >= QUESTION_PIECE and letters in asked
        if asked and (letters == asked or piece):
            return f"the judge wrote the sample's question ({_short(text)!r}) as its answer"
    return None


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def task_heading(language: Language) -> str:
    return _WORDS[language]["task"]


def read_block(content: str) -> tuple[SampleBlock, Language] | None:
    """The sample block of a rendered prompt and its language, or None for a task-first prompt.

    For judges that answer by rules from the prompt's text (tests, benchmark servers): a sample text with a
    line of its own that starts like one of the block's headings ("Answer: ...") is read as two parts.
    """
    for language, words in _WORDS.items():
        start, end = content.find(f"\n{words['sample']}\n"), content.rfind(f"\n\n{words['task']}\n")
        if start < 0 or end < start:
            continue
        body = content[start + len(words["sample"]) + 2 : end]
        context = re.escape(words["context"].split("{k}")[0]) + r"\d+"
        pattern = "|".join([re.escape(words["question"]), context, re.escape(words["answer"]),
                            re.escape(words["reference"])])  # fmt: skip
        found = {"question": "", "contexts": [], "answer": "", "reference": ""}
        pieces = re.split(rf"^({pattern}): ", body, flags=re.MULTILINE)
        for head, text in zip(pieces[1::2], pieces[2::2], strict=True):
            text = text[:-1] if text.endswith("\n") else text
            if head == words["question"]:
                found["question"] = text
            elif head == words["answer"]:
                found["answer"] = text
            elif head == words["reference"]:
                found["reference"] = text
            elif text != words["no_contexts"]:
                found["contexts"].append(text)
        block = SampleBlock(found["question"], tuple(found["contexts"]), found["answer"], found["reference"])
        return block, language  # type: ignore[return-value]
    return None


def read_input(content: str) -> dict[str, Any]:
    """The input of a rendered prompt (its last line that starts "Input: {"), with pointers into the
    sample block replaced by the texts they stand for: what the prompt asks about, whichever layout it has.

    >>> from ascend_eval.prompts import STATEMENT_SUPPORT, SupportInput
    >>> block = SampleBlock(question="Q?", contexts=("a x", "b"), answer="A.", reference="R.")
    >>> [message] = STATEMENT_SUPPORT.render(SupportInput(context="a x", statement="s"), "zh", block)
    >>> read_input(message.content)
    {'context': 'a x', 'statement': 's'}
    """
    markers = tuple(f"{words}: {{" for words in ("Input", "输入"))
    line = next((x for x in reversed(content.splitlines()) if x.startswith(markers)), None)
    if line is None:
        raise ValueError("no input line in the prompt")
    data = json.loads(line.split(": ", 1)[1])
    read = read_block(content)
    if read is None:
        return data
    table = read[0].pointers(read[1])
    return {k: table.get(v, v) if isinstance(v, str) else v for k, v in data.items()}
