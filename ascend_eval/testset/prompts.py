"""The prompts that write a test set: one JSON prompt per query kind that writes a question and its
reference answer from chunks, and two yes/no verdicts that filter what was written. English and Chinese.

The writing prompts are `PromptSpec`s whose output schema ({"question", "answer"}) constrains decoding
where the backend can; the verdicts are `ClassifyPromptSpec`s over "Yes" / "No", read from the judge's
next-token probabilities in one forward pass. A verdict holds when p(Yes) is above `VERDICT_THRESHOLD`
(0.5): these are filters, not scores, so they are not calibrated.
"""

from __future__ import annotations

from pydantic import BaseModel

from ascend_eval.prompts.base import ClassifyPromptSpec, PromptSpec


class PassageInput(BaseModel):
    passage: str
    persona: str = ""


class PassagesInput(BaseModel):
    passages: list[str]
    persona: str = ""


class WrittenQuestion(BaseModel):
    question: str
    answer: str


class QuestionInput(BaseModel):
    question: str


class AnswerableInput(BaseModel):
    passages: list[str]
    question: str


_RULES = {
    "en": (
        " The question must stand on its own: name what it asks about, and never refer to 'the passage', "
        "'the text', 'the document' or 'the author'. Ask in your own words; do not copy a sentence of the "
        "passages. The answer uses only facts the passages state. If a persona is given, ask the way that "
        "person would ask. Write the question and the answer in English."
    ),
    "zh": (
        "问题必须能独立理解：写明所问的对象，不要提到“这段文字”“本文”“该文档”或“作者”。用自己的话提问，"
        "不要照抄资料中的句子。答案只使用资料中写明的事实。如果给出了提问者（persona），请以此人的口吻提问。"
        "问题和答案都用中文书写。"
    ),
}

_SINGLE = {
    "en": (
        "You write one item of a test set for a question-answering system over a collection of documents. "
        "Read the passage and write one question that a user might ask and that the passage answers, and "
        "its reference answer: short and complete."
    ),
    "zh": (
        "你在为一个基于文档集合的问答系统编写测试集中的一条。阅读下面的资料，写出一个用户可能会问、"
        "且资料能够回答的问题，以及它的参考答案：简短而完整。"
    ),
}
_MULTI = {
    "en": (
        "You write one item of a test set for a question-answering system over a collection of documents. "
        "Read the passages and write one question whose answer needs a fact from every passage: combine "
        "them (a comparison, a cause and its effect, a thing that both mention). No single passage may "
        "answer it alone. Then write its reference answer, one or two sentences that use each passage."
    ),
    "zh": (
        "你在为一个基于文档集合的问答系统编写测试集中的一条。阅读下面的几段资料，写出一个需要用到每一段"
        "资料中的事实才能回答的问题：把它们联系起来（比较、因果、共同提到的事物）。任何一段资料都不能单独"
        "回答它。然后写出参考答案：一两句话，用到每一段资料。"
    ),
}
_ABSTRACT = {
    "en": (
        "You write one item of a test set for a question-answering system over a collection of documents. "
        "Read the passages, which are about related things, and write one question about a broader theme "
        "they share (how things compare, change, or fit together) rather than about one fact. Then write "
        "its reference answer: two to four sentences that draw on the passages."
    ),
    "zh": (
        "你在为一个基于文档集合的问答系统编写测试集中的一条。下面几段资料内容相关。写出一个关于它们共同"
        "主题的概括性问题（比较、变化或相互关系），而不是只问某一个事实。然后写出参考答案：两到四句话，"
        "综合这些资料。"
    ),
}

_ORLA_LIGHT = (
    "The Orla lighthouse was built in 1874 from granite quarried on the island. Its lamp was converted to "
    "electricity in 1952."
)
_ORLA_FERRY = "The ferry to Orla leaves Port Dunmore at 8:00 each morning; the crossing takes 40 minutes."
_ORLA_MUSEUM = "The lighthouse museum on Orla opens at 9:00 and closes at 17:00, except on Mondays."
_ORLA_FISH = (
    "A century ago most families on Orla lived from herring fishing; the last cannery closed in 1968."
)
_ORLA_VISIT = "Today guest houses and boat tours employ more islanders than fishing does."
_BAISHI_BRIDGE = "白石村的石桥建于1763年，由村民集资修建。桥长四十二米，共有七个桥洞。"
_BAISHI_BUS = "从县城到白石村的班车每天早上七点发车，车程一个半小时。"
_BAISHI_HALL = "白石村的祠堂上午九点开门，下午五点关门，周一闭馆。"
_BAISHI_TEA = "五十年前，白石村大多数人家以种茶为生，村里的老茶厂在1995年关闭。"
_BAISHI_INN = "如今，民宿和徒步向导为村民提供的工作已经多于种茶。"

SINGLE_HOP = PromptSpec(
    name="testset_single_hop",
    version=1,
    instruction={lang: _SINGLE[lang] + _RULES[lang] for lang in ("en", "zh")},
    input=PassageInput,
    output=WrittenQuestion,
    examples={
        "en": [
            (
                PassageInput(passage=_ORLA_LIGHT),
                WrittenQuestion(
                    question="When was the lamp of the Orla lighthouse converted to electricity?",
                    answer="In 1952.",
                ),
            )
        ],
        "zh": [
            (
                PassageInput(passage=_BAISHI_BRIDGE),
                WrittenQuestion(question="白石村的石桥有多长？", answer="四十二米，共有七个桥洞。"),
            )
        ],
    },
    sample_first=False,
    writes_from=("passage",),
)

