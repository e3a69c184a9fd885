"""``python -m aiphost_sdk``: build a partner into a component, or print where the WIT is."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .build import BuildError, build, componentize_py_version, missing_componentize_py, wit_dir


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m aiphost_sdk", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    b = commands.add_parser("build", help="build the partner in DIR into a WebAssembly component")
    b.add_argument("dir", type=Path, help="the partner's directory")
    b.add_argument(
        "-o", "--output", type=Path, help="the component to write (default: DIR/build/partner.wasm)"
    )
    b.add_argument(
        "-m", "--module", help="the partner's module (default: [tool.aiphost] module, else app)"
    )
    b.add_argument(
        "-p",
        "--python-path",
        type=Path,
        action="append",
        default=[],
        help="a directory with modules the partner imports (repeatable)",
    )
    b.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    commands.add_parser("wit", help="print the directory of the WIT this SDK builds against")
    commands.add_parser(
        "check", help="exit 0 when componentize-py is installed, else say what to install"
    )
    args = parser.parse_args(argv)

    if args.command == "wit":
        print(wit_dir())
        return 0
    try:
        if args.command == "check":
            version = componentize_py_version()
            if version is None:
                raise BuildError(missing_componentize_py())
            print(f"componentize-py {version}")
            return 0
        output = args.output or args.dir / "build" / "partner.wasm"
        build(args.dir, output, args.module, args.python_path, args.quiet)
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
