"""Every code example of the docs runs.

For each Markdown page (``docs/*.md`` and ``README.md``), the fenced blocks run in the order
of the page, with a fresh temporary directory as the working directory:

- a ```python block runs in one namespace per page (a block may use names from earlier
  blocks); tracebacks point at the real lines of the Markdown file. A block that imports an
  optional module that is not installed is skipped, and the test then reports a skip naming
  it after every other block has run;
- a ```bash (or ``sh``, ``shell``) block runs in ``bash -e -o pipefail``, with the directory of
  this interpreter first on ``PATH``: ``lance-partitioned`` is the real console script and
  ``python`` the interpreter that has lance-partitioned installed;
- a block with a title (```python title="job.py"```, shown as a file name on the site) is
  written to that file in the working directory instead of being run, for a later bash block
  to use;
- a block right after a ``<!-- not-run: <reason> -->`` comment is not run; the reason is
  required;
- blocks of the languages in :data:`NOT_CODE` (program output, synopses, JSON) are not code.
  Any other language fails :func:`test_every_block_is_run_or_says_why_not`.

Pages whose code uses PySpark are marked ``spark`` and ``slow`` (they start a JVM), with a
longer timeout.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not-run:(?P<reason>.*?)-->\s*$")
_TITLE = re.compile(r"""\btitle=(?P<q>["'])(?P<title>[^"']+)(?P=q)""")

PYTHON = ("python", "py")
BASH = ("bash", "sh", "shell")
#: Fences that hold no code to run: program output, command synopses, data.
NOT_CODE = ("text", "json", "csv")
BASH_TIMEOUT = 900  # seconds; the quickstart's Spark job took 3-7 min on 2 CPUs at load 14


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, code, and the line of its first code line (1-based)."""

    path: Path
    line: int
    code: str
    language: str = "python"
    title: str | None = None
    not_run: str | None = None  # the reason given in a <!-- not-run: ... --> comment

    @property
    def where(self) -> str:
        return f"{_display(self.path)}:{self.line}"

    @property
    def runs(self) -> bool:
        """Whether the docs test executes (or, for a titled block, writes) this block."""
        return self.not_run is None and self.language in (*PYTHON, *BASH)


def _display(path: Path) -> str:
    """``path`` relative to the repository when it is inside it."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening.group("fence"), len(opening.group("indent"))
        info = opening.group("info").strip()
        language = info.split(" ")[0].lower()
        title = _TITLE.search(info)
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
        previous = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = _NOT_RUN.match(previous)
        blocks.append(
            Block(
                path,
                i + 2,
                "\n".join(body) + "\n",
                language,
                title.group("title") if title else None,
                marker.group("reason").strip() if marker else None,
            )
        )
        i = j + 1
    return blocks


def python_blocks(path: Path) -> list[Block]:
    """The ```python (or ```py) blocks of a Markdown file that run in-process, in order."""
    return [
        b
        for b in fenced_blocks(path)
        if b.language in PYTHON and b.title is None and b.not_run is None
    ]


def documents() -> list[Path]:
    """Every Markdown page of the docs, and the README."""
    pages = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    return [p for p in pages if p.is_file()]


def uses_spark(path: Path) -> bool:
    """Whether the code that the page runs uses PySpark (a JVM start)."""
    return any(b.runs and "pyspark" in b.code for b in fenced_blocks(path))


def uses_bash(path: Path) -> bool:
    """Whether the page runs a bash block (the real console script, one subprocess each)."""
    return any(b.runs and b.language in BASH for b in fenced_blocks(path))


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


def _run_python(block: Block, namespace: dict[str, object]) -> None:
    # padded so that tracebacks and SyntaxErrors carry the Markdown file's line numbers
    source = "\n" * (block.line - 1) + block.code
    try:
        exec(compile(source, str(block.path), "exec"), namespace)
    except Exception as exc:
        line = _failing_line(exc, block.path) or getattr(exc, "lineno", None) or block.line
        detail = "".join(traceback.format_exception(exc)[-12:])
        raise AssertionError(
            f"{block.where}: the block starting at line {block.line} failed at "
            f"{_display(block.path)}:{line}: {type(exc).__name__}: {exc}\n{detail}"
        ) from exc


def bash_environment() -> dict[str, str]:
    """The environment of a bash block: this interpreter's directory first on ``PATH``."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bindir, env.get("PATH", "")])
    return env


def _run_bash(block: Block) -> None:
    try:
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block.code],
            env=bash_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=BASH_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            f"{block.where}: the bash block timed out after {exc.timeout} s"
        ) from exc
    if done.returncode != 0:
        raise AssertionError(
            f"{block.where}: the bash block starting at line {block.line} exited with "
            f"{done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n"
            f"{done.stderr[-4000:]}"
        )


def run_blocks(path: Path) -> list[tuple[Block, list[str]]]:
    """Run the blocks of ``path`` in order, in the current directory; return the python blocks
    skipped for a missing module, and which.

    Raises AssertionError naming the block's file and line when one fails. ``os.environ`` is
    as before afterwards, whatever the blocks set.
    """
    namespace: dict[str, object] = {"__name__": f"docs:{path.name}"}
    skipped: list[tuple[Block, list[str]]] = []
    saved = dict(os.environ)
    try:
        for block in fenced_blocks(path):
            if not block.runs:
                continue
            if block.title is not None:
                Path(block.title).write_text(block.code, encoding="utf-8")
            elif block.language in BASH:
                _run_bash(block)
            else:
                missing = missing_modules(block.code)
                if missing:
                    skipped.append((block, missing))
                    continue
                _run_python(block, namespace)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return skipped


# ---------------------------------------------------------------------------- the docs


def _page(path: Path) -> object:
    marks = []
    if uses_spark(path):
        marks = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(BASH_TIMEOUT + 300)]
    elif uses_bash(path):  # the CLI through its console script: left to the full run
        marks = [pytest.mark.console_script]
    return pytest.param(path, marks=marks, id=_display(path))


@pytest.mark.parametrize("path", [_page(p) for p in documents()])
def test_code_blocks_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if uses_spark(path):
        pytest.importorskip("pyspark")
    monkeypatch.chdir(tmp_path)
    skipped = run_blocks(path)
    if skipped:
        reasons = "; ".join(f"line {b.line} needs {', '.join(m)}" for b, m in skipped)
        pytest.skip(f"{_display(path)}: every other block ran; skipped {reasons}")


@pytest.mark.parametrize("path", documents(), ids=_display)
def test_every_block_is_run_or_says_why_not(path: Path) -> None:
    for block in fenced_blocks(path):
        assert block.language in (*PYTHON, *BASH, *NOT_CODE), (
            f"{block.where}: a ```{block.language} block is neither run by the docs test nor "
            f"one of {NOT_CODE}: make it python or bash, or mark it <!-- not-run: reason -->"
        )
        if block.not_run is not None:
            assert block.not_run, f"{block.where}: <!-- not-run: --> needs a reason"


def test_the_docs_have_examples() -> None:
    assert python_blocks(ROOT / "docs" / "reading.md")
    quickstart = fenced_blocks(ROOT / "docs" / "quickstart.md")
    assert any(b.runs and b.language in BASH and "lance-partitioned " in b.code for b in quickstart)
    assert uses_spark(ROOT / "docs" / "quickstart.md")


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


def test_reads_languages_titles_and_not_run_reasons(tmp_path: Path) -> None:
    path = tmp_path / "doc.md"
    path.write_text(
        "<!-- not-run: needs a cluster -->\n"
        "```bash\nspark-submit job.py\n```\n\n"
        '```python title="job.py"\nprint(1)\n```\n'
        "```text\noutput\n```\n",
        encoding="utf-8",
    )
    assert [(b.language, b.title, b.not_run, b.runs) for b in fenced_blocks(path)] == [
        ("bash", None, "needs a cluster", False),
        ("python", "job.py", None, True),
        ("text", None, None, False),
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


def test_bash_blocks_run_in_order_with_files_and_python_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "mixed.md"
    path.write_text(
        '```python title="make.py"\n'
        'import pathlib\npathlib.Path("made.txt").write_text("42")\n```\n'
        '```bash\npython make.py\ntest "$(cat made.txt)" = 42\n```\n'
        '```python\nimport pathlib\nassert pathlib.Path("made.txt").read_text() == "42"\n```\n'
        "<!-- not-run: would fail -->\n```bash\nexit 3\n```\n",
        encoding="utf-8",
    )
    assert run_blocks(path) == []
    assert (tmp_path / "make.py").is_file()


def test_a_failing_bash_block_reports_its_line_and_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "failing.md"
    path.write_text("# t\n\n```bash\necho before\nfalse\necho after\n```\n", encoding="utf-8")
    with pytest.raises(
        AssertionError, match=r"failing\.md:4: .* exited with 1\n--- stdout\nbefore"
    ):
        run_blocks(path)


def test_bash_blocks_run_the_real_console_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    found = subprocess.run(
        ["bash", "-c", "command -v lance-partitioned; command -v python"],
        env=bash_environment(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    bindir = Path(sys.executable).parent
    assert found == [str(bindir / "lance-partitioned"), str(bindir / "python")]


def test_the_environment_is_restored_after_a_page(tmp_path: Path) -> None:
    path = tmp_path / "env.md"
    path.write_text(
        "```python\nimport os\nos.environ['LP_DOCS_TEST_VARIABLE'] = 'set'\n```\n", encoding="utf-8"
    )
    run_blocks(path)
    assert "LP_DOCS_TEST_VARIABLE" not in os.environ
