"""How far an action got, for the progress bar and for the line an interruption prints. Pure
(the optional ``show`` callback does the drawing).

``MoveCount`` is the executor's progress callback for a command: it keeps the
moves finished so far (over every run of the action: a drain's moves, then
an undrain's rebalance) and hands each report on to the progress bar. When the
operator presses Ctrl-C, ``interrupted`` is the line that says how many moves
were done and what to run next.
"""

from __future__ import annotations

from collections.abc import Callable

from l3ha.executor.outcome import Progress


class MoveCount:
    """The moves an action has finished (see the module docstring).

    Each report is one finished move (reports may come from the executor's
    workers out of order, so the moves are counted, not read off the report)."""

    def __init__(self, show: Callable[[Progress], None] | None = None) -> None:
        self.show = show
        self.done = 0

    def __call__(self, progress: Progress) -> None:
        self.done += 1
        if self.show is not None:
            self.show(progress)

    def interrupted(self, action: str) -> str:
        """The line an interruption prints: the moves done, and what to run next."""
        return (
            f"{action} interrupted after {self.done} finished move(s); run 'l3ha repair' to "
            f"finish the moves in flight from the cloud's actual state, then '{action}' again "
            "for the rest"
        )
