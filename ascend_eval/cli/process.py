"""How a command ends, the way Unix tools end: SIGTERM unwinds like Ctrl-C, and a reader that goes away
(`ascend-eval job list | head`) ends the command quietly.

Only the command line installs these; importing the library changes no signal handler.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE (13): what a shell reports for a tool that SIGPIPE stopped (`yes | head`). A literal:
Windows has no signal.SIGPIPE."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises KeyboardInterrupt in the main thread.

    `timeout`, `kill` and `ascend-eval job cancel` send SIGTERM, whose default ends the process at once:
    no `finally` runs, no message says what was kept. As a KeyboardInterrupt the run unwinds like
    Ctrl-C: the engine's committed answers stay in the request cache, the cache is closed, evaluate()
    logs how many answered requests are cached, and a job records "cancelled". The previous handler is
    restored afterwards (so `main([...])` called from Python leaves its caller's handler as it was).
    Outside the main thread (where no handler can be installed) the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        # None: a handler set outside Python, which cannot be put back; the default is the nearest.
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def run_command(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """`command(args)`, with SIGTERM as Ctrl-C (see `sigterm_as_interrupt`) and a closed stdout ending it
    quietly with `EXIT_BROKEN_PIPE` instead of a BrokenPipeError traceback.

    KeyboardInterrupt and the library's errors pass through to the caller (`main`), which reports them.
    """
    try:
        with sigterm_as_interrupt():
            code = command(args)
            # Flushed here, not at exit: a reader gone by now is one more broken pipe to end quietly.
            sys.stdout.flush()
            return code
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush at exit has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a file (captured, closed): nothing to do
        pass
