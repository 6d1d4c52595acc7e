"""The Ascend RAG SDK's evaluation API (`mx_rag.evaluate.RAGEvaluator`), run on ascend-eval's engine.

An SDK user's script runs with one change, the import:

    from ascend_eval.mxrag import RAGEvaluator, Text2TextLLM, TEIEmbedding, TextEmbedding

    evaluator = RAGEvaluator(llm=Text2TextLLM(base_url="http://judge:8000/v1/chat/completions",
                                              model_name="qwen2.5-7b-instruct"),
                             embeddings=TEIEmbedding(url="http://tei:8080/embed"))
    scores = evaluator.evaluate(["faithfulness", "answer_similarity"], dataset, language="chinese")
    # {"faithfulness": [...], "semantic_similarity": [...]}, or None when the evaluation failed

What carries over from the SDK: the signatures (`evaluate(metrics, dataset, language, prompts_path,
show_progress)`, positional or by keyword), the metric names, the result keys (RAGAS's:
`semantic_similarity` for answer_similarity, `noise_sensitivity(mode=relevant)` for noise_sensitivity), a
`Dict[str, List[float]]` with NaN where a sample could not be scored, and None (the reason logged) when the
evaluation fails; unknown and repeated metric names are dropped with a warning. `RAGEvaluator(strict=True)`
raises instead of returning None or dropping names.

What differs: no 128-sample limit (any number of samples, batched); the SDK's models are described, not
loaded (`Text2TextLLM` becomes an OpenAI-compatible judge, `TEIEmbedding` TEI's native `/embed` client,
`TextEmbedding(model_path, dev_id)` a sentence-transformers embedder on `npu:<dev_id>`); the SDK's own
objects of those classes are read the same way. Prompts are ours, in English and Chinese (`prompts_path`
cannot load RAGAS prompt files); `language=None` picks the prompt language per sample. The judge decodes
greedily with each prompt's own token cap, so `llm_config` is not used.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Literal

from ascend_eval.errors import BACKEND_ERROR, BackendError, ConfigError
from ascend_eval.metrics import canonical_name
from ascend_eval.models.factory import ModelArg, model_spec
from ascend_eval.models.spec import ModelSpec

__all__ = [
    "LANGUAGES",
    "SDK_KEYS",
    "ClientParam",
    "LLMParameterConfig",
    "RAGEvaluator",
    "TEIEmbedding",
    "Text2TextLLM",
    "TextEmbedding",
]

logger = logging.getLogger(__name__)

LANGUAGES: dict[str | None, str] = {
    "chinese": "zh",
    "english": "en",
    None: "auto",
    "zh": "zh",
    "en": "en",
    "auto": "auto",
}
"""The SDK's `language` values (and ours) -> our prompt language; None picks it per sample."""
SDK_KEYS = {"answer_similarity": "semantic_similarity"}
"""Our metric name -> the key the SDK's result has for it, where they differ."""
_SPARSE = "/embed_sparse"


class LLMParameterConfig:
    """The SDK's decoding settings, accepted so that scripts run unchanged. The judge does not use them:
    it decodes greedily with each prompt's own token cap, so the same inputs give the same scores."""

    def __init__(
        self,
        max_tokens: int = 512,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: int | None = None,
        stream: bool = False,
    ) -> None:
        self.max_tokens = max_tokens
        self.presence_penalty = presence_penalty
        self.frequency_penalty = frequency_penalty
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.stream = stream


class ClientParam:
    """The SDK's HTTPS client settings: `timeout` becomes each request's timeout; a `ca_file` has to be
    trusted through `SSL_CERT_FILE` (see `RAGEvaluator`)."""

    def __init__(
        self,
        use_http: bool = False,
        ca_file: str = "",
        crl_file: str = "",
        timeout: int = 60,
        response_limit_size: int = 1024 * 1024,
    ) -> None:
        self.use_http = use_http
        self.ca_file = ca_file
        self.crl_file = crl_file
        self.timeout = timeout
        self.response_limit_size = response_limit_size


