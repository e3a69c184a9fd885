"""DataItems and products."""

import pytest

from aiphost_sdk import DataItem, File, Product


def test_data_items() -> None:
    assert DataItem.text("hi").as_text() == "hi"
    assert DataItem.text("hi").as_data() is None
    assert DataItem.data({"a": 1}).as_data() == {"a": 1}
    assert DataItem.data([1, 2]).as_data() == {"value": [1, 2]}
    with pytest.raises(TypeError):
        DataItem.data({"a": object()})
    f = DataItem.file(File.from_bytes(b"\x89PNG", name="c.png", mime_type="image/png"))
    assert f.as_file() == File(content=b"\x89PNG", name="c.png", mime_type="image/png")
    assert DataItem.file_uri("https://x/y").as_file().uri == "https://x/y"  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        File()
    assert DataItem.text("x").with_metadata({"k": "v"}).metadata == {"k": "v"}


def test_content_bytes_count_like_the_host() -> None:
    assert DataItem.text("héllo").content_bytes() == 6
    assert DataItem.data({"a": 1}).content_bytes() == len('{"a":1}')
    assert DataItem.file_bytes(b"1234").content_bytes() == 4
    assert DataItem.file_uri("abc").content_bytes() == 3
    p = Product("p").named("P").described("d").with_items([DataItem.text("ab"), DataItem.text("c")])
    assert (p.name, p.description, p.content_bytes()) == ("P", "d", 3)
