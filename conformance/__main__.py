"""`python -m conformance`: the contributor's tools (track now; check and certify as they land)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from neurobrix.errors import NeuroBrixError

from . import track


def cmd_track(args: argparse.Namespace) -> int:
    root = Path(args.tables)
    if not root.is_dir():
        raise NeuroBrixError(f"{root} is not a folder")
    if args.check:
        problems = track.out_of_sync(root)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        if problems:
            print(f"{root}/TRACKED.yaml is out of sync with {root}: run `python -m conformance track`",
                  file=sys.stderr)
            return 1
        print(f"{root}/TRACKED.yaml is in sync")
        return 0
    path, changed = track.write(root)
    print(f"{'wrote' if changed else 'unchanged'} {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m conformance", description=__doc__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    t = commands.add_parser(
        "track", help="rewrite tables/TRACKED.yaml from the tables folder (or --check that it is in sync)"
    )
    t.add_argument("--tables", default=str(track.SOURCE_TABLES), help="tables folder (default: %(default)s)")
    t.add_argument("--check", action="store_true", help="write nothing; exit 1 if the list is out of sync")
    t.set_defaults(func=cmd_track)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except NeuroBrixError as exc:
        print(f"conformance: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
