"""``hpvm-nvdla dump PATH``: print a loadable layer by layer.

PATH is a ``.nvdla`` loadable, or a saved executable (its nvdla artifact's
loadables are all printed).  Errors are one line naming the file and the
fix; exit status 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .loadable import LoadableError, dump


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="hpvm-nvdla", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("dump", help="print a loadable layer by layer")
    show.add_argument("path", help="a .nvdla loadable or a saved executable folder")
    args = parser.parse_args(argv)
    try:
        for name, data in _loadables(Path(args.path)):
            text = dump(data)
            print(f"== {name}\n{text}")
    except (OSError, LoadableError) as error:
        print(f"hpvm-nvdla: {args.path}: {error}", file=sys.stderr)
        return 2
    return 0


def _loadables(path: Path):
    if path.is_dir():
        from hpvm.target import Artifact
        folder = path / "artifacts" / "nvdla"
        if not (folder / "artifact.json").exists():
            raise LoadableError("not a saved executable with an nvdla artifact (no "
                                "artifacts/nvdla/artifact.json); give a .nvdla file or the "
                                "folder exe.save() wrote")
        artifact = Artifact.load(folder)
        for stem in artifact.metadata["loadables"].values():
            yield stem, artifact.files[stem]
        return
    yield path.name, path.read_bytes()


if __name__ == "__main__":
    sys.exit(main())
