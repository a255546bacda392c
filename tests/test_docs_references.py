"""The docs name only what exists: every repository path, and every ``file.py:name`` or
``file.py:LINE``, that README.md, nets/README.md and docs/**/*.md name is in the repository.

What counts as a reference (the extraction rules; each is tested below on made-up text):

- **Where.** Inline code spans (```...```), fenced code blocks, markdown link targets
  (``[text](target)``) and plain prose. docs/history/ is not scanned: it describes removed
  designs, whose files are named as they were at the commits it cites.
- **Tokens.** A span, block or line of prose is split at white space and at
  ``= , ; ( ) [ ] < > " ' | { }`` and backquotes; leading and trailing ``. , : ; ! ? *`` are stripped (so a
  sentence's full stop or a list's colon is not part of the path).
- **Rooted paths** are checked everywhere (spans, blocks, links, prose): a token whose first
  component is one of the repository's top-level folders (ROOT_DIRS) followed by ``/``, or is
  exactly one of its top-level files (ROOT_FILES). It must exist relative to the repository
  root.
- **Partial paths** are checked in inline code spans only: a token that is not rooted but ends
  in ``.py`` or ``.md`` (``search.py``, ``core/tree.py``) must be the tail, at a ``/``, of some
  file in the repository. Data files named without a folder (``maia-1100.onnx``, an output
  ``.pgn``) usually name files outside it (../shared, a command's output) and are not checked.
- **Link targets** that are not URLs are resolved relative to the doc's folder (``#anchor``
  dropped); a target that resolves outside the repository (../shared) is not checked.
- **Targets.** ``PATH:NAME`` or ``PATH::NAME`` (NAME an identifier, dotted for a method) needs
  PATH to be a ``.py`` file that defines NAME (a module-level def, class or assignment; a dotted
  name's later parts inside that class); ``PATH:N`` or ``PATH:N-M`` needs the file to have at
  least that many lines. For a partial path, one of the files it may name must qualify.
- **Names in files.** A code span holding a name (an identifier, dotted for a method, with or
  without ``()``) followed by ``in`` and a ``.py`` path, spanned or not (```Chunks`` in
  ``evaluation.py```, ```evaluate`` in backend_xla/network.py``), or by the path in brackets
  (```Search`` (``engine/search/search.py``)```), or after ``file.py's`` (```rows.py``'s
  ``expand_batch```), needs the file's code to hold
  that name (each part of a dotted one): a def or class at any depth, a parameter, a name or
  attribute read or written, an import; not a comment or a string. A name moved to another file
  is caught where the doc still names the old one.
- **Not references.** URLs (``://``), paths starting with ``/``, ``~``, ``$`` or ``../``
  (absolute, home, environment, the sibling ../shared folder), globs and elisions (``* ? …``,
  ``...``), and placeholders: a path with a component whose stem (before the first ``.``) is
  one of PLACEHOLDERS (``FILE.pb.gz``, ``OUTDIR/results.md``, ``NET.onnx``).
"""

from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

ROOT_DIRS = ("engine", "backend_xla", "nets", "tests", "bin", "docs", ".ci")
ROOT_FILES = ("pyproject.toml", "README.md", ".gitignore")
PLACEHOLDERS = frozenset({"PATH", "FILE", "NET", "N", "NNN", "DIR", "OUTDIR", "NAME", "OUT", "X"})
PARTIAL_SUFFIXES = (".py", ".md")
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".venv",
        "__pycache__",
        "node_modules",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".devshared",
    }
)

