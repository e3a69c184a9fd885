"""The package as shipped: its WIT is the repository's, and the build command knows its module."""

from pathlib import Path

import pytest

from aiphost_sdk.__main__ import main
from aiphost_sdk.build import BuildError, build, partner_module, wit_dir

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


def test_build_refuses_a_project_without_its_module(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.aiphost]\nmodule = "shout"\n')
    with pytest.raises(BuildError, match="no module 'shout'"):
        build(tmp_path, tmp_path / "out.wasm")
    (tmp_path / "pyproject.toml").write_text("[tool.aiphost\n")
    with pytest.raises(BuildError, match="cannot read"):
        build(tmp_path, tmp_path / "out.wasm")


def test_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wit"]) == 0
    assert capsys.readouterr().out.strip() == str(wit_dir())
    assert main(["check"]) == 0  # componentize-py is installed where the tests run
    assert capsys.readouterr().out.startswith("componentize-py 0.25.")
    assert main(["build", "/nonexistent/partner"]) == 1
    assert "is not a directory" in capsys.readouterr().err