class Text2TextLLM:
    """The SDK's chat model, described: the judge is the OpenAI-compatible server at `base_url` (a
    `/v1/chat/completions` URL, as the SDK takes it, or the server's base URL) serving `model_name`."""

    def __init__(
        self,
        *,
        base_url: str,
        model_name: str,
        llm_config: LLMParameterConfig | None = None,
        client_param: ClientParam | None = None,
    ) -> None:
        self.base_url = base_url
        self.model_name = model_name
        self.llm_config = llm_config or LLMParameterConfig()
        self.client_param = client_param or ClientParam()


class TEIEmbedding:
    """The SDK's text-embeddings-inference client, described: `url` is TEI's `/embed` route (or its
    `/v1/embeddings` route, or the server's root), called through TEI's native API."""

    def __init__(self, url: str, client_param: ClientParam | None = None, embed_mode: str = "dense") -> None:
        self.url = url
        self.client_param = client_param or ClientParam()
        self.embed_mode = embed_mode

    @staticmethod
    def create(**kwargs: Any) -> TEIEmbedding:
        return TEIEmbedding(**kwargs)


class TextEmbedding:
    """The SDK's on-device embedder, described: the model directory at `model_path` runs with
    sentence-transformers on `npu:<dev_id>`, through the device seam, when the evaluation needs it.

    Args:
        model_path: a sentence-transformers directory (bge-large-zh-v1.5 as downloaded has the files), or
            a transformers one when `pooling_method="mean"` (sentence-transformers' default pooling).
        dev_id: the NPU to run on.
        use_fp16: accepted for the SDK's signature; the precision is the device's default.
        pooling_method: must match the directory's own pooling (checked when the evaluation starts).
        lock: accepted for the SDK's signature; the engine calls the model from one thread.
        device: ours, not the SDK's: a device instead of `npu:<dev_id>` ("cpu", "cuda:0", "auto").
    """

    def __init__(
        self,
        model_path: str,
        dev_id: int = 0,
        use_fp16: bool = True,
        pooling_method: str = "cls",
        lock: Any = None,
        *,
        device: str | None = None,
    ) -> None:
        if not isinstance(dev_id, int) or isinstance(dev_id, bool) or dev_id < 0:
            raise ConfigError(f"TextEmbedding dev_id={dev_id!r}; pass the NPU's index, an int >= 0.")
        self.model_path = model_path
        self.dev_id = dev_id
        self.use_fp16 = use_fp16
        self.pooling_method = pooling_method
        self.lock = lock
        self.device = device if device is not None else f"npu:{dev_id}"

    @staticmethod
    def create(**kwargs: Any) -> TextEmbedding:
        return TextEmbedding(**kwargs)


