"""One evaluation's settings, checked once: `EvaluationConfig`.

Every way into a run builds one: `evaluate(dataset, metrics, config=None, **overrides)` from its keywords,
the command line from a `--config` file and its flags (`ascend_eval.cli.config`), a NeMo-shaped job, the
RAGAS and Ascend SDK drop-ins, and the Ray executor, which hands each actor the part it needs
(`for_actors`). The fields are the keywords `evaluate()` has always taken and the keys of `config.yaml`
(less the callbacks: `saved`), in that order. Each is checked from its description (`ascend_eval.setting`).

The settings tree is made from the fields' groups: `group(name)` is one group's settings as a frozen
dataclass (`GROUP_VIEWS`), `tree()` all of them nested. The derived views (`models`, `context`, `limits`)
are what the executors and the engine read, with "auto" already resolved.

>>> config = EvaluationConfig.of(judge_mode="generate")
>>> config.context.scoring, config.context.prompt_layout
('threshold', 'task_first')
>>> config.group("engine")
EngineSettings(cache_dir=None, chunk_size=1024, dedupe=True)
>>> config.tree().scoring.judge_mode, "on_round" in config.saved()
('generate', False)
>>> config.replace(language="zh").language, config.language
('zh', 'auto')
>>> EvaluationConfig.of(judge_mod="generate")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
TypeError: unexpected setting 'judge_mod'. Did you mean 'judge_mode'? Valid: judge, embedder, ...
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ascend_eval.choices import (
    BACKENDS,
    CALIBRATION_SETTINGS,
    EXECUTOR_NAMES,
    JUDGE_MODES,
    LANGUAGE_SETTINGS,
    LAYOUT_SETTINGS,
    SCORING_SETTINGS,
    SETTING_GROUPS,
    JudgeMode,
    SettingGroup,
)
from ascend_eval.engine.tracing import TraceArg
from ascend_eval.models.base import Role
from ascend_eval.models.budget import check_budget
from ascend_eval.models.checks import CHUNK_SIZE, WORKERS
from ascend_eval.models.factory import ROLE_KEYS, ModelArg, check, spec_for
from ascend_eval.models.spec import Backend
from ascend_eval.setting import (
    ADDRESS,
    ANY,
    CACHE,
    FOLDER,
    FUNCTION,
    INTEGER,
    KEY,
    MODEL,
    NUMBER,
    PAIRS,
    SWITCH,
    Setting,
    setting,
)

if TYPE_CHECKING:
    from ascend_eval.choices import Layout, Method, Scoring


def model_of(role: Role) -> Callable[[str, Any], None]:
    """The bound of a model setting: a value that is a model of `role` (a judge, not an embedder)."""

    def bound(name: str, value: Any) -> None:
        check(value, role)  # a model of another role, even one not needed

    return bound


def share(name: str, value: Any) -> None:
    """The bound of `memory_budget`: None, or a share in (0, 1]."""
    if value is not None:
        check_budget(value, name)


@dataclass(frozen=True)
class ModelChoice:
    """What a run uses for one role, as the user gave it: a shipped name, a path, a URL, a `ModelSpec`
    or an instance (None: the role's default), and the backend for a local model given by name or path.
    `EvaluationConfig.model_specs` turns it into a `ModelSpec`."""

    value: ModelArg = None
    backend: Backend = "auto"


@dataclass(frozen=True)
class MetricContext:
    """How every metric of a run asks and reads its judge, "auto" resolved: what each plan's
    `PlanContext` and the provenance record."""

    language: str
    ragas_compat: bool
    judge_mode: JudgeMode
    calibration: str
    """"off" or a method (`ascend_eval.prompts.calibration.METHODS`)."""
    scoring: Scoring
    prompt_layout: Layout

    @property
    def calibration_method(self) -> Method | None:
        """The engine's form of `calibration`: None for "off"."""
        return None if self.calibration == "off" else self.calibration  # type: ignore[return-value]


@dataclass(frozen=True)
class EngineLimits:
    """How the engine sends requests, and what it reports while it runs."""

    chunk_size: int = 1024
    dedupe: bool = True
    progress: bool = False
    on_round: Callable[[Any], None] | None = None
    on_progress: Callable[[Any], None] | None = None


@dataclass(frozen=True)
class EvaluationConfig:
    """Every setting of one evaluation, checked when it is built (before any data is read or model loads).

    Build it with `EvaluationConfig.of(**settings)` (or `evaluate(..., **settings)`); `replace` makes a
    changed copy. Unknown names are a `TypeError`, as an unknown keyword argument is; bad values a
    `ConfigError` that names the setting.
    """

    judge: ModelArg = setting(
        None,
        "models",
        MODEL,
        "shipped judge name, local HF directory or .gguf file, or server URL",
        bound=model_of("judge"),
    )
    """The judge LLM: a shipped name (default "smollm2-135m-instruct", tiny: it demonstrates the pipeline,
    not judging quality), a local HF directory or `.gguf` file, an OpenAI-compatible URL, a `ModelSpec`
    (the same plus endpoint, engine and decoding settings), or a `Judge` instance."""
    embedder: ModelArg = setting(
        None,
        "models",
        MODEL,
        "shipped embedder name, sentence-transformers directory, or server URL",
        bound=model_of("embedder"),
    )
    """A shipped name (default "multilingual-e5-small"), a sentence-transformers directory, a URL, a
    `ModelSpec`, or an `Embedder` instance."""
    cross_encoder: ModelArg = setting(
        None, "models", MODEL, "CrossEncoder directory or /v1/ranking server URL", bound=model_of("reranker")
    )
    """A CrossEncoder directory, a `/v1/ranking` URL, a `ModelSpec`, or a `Reranker` instance; only needed
    by metrics configured to use one."""
    judge_backend: Backend = setting(
        "auto",
        "models",
        help="runtime for a local judge: torch (auto, the default) or vllm (vLLM, vllm-ascend on NPUs)",
        choices=BACKENDS,
    )
    """The runtime for a local judge: "auto" (= "torch": transformers) or "vllm" (vLLM's offline engine,
    vllm-ascend on NPUs). Both name the model alike, so they share the request cache. A URL runs on its
    server: leave it "auto" there. A `ModelSpec` that names its backend keeps it."""
    embedder_backend: Backend = setting(
        "auto",
        "models",
        help="runtime for a local embedder: torch (auto, the default) or vllm (vLLM, vllm-ascend on NPUs)",
        choices=BACKENDS,
    )
    """As `judge_backend`, for the embedder ("torch": sentence-transformers)."""
    cross_encoder_backend: Backend = setting(
        "auto",
        "models",
        help="runtime for a local cross-encoder: torch (auto, the default) or vllm (vLLM, vllm-ascend on "
        "NPUs)",
        choices=BACKENDS,
    )
    """As `judge_backend`, for the cross-encoder."""
    device: str | None = setting(None, "models", help="auto, cpu, cuda[:N] or npu[:N]")
    """"auto", "cpu", "cuda[:N]" or "npu[:N]" for on-device models (default: the ASCEND_EVAL_DEVICE
    setting, else auto-detection); a `ModelSpec`'s own device comes first."""
    memory_budget: float | None = setting(
        None,
        "models",
        NUMBER,
        "share of each NPU's or GPU's memory the local models may take together (default 0.9), split "
        "between the vLLM engines after each torch model's reserve",
        metavar="FRACTION",
        bound=share,
    )
    """Share of each accelerator's memory the run's local models may take together (default 0.9): every
    vLLM engine without its own `gpu_memory_utilization` gets its part, after each torch model on the
    device has its reserve (`ascend_eval.models.budget`), so that two engines and a torch model on one NPU
    all start."""
    cache_dir: str | Path | Literal[False] | None = setting(
        None, "engine", CACHE, "request cache folder (default ~/.cache/ascend-eval/requests)"
    )
    """Where answered requests are cached (default `~/.cache/ascend-eval/requests`); False disables the
    cache. A re-run with the same inputs resumes from it."""
    language: str = setting(
        "auto",
        "scoring",
        help="prompt language (default auto: per sample)",
        choices=LANGUAGE_SETTINGS,
        hint="('auto': per sample)",
    )
    """Prompt language: "auto" (per sample, by its share of Chinese characters), "en" or "zh"."""
    ragas_compat: bool = setting(
        False, "scoring", SWITCH, "reproduce RAGAS's scores exactly, quirks included (default: off)"
    )
    """Reproduce RAGAS's scores exactly, quirks included (the metrics docs' table of differences); by
    default the sensible behaviour is used where RAGAS has a quirk."""
    judge_mode: str = setting(
        "classify",
        "scoring",
        help="verdicts from next-token probabilities (classify, default) or as JSON with reasons (generate)",
        choices=JUDGE_MODES,
    )
    """"classify" (verdicts and ratings from next-token probabilities, one forward pass each) or
    "generate" (RAGAS's procedure: schema-constrained JSON verdicts with reasons)."""
    calibration: str = setting(
        "auto",
        "scoring",
        help="calibrate classify-mode yes/no verdicts to the judge (default auto: anchored, off under "
        "--ragas-compat or in generate mode)",
        choices=CALIBRATION_SETTINGS,
    )
    """How classify-mode yes/no verdicts are calibrated to the judge (`ascend_eval.prompts.calibration`):
    "auto" ("anchored" in classify mode, "off" under `ragas_compat` or in generate mode), "anchored",
    "content_free" or "off". Recorded in the provenance."""
    scoring: str = setting(
        "auto",
        "scoring",
        help="count verdicts as yes/no (threshold) or score by their expected value (expected); default "
        "auto: expected, threshold under --ragas-compat or in generate mode",
        choices=SCORING_SETTINGS,
    )
    """"auto" ("expected" in classify mode, "threshold" under `ragas_compat` or in generate mode),
    "threshold" (each verdict counts as yes or no, as in RAGAS) or "expected" (a verdict-based score is its
    expected value under the verdict probabilities; docs/metrics.md lists each formula). Classify mode
    only. Recorded in the provenance."""
    prompt_layout: str = setting(
        "auto",
        "scoring",
        help="write each sample's texts once before the task, shared by all its requests (sample_first), "
        "or in every prompt (task_first); default auto: sample_first in classify mode, task_first "
        "under --ragas-compat or in generate mode",
        choices=LAYOUT_SETTINGS,
    )
    """"auto" ("sample_first" in classify mode, "task_first" under `ragas_compat` or in generate mode;
    `ascend_eval.prompts.layout.AUTO_LAYOUT`), "sample_first" (each sample whose texts are long enough has
    them written once, before the task, so that all its requests share them as a prefix) or "task_first"
    (every prompt carries its own copy of the texts it reads). Recorded in the provenance."""
    column_map: Mapping[str, str] | None = setting(None, "data", PAIRS, "e.g. user_input=query")
    """Our column name -> your dataset's column, e.g. {"user_input": "query"}."""
    progress: bool = setting(True, "output", SWITCH, by="--quiet", saved=False)
    """Show a progress bar."""
    chunk_size: int = setting(
        1024,
        "engine",
        INTEGER,
        "at most N requests per backend call, whose answers are cached as it returns (default 1024; "
        "1 sends each alone)",
        metavar="N",
        bound=CHUNK_SIZE.check,
    )
    """At most this many requests per backend call (each call's answers are committed to the cache as the
    call returns); 1 sends every request on its own, as RAGAS does (benchmarks use it for comparison). At
    most 65,536 (`ascend_eval.models.checks.CHUNK_SIZE`)."""
    dedupe: bool = setting(
        True,
        "engine",
        SWITCH,
        "run identical requests once (default: on; --no-dedupe only to measure what it saves)",
    )
    """Run identical requests once (turn off only to measure what it saves)."""
    on_round: Callable[[Any], None] | None = setting(None, "callbacks", FUNCTION, saved=False)
    """Receives each engine round's `RoundStats` (round k: the k-th step of every plan), once no plan can
    reach that round any more."""
    on_progress: Callable[[Any], None] | None = setting(None, "callbacks", FUNCTION, saved=False)
    """Receives a `Progress` snapshot (scores done, requests answered, rate, ETA) about every second while
    the run goes on, and once at its end."""
    trace: TraceArg = setting(None, "output", ANY, by="--trace")
    """OpenTelemetry spans of the run (`docs/tracing.md`), on the global tracer provider: False (none), True
    (the run, each stage and each backend call, with counts, tokens and latency but no prompt or output
    text) or "content" (prompts and outputs too, each cut to 4,000 characters). Default: the
    ASCEND_EVAL_TRACE environment variable (1 or content), else off."""
    out: str | Path | None = setting(
        None,
        "output",
        FOLDER,
        "folder for samples.jsonl (written as samples are scored), results.json, scores.csv, "
        "summary.json, report.html and config.yaml (required; or in --config)",
    )
    """A results folder. Each sample is written to `out/samples.jsonl` as soon as all its metrics are
    scored, the rest of the folder (`results.json`, `scores.csv`, `summary.json`, `report.html`) at the end,
    and the result is read back lazily from it: memory stays flat however many samples the dataset has.
    Without it, every score is kept in memory."""
    executor: str = setting("local", "executor", choices=EXECUTOR_NAMES, by="--ray")
    """"local" (this process's streaming engine) or "ray" (a Ray Data pipeline: one engine and one set of
    models per actor, `docs/ray.md`); the results are the same."""
    ray_address: str | None = setting(
        None,
        "executor",
        ADDRESS,
        "run on Ray Data, one engine and one set of models per actor (docs/ray.md): on the cluster at "
        "ADDRESS ('auto', host:port, ray://host:port), else a running local Ray or a new one",
        spelling="--ray",
        dest="ray",
        metavar="ADDRESS",
        const="",
    )
    """The Ray cluster for executor="ray" ("auto", "host:port" or "ray://host:port"); default: a running
    local Ray, else a new one in this process."""
    num_workers: int | None = setting(
        None,
        "executor",
        INTEGER,
        "Ray actors (default: one per GPU/NPU of the cluster, else 2)",
        metavar="N",
        bound=partial(WORKERS.check, optional=True),
    )
    """Ray actors (default: one per accelerator the cluster has, else 2); at most 1,024
    (`ascend_eval.models.checks.WORKERS`)."""
    context: MetricContext = field(init=False, repr=False, compare=False)
    """The metric settings with "auto" resolved."""

    def __post_init__(self) -> None:
        # Imported here: reading or writing a configuration (the command line's parser, config.yaml)
        # needs no metric; the metric registry loads with the first run.
        from ascend_eval.metrics.verdict_settings import resolve_calibration, resolve_scoring
        from ascend_eval.prompts.layout import resolve_layout

        for name, described_ in described().items():
            described_.check(name, getattr(self, name))
        scoring = self.group("scoring")
        facts = {"judge_mode": scoring.judge_mode, "ragas_compat": scoring.ragas_compat}
        resolved = {
            "calibration": resolve_calibration(scoring.calibration, **facts),
            "scoring": resolve_scoring(scoring.scoring, **facts),
            "prompt_layout": resolve_layout(scoring.prompt_layout, **facts),
        }
        object.__setattr__(self, "context", MetricContext(**{**fields_of(scoring), **resolved}))

    @classmethod
    def of(cls, base: EvaluationConfig | None = None, /, **settings: Any) -> EvaluationConfig:
        """`base` (default: every default) with `settings` over it.

        Raises:
            TypeError: a name that is no setting (with the closest one).
            ConfigError: a value that does not fit its setting.
        """
        valid = names()
        for name in settings:
            if name not in valid:
                close = difflib.get_close_matches(name, valid, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise TypeError(f"unexpected setting {name!r}.{hint} Valid: {', '.join(valid)}.")
        if base is None:
            return cls(**settings)
        return dataclasses.replace(base, **settings) if settings else base

    def replace(self, **settings: Any) -> EvaluationConfig:
        """A copy with `settings` changed (checked as `of` checks them)."""
        return EvaluationConfig.of(self, **settings)

    def settings(self) -> dict[str, Any]:
        """Every setting by name, in the order of the fields (`config.yaml`'s order)."""
        return {name: getattr(self, name) for name in names()}

    def saved(self) -> dict[str, Any]:
        """The settings `config.yaml` and a `--config` file hold, by name, in order: all but the callbacks
        (`CALLBACKS`)."""
        return saved_settings(self.settings())

    def group(self, name: SettingGroup) -> Any:
        """The settings of one group (`ascend_eval.choices.SETTING_GROUPS`) as a frozen dataclass whose
        fields are exactly that group's (`GROUP_VIEWS`)."""
        view = GROUP_VIEWS[name]
        return view(**{f.name: getattr(self, f.name) for f in dataclasses.fields(view)})

    def tree(self) -> Any:
        """Every setting, nested by group: a frozen `SettingsTree` of the group views (`config.tree().engine
        .chunk_size`)."""
        return SettingsTree(**{group: self.group(group) for group in SETTING_GROUPS})

    @property
    def models(self) -> dict[Role, ModelChoice]:
        """Role -> what the user chose for it."""
        chosen = self.group("models")
        return {
            role: ModelChoice(getattr(chosen, key), getattr(chosen, f"{key}_backend"))
            for role, key in ROLE_KEYS.items()
        }

    def model_specs(self, roles: Iterable[Role] | None = None) -> dict[Role, Any]:
        """The models of `roles` (default: all three), each as the one `ModelSpec` the registry builds it
        from (`ascend_eval.models.factory.spec_for`: its backend and the run's device merged in, here and
        nowhere else), or as the runtime instance the user passed. Every executor builds these.

        Raises:
            ConfigError: a backend setting that contradicts the model's spec, or no cross-encoder where one
                is asked for.
        """
        wanted = set(ROLE_KEYS) if roles is None else set(roles)
        return {
            role: spec_for(choice.value, role, backend=choice.backend, device=self.device)
            for role, choice in self.models.items()
            if role in wanted
        }

    @property
    def limits(self) -> EngineLimits:
        return EngineLimits(self.chunk_size, self.dedupe, self.progress, self.on_round, self.on_progress)

    def for_actors(self) -> EvaluationConfig:
        """What a Ray actor scores with: the same models and metric settings, no callback, progress bar,
        trace or output folder (those stay with the driver), and the cache folder made absolute against
        the driver's working directory."""
        cache = self.cache_dir
        if isinstance(cache, str | Path):
            cache = str(Path(cache).expanduser().absolute())
        return dataclasses.replace(
            self, progress=False, on_round=None, on_progress=None, trace=False, out=None, cache_dir=cache
        )


def names() -> list[str]:
    """Every setting's name, in order."""
    return [f.name for f in dataclasses.fields(EvaluationConfig) if f.init]


def defaults() -> dict[str, Any]:
    """Every setting's default, in order."""
    return {f.name: f.default for f in dataclasses.fields(EvaluationConfig) if f.init}


def described() -> dict[str, Setting]:
    """Every setting's description (`ascend_eval.setting`), in order."""
    return {f.name: f.metadata[KEY] for f in dataclasses.fields(EvaluationConfig) if f.init}


def fields_of(view: Any) -> dict[str, Any]:
    """A dataclass instance's fields by name, the values as they are (no copy, unlike `asdict`)."""
    return {f.name: getattr(view, f.name) for f in dataclasses.fields(view)}


CALLBACKS = frozenset(name for name, described_ in described().items() if not described_.saved)
"""Settings that only a caller in this process can give (a file or a job cannot hold a function), and the
progress bar, which the command line's `quiet` decides."""

SAVED: tuple[str, ...] = tuple(name for name in names() if name not in CALLBACKS)
"""The settings a file holds (`config.yaml`, `--config`), in order."""


def saved_settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of `values` (every setting's, or a configuration file's keys) that a file holds, in the
    order `config.yaml` writes them.

    >>> list(saved_settings(defaults()))[-3:], "on_round" in saved_settings(defaults())
    (['executor', 'ray_address', 'num_workers'], False)
    """
    return {name: values[name] for name in SAVED}


def group_view(group: SettingGroup) -> type:
    """A frozen dataclass whose fields are the settings of `group`, in order: one branch of the settings
    tree (`EvaluationConfig.group`). Made from the fields' groups, so a setting added to a group is in its
    view with no change here.

    >>> [f.name for f in dataclasses.fields(GROUP_VIEWS["engine"])]
    ['cache_dir', 'chunk_size', 'dedupe']
    """
    settings = described()
    fields = [(f.name, f.type) for f in dataclasses.fields(EvaluationConfig) if f.init]
    branch = [(name, kind) for name, kind in fields if settings[name].group == group]
    return frozen_class(f"{group.capitalize()}Settings", branch)


def frozen_class(name: str, fields: list[tuple[str, Any]]) -> type:
    """A frozen dataclass of this module (so that its instances pickle, by the module's name for it)."""
    made = dataclasses.make_dataclass(name, fields, frozen=True)
    made.__module__ = __name__
    return made


GROUP_VIEWS: dict[SettingGroup, type] = {group: group_view(group) for group in SETTING_GROUPS}
"""Each setting group's view, in `SETTING_GROUPS`' order."""

# Module names for the views, so that they pickle (a view travels as its class's qualified name).
(
    DataSettings,
    ModelsSettings,
    ScoringSettings,
    EngineSettings,
    ExecutorSettings,
    OutputSettings,
    CallbacksSettings,
) = GROUP_VIEWS.values()

SettingsTree = frozen_class("SettingsTree", list(GROUP_VIEWS.items()))
"""Every setting nested by group, frozen: what `EvaluationConfig.tree` gives."""
