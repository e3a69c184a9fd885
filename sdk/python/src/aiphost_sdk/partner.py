"""The class a partner implements, what its methods return, and how a module names its partner."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeVar

from .items import DataItem, Product
from .state import EndReason
from .task import Task

__all__ = ["Decision", "Outcome", "Partner", "export", "exported"]


@dataclass(frozen=True)
class Decision:
    """What :meth:`Partner.decide` says about a new task: :meth:`accept` it (the SDK reports
    ``accepted``, ``working``, then calls :meth:`Partner.work`), or :meth:`reject` it with a reason
    (the SDK reports ``rejected`` with the reason as a text item)."""

    rejection: str | None = None
    """The reason of a rejection; ``None`` for an acceptance."""

    @classmethod
    def accept(cls) -> Decision:
        """Take the task on."""
        return cls(None)

    @classmethod
    def reject(cls, reason: str) -> Decision:
        """Refuse it, saying why."""
        return cls(str(reason))

    @property
    def accepted(self) -> bool:
        """Whether this is an acceptance."""
        return self.rejection is None


OutcomeKind = Literal["need-input", "done", "fail", "abort"]


@dataclass(frozen=True)
class Outcome:
    """What :meth:`Partner.work` says happens next. Build one with its class methods:

    - :meth:`need_input` / :meth:`ask`: the SDK reports ``awaiting-input`` with the items (a
      question, what is missing); the Leader's answer arrives as a continue, in a later invocation.
    - :meth:`done` / :meth:`reply`: the SDK emits each product whole (replacing any earlier product
      with the same id) and reports ``awaiting-completion`` (with the reply's message items).
      Products already streamed with :meth:`Task.emit_chunk` stay.
    - :meth:`fail`: the SDK reports ``failed`` with the reason as a text item.
    - :meth:`abort`: no report; the invocation returns an error with the reason and the host fails
      the task with it. Prefer :meth:`fail`; this is for when reporting itself went wrong.
    """

    kind: OutcomeKind
    products: tuple[Product, ...] = ()
    """The products of ``done``."""
    items: tuple[DataItem, ...] = ()
    """The question of ``need-input``, or the message of ``done`` (a reply)."""
    reason: str | None = None
    """The reason of ``fail`` and ``abort``."""

    @classmethod
    def need_input(cls, items: Iterable[DataItem]) -> Outcome:
        """The partner needs more from the Leader; ``items`` say what."""
        return cls("need-input", items=tuple(items))

    @classmethod
    def ask(cls, question: str) -> Outcome:
        """:meth:`need_input` with a single text question."""
        return cls.need_input([DataItem.text(question)])

    @classmethod
    def done(cls, products: Iterable[Product] = ()) -> Outcome:
        """The work is done; these are the products."""
        return cls("done", products=tuple(products))

    @classmethod
    def reply(cls, products: Iterable[Product], message: str | Iterable[DataItem]) -> Outcome:
        """Like :meth:`done`, and the partner says ``message`` with its result (on the
        ``awaiting-completion`` status; an A2A client sees it as the task's status message)."""
        items = (DataItem.text(message),) if isinstance(message, str) else tuple(message)
        return cls("done", products=tuple(products), items=items)

    @classmethod
    def fail(cls, reason: str) -> Outcome:
        """The work failed, for this reason."""
        return cls("fail", reason=str(reason))

    @classmethod
    def abort(cls, reason: str) -> Outcome:
        """Give up without a report of its own (see the class documentation)."""
        return cls("abort", reason=str(reason))


class Partner:
    """An AIP partner. Subclass it, override :meth:`work` (and any of the others), and name the
    class with :func:`export` in the partner's module.

    The SDK turns each host event into calls of these methods and reports the states they imply:

    ========  ===========================================================================
    start     :meth:`decide`; on accept it reports ``accepted``, ``working``, then calls
              :meth:`work` and applies the :class:`Outcome`
    continue  the task is ``working`` again: calls :meth:`work` and applies the Outcome
    complete  calls :meth:`completed` (clean-up only: the task is final)
    cancel    calls :meth:`canceled` (clean-up only: the task is final)
    ========  ===========================================================================

    An exception escaping any of them fails the task: its traceback goes to the host's log at
    error level, and the reason the Leader sees names the exception.
    """

    def decide(self, task: Task, input: list[DataItem]) -> Decision:
        """Decides on a new task: accept it, or reject it with a reason. ``input`` is what the
        start command carried (the same items reach :meth:`work` next). Default: accept."""
        return Decision.accept()

    def work(self, task: Task, input: list[DataItem]) -> Outcome:
        """Does the work: called after a start was accepted, and for every continue, with the
        command's input; the task is ``working``. Return what happens next."""
        raise NotImplementedError(f"{type(self).__name__} does not implement work()")

    def completed(self, task: Task, reason: EndReason) -> None:
        """The task was completed (by the Leader, or by the awaiting-completion timeout). Clean up
        here; reports are refused. Default: nothing."""

    def canceled(self, task: Task, reason: EndReason) -> None:
        """The task was canceled (by the Leader, or by the awaiting-input timeout). Clean up here;
        reports are refused. Default: nothing."""


P = TypeVar("P", bound=Partner | type)

_exported: Partner | None = None


def export(partner: P) -> P:
    """Makes ``partner`` (a :class:`Partner` subclass, instantiated here without arguments, or an
    instance) the partner this component serves. Use it once, as a class decorator::

        @export
        class Echo(Partner):
            def work(self, task, input):
                return Outcome.done([Product("echo").with_items(input)])
    """
    global _exported
    instance = partner() if isinstance(partner, type) else partner
    if not isinstance(instance, Partner):
        raise TypeError(f"export() takes a Partner subclass or instance, not {partner!r}")
    _exported = instance
    return partner


def exported() -> Partner | None:
    """The partner named with :func:`export`, if any."""
    return _exported
