"""Echo returns what it is given, as the product `echo`, on every turn."""

from app import Echo

from aiphost_sdk import DataItem, State
from aiphost_sdk.testing import MockHost


def test_echoes_each_turn_and_replaces_the_product() -> None:
    host = MockHost(Echo)
    turn = host.start([DataItem.text("hello"), DataItem.data({"n": 1})])
    assert turn.state == State.AWAITING_COMPLETION
    assert turn.product("echo").name == "echo"
    assert turn.product("echo").items == (DataItem.text("hello"), DataItem.data({"n": 1}))
    turn = host.continue_(turn.task_id, [DataItem.text("again")])
    assert turn.product("echo").items == (DataItem.text("again"),)
    host.complete(turn.task_id)
    assert host.state(turn.task_id) == State.COMPLETED
