"""The congestion gate: an endpoint client starts at its full parallelism, halves it while the server
answers 429/503, and grows it back one request at a time as answers come."""

from __future__ import annotations

import threading
import time

from ascend_eval.models.congestion import CongestionGate
from ascend_eval.models.http import EndpointClient
from ascend_eval.models.judge.openai import OpenAIJudge
from tests.models.loopback_server import CHAT, LoopbackServer, Reply, chat_reply, endpoint_config


def test_the_gate_holds_threads_at_its_limit():
    gate = CongestionGate(4)
    gate.pushed_back()  # limit 2
    inside, peak, lock = [0], [0], threading.Lock()

    def work():
        with gate:
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            time.sleep(0.05)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 2 and gate.active == 0


def test_a_pushed_back_client_sends_fewer_at_once_then_recovers():
    with LoopbackServer() as server:
        # eight 429s first (each halves the limit: 8 -> 1), then slow answers
        server.enqueue(CHAT, *[Reply({"error": "busy"}, status=429, headers={"Retry-After": "0"})] * 8)
        server.route(CHAT, lambda body: Reply(chat_reply("ok"), delay=0.05))
        client = EndpointClient(endpoint_config(server, parallelism=8, max_retries=8))
        first = client.map("/chat/completions", [{"n": i} for i in range(8)])
        assert all(not isinstance(o, Exception) for o in first)
        server.peak_concurrency = 0
        client.map("/chat/completions", [{"n": i} for i in range(8)])
        pushed_back_peak = server.peak_concurrency
        client.map("/chat/completions", [{"n": i} for i in range(60)])  # enough answers to grow back
        server.peak_concurrency = 0
        client.map("/chat/completions", [{"n": i} for i in range(16)])
        recovered_peak = server.peak_concurrency
        client.close()
    # limit 1 after the 429s; the first eight answers grow it by one per `limit` answers: to 4 at most;
    # the next eight can add one more (after four answers at 4), so at most 5 of them are in flight at once
    assert pushed_back_peak <= 5
    assert recovered_peak == 8


def test_an_endpoint_judge_streams_one_request_per_engine_call():
    with LoopbackServer() as server:
        judge = OpenAIJudge(endpoint_config(server, parallelism=32))
        assert (judge.max_concurrency, judge.max_batch) == (32, 1)
        judge.close()


def test_slow_answers_cut_the_limit_once_per_window_and_quick_ones_grow_it_back():
    gate = CongestionGate(16, slow_after=1.0)
    gate.succeeded(seconds=2.0)
    assert gate.limit == 12  # a quarter off at the first slow answer
    for _ in range(11):  # more slow answers from the same moment: held at 12 until 12 answers have passed
        gate.succeeded(seconds=2.0)
    assert gate.limit == 12
    gate.succeeded(seconds=2.0)
    assert gate.limit == 9
    for _ in range(9):
        gate.succeeded(seconds=0.1)
    assert gate.limit == 10  # additive increase resumes with quick answers
    gate.slow()  # a timeout, 10 answers after the last cut: a quarter off again
    assert gate.limit == 8
    gate.slow()  # another one at once: held
    assert gate.limit == 8


def test_a_server_that_answers_late_gets_fewer_requests_at_once():
    with LoopbackServer() as server:
        # each answer takes 0.3 s, more than half of the 0.5 s request timeout
        server.route(CHAT, lambda body: Reply(chat_reply("ok"), delay=0.3))
        client = EndpointClient(endpoint_config(server, parallelism=8, request_timeout=0.5))
        outcomes = client.map("/chat/completions", [{"n": i} for i in range(24)])
        assert all(not isinstance(o, Exception) for o in outcomes)
        assert client.in_flight_limit < 8
        server.peak_concurrency = 0
        client.map("/chat/completions", [{"n": i} for i in range(8)])
        assert server.peak_concurrency < 8
        client.close()


def test_one_hung_request_costs_a_quarter_of_the_limit_not_a_halving_per_attempt():
    with LoopbackServer() as server:

        def reply(body):
            return Reply(chat_reply("ok"), delay=2.0 if body["n"] == 0 else 0.0)

        server.route(CHAT, reply)
        client = EndpointClient(endpoint_config(server, parallelism=8, request_timeout=0.3, max_retries=2))
        outcomes = client.map("/chat/completions", [{"n": i} for i in range(40)])
        client.close()
    assert isinstance(outcomes[0], Exception) and "timed out" in str(outcomes[0])
    assert all(not isinstance(o, Exception) for o in outcomes[1:])
    assert client.in_flight_limit >= 6  # three timeouts of one request, one cut
