"""The class a partner implements, what its methods return, and how a module names its partner."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from .forms import Form
from .items import DataItem, Product
from .reports import Failure
from .state import EndReason
from .task import Task

__all__ = ["Decision", "Outcome", "Partner", "export", "exported"]


@dataclass(frozen=True)
class Decision:
    """What :meth:`Partner.decide` says about a new task: :meth:`accept` it (the SDK reports
    ``accepted``, ``working``, then calls :meth:`Partner.work`), :meth:`reject` it with a reason
    (the SDK reports ``rejected`` with the reason as a text item), or answer at once with a plain
    :meth:`reply` and create no task."""

    rejection: str | None = None
    """The reason of a rejection; ``None`` otherwise."""
    reply_items: tuple[DataItem, ...] | None = None
    """The message of a plain reply; ``None`` otherwise."""

    @classmethod
    def accept(cls) -> Decision:
        """Take the task on."""
        return cls()

    @classmethod
    def reject(cls, reason: str) -> Decision:
        """Refuse it, saying why."""
        return cls(rejection=str(reason))

    @classmethod
    def reply(cls, message: str | Iterable[DataItem]) -> Decision:
        """Answer with a plain message (a text or items) and create no task: for a question that
        needs no work to follow. The host keeps no task; a client whose protocol has plain replies
        (A2A) gets a message, an AIP Leader a task completed at once with the message as its
        product. :meth:`Partner.work` is not called."""
        items = (DataItem.text(message),) if isinstance(message, str) else tuple(message)
        return cls(reply_items=items)

    @property
    def accepted(self) -> bool:
        """Whether this is an acceptance."""
        return self.rejection is None and self.reply_items is None


OutcomeKind = Literal["need-input", "done", "fail", "abort"]


@dataclass(frozen=True)
class Outcome:
    """What :meth:`Partner.work` says happens next. Build one with its class methods:

    - :meth:`need_input` / :meth:`ask`: the SDK reports ``awaiting-input`` with the items (a
      question, what is missing), or asks with a :class:`~aiphost_sdk.Form`; the Leader's answer
      arrives as a continue, in a later invocation.
    - :meth:`done` / :meth:`reply`: the SDK closes the products it streamed text into
      (:meth:`Task.say`, ...), emits each product whole (replacing any earlier product with the
      same id) and reports ``awaiting-completion`` (with the reply's message items). Products
      already streamed with :meth:`Task.emit_chunk` or :meth:`Task.say` stay.
    - :meth:`fail`: the SDK reports ``failed`` with the reason as a text item;
      :meth:`fail_with` fails with a code a client can act on.
    - :meth:`abort`: no report; the invocation returns an error with the reason and the host fails
      the task with it. Prefer :meth:`fail`; this is for when reporting itself went wrong.
    """

    kind: OutcomeKind
    products: tuple[Product, ...] = ()
    """The products of ``done``."""
    items: tuple[DataItem, ...] = ()
    """The question of ``need-input`` (beside the form, if any), or the message of ``done`` (a
    reply)."""
    reason: str | None = None
    """The reason of ``fail`` and ``abort``."""
    form: Form | None = None
    """The form ``need-input`` asks with, if any."""
    failure: Failure | None = None
    """The code and details of a ``fail`` made with :meth:`fail_with`."""

    @classmethod
    def need_input(cls, items: Iterable[DataItem]) -> Outcome:
        """The partner needs more from the Leader; ``items`` say what."""
        return cls("need-input", items=tuple(items))

    @classmethod
    def ask(cls, question: str | Form, items: Iterable[DataItem] = ()) -> Outcome:
        """Asks a text question (:meth:`need_input` with it as a text item, then ``items``), or
        asks with a :class:`~aiphost_sdk.Form`: the task moves to awaiting-input with the form
        (and ``items``), and its answer arrives on the next continue (read it with
        :func:`~aiphost_sdk.form_answer`)."""
        if isinstance(question, Form):
            return cls("need-input", items=tuple(items), form=question)
        return cls.need_input([DataItem.text(question), *items])

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
    def fail_with(
        cls,
        code: str,
        message: str,
        retryable: bool = False,
        detail: dict[str, Any] | None = None,
    ) -> Outcome:
        """The work failed with ``code`` (1-64 bytes of ``A-Z 0-9 _``, for example
        ``RATE_LIMITED``) and ``message`` for people (at most 4 KiB); ``retryable`` says trying
        again may succeed, ``detail`` (a JSON object) says more. Every door carries them in its
        error shape."""
        failure = Failure(str(code), str(message), bool(retryable), detail)
        return cls("fail", reason=failure.message, failure=failure)

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
