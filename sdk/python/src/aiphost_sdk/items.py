"""DataItems and products: the content a partner receives and produces."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["DataItem", "File", "Product"]


@dataclass(frozen=True)
class File:
    """A file carried by a :class:`DataItem`: by URI, or its bytes inline.

    Exactly one of ``uri`` and ``content`` is set; build one with :meth:`File.from_uri` or
    :meth:`File.from_bytes`.
    """

    uri: str | None = None
    """Where the content is, if it is not inline."""
    content: bytes | None = None
    """The content itself, if it is inline."""
    name: str | None = None
    """The file name, if known."""
    mime_type: str | None = None
    """The MIME type, if known (without one the host treats the file as
    application/octet-stream)."""

    def __post_init__(self) -> None:
        if (self.uri is None) == (self.content is None):
            raise ValueError("a File has either a uri or content (bytes), not both or neither")

    @classmethod
    def from_uri(cls, uri: str, name: str | None = None, mime_type: str | None = None) -> File:
        """A file whose content is at ``uri``."""
        return cls(uri=uri, name=name, mime_type=mime_type)

    @classmethod
    def from_bytes(
        cls, content: bytes, name: str | None = None, mime_type: str | None = None
    ) -> File:
        """A file carrying ``content`` inline."""
        return cls(content=bytes(content), name=name, mime_type=mime_type)


DataKind = Literal["text", "data", "file"]


@dataclass(frozen=True)
class DataItem:
    """One AIP DataItem: text, a file or a structured JSON object, with optional metadata.

    Build one with :meth:`DataItem.text`, :meth:`DataItem.data` or :meth:`DataItem.file`, and read
    one with :meth:`as_text`, :meth:`as_data` and :meth:`as_file` (each ``None`` for the other
    kinds).

    >>> DataItem.text("Where do you want to go?").as_text()
    'Where do you want to go?'
    >>> DataItem.data(42).as_data()   # data items are JSON objects: other values are wrapped
    {'value': 42}
    """

    kind: DataKind
    """``"text"``, ``"data"`` or ``"file"``."""
    value: str | dict[str, Any] | File
    """The text (``str``), the JSON object (``dict``) or the :class:`File`."""
    metadata: dict[str, Any] | None = None
    """Free-form metadata (a JSON object), if any."""

    @classmethod
    def text(cls, text: str) -> DataItem:
        """A text item (``text/plain``)."""
        return cls("text", str(text))

    @classmethod
    def data(cls, value: Any) -> DataItem:
        """A structured data item. A dict is used as it is; any other JSON value ``v`` is wrapped
        as ``{"value": v}``, because AIP data items are always objects. The value must be
        JSON-serialisable (checked here, so a mistake shows where it is made)."""
        obj = value if isinstance(value, dict) else {"value": value}
        json.dumps(obj)
        return cls("data", obj)

    @classmethod
    def file(cls, file: File) -> DataItem:
        """A file item."""
        return cls("file", file)

    @classmethod
    def file_uri(cls, uri: str) -> DataItem:
        """A file item whose content is at ``uri`` (no name or MIME type; see :class:`File`)."""
        return cls.file(File.from_uri(uri))

    @classmethod
    def file_bytes(cls, content: bytes) -> DataItem:
        """A file item carrying ``content`` inline (no name or MIME type; see :class:`File`)."""
        return cls.file(File.from_bytes(content))

    def with_metadata(self, metadata: dict[str, Any]) -> DataItem:
        """A copy of this item with ``metadata`` (a JSON object)."""
        json.dumps(metadata)
        return dataclasses.replace(self, metadata=dict(metadata))

    def as_text(self) -> str | None:
        """The text, if this is a text item."""
        return self.value if self.kind == "text" else None  # type: ignore[return-value]

    def as_data(self) -> dict[str, Any] | None:
        """The JSON object, if this is a data item."""
        return self.value if self.kind == "data" else None  # type: ignore[return-value]

    def as_file(self) -> File | None:
        """The file, if this is a file item."""
        return self.value if self.kind == "file" else None  # type: ignore[return-value]

    def content_bytes(self) -> int:
        """The bytes this item counts for against ``maxProductsBytes``, the way the host counts
        them: text as UTF-8, file bytes as they are (a URI by its length), data as compact JSON."""
        if isinstance(self.value, str):
            return len(self.value.encode())
        if isinstance(self.value, File):
            if self.value.content is not None:
                return len(self.value.content)
            return len((self.value.uri or "").encode())
        return len(compact_json(self.value).encode())


def compact_json(value: Any) -> str:
    """JSON text without spaces, as the host and the Rust SDK write it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Product:
    """A product (an AIP artifact): the result of a task, made of DataItems.

    >>> Product("report").named("Report").with_item(DataItem.text("all good")).items[0].as_text()
    'all good'
    """

    id: str
    """The product id; a product emitted again with the same id replaces (or extends) it."""
    name: str | None = None
    """A name for people."""
    description: str | None = None
    """What it is."""
    items: tuple[DataItem, ...] = field(default_factory=tuple)
    """Its DataItems."""

    def __post_init__(self) -> None:
        # Accept any iterable of items but keep the product immutable.
        object.__setattr__(self, "items", tuple(self.items))

    def named(self, name: str) -> Product:
        """A copy with this name."""
        return dataclasses.replace(self, name=name)

    def described(self, description: str) -> Product:
        """A copy with this description."""
        return dataclasses.replace(self, description=description)

    def with_item(self, item: DataItem) -> Product:
        """A copy with ``item`` added."""
        return dataclasses.replace(self, items=(*self.items, item))

    def with_items(self, items: Iterable[DataItem]) -> Product:
        """A copy with ``items`` added."""
        return dataclasses.replace(self, items=(*self.items, *items))

    def content_bytes(self) -> int:
        """The bytes the product counts for against ``maxProductsBytes`` (its items')."""
        return sum(item.content_bytes() for item in self.items)
