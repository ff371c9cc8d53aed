"""The docs' command blocks are the ones docs/examples.py regenerates, the README stays short, and
the site's pages and links hang together. Read only: nothing runs TensorFlow or the examples."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 275  # the newcomer path (set-up block, a `cd` per example) included


def _examples():
    spec = importlib.util.spec_from_file_location("docs_examples", ROOT / "docs" / "examples.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


examples = _examples()
PAGES = {page.relative_to(ROOT).as_posix(): page.read_text() for page in examples.PAGES}
BLOCKS = [(page, name, body) for page, text in PAGES.items()
          for name, body in examples.markers(text)]


def test_pages_have_marked_blocks():
    assert {"README.md", "docs/getting-started.md"} <= {page for page, _, _ in BLOCKS}


@pytest.mark.parametrize(("page", "name", "body"), BLOCKS,
                         ids=[f"{page}:{name}" for page, name, _ in BLOCKS])
def test_block_is_an_example_the_script_runs(page, name, body):
    assert name in examples.EXAMPLES, f"{page}: no example '{name}' in docs/examples.py"
    example = examples.EXAMPLES[name]
    fence = re.fullmatch(r"```(\w+)\n(.*)\n```\n", body, re.S)
    assert fence, f"{page}: block '{name}' is not one fenced code block (run docs/examples.py)"
    assert fence[1] == example.lang
    if example.bare:
        assert fence[2].strip(), f"{page}: block '{name}' is empty (run docs/examples.py)"
    else:
        assert examples.shown_commands(fence[2]) == example.shown(), \
            f"{page}: block '{name}' shows other commands than docs/examples.py runs"


def test_every_example_is_shown_somewhere():
    assert set(examples.EXAMPLES) == {name for _, name, _ in BLOCKS}


def test_every_example_build_is_known():
    for name, example in examples.EXAMPLES.items():
        assert set(example.needs) <= set(examples.BUILDS), name
        assert len(example.exits) <= len(example.commands), name


def test_readme_is_short():
    lines = PAGES["README.md"].count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/"


def test_readme_links_into_docs_exist():
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", PAGES["README.md"])
    assert links
    for link in links:
        assert (ROOT / link).is_file(), f"README.md links to {link}, which does not exist"


def test_every_page_is_in_the_nav():
    nav = re.findall(r"^\s+- [^:]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert sorted(nav) == pages
