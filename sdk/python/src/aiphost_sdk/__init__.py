"""Write AIP partners for **aiphost** in Python.

A partner is a WebAssembly component that aiphost runs once per Leader command (start, continue,
complete, cancel). This package hides the component plumbing (the WIT world, the generated
bindings, componentize-py): subclass :class:`Partner`, name it with :func:`export`, and build with
``python -m aiphost_sdk build DIR -o partner.wasm`` (or ``aiphost agent build``).

>>> from aiphost_sdk import DataItem, Outcome, Partner, Product, Task, export
>>> @export
... class Shout(Partner):
...     def work(self, task: Task, input: list[DataItem]) -> Outcome:
...         text = " ".join(t for t in (i.as_text() for i in input) if t)
...         if not text:
...             return Outcome.ask("Send me some text.")
...         return Outcome.done([Product("answer").with_item(DataItem.text(text.upper()))])

A partner that talks to people streams its answer and reasoning (``task.say``, ``task.think``),
reports tool activity and usage (``task.tool_call``, ``task.tool_result``, ``task.usage``), asks
with a :class:`Form` (``Outcome.ask(form)``, read the answer with :func:`form_answer`), fails with a
code (``Outcome.fail_with``) and can answer a start with a plain reply (``Decision.reply``).

Test partners natively with :mod:`aiphost_sdk.testing`.
"""

from . import config, log
from .errors import ConfigError, KvError, LogLevel, ReportError
from .forms import Form, form_answer
from .items import DataItem, File, Product
from .partner import Decision, Outcome, Partner, export
from .reports import Channel, Failure, Json, TextDelta, ToolCall, ToolResult, Usage
from .state import EndReason, State
from .task import Kv, Task

__version__ = "0.1.0"

__all__ = [
    "Channel",
    "ConfigError",
    "DataItem",
    "Decision",
    "EndReason",
    "Failure",
    "File",
    "Form",
    "Json",
    "Kv",
    "KvError",
    "LogLevel",
    "Outcome",
    "Partner",
    "Product",
    "ReportError",
    "State",
    "Task",
    "TextDelta",
    "ToolCall",
    "ToolResult",
    "Usage",
    "config",
    "export",
    "form_answer",
    "log",
]
