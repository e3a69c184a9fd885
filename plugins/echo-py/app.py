"""Echo (Python): accepts every task and returns its input as a product.

Each start or continue produces the product ``echo``, whose items are the command's input; a
continue replaces the previous product. The same behaviour as ``plugins/echo`` (Rust).
"""

from aiphost_sdk import DataItem, Outcome, Partner, Product, Task, export


@export
class Echo(Partner):
    """The echo partner."""

    def work(self, task: Task, input: list[DataItem]) -> Outcome:
        return Outcome.done([Product("echo").named("echo").with_items(input)])