MULTI_HOP = PromptSpec(
    name="testset_multi_hop",
    version=1,
    instruction={lang: _MULTI[lang] + _RULES[lang] for lang in ("en", "zh")},
    input=PassagesInput,
    output=WrittenQuestion,
    examples={
        "en": [
            (
                PassagesInput(passages=[_ORLA_FERRY, _ORLA_MUSEUM]),
                WrittenQuestion(
                    question="If I take the morning ferry from Port Dunmore to Orla on a Tuesday, how long "
                    "do I wait for the lighthouse museum to open?",
                    answer="The ferry arrives at 8:40 and the museum opens at 9:00, so about 20 minutes.",
                ),
            )
        ],
        "zh": [
            (
                PassagesInput(passages=[_BAISHI_BUS, _BAISHI_HALL]),
                WrittenQuestion(
                    question="周二坐早班车从县城去白石村，到达后要等多久祠堂才开门？",
                    answer="班车七点发车、八点半到达，祠堂九点开门，大约要等半小时。",
                ),
            )
        ],
    },
    sample_first=False,
    writes_from=("passages",),
)

ABSTRACT = PromptSpec(
    name="testset_abstract",
    version=1,
    instruction={lang: _ABSTRACT[lang] + _RULES[lang] for lang in ("en", "zh")},
    input=PassagesInput,
    output=WrittenQuestion,
    examples={
        "en": [
            (
                PassagesInput(passages=[_ORLA_FISH, _ORLA_VISIT]),
                WrittenQuestion(
                    question="How has the way people on Orla earn a living changed over the last century?",
                    answer="A century ago most families fished for herring, and the last cannery closed in "
                    "1968. Today tourism, through guest houses and boat tours, employs more islanders than "
                    "fishing.",
                ),
            )
        ],
        "zh": [
            (
                PassagesInput(passages=[_BAISHI_TEA, _BAISHI_INN]),
                WrittenQuestion(
                    question="白石村村民的生计在过去几十年里发生了怎样的变化？",
                    answer="五十年前大多数人家种茶，老茶厂在1995年关闭。如今民宿和徒步向导提供的工作已多于种茶，"
                    "村民的生计从种茶转向了旅游。",
                ),
            )
        ],
    },
    sample_first=False,
    writes_from=("passages",),
)

WRITERS: dict[str, PromptSpec[PassageInput, WrittenQuestion] | PromptSpec[PassagesInput, WrittenQuestion]] = {
    "single_hop": SINGLE_HOP,
    "multi_hop": MULTI_HOP,
    "abstract": ABSTRACT,
}
"""The writing prompt of each query kind."""

YES, NO = "Yes", "No"

STANDALONE = ClassifyPromptSpec(
    name="testset_standalone",
    version=1,
    instruction={
        "en": (
            "Can the question below be understood on its own by someone who has not seen the documents it "
            "was written from? It cannot when it points at something it does not name: 'the passage', 'the "
            "text', 'this document', 'the author', 'the table above', or 'he', 'it' or 'they' without saying "
            "who or what. A question that names what it asks about can, however specific. Answer Yes if it "
            "stands on its own, No if it does not."
        ),
        "zh": (
            "一个没有看过出题所用文档的人，能否独立理解下面的问题？如果问题指向它没有写明的东西，就不能："
            "例如“这段文字”“本文”“该文档”“作者”“上表”，或者没有说明是谁、是什么的“他”“它”“他们”。"
            "写明了所问对象的问题，无论多具体，都能独立理解。能独立理解回答 Yes，否则回答 No。"
        ),
    },
    input=QuestionInput,
    labels=(YES, NO),
    positive=YES,
    examples={
        "en": [
            (QuestionInput(question="When was the Orla lighthouse built?"), YES),
            (QuestionInput(question="According to the passage, when was it built?"), NO),
        ],
        "zh": [
            (QuestionInput(question="白石村的石桥是哪一年建成的？"), YES),
            (QuestionInput(question="根据这段文字，它是哪一年建成的？"), NO),
        ],
    },
    sample_first=False,
)

ANSWERABLE = ClassifyPromptSpec(
    name="testset_answerable",
    version=1,
    instruction={
        "en": (
            "Do the passages below hold everything needed to answer the question? Answer Yes if a careful "
            "reader could answer it from these passages alone, without outside knowledge; No if a fact the "
            "answer needs is missing from them or the question asks about something they do not cover."
        ),
        "zh": (
            "下面的资料是否包含回答该问题所需的全部信息？如果细心的读者只凭这些资料、不借助外部知识就能回答，"
            "回答 Yes；如果答案所需的某个事实资料中没有，或者问题问的是资料没有涉及的内容，回答 No。"
        ),
    },
    input=AnswerableInput,
    labels=(YES, NO),
    positive=YES,
    examples={
        "en": [
            (
                AnswerableInput(passages=[_ORLA_LIGHT], question="What was the Orla lighthouse built from?"),
                YES,
            ),
            (AnswerableInput(passages=[_ORLA_LIGHT], question="Who designed the Orla lighthouse?"), NO),
        ],
        "zh": [
            (AnswerableInput(passages=[_BAISHI_BRIDGE], question="白石村的石桥有几个桥洞？"), YES),
            (AnswerableInput(passages=[_BAISHI_BRIDGE], question="白石村的石桥是谁设计的？"), NO),
        ],
    },
    sample_first=False,
)
