"""Task states and end reasons."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["EndReason", "State"]


class State(StrEnum):
    """The AIP task states (spec section 4.2); the value is the state's AIP name."""

    ACCEPTED = "accepted"
    """The partner took the task on."""
    WORKING = "working"
    """The partner is working on it."""
    AWAITING_INPUT = "awaiting-input"
    """The partner needs more input from the Leader."""
    AWAITING_COMPLETION = "awaiting-completion"
    """The products are ready; the Leader should complete the task (or continue it)."""
    COMPLETED = "completed"
    """The Leader completed the task (final)."""
    CANCELED = "canceled"
    """The task was canceled (final)."""
    FAILED = "failed"
    """The task failed (final)."""
    REJECTED = "rejected"
    """The partner rejected the task (final)."""

    def is_final(self) -> bool:
        """Whether the state is final (completed, canceled, failed or rejected)."""
        return self in (State.COMPLETED, State.CANCELED, State.FAILED, State.REJECTED)


class EndReason(StrEnum):
    """Why a task reached ``completed`` or ``canceled`` of a partner."""

    LEADER = "leader"
    """The Leader sent the command."""
    TIMEOUT = "timeout"
    """The awaiting-input or awaiting-completion timeout ran out."""