_SPLIT = re.compile(r"""[\s=,;()\[\]<>"'|{}`]+""")
_STRIP = ".,:;!?*"
_TARGET = re.compile(r"^(?P<path>.*?)(?P<sep>::?)(?P<target>[A-Za-z_][\w.]*|\d+(?:-\d+)?)$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_NAME = r"`(?P<name{n}>[A-Za-z_][\w.]*)(?:\(\))?`"
_PY = r"`?(?P<path{n}>[\w./-]+\.py)\b`?"
_NAME_IN_FILE = re.compile(
    "|".join(
        (
            rf"(?<!`){_NAME.format(n=1)}\s+in\s+{_PY.format(n=1)}",  # `name` in `file.py`
            rf"(?<!`){_NAME.format(n=2)}\s+\({_PY.format(n=2)}\)",  # `name` (`file.py`)
            rf"{_PY.format(n=3)}'s\s+{_NAME.format(n=3)}",  # `file.py`'s `name`
        )
    )
)


@dataclass(frozen=True)
class Reference:
    doc: str
    line: int
    text: str
    kind: str  # "rooted", "partial" or "link"
    path: str  # relative to the repository root for "rooted" and "link"
    target: str | None  # a definition's name or a line number (range), if any
    anywhere: bool = False  # the target may be defined at any depth ("`name` in `file.py`")


def doc_files(repo: Path = REPO) -> list[Path]:
    docs = [repo / "README.md", repo / "nets" / "README.md", *sorted((repo / "docs").rglob("*.md"))]
    return [d for d in docs if d.is_file() and "history" not in d.relative_to(repo).parts[1:-1]]


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _split_target(token: str) -> tuple[str, str | None]:
    m = _TARGET.match(token)
    if m and m["path"] and "/" not in m["target"]:
        return m["path"], m["target"]
    return token, None


def _not_a_path(path: str) -> bool:
    if not path or "://" in path or path.startswith(("/", "~", "$", "../", "#", "mailto:")):
        return True
    if any(c in path for c in "*?…") or "..." in path:
        return True
    return any(part.split(".")[0] in PLACEHOLDERS for part in path.split("/") if part)


def _classify(token: str, in_code_span: bool) -> tuple[str, str, str | None] | None:
    token = token.strip(_STRIP)
    path, target = _split_target(token)
    path = path.strip(_STRIP) if target is None else path
    if _not_a_path(path):
        return None
    first = path.split("/")[0]
    if ("/" in path and first in ROOT_DIRS) or path in ROOT_FILES:
        return "rooted", path, target
    if in_code_span and path.endswith(PARTIAL_SUFFIXES):
        return "partial", path, target
    return None


def _tokens(segment: str) -> list[tuple[int, str]]:
    """(offset in segment, token) for each token of the segment."""
    out, pos = [], 0
    for piece in _SPLIT.split(segment):
        idx = segment.find(piece, pos) if piece else pos
        if piece:
            out.append((idx, piece))
            pos = idx + len(piece)
    return out


def extract(text: str, doc: str, doc_dir: str = "") -> list[Reference]:
    """Every reference in one markdown text (``doc`` names it in messages; ``doc_dir`` is its
    folder relative to the repository root, for relative links)."""
    refs: list[Reference] = []
    lines = text.splitlines(keepends=True)
    prose_chars = list(text)
    offset, fence = 0, None
    for line in lines:  # fenced blocks: scan their tokens, blank them out of the prose
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            prose_chars[offset : offset + len(line)] = " " * len(line)
        elif fence is not None:
            prose_chars[offset : offset + len(line)] = " " * len(line)
            if m and m.group(1) == fence:
                fence = None
            else:
                refs += _refs_of(line, offset, text, doc, in_code_span=False)
        offset += len(line)
    prose = "".join(prose_chars)
    for m in _CODE_SPAN.finditer(prose):
        if "\n\n" in m.group(2):
            continue
        refs += _refs_of(m.group(2), m.start(2), text, doc, in_code_span=True)
        prose = prose[: m.start()] + " " * (m.end() - m.start()) + prose[m.end() :]
    for m in _LINK.finditer(prose):
        target = m.group(1).split("#")[0]
        if target and not _not_a_path(target) and ":" not in target:
            resolved = os.path.normpath(os.path.join(doc_dir, target))
            if not resolved.startswith(".."):
                refs.append(
                    Reference(doc, _line_of(text, m.start(1)), m.group(1), "link", resolved, None)
                )
        prose = prose[: m.start()] + " " * (m.end() - m.start()) + prose[m.end() :]
    refs += _refs_of(prose, 0, text, doc, in_code_span=False)
    refs += _names_in_files(text, lines, doc)
    return sorted(refs, key=lambda r: r.line)


def _names_in_files(text: str, lines: list[str], doc: str) -> list[Reference]:
    """The "`name` in `file.py`" claims outside fenced blocks."""
    fenced, offset, fence, start = [], 0, None, 0
    for line in lines:
        m = _FENCE.match(line)
        if fence is None and m:
            fence, start = m.group(1), offset
        elif fence is not None and m and m.group(1) == fence:
            fenced.append((start, offset + len(line)))
            fence = None
        offset += len(line)
    if fence is not None:
        fenced.append((start, offset))
    refs = []
    for m in _NAME_IN_FILE.finditer(text):
        if any(start <= m.start() < end for start, end in fenced):
            continue
        n = next(i for i in (1, 2, 3) if m[f"name{i}"])
        path, name = m[f"path{n}"].strip(_STRIP), m[f"name{n}"]
        found = _classify(path, in_code_span=True)
        if found is None:
            continue
        kind, path, _ = found
        refs.append(
            Reference(doc, _line_of(text, m.start()), m.group(0), kind, path, name, True)
        )
    return refs


def _refs_of(segment: str, base: int, text: str, doc: str, in_code_span: bool) -> list[Reference]:
    refs = []
    for off, token in _tokens(segment):
        if token.startswith("-") and "/" not in token:
            continue
        found = _classify(token, in_code_span)
        if found:
            kind, path, target = found
            refs.append(
                Reference(doc, _line_of(text, base + off), token.strip(_STRIP), kind, path, target)
            )
    return refs


@functools.cache
def _repo_files(repo: Path = REPO) -> tuple[str, ...]:
    files = []
    for root, dirs, names in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        rel = os.path.relpath(root, repo)
        files += [name if rel == "." else f"{rel}/{name}" for name in names]
    return tuple(files)


def _defined_names(source: str) -> dict[str, set[str]]:
    """Module-level names a file defines, each with the names its class body defines."""
    names: dict[str, set[str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = set()
        elif isinstance(node, ast.ClassDef):
            names[node.name] = set(_defined_names_in(node.body))
        else:
            for name in _defined_names_in([node]):
                names[name] = set()
    return names


def _defined_names_in(body: list[ast.stmt]) -> list[str]:
    out = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(node.name)
        elif isinstance(node, ast.Assign):
            out += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append(node.target.id)
    return out


def _named_in_code(source: str) -> set[str]:
    """Every name a file's code holds, at any depth: defs, classes, parameters, keywords, names
    and attributes read or written, imports (not its comments or strings)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.arg, ast.keyword)) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.update((node.asname or node.name).split("."))
            names.update(node.name.split("."))
    return names


def _target_holds(file: Path, target: str | None, anywhere: bool = False) -> bool:
    if target is None:
        return True
    if anywhere:
        if file.suffix != ".py" or not file.is_file():
            return False
        named = _named_in_code(file.read_text())
        return all(part in named for part in target.split("."))
    if target[0].isdigit():
        return file.is_file() and len(file.read_text().splitlines()) >= int(target.split("-")[-1])
    if file.suffix != ".py" or not file.is_file():
        return False
    first, *rest = target.split(".")
    names = _defined_names(file.read_text())
    return first in names and (not rest or rest[0] in names[first])


def problem(ref: Reference, repo: Path = REPO) -> str | None:
    """Why the reference is wrong, or None."""
    if ref.kind in ("rooted", "link"):
        candidates = [repo / ref.path] if (repo / ref.path).exists() else []
        if not candidates:
            return "no such path"
    else:
        tail = "/" + ref.path
        candidates = [repo / f for f in _repo_files(repo) if ("/" + f).endswith(tail)]
        if not candidates:
            return "no file in the repository ends with this"
    if not any(_target_holds(c, ref.target, ref.anywhere) for c in candidates):
        what = "lines" if ref.target and ref.target[0].isdigit() else "definition"
        return f"{what} {ref.target!r} not in {', '.join(str(c.relative_to(repo)) for c in candidates)}"
    return None


def all_references(repo: Path = REPO) -> list[Reference]:
    refs = []
    for doc in doc_files(repo):
        rel = doc.relative_to(repo)
        refs += extract(
            doc.read_text(), str(rel), str(rel.parent) if str(rel.parent) != "." else ""
        )
    return refs


def test_every_path_the_docs_name_exists():
    refs = all_references()
    assert len(refs) > 100, f"the extraction found only {len(refs)} references: the rules broke"
    misses = [f"{r.doc}:{r.line} -> {r.text} ({problem(r)})" for r in refs if problem(r)]
    assert not misses, "the docs name paths that do not exist:\n" + "\n".join(misses)


def _found(text: str, doc_dir: str = "") -> set[tuple[str, str, str | None]]:
    return {(r.kind, r.path, r.target) for r in extract(text, "t.md", doc_dir)}


def test_the_extraction_rules():
    text = (
        "See `engine/search/core/tree.py` and engine/uci.py. In `core/tree.py:Tree` and\n"
        "`engine/search/search.py:Search._iteration`, `tree.py:60`; [map](architecture.md#x),\n"
        "[lc0](https://lczero.org), [shared](../../shared/lc0).\n"
        "```\n"
        "bin/perf/bench --weights=../shared/lc0/maia/maia-1100.pb.gz --out tests/data/x.jsonl.gz\n"
        "python -c 'import search.py'\n"
        "```\n"
        "Placeholders `bin/dev/train-net openings --out FILE.epd`, `OUTDIR/results.md`, `NET.onnx`,\n"
        "globs `tests/engine/test_*.py`, outside `../shared/tools`, `/tmp/x.py`, `maia-1100.onnx`,\n"
        "prose words: nodes/s, W/D/L, a/b.py (not a span), `lax/NHWC`, `pyproject.toml`.\n"
    )
    assert _found(text, "docs") == {
        ("rooted", "engine/search/core/tree.py", None),
        ("rooted", "engine/uci.py", None),
        ("partial", "core/tree.py", "Tree"),
        ("rooted", "engine/search/search.py", "Search._iteration"),
        ("partial", "tree.py", "60"),
        ("link", "docs/architecture.md", None),
        ("rooted", "bin/perf/bench", None),
        ("rooted", "tests/data/x.jsonl.gz", None),
        ("rooted", "bin/dev/train-net", None),
        ("rooted", "pyproject.toml", None),
    }


def test_a_wrong_reference_is_reported():
    def problems(text: str) -> list[str | None]:
        return [problem(r) for r in extract(text, "t.md")]

    assert problems("`engine/backend.py`") == ["no such path"]
    assert problems("`engine/backend/`") == [None]
    assert problems("`gone_module.py`") == ["no file in the repository ends with this"]
    assert problems("`core/tree.py:no_such_function`")[0].startswith(
        "definition 'no_such_function'"
    )
    assert problems("`engine/options.py:999999`")[0].startswith("lines '999999'")
    assert problems("`engine/options.py:1-2`") == [None]
    assert problems("`tests/test_docs_references.py:problem`") == [None]


def test_a_name_in_a_file_is_checked_and_a_moved_one_caught():
    def problems(text: str) -> list[str | None]:
        return [problem(r) for r in extract(text, "t.md") if r.anywhere]

    # Held: a class, a method's parameter, a module constant, a call of another module's name.
    assert problems(
        "`Evaluator` in `engine/search/evaluation.py`, `legal` in\n`engine/backend/__init__.py`, "
        "`UNCOUNTED` (`engine/search/core/calls.py`), `core/calls.py`'s `direct()`, "
        "`gc.freeze` in `engine/startup/collector.py`"
    ) == [None] * 5
    # docs/architecture.md at 487450d (issue 67): the encoding's chunks had moved out of
    # worker.py (and since gone); and a constant that moved from run.py to threads.py.
    (chunks,) = problems("the sort in chunks of rows, `Chunks` in `worker.py`) → expand")
    assert chunks is not None and chunks.startswith("definition 'Chunks' not in engine/search/")
    (stall,) = problems("`NETWORK_STALL_S` (`engine/search/run.py`)")
    assert stall == "definition 'NETWORK_STALL_S' not in engine/search/run.py"
    # docs/engine.md when the collector's freeze moved into the start-up (issue 67 item 2).
    (freeze,) = problems("frozen (`gc.freeze` in `engine/controller.py`)")
    assert freeze == "definition 'gc.freeze' not in engine/controller.py"
    # Not a claim: inside a fenced block, or a path that is not Python.
    assert problems("```\n`Chunks` in `worker.py`\n```\n`Chunks` in `docs/engine.md`") == []