class RAGEvaluator:
    """`mx_rag.evaluate.RAGEvaluator` on our engine (see the module docstring).

    Args:
        llm: the judge: a `Text2TextLLM` (ours or the SDK's), or anything `evaluate(judge=...)` takes (a
            `ModelSpec`, a URL, a local path, a `Judge`).
        embeddings: a `TEIEmbedding` or `TextEmbedding` (ours or the SDK's), or anything
            `evaluate(embedder=...)` takes.
        strict: raise instead of returning None (and instead of dropping unknown metric names).
        device: the device of local models that name none ("auto", "cpu", "npu:1", ...).
        cache_dir: where answered requests are cached (False: no cache); see `ascend_eval.evaluate`.
        judge_mode: "classify" (verdicts from next-token probabilities) or "generate" (RAGAS's JSON).

    Raises:
        ConfigError: `llm` or `embeddings` is of a kind this cannot use; the message says what to pass.
    """

    def __init__(
        self,
        llm: Any,
        embeddings: Any,
        *,
        strict: bool = False,
        device: str | None = None,
        cache_dir: str | Path | Literal[False] | None = None,
        judge_mode: str = "classify",
    ) -> None:
        self.judge = judge_of(llm)
        self.embedder = embedder_of(embeddings)
        self.strict = strict
        self.device = device
        self.cache_dir = cache_dir
        self.judge_mode = judge_mode

    def evaluate(
        self,
        metrics: list[str],
        dataset: Any,
        language: str | None = None,
        prompts_path: str | None = None,
        show_progress: bool = False,
    ) -> dict[str, list[float]] | None:
        """Score `dataset` with `metrics`, as the SDK does.

        Args:
            metrics: metric names (the SDK's, which are RAGAS's; NeMo's names work too).
            dataset: the SDK's dict of lists (`user_input`, `response`, `retrieved_contexts`,
                `reference`), of any length, or anything `ascend_eval.evaluate` reads.
            language: "chinese" or "english" (or "zh", "en"); None picks it per sample.
            prompts_path: a folder of prompt files for the SDK's RAGAS prompts. Ours are built in: a
                folder without RAGAS prompt files for the chosen metrics is passed over (as the SDK
                passes over a missing file); one with them is an error, as they cannot be used.
            show_progress: show a progress bar.

        Returns:
            One list of scores per metric, in dataset order, keyed as the SDK keys them (NaN where a
            sample could not be scored); None when the evaluation failed, the reason logged at ERROR.

        Raises:
            ConfigError: an argument of the wrong type or value (the SDK raises ValueError there too),
                or no known metric is left.
            AscendEvalError: with `strict=True`, whatever made the evaluation fail.
        """
        names = self._metrics(metrics)
        if not (language is None or isinstance(language, str)) or language not in LANGUAGES:
            raise ConfigError(
                f"RAGEvaluator.evaluate language={language!r}; valid: 'chinese', 'english' (or 'zh', 'en'), "
                "or None to pick the language per sample."
            )
        if prompts_path is not None and (not isinstance(prompts_path, str | Path) or not str(prompts_path)):
            raise ConfigError(f"RAGEvaluator.evaluate prompts_path={prompts_path!r}; pass a folder or None.")
        if not isinstance(show_progress, bool):
            raise ConfigError(f"RAGEvaluator.evaluate show_progress={show_progress!r}; pass True or False.")
        try:
            check_prompts_path(prompts_path, names, language)
            return self._run(names, dataset, LANGUAGES[language], show_progress)
        except KeyboardInterrupt:
            raise
        except Exception as e:
            if self.strict:
                raise
            logger.error("RAGEvaluator.evaluate failed, returning None: %s: %s", type(e).__name__, e)
            return None

    def _metrics(self, metrics: Any) -> list[str]:
        if isinstance(metrics, str) or not isinstance(metrics, list | tuple):
            raise ConfigError(
                f"RAGEvaluator.evaluate metrics={metrics!r}; pass a list of names, e.g. ['faithfulness']."
            )
        names: list[str] = []
        for m in metrics:
            if not isinstance(m, str):
                raise ConfigError(f"RAGEvaluator.evaluate metrics holds {m!r}; pass metric names (str).")
            try:
                name = canonical_name(m)
            except ConfigError as e:
                if self.strict:
                    raise
                logger.warning("Unsupported metric removed: %s", e)
                continue
            if name in names:
                if self.strict:
                    raise ConfigError(f"metrics lists {m!r} twice (as {name!r}); list each metric once.")
                logger.warning("Duplicate metric %r removed.", m)
                continue
            names.append(name)
        if not names:
            raise ConfigError(f"No valid metrics in {metrics!r}; see ascend_eval.metric_names().")
        return names

    def _run(self, names: list[str], dataset: Any, language: str, progress: bool) -> dict[str, list[float]]:
        from ascend_eval.api import evaluate

        result = evaluate(
            dataset,
            names,
            judge=self.judge,
            embedder=self.embedder,
            device=self.device,
            cache_dir=self.cache_dir,
            language=language,
            judge_mode=self.judge_mode,
            progress=progress,
        )
        out: dict[str, list[float]] = {}
        for metric in result.metrics:
            scores = result[metric]
            failed = [r.reason for r in result.results[metric] if (r.reason or "").startswith(BACKEND_ERROR)]
            if failed and len(failed) == len(scores):
                # Every score lost to the backend (a wrong URL's 404, a server that is down): a table of
                # NaN would pass for a result, so this is the evaluation failing.
                raise BackendError(
                    f"{metric}: all {len(scores)} samples failed in a model backend; the first: {failed[0]}"
                )
            if failed:
                logger.warning(
                    "%s: %d of %d samples lost to backend errors (NaN), e.g. %s",
                    metric,
                    len(failed),
                    len(scores),
                    failed[0],
                )
            out[SDK_KEYS.get(metric, metric)] = scores
        return out


