"""A NeMo Evaluator user's script, run against `ascend-eval serve` instead of the NeMo platform.

The one change from a script written for NeMo: the base URL comes from the environment
(`NEMO_MICROSERVICES_BASE_URL`, which the client also reads itself), so the same script talks to
NeMo or to ascend-eval. Start the server first:

    printf %s "$TOKEN" | ascend-eval secrets set serve-token
    ascend-eval serve                       # http://127.0.0.1:8000, docs at /docs
    NEMO_MICROSERVICES_BASE_URL=http://127.0.0.1:8000 NEMO_API_TOKEN=$TOKEN python examples/nemo_client.py

`JUDGE_URL` points the judge at another OpenAI-compatible endpoint (default: NVIDIA's API, with the key in
`NVIDIA_API_KEY`).
"""

import os
import time

from nemo_microservices import NeMoMicroservices

token = os.environ.get("NEMO_API_TOKEN")
client = NeMoMicroservices(
    base_url=os.environ["NEMO_MICROSERVICES_BASE_URL"],
    default_headers={"Authorization": f"Bearer {token}"} if token else None,
)

judge = {
    "api_endpoint": {
        "url": os.environ.get("JUDGE_URL", "https://integrate.api.nvidia.com/v1/chat/completions"),
        "model_id": "meta/llama-3.1-8b-instruct",
        "api_key": os.environ.get("NVIDIA_API_KEY", ""),
    }
}

config = {
    "type": "rag",
    "name": "rag-ragas",
    "namespace": "my-organization",
    "tasks": {
        "my-ragas-task": {
            "type": "ragas",
            "metrics": {
                "rag_faithfulness": {"type": "faithfulness"},
                "rag_context_recall": {"type": "context_recall"},
            },
            "params": {
                "judge_llm": judge,
                "judge_timeout": 300,
                "judge_max_retries": 5,
                "judge_max_workers": 16,
            },
        }
    },
}

target = {
    "type": "rows",
    "rows": [
        {
            "question": "What is the capital of France?",
            "contexts": ["Paris is the capital city of France."],
            "answer": "Paris is the capital city of France.",
            "ground_truth": "Paris is the capital city of France.",
        },
        {
            "question": "Who wrote Romeo and Juliet?",
            "contexts": ["William Shakespeare wrote Romeo and Juliet in the 1590s."],
            "answer": "Romeo and Juliet was written by Christopher Marlowe.",
            "ground_truth": "William Shakespeare",
        },
    ],
}

job = client.evaluation.jobs.create(namespace="my-organization", config=config, target=target)
print(f"job {job.id}: {job.status}")

while True:
    job = client.evaluation.jobs.retrieve(job.id)
    if job.status in ("completed", "failed", "cancelled"):
        break
    details = client.evaluation.jobs.status(job.id)
    print(f"  {job.status}: {details.progress:.0f}% ({details.message})")
    time.sleep(1)

print(f"status: {job.status}")
if job.status != "completed":
    raise SystemExit(f"the job did not complete: {job.status_details}")

results = client.evaluation.jobs.results(job.id)
for task_name, task in results.tasks.items():
    for metric_name, metric in task.metrics.items():
        for score_name, score in metric.scores.items():
            print(f"{task_name} {metric_name} {score_name}: {score.value:.3f} (n={score.stats.count})")
