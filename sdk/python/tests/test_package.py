"""The package as shipped: its WIT is the repository's, and the build command knows its module."""

from pathlib import Path

from aiphost_sdk.build import partner_module, wit_dir

REPO = Path(__file__).resolve().parents[3]


def test_the_shipped_wit_is_byte_equal_to_the_repository_wit() -> None:
    shipped = (wit_dir() / "partner.wit").read_bytes()
    assert shipped == (REPO / "wit" / "partner.wit").read_bytes(), (
        "sdk/python/src/aiphost_sdk/wit/partner.wit differs from wit/partner.wit: "
        "cp wit/partner.wit sdk/python/src/aiphost_sdk/wit/partner.wit"
    )


def test_partner_module(tmp_path: Path) -> None:
    assert partner_module(tmp_path) == "app"
    (tmp_path / "pyproject.toml").write_text('[tool.aiphost]\nmodule = "shout"\n')
    assert partner_module(tmp_path) == "shout"
