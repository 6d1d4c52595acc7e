"""An Ascend RAG SDK user's evaluation script, moved to ascend-eval by changing the imports.

It is the SDK's own example (docs/zh/api/evaluation_module.md) with the mx_rag imports replaced:

    # before                                                  # after
    from mx_rag.embedding.service import TEIEmbedding         from ascend_eval.mxrag import (
    from mx_rag.llm import Text2TextLLM, LLMParameterConfig       ClientParam, LLMParameterConfig,
    from mx_rag.utils import ClientParam                          RAGEvaluator, TEIEmbedding, Text2TextLLM,
    from mx_rag.evaluate import RAGEvaluator                  )

The servers come from the environment: a judge behind an OpenAI-compatible server (vLLM, MindIE) and a
text-embeddings-inference server:

    JUDGE_URL=http://127.0.0.1:8000/v1/chat/completions JUDGE_MODEL=qwen2.5-7b-instruct \
    TEI_URL=http://127.0.0.1:8080/embed python examples/mxrag_user.py

REPEAT=N sends the three samples N times over, each copy made unique (REPEAT=50 gives 150 samples: the
SDK refuses more than 128, ascend-eval has no limit).
"""

import os

from datasets import Dataset

from ascend_eval.mxrag import ClientParam, LLMParameterConfig, RAGEvaluator, TEIEmbedding, Text2TextLLM

llm = Text2TextLLM(
    base_url=os.environ.get("JUDGE_URL", "http://127.0.0.1:8000/v1/chat/completions"),
    model_name=os.environ.get("JUDGE_MODEL", "qwen2.5-7b-instruct"),
    llm_config=LLMParameterConfig(temperature=0.1, top_p=0.8),
    client_param=ClientParam(use_http=True),
)
embeddings = TEIEmbedding(
    url=os.environ.get("TEI_URL", "http://127.0.0.1:8080/embed"), client_param=ClientParam(use_http=True)
)

sample_queries = [
    "谁提出了相对论？",
    "谁因对放射性的研究而两次获得诺贝尔奖？",
    "艾萨克·牛顿对科学有什么贡献？",
]
expected_responses = [
    "阿尔伯特·爱因斯坦提出了相对论。这一理论改变了我们对时间、空间和引力的理解。",
    "玛丽·居里因放射性研究两次获得诺贝尔奖。",
    "艾萨克·牛顿阐述了运动定律和万有引力定律。他为经典力学奠定了基础。",
]
retrieved_contexts = [
    ["阿尔伯特·爱因斯坦提出了相对论。", "相对论改变了我们对时间、空间和引力的理解。"],
    ["玛丽·居里是一位物理学家和化学家。", "玛丽·居里因放射性研究两次获得诺贝尔奖。"],
    ["艾萨克·牛顿阐述了运动定律和万有引力定律。", "牛顿的定律为经典力学奠定了基础。"],
]
responses = [
    "阿尔伯特·爱因斯坦提出了相对论。",
    "玛丽·居里因放射性研究两次获得诺贝尔奖。",
    "艾萨克·牛顿阐述了运动定律和万有引力定律。牛顿发明了电话。",
]

repeat = int(os.environ.get("REPEAT", "1"))
dataset = []
for k in range(repeat):
    for query, contexts, response, reference in zip(
        sample_queries, retrieved_contexts, responses, expected_responses, strict=True
    ):
        tag = f"（第{k + 1}组）" if repeat > 1 else ""  # every sample unique, so none is deduplicated away
        dataset.append(
            {
                "user_input": query + tag,
                "response": response,
                "retrieved_contexts": contexts,
                "reference": reference,
            }
        )
evaluation_dataset = Dataset.from_list(dataset)

evaluator = RAGEvaluator(llm=llm, embeddings=embeddings)
metrics = ["faithfulness", "answer_relevancy", "context_precision", "context_recall", "answer_similarity"]
result = evaluator.evaluate(
    metrics=metrics,
    dataset=evaluation_dataset.to_dict(),
    language="chinese",
)
print(result)
if result is None:  # the SDK's convention: None, the reason logged; exit 1 so that a CI job notices
    raise SystemExit(1)
