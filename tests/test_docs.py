"""The documentation keeps up with the code: README names every registered planner, cost
model, command, experiment and doc; DEVELOPING names every module and package; every relative
link in the docs resolves; no doc, module or test points outside the repository, at an issue
number, or keeps a dated diary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hetcoll.cli import cli
from hetcoll.experiments import EXPERIMENTS
from hetcoll.models import MODELS
from hetcoll.planners import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DEVELOPING = (ROOT / "DEVELOPING.md").read_text()
PACKAGE = ROOT / "src" / "hetcoll"
DOCS = sorted([ROOT / "README.md", ROOT / "DEVELOPING.md", *(ROOT / "docs").glob("*.md")])
#: a Markdown link or image: [text](target) (a URL, a path, a #fragment)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _named(name: str) -> bool:
    """Whether README names ``name`` as code (`name`, or a command line that runs it)."""
    return f"`{name}`" in README or re.search(rf"hetcoll (\w+ )?{re.escape(name)}\b", README)


@pytest.mark.parametrize(
    ("what", "names"),
    [
        ("planner", sorted(REGISTRY)),
        ("cost model", sorted(MODELS)),
        ("command", sorted(cli.commands)),
        ("experiment", sorted(EXPERIMENTS)),
    ],
)
def test_readme_names_everything_registered(what, names):
    missing = [name for name in names if not _named(name)]
    assert not missing, f"README.md does not name these {what}s: {missing}"


def test_readme_lists_every_doc():
    for doc in (ROOT / "docs").glob("*.md"):
        assert f"docs/{doc.name}" in README, f"README.md does not list docs/{doc.name}"


def test_developing_names_every_module_and_package():
    """DEVELOPING's layout names each module file (``x.py``) and each package (``x/``)."""
    modules = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py")
    packages = sorted(p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__")
    missing = [p.name for p in modules if p.name not in DEVELOPING]
    missing += [f"{p.name}/" for p in packages if f"{p.name}/" not in DEVELOPING]
    assert not missing, f"DEVELOPING.md does not name: {missing}"


def test_the_module_check_sees_every_module():
    # the walk above finds the modules of every package, not only the top level
    names = {p.name for p in PACKAGE.rglob("*.py")}
    assert {"routes.py", "events.py", "fast.py", "steady.py", "spec.py"} <= names


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, or a place in the same file
        path = (doc.parent / target.split("#")[0]).resolve()
        assert path.exists(), f"{doc.relative_to(ROOT)}: link to {target} resolves to nothing"


#: a file of the repository named in prose, optionally with one of its tests
_PATH = re.compile(
    r"\b((?:tests|benchmarks|src|docs|examples)/[\w./-]+\.(?:py|md|json|png))(?:::\s*(\w+))?"
)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_and_test_named_exists(doc):
    for path, test in _PATH.findall(doc.read_text()):
        assert (ROOT / path).exists(), f"{doc.relative_to(ROOT)}: {path} does not exist"
        if test:
            source = (ROOT / path).read_text()
            assert f"def {test}(" in source, f"{doc.relative_to(ROOT)}: no {path}::{test}"


def test_the_path_finder_finds_paths_and_tests():
    text = "see `tests/test_x.py::test_y`, `tests/z.py::\ntest_w` and docs/a.md, not results/b.json"
    assert _PATH.findall(text) == [
        ("tests/test_x.py", "test_y"),
        ("tests/z.py", "test_w"),
        ("docs/a.md", ""),
    ]


def test_the_link_finder_finds_links():
    text = "see [the docs](docs/a.md#x), ![a plot](b.png) and [a site](https://x.org)"
    assert LINK.findall(text) == ["docs/a.md#x", "b.png", "https://x.org"]


#: files outside the repository, issue numbers, and a diary's marks (dates, branch names,
#: numbered measurement rounds)
_OUTSIDE = re.compile(
    r"BRIEF\.md|ident\.py|/work/|\.\./shared|[Ii]ssues? #?\d|\b20\d\d-\d\d-\d\d\b|branch `"
    r"|\b(?:four|fif|six|seven|eigh|nin)th round\b"
)


@pytest.mark.parametrize(
    "path",
    [
        *DOCS,
        *sorted((ROOT / "src").rglob("*.py")),
        *sorted((ROOT / "benchmarks").rglob("*.py")),
        *sorted((ROOT / "examples").glob("*.py")),
        *sorted(p for p in (ROOT / "tests").rglob("*.py") if p.name != "test_docs.py"),
        ROOT / "Makefile",
        ROOT / "pyproject.toml",
    ],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_nothing_points_outside_the_repository_or_keeps_a_diary(path):
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        found = _OUTSIDE.search(line)
        assert not found, f"{path.relative_to(ROOT)}:{number}: {found.group()!r}: {line.strip()}"
