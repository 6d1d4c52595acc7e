"""A judge with fixed rules behind an OpenAI-compatible HTTP endpoint, for benchmarks that must reach the
judge the way a job does (over HTTP) without a model: its cost is the client's, not a model's.

It reads the sample's input block that our prompts put last and answers:
* a generation (no `logprobs`) with the answer's sentences as statements;
* a verdict (`logprobs`) with "1" when the statement, without its final punctuation, occurs in the
  context, as top log-probabilities over "1" and "0".
It keeps no record of what it served, so its memory does not grow with the run.

    python -m benchmarks rule-server --port 8001      # prints the chat completions URL, then serves
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ascend_eval.prompts.layout import read_input

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
CHAT = "/v1/chat/completions"


def _input(prompt: str) -> dict[str, Any]:
    return read_input(prompt)


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The chat completion for one request body."""
    data = _input(str(body["messages"][-1]["content"]))
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "logprobs": None}
    if body.get("logprobs"):
        supported = data["statement"].rstrip(".。!！?？") in data["context"]
        p = 0.9 if supported else 0.2
        entries = [
            {"token": token, "logprob": math.log(q), "bytes": list(token.encode())}
            for token, q in sorted((("1", p), ("0", 1 - p)), key=lambda t: -t[1])
        ]
        choice["message"] = {"role": "assistant", "content": entries[0]["token"]}
        choice["logprobs"] = {"content": [{**entries[0], "top_logprobs": entries}]}
    else:
        statements = [s.strip() for s in _SENTENCE_END.split(data["answer"]) if s.strip()]
        choice["message"] = {"role": "assistant", "content": json.dumps({"statements": statements})}
    return {
        "id": "rules",
        "object": "chat.completion",
        "model": body.get("model", "rules"),
        "choices": [choice],
        "usage": {"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1},
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as vLLM serves

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            if self.path != CHAT:
                raise LookupError(self.path)
            status, reply = 200, answer(json.loads(self.rfile.read(length)))
        except (LookupError, ValueError, KeyError) as e:
            status, reply = 400, {"error": {"message": f"{type(e).__name__}: {e}"}}
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet: one line per request is the cost
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--port", type=int, default=0, help="0: any free port (the URL says which)")
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _Handler)
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}{CHAT}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
