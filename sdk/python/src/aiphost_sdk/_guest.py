"""The component side: the host imports through the bindings componentize-py generates, and the
``handler`` export. Imported only by the entry module ``aiphost_sdk build`` generates, inside the
component (the bindings exist nowhere else). Not public API."""

from __future__ import annotations

import importlib
import linecache
import os
import sys
from collections.abc import Sequence

import wit_world.exports
from componentize_py_types import Err
from wit_world.imports import config as wit_config
from wit_world.imports import kv as wit_kv
from wit_world.imports import log as wit_log
from wit_world.imports import task as wit_task
from wit_world.imports import types as wit

from . import _runtime
from .errors import ConfigError, KvError, LogLevel, ReportError
from .forms import Form
from .items import DataItem, File, Product, compact_json
from .partner import Partner, exported
from .reports import (
    Channel,
    Failure,
    Json,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    json_text,
)
from .state import EndReason, State

_STATES = {
    wit.TaskState.ACCEPTED: State.ACCEPTED,
    wit.TaskState.WORKING: State.WORKING,
    wit.TaskState.AWAITING_INPUT: State.AWAITING_INPUT,
    wit.TaskState.AWAITING_COMPLETION: State.AWAITING_COMPLETION,
    wit.TaskState.COMPLETED: State.COMPLETED,
    wit.TaskState.CANCELED: State.CANCELED,
    wit.TaskState.FAILED: State.FAILED,
    wit.TaskState.REJECTED: State.REJECTED,
}
_WIT_STATES = {state: wit_state for wit_state, state in _STATES.items()}
_LEVELS = {
    LogLevel.TRACE: wit_log.Level.TRACE,
    LogLevel.DEBUG: wit_log.Level.DEBUG,
    LogLevel.INFO: wit_log.Level.INFO,
    LogLevel.WARN: wit_log.Level.WARN,
    LogLevel.ERROR: wit_log.Level.ERROR,
}


def _item_to_wit(item: DataItem) -> wit.DataItem:
    kind: wit.DataKind
    if isinstance(item.value, str):
        kind = wit.DataKind_Text(item.value)
    elif isinstance(item.value, File):
        f = item.value
        content: wit.FileContent = (
            wit.FileContent_Bytes(f.content)
            if f.content is not None
            else wit.FileContent_Uri(f.uri or "")
        )
        kind = wit.DataKind_File(wit.FileItem(f.name, f.mime_type, content))
    else:
        kind = wit.DataKind_Data(compact_json(item.value))
    metadata = None if item.metadata is None else compact_json(item.metadata)
    return wit.DataItem(kind, metadata)


def _item_from_wit(item: wit.DataItem) -> DataItem:
    kind = item.kind
    if isinstance(kind, wit.DataKind_Text):
        out = DataItem.text(kind.value)
    elif isinstance(kind, wit.DataKind_File):
        f = kind.value
        if isinstance(f.content, wit.FileContent_Bytes):
            out = DataItem.file(File.from_bytes(f.content.value, f.name, f.mime_type))
        else:
            out = DataItem.file(File.from_uri(f.content.value, f.name, f.mime_type))
    else:
        out = DataItem("data", _runtime.parse_object(kind.value, "a data item"))
    if item.metadata is not None:
        out = DataItem(
            out.kind, out.value, _runtime.parse_object(item.metadata, "DataItem metadata")
        )
    return out


def _report_error(err: Err[wit.ReportError]) -> ReportError:
    e = err.value
    if isinstance(e, wit.ReportError_InvalidTransition):
        return ReportError("invalid-transition", e.value)
    if isinstance(e, wit.ReportError_TaskEnded):
        return ReportError("task-ended")
    if isinstance(e, wit.ReportError_ProductsTooLarge):
        return ReportError("products-too-large", limit=e.value)
    if isinstance(e, wit.ReportError_LimitReached):
        return ReportError("limit-reached", e.value)
    return ReportError("invalid-data", str(getattr(e, "value", e)))


