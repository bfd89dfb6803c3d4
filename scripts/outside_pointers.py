"""List the places where a file of the repository points outside it.

A clone holds the repository only: a design document or a spec kept in the folder next to it
(the ``shared`` folder of the machine the project was written on) is not there, so a file that
sends its reader there sends them nowhere. What the code relies on belongs in ``docs/``. A
pointer is the upper-case design file's name or a path into that shared folder, relative
(``..`` then ``shared``) or absolute.

The files read are the repository's text files, the hidden folders (``.git``, ``.venv``,
caches), ``__pycache__``, ``site``, ``build`` and ``dist`` left out.

Usage: ``python scripts/outside_pointers.py [root]``; prints each pointer and their total, and
exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# written so that this file does not match itself
POINTER = re.compile(r"\bDESIGN\.md\b|\.\./shared/|/work[/]shared/")
SKIPPED_DIRS = {"__pycache__", "site", "build", "dist", "node_modules"}
MAX_BYTES = 1 << 20


def _files(root: Path) -> list[Path]:
    """The files under ``root`` worth reading, in path order."""
    found = []
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if any(part.startswith(".") or part in SKIPPED_DIRS for part in parts[:-1]):
            continue
        if path.is_file() and not path.name.startswith(".") and path.stat().st_size <= MAX_BYTES:
            found.append(path)
    return found


def pointers(root: Path) -> list[tuple[Path, int, str]]:
    """``(file, line, text)`` of every pointer outside the repository in the text files under
    ``root`` (a file that is not UTF-8 text is not read)."""
    found = []
    for path in _files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            match = POINTER.search(line)
            if match is not None:
                found.append((path.relative_to(root), number, match.group(0)))
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=ROOT)
    root = parser.parse_args(argv).root
    found = pointers(root)
    for path, line, text in found:
        print(f"{path}:{line}: {text}")
    print(f"{len(found)} pointers outside the repository")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
