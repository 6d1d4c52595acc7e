"""The background process of `Job.start()`: `python -m ascend_eval.jobs --root ROOT ID`.

SIGTERM (from `ascend-eval job cancel`) stops the run the way Ctrl-C does: the job records `cancelled`
and keeps every answered request in its cache.
"""

from __future__ import annotations

import argparse
import os
import sys

from ascend_eval.errors import AscendEvalError
from ascend_eval.jobs.runner import Jobs, cancel_on_sigterm
from ascend_eval.jobs.secrets import SecretStore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ascend_eval.jobs", description=__doc__)
    parser.add_argument("--root", required=True, help="the jobs folder")
    parser.add_argument("--secrets-dir", help="the secrets folder (default: the standard store)")
    parser.add_argument("job_id")
    args = parser.parse_args(argv)
    cancel_on_sigterm()
    try:
        secrets = SecretStore(args.secrets_dir) if args.secrets_dir else None
        Jobs(args.root, secrets=secrets).get(args.job_id).run()
    except KeyboardInterrupt:
        # The job has recorded "cancelled" and its cache is committed. Leave now: a normal exit would
        # wait for HTTP requests still in flight in worker threads (up to request_timeout each).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    except AscendEvalError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
