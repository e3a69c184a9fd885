"""Building a partner into a WebAssembly component with componentize-py: the one place that knows
how.

``python -m aiphost_sdk build DIR -o OUT.wasm`` (what ``aiphost agent build`` and
``scripts/build-plugins.sh`` run) imports nothing of the partner here; componentize-py runs the
partner's module inside the component at build time and snapshots the interpreter after it.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "BuildError",
    "COMPONENTIZE_PY",
    "build",
    "componentize_py_version",
    "missing_componentize_py",
    "partner_module",
]

COMPONENTIZE_PY = "componentize-py==0.25.1"
"""The componentize-py this SDK is made for (what to ``pip install``)."""

WORLD = "partner"
"""The world of ``wit/partner.wit`` a partner component targets."""

ENTRY = "_aiphost_entry"
"""The module componentize-py wraps: generated, it loads the author's module and exports the
handler. (It must not be named like the world, or Python would confuse the two.)"""

_PACKAGE = Path(__file__).resolve().parent


class BuildError(Exception):
    """The partner could not be built; the message says why and what to do."""


def wit_dir() -> Path:
    """The WIT shipped inside this package (a copy of the repository's ``wit/partner.wit``)."""
    return _PACKAGE / "wit"


def componentize_py_version() -> str | None:
    """The installed componentize-py's version, or ``None`` when it is not installed."""
    try:
        return importlib.metadata.version("componentize-py")
    except importlib.metadata.PackageNotFoundError:
        return None


def missing_componentize_py() -> str:
    """What to say when componentize-py is not installed."""
    return (
        f"componentize-py is not installed for {sys.executable}; "
        f"install it with: {sys.executable} -m pip install '{COMPONENTIZE_PY}'"
    )


def partner_module(project: Path) -> str:
    """The module holding the partner: ``[tool.aiphost] module`` in ``project/pyproject.toml``,
    else ``app``."""
    pyproject = project / "pyproject.toml"
    if pyproject.is_file():
        try:
            with pyproject.open("rb") as f:
                data = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise BuildError(f"cannot read {pyproject}: {e}") from e
        module = data.get("tool", {}).get("aiphost", {}).get("module")
        if module is not None:
            if (
                not isinstance(module, str)
                or not module.replace(".", "").replace("_", "").isalnum()
            ):
                raise BuildError(
                    f"{pyproject}: [tool.aiphost] module must be a module name, not {module!r}"
                )
            return module
    return "app"


def check_syntax(project: Path, top: str) -> None:
    """Compiles the partner's own sources (the ``.py`` files beside its module, and its package if
    it is one) to bytecode, in memory: a syntax error is reported at once as the author's file and
    line, instead of seconds later from inside componentize-py's import machinery."""
    files = sorted(project.glob("*.py"))
    package = project / top
    if package.is_dir():
        files += sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)
    for path in files:
        try:
            compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        except SyntaxError as e:
            where = f"{e.filename}:{e.lineno}" + (f":{e.offset}" if e.offset else "")
            shown = ""
            if e.text:
                line = e.text.rstrip("\n")
                caret = " " * (max(e.offset or 1, 1) - 1 + len(line) - len(line.lstrip())) + "^"
                shown = f"\n    {line.strip()}\n    {caret[len(line) - len(line.lstrip()):]}"
            raise BuildError(f"{where}: {type(e).__name__}: {e.msg}{shown}") from None


def build(
    project: Path,
    output: Path,
    module: str | None = None,
    python_path: Sequence[Path] = (),
    quiet: bool = False,
) -> Path:
    """Builds the partner in ``project`` into the component ``output``; returns ``output``.

    ``module`` is the partner's module (default: :func:`partner_module`); ``python_path`` adds
    directories holding its dependencies. Raises :class:`BuildError`."""
    project = project.resolve()
    if not project.is_dir():
        raise BuildError(f"{project} is not a directory")
    module = module or partner_module(project)
    top = module.split(".")[0]
    if not (project / f"{top}.py").is_file() and not (project / top / "__init__.py").is_file():
        raise BuildError(
            f"no module {module!r} in {project} (expected {top}.py or {top}/__init__.py)"
        )
    check_syntax(project, top)
    version = componentize_py_version()
    if version is None:
        raise BuildError(missing_componentize_py())
    output = output.resolve()
    output.parent.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="aiphost-sdk-build-") as scratch:
        stage = Path(scratch)
        # componentize-py appends the site-packages of $VIRTUAL_ENV (or else of whatever python3
        # is on PATH) to the Python path. Point it at a directory holding only this SDK, so the
        # component sees this SDK and nothing else that happens to be installed.
        site = stage / "venv" / "lib" / "site-packages"
        shutil.copytree(
            _PACKAGE,
            site / "aiphost_sdk",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "wit"),
        )
        entry = stage / "entry"
        entry.mkdir()
        (entry / f"{ENTRY}.py").write_text(
            '"""Generated by aiphost_sdk.build: the component\'s entry module."""\n'
            "from aiphost_sdk import _guest\n\n"
            f"_guest.load({module!r})\n"
            "Handler = _guest.Handler\n"
        )
        args = [
            sys.executable,
            "-c",
            "import sys; from componentize_py import script; "
            "sys.argv[0] = 'componentize-py'; sys.exit(script())",
            "--wit-path",
            str(wit_dir()),
            "--world",
            WORLD,
        ]
        if quiet:
            args.append("--quiet")
        args += ["componentize", ENTRY, "--output", str(output)]
        for path in (project, entry, *python_path):
            args += ["--python-path", str(path)]
        env = dict(os.environ, VIRTUAL_ENV=str(stage / "venv"))
        started = time.monotonic()
        result = subprocess.run(args, env=env)
        if result.returncode != 0:
            raise BuildError(
                f"componentize-py {version} failed (exit status {result.returncode}); its "
                "errors are above (an exception while importing the partner's module shows there)"
            )
        if not quiet:
            size = output.stat().st_size
            print(
                f"built {output} ({size / 1_048_576:.1f} MiB) in {time.monotonic() - started:.1f}s",
                file=sys.stderr,
            )
    return output
