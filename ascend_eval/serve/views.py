"""The server's jobs as NeMo's response objects: `EvaluationJob`, `EvaluationStatusDetails` and
`EvaluationResult` (v1), `EvaluatorV2Job`, `PlatformJobStatusResponse`, `PlatformJobLog` (v2), and the
results archive. Each is built from the job's directory: the runner's files and the server's record."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import datetime
from typing import Any

from ascend_eval.jobs import Job
from ascend_eval.jobs.runner import DAMAGED, RESULTS_FILE
from ascend_eval.serve.nemo import V1_STATUS, V2_STATUS, finite, nemo_results
from ascend_eval.serve.queue import job_log_lines

_META = ("namespace", "project", "description", "custom_fields", "ownership")
_TASK_STATUS = {"pending": "pending", "running": "running", "cancelling": "running", "completed": "completed"}
_ARCHIVED = ("spec.json", "status.json", "progress.json", "job.log", "server.json")


def problem(record: dict[str, Any], info: dict[str, Any]) -> str | None:
    """Why the job's records cannot be read (its status.json, server.json or spec.json, naming the file
    and the fix), or None."""
    if info["status"] == DAMAGED:
        return str(info.get("error"))
    return str(record["damaged"]) if record.get("damaged") else None


def _error(record: dict[str, Any], info: dict[str, Any]) -> Any:
    return problem(record, info) or info.get("error")


def state(record: dict[str, Any], info: dict[str, Any]) -> str:
    """The job's status as the server reports it: ours, plus "cancelling", "pending" for a job that
    stopped with the last server and waits to be resumed, and "error" for one whose records are damaged
    (`problem`)."""
    if problem(record, info) is not None:
        return DAMAGED
    status = str(info["status"])
    if record.get("cancel_requested") and status != "completed":
        return "cancelling" if status == "running" else "cancelled"
    if status in ("failed", "cancelled") and not record.get("done"):
        return "pending"
    return status


def _count(value: Any) -> int:
    """A count from progress.json; 0 for anything that is not one (a file written by someone else)."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError, OverflowError):
        return 0


def _progress(job: Job, status: str) -> tuple[float, int]:
    progress = job.progress()
    total, done = _count(progress.get("scores_total")), _count(progress.get("scores_done"))
    if status == "completed":
        return 100.0, done or total
    return (round(100.0 * done / total, 1) if total else 0.0), done


def status_details(job: Job, record: dict[str, Any]) -> dict[str, Any]:
    """NeMo's `EvaluationStatusDetails`: message, progress (0-100), samples processed, task statuses."""
    info = job.info()
    status = state(record, info)
    percent, done = _progress(job, status)
    stage = job.progress().get("stage")
    stage = stage if isinstance(stage, str) else None
    message = _error(record, info) if status in ("failed", "cancelled", DAMAGED) else stage or status
    task = record.get("task", "rag")
    return {
        "message": message,
        "progress": percent,
        "samples_processed": done,
        "task_status": {task: _TASK_STATUS.get(status, "failed")},
    }