def judge_of(llm: Any) -> ModelArg:
    """What `evaluate(judge=...)` gets for the SDK's `llm` argument.

    Raises:
        ConfigError: `llm` is neither a Text2TextLLM-like object nor a model argument of ours.
    """
    base_url, model_name = getattr(llm, "base_url", None), getattr(llm, "model_name", None)
    if isinstance(base_url, str) and isinstance(model_name, str):  # before `_ours`: LangChain LLMs generate
        return model_spec(
            base_url,
            "judge",
            served_model_name=model_name,
            **_client_settings(getattr(llm, "client_param", None), base_url),
        )
    if _ours(llm):
        return llm  # type: ignore[no-any-return]
    raise ConfigError(
        f"RAGEvaluator llm= got {type(llm).__name__}; pass a Text2TextLLM (base_url, model_name), a "
        "ModelSpec, a local model path or an OpenAI-compatible server URL. Other LangChain LLMs are not "
        "read: point at the server they call instead."
    )


def embedder_of(embeddings: Any) -> ModelArg:
    """What `evaluate(embedder=...)` gets for the SDK's `embeddings` argument.

    Raises:
        ConfigError: `embeddings` is not TEIEmbedding- or TextEmbedding-like nor a model argument of
            ours, or is a sparse TEI embedder (the metrics need dense vectors).
    """
    if isinstance(embeddings, str | Path | ModelSpec):
        return embeddings
    url = getattr(embeddings, "url", None)
    if isinstance(url, str):
        return model_spec(
            tei_embed_url(url), "embedder", **_client_settings(getattr(embeddings, "client_param", None), url)
        )
    model_path = getattr(embeddings, "model_path", None)
    if isinstance(model_path, str | Path):
        device = getattr(embeddings, "device", None)
        if not isinstance(device, str):  # the SDK's own TextEmbedding: its model is already placed
            device = str(getattr(getattr(embeddings, "model", None), "device", "") or "") or None
        check_pooling(Path(model_path), str(getattr(embeddings, "pooling_method", "cls")))
        return model_spec(str(model_path), "embedder", device=device)
    if _ours(embeddings):
        return embeddings  # type: ignore[no-any-return]
    raise ConfigError(
        f"RAGEvaluator embeddings= got {type(embeddings).__name__}; pass a TEIEmbedding (url), a "
        "TextEmbedding (model_path, dev_id), a ModelSpec, a sentence-transformers directory or a server URL."
    )


def tei_embed_url(url: str) -> str:
    """The `/embed` URL for the URL a TEIEmbedding was given (its `/embed`, `/v1/embeddings` or root).

    >>> tei_embed_url("http://tei:8080/embed"), tei_embed_url("http://tei:8080/v1/embeddings")
    ('http://tei:8080/embed', 'http://tei:8080/embed')
    >>> tei_embed_url("http://tei:8080/")
    'http://tei:8080/embed'
    """
    base = url.strip().rstrip("/")
    if base.endswith(_SPARSE):
        raise ConfigError(
            f"TEIEmbedding url={url!r} is TEI's sparse route; the metrics compare dense vectors. Use the "
            "same server's /embed route (a dense embedding model)."
        )
    for route in ("/v1/embeddings", "/embeddings", "/embed"):
        if base.endswith(route):
            return base[: -len(route)] + "/embed"
    return base + "/embed"


