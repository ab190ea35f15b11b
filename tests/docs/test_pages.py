"""The documentation cannot go stale: every ```python block of the site's pages and of the
README is a complete program, and runs here as written (each in a fresh namespace, in a
temporary working directory).

A block that needs an optional library starts with ``# requires: MARKER``, the pytest marker of
the suite that installs it (``rl``, ``torchrl``, ``puffer``, ``tianshou``, ``ray``, ``cleanrl``,
``eval``, ``dm``, ``envpool``): it runs in that suite and is skipped where its packages are
missing. Shell commands are ```bash blocks and output ```text blocks: neither runs.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
REQUIRES = re.compile(r"\A# requires: (\w+)")


def pages() -> list[Path]:
    """The README and the site's pages; none where only tests/ was copied (the wheel check)."""
    docs = ROOT / "docs"
    found = sorted(docs.rglob("*.md")) if (docs / "conf.py").exists() else []
    return ([ROOT / "README.md"] if (ROOT / "README.md").exists() and found else []) + found


def blocks() -> list:
    params = []
    for page in pages():
        name = page.relative_to(ROOT).as_posix()
        for match in BLOCK.finditer(page.read_text()):
            code = match.group(1)
            requires = REQUIRES.match(code)
            marks = [getattr(pytest.mark, requires.group(1))] if requires else []
            line = page.read_text().count("\n", 0, match.start()) + 2
            params.append(pytest.param(name, line, code, requires and requires.group(1),
                                       marks=marks, id=f"{name}:{line}"))
    return params


def test_pages_have_blocks_to_run():
    if not pages():
        pytest.skip("no docs/ here (a copy of tests/ only)")
    assert len(blocks()) >= 20


@pytest.mark.parametrize("page, line, code, optional", blocks())
def test_the_block_runs_as_written(page, line, code, optional, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if optional == "ray":  # a private Ray on this machine, on loopback, without a token
        monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    program = compile(code, f"{page}, the block at line {line}", "exec")
    namespace = {"__name__": "__main__"}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            exec(program, namespace)
    except ImportError as error:  # a missing library, or one missing its own dependency
        if not optional:
            raise
        pytest.skip(f"needs what its suite installs: {error}")
    finally:
        for value in list(namespace.values()):  # envs the block left open
            close = getattr(value, "close", None)
            if callable(close) and type(value).__module__.startswith(("fastatari", "gymnasium")):
                try:
                    close()
                except Exception:
                    pass
        namespace.clear()  # a skip's traceback keeps this frame: not what the block made


def test_the_readmes_links_to_files_resolve():
    readme = ROOT / "README.md"
    if not (ROOT / "docs" / "conf.py").exists():
        pytest.skip("no docs/ here (a copy of tests/ only)")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme.read_text())
    local = [t for t in targets if "://" not in t]
    assert local and [t for t in local if not (ROOT / t).exists()] == []


def test_the_readme_is_a_front_door():
    """Short, with the two commands (install and run the main job; install and run the tests)
    near the top."""
    if not (ROOT / "docs" / "conf.py").exists():
        pytest.skip("no docs/ here (a copy of tests/ only)")
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200
    top = "\n".join(lines[:40])
    assert 'pip install ".[bench]" && fastatari bench' in top
    assert 'pip install ".[test]" && pytest' in top
