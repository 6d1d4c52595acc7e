"""Test sets from one corpus by ours (`ascend_eval.testset.generate`) and by RAGAS 0.4.3's `TestsetGenerator`,
on the same judge server, corpus and size, one after the other; then the same two checks on both tools' rows.

    python -m benchmarks testset-quality --judge URL --corpus ascend-eval/rag-mini-en --size 30 --out DIR

* **ours**: `generate(corpus, size, judge=URL/v1/chat/completions, embedder=...)`, its defaults.
* **ragas**: `TestsetGenerator(LangchainLLMWrapper(ChatOpenAI(base_url=URL/v1)), LangchainEmbeddingsWrapper(
  HuggingFaceEmbeddings(model_name=DIR)))` and `generate_with_langchain_docs(documents, testset_size=size,
  run_config=RunConfig(timeout=T), raise_exceptions=False)`: its default transforms and query distribution;
  the documents are the corpus's, one LangChain `Document` each. A failure is a job RAGAS's executor logged
  as failed (it goes on without it), or the whole call raising.
* **retrieved**: the RAG pipeline (`build_rag_rows`, chunk size 512, no overlap, top 5, the same embedder)
  retrieves for each row's question; a row counts when every source document of its reference contexts has
  a chunk among the five (`all`), or at least one (`any`). Documents, not chunks, because RAGAS's nodes are
  its own splits of a document: a reference context's document is the corpus document sharing most of its
  words. Ours is also given per chunk (`source_chunks` against `retrieved_context_ids`).
* **answerable**: a second judge pass, not the generator's own filter, in two readings: the criterion below
  on (question, reference contexts), p(Yes); and nv_context_relevance with the reference contexts as the
  contexts. A row counts when its score is 0.5 or above.

Writes DIR/<tool>.jsonl (the rows) and DIR/<tool>.json (time, rows, failures, server requests and tokens,
both checks). Run it alone on the server: the token counts are /metrics deltas. RAGAS's test-set filters
need rapidfuzz (`pip install rapidfuzz`), and its token counts a local tokenizer (`--tokenizer DIR`).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ANSWERABLE = (
    "The question can be answered fully from the reference contexts alone: every fact the question asks for "
    "is stated in them, with no outside knowledge needed."
)
RAGAS_KINDS = {
    "single_hop_specific_query_synthesizer": "single_hop",
    "multi_hop_specific_query_synthesizer": "multi_hop",
    "multi_hop_abstract_query_synthesizer": "abstract",
}


def words(text: str) -> set[str]:
    """Lower-cased words, each Chinese character a word of its own."""
    return set(re.findall(r"[\u4e00-\u9fff]|[^\W\u4e00-\u9fff]+", text.lower()))


def language(text: str) -> str:
    return "zh" if re.search(r"[\u4e00-\u9fff]", text) else "en"


def judge_spec(args: argparse.Namespace) -> Any:
    """The server as our judge, with the harness's timeout per request (a shared server is slow)."""
    from ascend_eval.models.spec import ModelSpec

    url = args.judge.rstrip("/") + "/v1/chat/completions"
    return ModelSpec(model=url, role="judge", request_timeout=args.timeout, max_retries=1)


def source_document(context: str, documents: Sequence[dict[str, str]]) -> str:
    """The document that holds most of `context`'s words."""
    mine = words(context)
    shares = [len(mine & words(d["text"])) / max(1, len(mine)) for d in documents]
    return documents[max(range(len(documents)), key=shares.__getitem__)]["id"]


def run_ours(args: argparse.Namespace, documents: list[dict[str, str]]) -> tuple[list[dict], dict]:
    from ascend_eval.testset import generate

    started = time.perf_counter()
    testset = generate(
        documents,
        args.size,
        judge=judge_spec(args),
        embedder=args.embedder,
        cache_dir=args.cache_dir,
        seed=args.seed,
        chunk_size=args.chunk_size,
        progress=lambda line: print(f"  ours: {line}", flush=True),
    )
    seconds = time.perf_counter() - started
    rows = [dict(r) for r in testset.to_list()]
    info = {
        "seconds": round(seconds, 1),
        "rows": len(rows),
        "complete": testset.complete,
        "failures": sum(testset.drops.values()),
        "drops": dict(testset.drops),
        "tried": dict(testset.tried),
        "kinds": dict(testset.kinds()),
        "languages": dict(testset.languages()),
    }
    return rows, info