def check_pooling(path: Path, pooling: str) -> None:
    """Refuse a TextEmbedding whose `pooling_method` is not the pooling its directory gives
    sentence-transformers (which mean-pools a plain transformers directory).

    Raises:
        ConfigError: the two differ; the message names both and the fix.
    """
    import json

    modules = path / "modules.json"
    found = "mean"
    if modules.is_file():
        try:
            entries = json.loads(modules.read_text(encoding="utf-8"))
            pool = next(e for e in entries if e.get("type", "").endswith("Pooling"))
            config = json.loads((path / pool.get("path", "") / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, StopIteration, AttributeError):
            return  # no pooling module we can read: sentence-transformers' own checks speak when it loads
        modes = {
            "cls": "pooling_mode_cls_token",
            "mean": "pooling_mode_mean_tokens",
            "max": "pooling_mode_max_tokens",
            "lasttoken": "pooling_mode_lasttoken",
        }
        found = next((m for m, key in modes.items() if config.get(key)), "mean")
    elif not path.is_dir():
        return  # the factory says what is wrong with the path
    if found != pooling:
        where = (
            "its modules.json" if modules.is_file() else "sentence-transformers' default for a plain model"
        )
        raise ConfigError(
            f"TextEmbedding(model_path={str(path)!r}, pooling_method={pooling!r}), but the directory pools "
            f"with {found!r} ({where}). Pass pooling_method={found!r}, or save the model as a "
            f"sentence-transformers directory with {pooling!r} pooling."
        )


def _ours(value: Any) -> bool:
    """Whether `value` is already a model argument of ours: a spec, a string, a path or a runtime."""
    return (
        value is None
        or isinstance(value, str | Path | ModelSpec)
        or any(callable(getattr(value, m, None)) for m in ("generate", "embed", "score"))
    )


def _client_settings(client_param: Any, url: str) -> dict[str, Any]:
    """The ModelSpec endpoint settings a ClientParam stands for.

    Raises:
        ConfigError: it names a CA file for an https URL that `SSL_CERT_FILE` does not make trusted.
    """
    if client_param is None:
        return {}
    ca_file = getattr(client_param, "ca_file", "") or ""
    if ca_file and url.strip().lower().startswith("https://") and not os.environ.get("SSL_CERT_FILE"):
        raise ConfigError(
            f"ClientParam(ca_file={ca_file!r}) for {url!r}: the HTTP client trusts the CAs in the file "
            f"SSL_CERT_FILE names. Run with SSL_CERT_FILE={ca_file} set."
        )
    timeout = getattr(client_param, "timeout", None)
    return {"request_timeout": float(timeout)} if isinstance(timeout, int | float) and timeout > 0 else {}


def check_prompts_path(prompts_path: str | Path | None, metrics: list[str], language: str | None) -> None:
    """Refuse a prompts folder that holds RAGAS prompt files for the chosen metrics: the SDK would load
    them into RAGAS's prompts, and ours cannot take them. A folder without such files (or none) is fine.

    Raises:
        ConfigError: the folder holds such files (named in the message), or is not a folder.
    """
    if prompts_path is None:
        return
    folder = Path(prompts_path).expanduser()
    if not folder.exists():
        logger.warning(
            "prompts_path %s does not exist; the built-in prompts are used (as the SDK falls back to its "
            "defaults).",
            folder,
        )
        return
    if not folder.is_dir():
        raise ConfigError(f"prompts_path={str(prompts_path)!r} is a file; pass a folder or None.")
    suffix = f"_{language}.json" if language in ("chinese", "english") else ".json"
    # The SDK's files are named {metric}_{prompt}_{language}.json, RAGAS's `save_prompts` layout.
    found = sorted(
        p.name
        for p in folder.iterdir()
        if p.name.endswith(suffix) and any(p.name.startswith(f"{m}_") for m in metrics)
    )
    if found:
        raise ConfigError(
            f"prompts_path={str(prompts_path)!r} holds RAGAS prompt files for the chosen metrics "
            f"({', '.join(found[:4])}{', ...' if len(found) > 4 else ''}). ascend-eval does not load RAGAS "
            "prompts: every metric has its own English and Chinese prompt built in (language='chinese' "
            "picks the Chinese one). Drop prompts_path, or pass a folder without those files."
        )
    logger.info("prompts_path %s has no prompt files for %s; the built-in prompts are used.", folder, metrics)