def _config_and_target(record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    request = record.get("request", {})
    if record.get("shape") == "nemo":
        inner = request.get("spec", request) if record.get("api") == "v2" else request
        return inner["config"], inner["target"]
    # a seed-shaped spec, shown as the RAG config it amounts to
    metrics = {key: {"type": name} for key, name in record.get("metrics", {}).items()}
    config = {"type": "rag", "tasks": {record.get("task", "rag"): {"type": "ragas", "metrics": metrics}}}
    return config, {"type": "rag"}


def v1_job(job: Job, record: dict[str, Any]) -> dict[str, Any]:
    info = job.info()
    status = state(record, info)
    config, target = _config_and_target(record)
    out: dict[str, Any] = {
        "id": job.id,
        "created_at": record.get("created_at"),
        "updated_at": info.get("finished") or info.get("started") or record.get("created_at"),
        "config": config,
        "target": target,
        "status": V1_STATUS[status],
        "status_details": status_details(job, record),
        "result": f"result-{job.id}" if status == "completed" else None,
        "output_files_url": f"/v1/evaluation/jobs/{job.id}/download-results",
        **{k: record[k] for k in _META if record.get(k) is not None},
    }
    if record.get("shape") == "spec" and status != DAMAGED:
        out["spec"] = job.spec.model_dump(mode="json", exclude_none=True)
    return out


def v2_job(job: Job, record: dict[str, Any]) -> dict[str, Any]:
    info = job.info()
    status = state(record, info)
    if record.get("shape") == "nemo":
        config, target = _config_and_target(record)
        spec: dict[str, Any] = {"config": config, "target": target}
    elif status == DAMAGED:  # the spec may be what is damaged; the error says what is
        spec = {}
    else:
        spec = job.spec.model_dump(mode="json", exclude_none=True)
    return {
        "id": job.id,
        "name": record.get("name") or job.id,
        "spec": spec,
        "status": V2_STATUS[status],
        "status_details": status_details(job, record),
        "error_details": (
            {"message": _error(record, info)} if status in ("failed", "cancelled", DAMAGED) else {}
        ),
        "created_at": record.get("created_at"),
        "updated_at": info.get("finished") or info.get("started") or record.get("created_at"),
        **{k: record[k] for k in _META if record.get(k) is not None},
    }


def v2_status(job: Job, record: dict[str, Any]) -> dict[str, Any]:
    """NeMo's `PlatformJobStatusResponse`: one step ("evaluation") with one task per NeMo task."""
    job_view = v2_job(job, record)
    status, details, errors = job_view["status"], job_view["status_details"], job_view["error_details"]
    task = {
        "id": record.get("task", "rag"),
        "status": status,
        "status_details": details,
        "error_details": errors,
        "error_stack": "",
    }
    step = {
        "name": "evaluation",
        "status": status,
        "status_details": details,
        "error_details": errors,
        "tasks": [task],
    }
    return {
        "job_id": job.id,
        "status": status,
        "status_details": details,
        "error_details": errors,
        "steps": [step],
    }


def job_results(job: Job) -> dict[str, Any]:
    """`job_results.json`: our `{"aggregate_scores", "rows"}`, NaN as null."""
    text = (job.directory / "results" / RESULTS_FILE).read_text(encoding="utf-8")
    return finite(json.loads(text))


def evaluation_result(job: Job, record: dict[str, Any]) -> dict[str, Any]:
    """NeMo's `EvaluationResult`: scores per task and metric, with our aggregates in `custom_fields`."""
    results = job_results(job)
    info = job.info()
    return {
        "id": f"result-{job.id}",
        "job": job.id,
        "created_at": info.get("finished"),
        "updated_at": info.get("finished"),
        "files_url": f"/v1/evaluation/jobs/{job.id}/download-results",
        "tasks": nemo_results(results, record.get("task", "rag"), record.get("metrics", {})),
        "groups": {},
        "custom_fields": {"aggregate_scores": results["aggregate_scores"]},
        **{k: record[k] for k in ("namespace", "project") if record.get(k) is not None},
    }


def archive(job: Job) -> bytes:
    """The job's results folder, spec, status, progress and log, as a zip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in _ARCHIVED:
            path = job.directory / name
            if path.is_file():
                zf.write(path, name)
        results = job.directory / "results"
        if results.is_dir():
            for path in sorted(results.rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(job.directory).as_posix())
    return buffer.getvalue()


def _timestamp(line: str) -> datetime | None:
    try:  # the job log's format: "2026-01-31 12:00:00,123 INFO name: message"
        return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").astimezone()
    except ValueError:
        return None


def v2_logs(job: Job, record: dict[str, Any], *, limit: int, cursor: int) -> dict[str, Any]:
    """A page of NeMo's `PlatformJobLog` entries, one per log line; `next_page` is the next cursor."""
    lines = job_log_lines(job.directory)
    stamp = None
    entries = []
    for i, line in enumerate(lines):
        stamp = _timestamp(line) or stamp
        if i < cursor:
            continue
        if len(entries) == limit:
            break
        entries.append(
            {
                "job_id": job.id,
                "job_step": "evaluation",
                "job_task": record.get("task", "rag"),
                "message": line,
                "timestamp": (stamp or datetime.now().astimezone()).isoformat(),
            }
        )
    end = cursor + len(entries)
    return {"object": "list", "data": entries, "next_page": str(end) if end < len(lines) else None}


def v2_result_entries(job: Job, record: dict[str, Any]) -> list[dict[str, Any]]:
    """NeMo's `PlatformJobResult` list: "evaluation-results" (the scores) and "artifacts" (the zip)."""
    base = f"/v2/evaluation/jobs/{job.id}/results"
    return [
        {
            "job_id": job.id,
            "result_name": name,
            "namespace": record.get("namespace") or "default",
            "artifact_storage_type": "nds",
            "artifact_url": f"{base}/{name}/download",
            "created_at": job.info().get("finished"),
        }
        for name in ("evaluation-results", "artifacts")
    ]