def offline_tokenizer(model_dir: str) -> None:
    """RAGAS counts tokens with tiktoken, whose encodings download on first use; with no network here the
    judge's own tokenizer counts them. Its default transforms read the counts only to bin documents by
    length and to size the headline splitter's chunks."""
    import ragas.testset.transforms.default as default_transforms
    import ragas.testset.transforms.splitters.headline as headline
    import ragas.tokenizers
    from ragas.tokenizers import HuggingFaceTokenizer

    tokenizer = HuggingFaceTokenizer(model_name=model_dir)

    def count(string: str, encoding_name: str = "", tokenizer_: Any = None) -> int:
        return tokenizer.count_tokens(string)

    setattr(ragas.tokenizers, "_default_tokenizer", tokenizer)  # noqa: B010 (a module's lazy default)
    default_transforms.num_tokens_from_string = count
    headline.num_tokens_from_string = count


def without_node_filter(docs: list[Any], llm: Any, emb: Any) -> list[Any]:
    """RAGAS's default transforms for these documents less its `CustomNodeFilter`, the step whose JSON the
    small judge could not write (it wrote back the output's schema): what a RAGAS user would try next."""
    from ragas.testset.transforms import default_transforms
    from ragas.testset.transforms.filters import CustomNodeFilter

    return [t for t in default_transforms(docs, llm, emb) if not isinstance(t, CustomNodeFilter)]


def run_ragas(args: argparse.Namespace, documents: list[dict[str, str]]) -> tuple[list[dict], dict]:
    from langchain_core.documents import Document
    from ragas.run_config import RunConfig
    from ragas.testset import TestsetGenerator

    from benchmarks import ragas_side
    from benchmarks.harness import resolve_model

    offline_tokenizer(args.tokenizer)
    counts = ragas_side.Counts()
    llm = ragas_side.server_llm(args.judge, args.model, args.ragas_max_tokens, counts)
    emb = ragas_side.embeddings(str(resolve_model(args.embedder, "embedder")))
    docs = [Document(page_content=d["text"], metadata={"source": d["id"]}) for d in documents]
    errors = ragas_side.JobErrors()
    logger = logging.getLogger("ragas.executor")
    logger.addHandler(errors)
    started = time.perf_counter()
    raised = None
    frame = None
    try:
        generator = TestsetGenerator(llm=llm, embedding_model=emb)
        testset = generator.generate_with_langchain_docs(
            docs,
            testset_size=args.size,
            transforms=without_node_filter(docs, llm, emb) if args.ragas_no_node_filter else None,
            run_config=RunConfig(timeout=args.timeout),
            raise_exceptions=False,
        )
        frame = testset.to_pandas()
    except Exception as e:  # the call itself failed: report it, with what RAGAS had asked
        raised = f"{type(e).__name__}: {str(e)[:300]}"
    finally:
        logger.removeHandler(errors)
    seconds = time.perf_counter() - started
    rows = []
    for record in [] if frame is None else frame.to_dict(orient="records"):
        rows.append(
            {
                "question": record["user_input"],
                "ground_truth": record.get("reference"),
                "reference_contexts": list(record.get("reference_contexts") or []),
                "query_kind": RAGAS_KINDS.get(record.get("synthesizer_name"), record.get("synthesizer_name")),
            }
        )
    info = {
        "seconds": round(seconds, 1),
        "rows": len(rows),
        "failures": len(errors.jobs) + (raised is not None),
        "failed_jobs": dict(Counter(errors.jobs.values()).most_common(10)),
        "raised": raised,
        "client_counts": {
            "requests": counts.requests,
            "prompt_tokens": counts.prompt_tokens,
            "completion_tokens": counts.completion_tokens,
        },
        "kinds": dict(Counter(r["query_kind"] for r in rows)),
        "languages": dict(Counter(language(r["question"]) for r in rows)),
    }
    return rows, info


