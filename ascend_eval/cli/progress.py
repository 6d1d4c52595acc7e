"""When a log or a pipe gets a `progress:` line (a terminal gets tqdm's bar instead)."""

from __future__ import annotations

from ascend_eval.engine import Progress

STALLED_EVERY = 10.0
"""Seconds between progress lines while nothing moves (no score done, no request answered): a judge busy
with one long batch would otherwise repeat the same line every `--progress-every` seconds into a CI log
or a `nohup` file."""


class ProgressLines:
    """Decides, snapshot by snapshot, whether a run's progress line is printed.

    A line is due when `every` seconds have passed since the last one and something moved, when
    `max(every, STALLED_EVERY)` seconds have passed with nothing moved, and always for the final snapshot.

    >>> lines = ProgressLines(every=2.0)
    >>> snap = lambda done, answered, t: Progress(done, 4, answered, answered, 0, t)
    >>> [lines.due(snap(0, 0, 2.0)), lines.due(snap(0, 0, 4.0)), lines.due(snap(0, 0, 12.0))]
    [False, False, True]
    >>> [lines.due(snap(1, 3, 13.0)), lines.due(snap(1, 5, 14.0)), lines.due(snap(4, 9, 14.5))]
    [False, True, True]
    """

    def __init__(self, every: float) -> None:
        self.every = every
        self.last_at = 0.0
        self.last_state: tuple[int, int] = (0, 0)

    def due(self, snapshot: Progress) -> bool:
        state = (snapshot.scores_done, snapshot.requests_answered)
        waited = snapshot.elapsed - self.last_at
        final = snapshot.scores_done >= snapshot.scores_total
        moved = state != self.last_state
        if not final and waited < (self.every if moved else max(self.every, STALLED_EVERY)):
            return False
        self.last_at, self.last_state = snapshot.elapsed, state
        return True
