"""Lifecycle (Python): a small partner that walks the AIP lifecycle on command, for the host's
end-to-end tests of Python partners.

The first text item of each start or continue says what to do:

- ``ask``: awaiting-input, asking "what next?" (with the turn number);
- ``fail``: failed, with the reason "asked to fail";
- ``raise``: raises ``ValueError`` (the SDK fails the task and logs the traceback);
- ``ended?``: answers with what the last complete or cancel hook recorded;
- anything else (or nothing): the product ``echo`` with the input, plus a data item with the
  task's turn count (task KV) and the partner's total of turns (agent KV).

Starts with the text ``reject`` are rejected. The complete and cancel hooks record the task and
why it ended in the agent KV (``last-ended``).
"""

from aiphost_sdk import DataItem, Decision, EndReason, Outcome, Partner, Product, Task, export, log


@export
class Lifecycle(Partner):
    """The lifecycle partner."""

    def decide(self, task: Task, input: list[DataItem]) -> Decision:
        if first_text(input) == "reject":
            return Decision.reject("asked to reject")
        return Decision.accept()

    def work(self, task: Task, input: list[DataItem]) -> Outcome:
        turn = task.kv.get_json("turns", 0) + 1
        task.kv.set_json("turns", turn)
        total = task.agent_kv.get_json("total-turns", 0) + 1
        task.agent_kv.set_json("total-turns", total)
        command = first_text(input)
        log.info("lifecycle turn", turn=turn, command=command or "")
        if command == "ask":
            return Outcome.need_input([DataItem.text(f"what next? (turn {turn})")])
        if command == "fail":
            return Outcome.fail("asked to fail")
        if command == "raise":
            raise ValueError(f"asked to raise on turn {turn}")
        if command == "ended?":
            last = task.agent_kv.get("last-ended")
            return Outcome.done(
                [Product("ended").with_item(DataItem.text(last.decode() if last else "nothing"))]
            )
        return Outcome.done(
            [
                Product("echo")
                .named("echo")
                .with_items(input)
                .with_item(
                    DataItem.data({"turn": turn, "totalTurns": total, "params": task.params})
                )
            ]
        )

    def completed(self, task: Task, reason: EndReason) -> None:
        task.agent_kv.set("last-ended", f"{task.id} completed by {reason}")

    def canceled(self, task: Task, reason: EndReason) -> None:
        task.agent_kv.set("last-ended", f"{task.id} canceled by {reason}")


def first_text(items: list[DataItem]) -> str | None:
    """The first text item's text, trimmed."""
    for item in items:
        text = item.as_text()
        if text is not None:
            return text.strip()
    return None
