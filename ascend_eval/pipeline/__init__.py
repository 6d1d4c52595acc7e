"""The RAG pipeline a job runs when its dataset lacks contexts or answers: chunk a corpus (characters or
tokens, Chinese-aware), embed and retrieve the top_k chunks, rerank them, and generate each answer with the
RAG model. Every model call goes through the engine, so it is batched and cached like the judge's."""

from ascend_eval.data.corpus import check_corpus
from ascend_eval.pipeline.build import CONTEXT_IDS, build_rag_rows, build_rag_samples, embedder_tokenizer
from ascend_eval.pipeline.chunking import Chunk, chunk_corpus, chunk_spans, chunk_text
from ascend_eval.pipeline.config import PipelineConfig
from ascend_eval.pipeline.generation import ANSWER_TAG, answer_messages
from ascend_eval.pipeline.retrieval import EMBEDDINGS, EmbeddingMemo

__all__ = [
    "ANSWER_TAG",
    "CONTEXT_IDS",
    "EMBEDDINGS",
    "Chunk",
    "EmbeddingMemo",
    "PipelineConfig",
    "answer_messages",
    "build_rag_rows",
    "build_rag_samples",
    "check_corpus",
    "chunk_corpus",
    "chunk_spans",
    "chunk_text",
    "embedder_tokenizer",
]
