import os

from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from ascend_eval.ragas import EvaluationDataset, evaluate  # the one changed line: was `from ragas import`
from ragas.embeddings import LangchainEmbeddingsWrapper
from ragas.llms import LangchainLLMWrapper
from ragas.metrics import Faithfulness, LLMContextRecall, SemanticSimilarity

url = os.environ.get("JUDGE_BASE_URL", "http://127.0.0.1:8000/v1")  # any OpenAI-compatible server
llm = LangchainLLMWrapper(ChatOpenAI(base_url=url, model="judge", api_key="EMPTY", temperature=0))
embeddings = LangchainEmbeddingsWrapper(OpenAIEmbeddings(base_url=url, model="embedder", api_key="EMPTY"))
rows = [("Where is the Eiffel Tower?", "The Eiffel Tower is in Paris.", "The Eiffel Tower is in Paris."),
        ("Australia's capital?", "Canberra is Australia's capital.", "Sydney is Australia's capital.")]
dataset = EvaluationDataset.from_list(
    [{"user_input": q, "retrieved_contexts": [c], "response": a, "reference": c} for q, c, a in rows])
metrics = [Faithfulness(), LLMContextRecall(), SemanticSimilarity()]
result = evaluate(dataset, metrics=metrics, llm=llm, embeddings=embeddings)
print(result)
print(result.to_pandas())
