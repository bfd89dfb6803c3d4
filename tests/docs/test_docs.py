"""Every ```python block of the docs runs.

For each Markdown file (``docs/*.md`` and ``README.md``) that holds ```python blocks, the
blocks run in order in one namespace (a block may use names from earlier blocks of the same
file), with a fresh temporary directory as the working directory. A failing block fails the
test with the file and the line of the failing statement; tracebacks point at the real lines
of the Markdown file. A block that imports an optional module that is not installed is
skipped, and the test then reports a skip naming it after every other block has run.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced ```python block: its code and the line of its first code line (1-based)."""

    path: Path
    line: int
    code: str

    @property
    def where(self) -> str:
        return f"{_display(self.path)}:{self.line}"


def _display(path: Path) -> str:
    """``path`` relative to the repository when it is inside it."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def python_blocks(path: Path) -> list[Block]:
    """The ```python (or ```py) fenced blocks of a Markdown file, in order."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening.group("fence"), len(opening.group("indent"))
        language = opening.group("info").strip().split(" ")[0].lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            closing = _FENCE.match(lines[j])
            if (
                closing is not None
                and closing.group("fence")[0] == fence[0]
                and len(closing.group("fence")) >= len(fence)
                and not closing.group("info").strip()
            ):
                break
            text = lines[j]
            body.append(text[min(indent, len(text) - len(text.lstrip(" "))) :])
            j += 1
        if language in ("python", "py"):
            blocks.append(Block(path, i + 2, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def documents() -> list[Path]:
    """Markdown files with at least one ```python block."""
    candidates = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    return [p for p in candidates if p.is_file() and python_blocks(p)]


def missing_modules(code: str) -> list[str]:
    """Top-level packages the block imports that are not installed."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names if importlib.util.find_spec(n) is None)


def _failing_line(exc: BaseException, path: Path) -> int | None:
    """The last traceback line that is in the Markdown file itself."""
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
    return lines[-1] if lines else None


def run_blocks(path: Path) -> list[tuple[Block, list[str]]]:
    """Run the blocks of ``path`` in one namespace; return the skipped ones and why.

    Raises AssertionError naming the block's file and line when one fails.
    """
    namespace: dict[str, object] = {"__name__": f"docs:{path.name}"}
    skipped: list[tuple[Block, list[str]]] = []
    for block in python_blocks(path):
        missing = missing_modules(block.code)
        if missing:
            skipped.append((block, missing))
            continue
        # padded so that tracebacks and SyntaxErrors carry the Markdown file's line numbers
        source = "\n" * (block.line - 1) + block.code
        try:
            exec(compile(source, str(path), "exec"), namespace)
        except Exception as exc:
            line = _failing_line(exc, path) or getattr(exc, "lineno", None) or block.line
            detail = "".join(traceback.format_exception(exc)[-12:])
            raise AssertionError(
                f"{block.where}: the block starting at line {block.line} failed at "
                f"{_display(path)}:{line}: {type(exc).__name__}: {exc}\n{detail}"
            ) from exc
    return skipped


# ---------------------------------------------------------------------------- the docs


@pytest.mark.parametrize("path", documents(), ids=_display)
def test_python_blocks_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    skipped = run_blocks(path)
    if skipped:
        reasons = "; ".join(f"line {b.line} needs {', '.join(m)}" for b, m in skipped)
        pytest.skip(f"{_display(path)}: every other block ran; skipped {reasons}")


def test_the_docs_have_examples() -> None:
    assert (ROOT / "docs" / "reading.md") in documents()


# ---------------------------------------------------------------------------- the runner


def test_extracts_only_python_blocks_with_their_first_line(tmp_path: Path) -> None:
    path = tmp_path / "doc.md"
    path.write_text(
        "# title\n"
        "```bash\necho no\n```\n"
        "```python\nx = 1\n```\n"
        "text\n"
        "````py\ny = x + 1\n```\nnot a fence end\n````\n",
        encoding="utf-8",
    )
    blocks = python_blocks(path)
    assert [(b.line, b.code) for b in blocks] == [
        (6, "x = 1\n"),
        (10, "y = x + 1\n```\nnot a fence end\n"),
    ]


def test_a_failing_block_reports_its_markdown_line(tmp_path: Path) -> None:
    path = tmp_path / "failing.md"
    path.write_text(
        "intro\n\n```python\nvalue = 41\n```\n\n```python\nvalue += 1\nassert value == 43\n```\n",
        encoding="utf-8",
    )
    with pytest.raises(AssertionError, match=r"line 8 failed at .*failing\.md:9: AssertionError"):
        run_blocks(path)


def test_blocks_share_one_namespace_in_order(tmp_path: Path) -> None:
    path = tmp_path / "ok.md"
    path.write_text(
        "```python\nvalue = 41\n```\n```python\nvalue += 1\nassert value == 42\n```\n",
        encoding="utf-8",
    )
    assert run_blocks(path) == []


def test_a_block_with_a_missing_module_is_skipped_not_run(tmp_path: Path) -> None:
    path = tmp_path / "optional.md"
    path.write_text(
        "```python\nimport no_such_module_xyz\nraise RuntimeError\n```\n```python\nx = 1\n```\n",
        encoding="utf-8",
    )
    assert [(b.line, m) for b, m in run_blocks(path)] == [(2, ["no_such_module_xyz"])]


def test_blocks_needing_a_missing_module_are_reported() -> None:
    assert missing_modules("import os\nfrom no_such_module_xyz import a\n") == [
        "no_such_module_xyz"
    ]
    assert missing_modules("from . import relative\nimport pyarrow.compute\n") == []