def retrieved(args: argparse.Namespace, rows: list[dict], documents: list[dict[str, str]]) -> dict[str, Any]:
    """The pipeline's top 5 for each question, against the row's source documents (and chunks, for ours)."""
    from ascend_eval.models.factory import build
    from ascend_eval.models.spec import ModelSpec
    from ascend_eval.pipeline import CONTEXT_IDS, PipelineConfig, build_rag_rows

    embedder = build(ModelSpec(model=args.embedder, role="embedder", device="cpu"))
    config = PipelineConfig(chunk_size=512, chunk_overlap=0, top_k=5)
    asked = [{"user_input": r["question"], "response": "-"} for r in rows]
    found = build_rag_rows(asked, corpus=documents, config=config, embedder=embedder, generator=None)
    every = some = chunks = 0
    for row, hit in zip(rows, found, strict=True):
        ids = hit[CONTEXT_IDS]
        got = {i.split("#")[0] for i in ids}
        wanted = {source_document(c, documents) for c in row["reference_contexts"]}
        every += wanted <= got
        some += bool(wanted & got)
        if "source_chunks" in row:
            chunks += set(row["source_chunks"]) <= set(ids)
    n = max(1, len(rows))
    out = {"all_documents": round(every / n, 3), "any_document": round(some / n, 3), "rows": len(rows)}
    if rows and "source_chunks" in rows[0]:
        out["all_chunks"] = round(chunks / n, 3)
    return out


def answerable(args: argparse.Namespace, rows: list[dict]) -> dict[str, Any]:
    """The second judge pass, two readings of whether the question can be answered from the row's reference
    contexts: the criterion `ANSWERABLE` on (question, reference contexts), and nv_context_relevance (NVIDIA's
    0-2 rating of the contexts for the question, read twice, scaled to [0, 1]) with the reference contexts as
    the contexts. Each: the share of rows at 0.5 or above, and the mean."""
    import math

    import ascend_eval
    from ascend_eval.metrics import Criterion

    criterion = Criterion(
        name="answerable_from_references", definition=ANSWERABLE, reads=("question", "reference_contexts")
    )
    samples = [
        {
            "user_input": r["question"],
            "reference_contexts": r["reference_contexts"],
            "retrieved_contexts": r["reference_contexts"],
            "response": "-",
        }
        for r in rows
    ]
    result = ascend_eval.evaluate(
        samples,
        metrics=[criterion, "nv_context_relevance"],
        judge=judge_spec(args),
        cache_dir=args.cache_dir,
        progress=False,
    )
    frame = result.to_pandas()
    out = {}
    for name in ("answerable_from_references", "nv_context_relevance"):
        scores = [float(s) for s in frame[name]]
        read = [s for s in scores if not math.isnan(s)]
        out[name] = {
            "share": round(sum(s >= 0.5 for s in read) / max(1, len(scores)), 3),
            "mean": round(sum(read) / max(1, len(read)), 3),
            "nan": len(scores) - len(read),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from ascend_eval.testset import load_corpus
    from benchmarks.server import counter_delta, read_counters

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", required=True, help="the server's base URL, http://HOST:PORT")
    parser.add_argument("--model", default="judge", help="the served model's name")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--size", type=int, default=30)
    parser.add_argument("--tools", nargs="+", default=["ours", "ragas"], choices=["ours", "ragas"])
    parser.add_argument("--embedder", default="multilingual-e5-small")
    parser.add_argument("--cache-dir", default=None, help="ours: the request cache (default: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk-size", type=int, default=512, help="ours: characters per chunk")
    parser.add_argument(
        "--timeout", type=float, default=1800, help="seconds: per request (ours), per job (RAGAS)"
    )
    parser.add_argument("--ragas-max-tokens", type=int, default=1024)
    parser.add_argument("--tokenizer", help="RAGAS: a local tokenizer directory (the judge's) for its counts")
    parser.add_argument("--ragas-no-node-filter", action="store_true", help="RAGAS: no CustomNodeFilter")
    parser.add_argument("--checks-only", action="store_true", help="score rows already in --out")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    documents = load_corpus(args.corpus)
    for tool in args.tools:
        rows_path, info_path = args.out / f"{tool}.jsonl", args.out / f"{tool}.json"
        if args.checks_only:
            rows = [json.loads(line) for line in rows_path.read_text(encoding="utf-8").splitlines()]
            info = json.loads(info_path.read_text(encoding="utf-8"))
        else:
            print(f"{tool}: generating {args.size} rows from {args.corpus}", flush=True)
            before = read_counters(args.judge)
            rows, info = (run_ours if tool == "ours" else run_ragas)(args, documents)
            info["server"] = counter_delta(before, read_counters(args.judge))
            info |= {"corpus": args.corpus, "size": args.size, "tool": tool}
            rows_path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
        if rows:
            info["retrieved_top5"] = retrieved(args, rows, documents)
            info["answerable"] = answerable(args, rows)
        info_path.write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(json.dumps(info, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