_CHANNELS = {Channel.ANSWER: wit.TextChannel.ANSWER, Channel.REASONING: wit.TextChannel.REASONING}


def _tool_output(output: Json | str) -> wit.ToolOutput:
    if isinstance(output, Json):
        return wit.ToolOutput_Json(json_text(output.value))
    return wit.ToolOutput_Text(output)


def _kv_error(err: Err[wit_kv.KvError]) -> KvError:
    e = err.value
    if isinstance(e, wit_kv.KvError_TooLarge):
        return KvError("too-large", e.value)
    if isinstance(e, wit_kv.KvError_QuotaExceeded):
        return KvError("quota-exceeded", e.value)
    return KvError("unavailable", str(getattr(e, "value", e)))


def _scope(agent: bool) -> wit_kv.Scope:
    return wit_kv.Scope.AGENT if agent else wit_kv.Scope.TASK


class WitHost:
    """The real host: the component's imports."""

    def set_status(self, state: State, items: Sequence[DataItem]) -> None:
        try:
            wit_task.set_status(_WIT_STATES[state], [_item_to_wit(i) for i in items])
        except Err as err:
            raise _report_error(err) from None

    def emit_product_chunk(self, product: Product, append: bool, last: bool) -> None:
        chunk = wit.ProductChunk(
            wit.Product(
                product.id,
                product.name,
                product.description,
                [_item_to_wit(i) for i in product.items],
            ),
            append,
            last,
        )
        try:
            wit_task.emit_product_chunk(chunk)
        except Err as err:
            raise _report_error(err) from None

    def current_state(self) -> State | None:
        state = wit_task.current_state()
        return None if state is None else _STATES[state]

    def stream_text(self, delta: TextDelta) -> None:
        wit_delta = wit.TextDelta(
            delta.product_id, _CHANNELS[delta.channel], delta.text, delta.last
        )
        try:
            wit_task.stream_text(wit_delta)
        except Err as err:
            raise _report_error(err) from None

    def report_tool_call(self, call: ToolCall) -> None:
        try:
            wit_task.report_tool_call(
                wit.ToolCall(call.call_id, call.name, json_text(call.arguments))
            )
        except Err as err:
            raise _report_error(err) from None

    def report_tool_result(self, result: ToolResult) -> None:
        outcome = wit.ToolResult(result.call_id, _tool_output(result.output), result.is_error)
        try:
            wit_task.report_tool_result(outcome)
        except Err as err:
            raise _report_error(err) from None

    def report_usage(self, usage: Usage) -> None:
        wit_usage = wit.Usage(
            usage.model, usage.input_tokens, usage.output_tokens, usage.reasoning_tokens
        )
        try:
            wit_task.report_usage(wit_usage)
        except Err as err:
            raise _report_error(err) from None

    def ask(self, form: Form, items: Sequence[DataItem]) -> None:
        request = wit.InputRequest(
            form.request_id, form.title, form.description, json_text(form.schema)
        )
        try:
            wit_task.ask(request, [_item_to_wit(i) for i in items])
        except Err as err:
            raise _report_error(err) from None

    def fail(self, failure: Failure) -> None:
        detail = None if failure.detail is None else json_text(failure.detail)
        try:
            wit_task.fail(wit.Failure(failure.code, failure.message, failure.retryable, detail))
        except Err as err:
            raise _report_error(err) from None

    def reply(self, items: Sequence[DataItem]) -> None:
        try:
            wit_task.reply([_item_to_wit(i) for i in items])
        except Err as err:
            raise _report_error(err) from None

    def kv_get(self, agent: bool, key: str) -> bytes | None:
        try:
            return wit_kv.get(_scope(agent), key)
        except Err as err:
            raise _kv_error(err) from None

    def kv_set(self, agent: bool, key: str, value: bytes) -> None:
        try:
            wit_kv.set(_scope(agent), key, value)
        except Err as err:
            raise _kv_error(err) from None

    def kv_delete(self, agent: bool, key: str) -> None:
        try:
            wit_kv.delete(_scope(agent), key)
        except Err as err:
            raise _kv_error(err) from None

    def log(self, level: LogLevel, message: str, fields: Sequence[tuple[str, str]]) -> None:
        wit_log.log(_LEVELS[level], message, list(fields))

    def config_get(self, name: str) -> str:
        try:
            return wit_config.get(name)
        except Err as err:
            if isinstance(err.value, wit_config.ConfigError_NotGranted):
                raise ConfigError("not-granted", name) from None
            raise ConfigError("not-set", name) from None


