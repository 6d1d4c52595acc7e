"""`ascend-eval serve`: NeMo Evaluator's evaluation-jobs REST API, for the RAG metric jobs of
`ascend_eval.jobs`, so that a script written for NeMo with the `nemo-microservices` client runs here
with only its base URL changed.

    nemo.py     NeMo's bodies (config + target, v1 and v2) as our job spec; our results in NeMo's shape
    service.py  settings, jobs, secrets: what the routes act on
    queue.py    the job queue: N jobs at once, each in its own process; state on disk, resumed on restart
    views.py    NeMo's response objects, built from a job's directory
    routes.py   /v1/evaluation/jobs, /v2/evaluation/jobs, /v1/secrets
    app.py      the FastAPI application: bearer token, body limit, 422s
    cli.py      the `serve` command

Only `cli.py` is imported by the command line's parser; FastAPI and uvicorn (the `serve` extra) load when
the server starts.
"""