_END_REASONS = {wit.EndReason.LEADER: EndReason.LEADER, wit.EndReason.TIMEOUT: EndReason.TIMEOUT}


def _invocation(inv: wit.Invocation) -> _runtime.Invocation:
    event = inv.event
    end_reason: EndReason | None = None
    if isinstance(event, wit.Event_Start):
        name = "start"
    elif isinstance(event, wit.Event_Continue):
        name = "continue"
    elif isinstance(event, wit.Event_Complete):
        name, end_reason = "complete", _END_REASONS[event.value]
    else:
        name, end_reason = "cancel", _END_REASONS[event.value]
    return _runtime.Invocation(
        event=name,
        task_id=inv.task_id,
        end_reason=end_reason,
        session_id=inv.session_id,
        leader_id=inv.leader_id,
        state=None if inv.state is None else _STATES[inv.state],
        items=[_item_from_wit(i) for i in inv.data_items],
        max_products_bytes=inv.max_products_bytes,
        products_bytes=inv.products_bytes,
        command_params=inv.command_params,
    )


_partner: Partner | None = None


def load(module: str) -> None:
    """Imports the author's ``module`` (at build time: componentize-py snapshots the interpreter
    after this) and takes the partner it exported."""
    global _partner
    importlib.import_module(module)
    _partner = exported()
    if _partner is None:
        raise RuntimeError(
            f"module {module!r} exported no partner: decorate its Partner subclass with "
            "@aiphost_sdk.export"
        )
    # The partner's directory: where its top module (or package) sits.
    top = os.path.abspath(getattr(sys.modules[module.split(".")[0]], "__file__", None) or ".")
    project = os.path.dirname(top)
    if os.path.basename(top) == "__init__.py":
        project = os.path.dirname(project)
    _keep_sources([project, os.path.dirname(os.path.abspath(__file__))])


def _keep_sources(dirs: list[str]) -> None:
    """Reads the source of every module imported so far from ``dirs`` (the partner's and this
    SDK's) into ``linecache``, so the tracebacks logged at run time show their lines: the
    component has no file system then. An entry without an mtime is one ``linecache.checkcache``
    leaves alone."""
    prefixes = tuple(d.rstrip(os.sep) + os.sep for d in dirs)
    for mod in list(sys.modules.values()):
        filename = getattr(mod, "__file__", None)
        if not isinstance(filename, str) or not filename.endswith(".py"):
            continue
        if not filename.startswith(prefixes) or filename in linecache.cache:
            continue
        try:
            with open(filename, encoding="utf-8") as f:
                lines = f.readlines()
        except (OSError, UnicodeDecodeError):
            continue
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)


class Handler(wit_world.exports.Handler):
    """The component's ``handler`` export."""

    def handle(self, invocation: wit.Invocation) -> None:
        if _partner is None:
            raise Err("aiphost-sdk: no partner was loaded")
        host = WitHost()
        try:
            inv = _invocation(invocation)
        except _runtime._Stop as stop:
            raise Err(stop.error or "aiphost-sdk: malformed invocation") from None
        error = _runtime.run(_partner, inv, host)
        if error is not None:
            raise Err(error)
