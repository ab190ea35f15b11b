"""One source of the version: ``fastatari.__version__``. The installed metadata (pyproject's
dynamic version), ``fastatari --version`` and the changelog's newest heading all say it."""
from __future__ import annotations

import re
from importlib.metadata import version as installed
from pathlib import Path

import pytest

import fastatari
from fastatari.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_the_installed_metadata_is_the_packages_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?",
                        fastatari.__version__)
    assert installed("fastatari") == fastatari.__version__


def test_the_command_prints_it(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"fastatari {fastatari.__version__} (ale-py ")


def test_the_changelog_has_its_section():
    changelog = ROOT / "docs" / "changelog.md"
    if not changelog.exists():
        pytest.skip("no docs/ here (a copy of tests/ only)")
    headings = re.findall(r"^## (.+)$", changelog.read_text(), re.M)
    version = re.escape(fastatari.__version__)
    assert headings and re.fullmatch(rf"Unreleased \({version}\)|{version} \(\d{{4}}-\d\d-\d\d\)",
                                     headings[0]), headings[:1]


def test_pyproject_takes_it_from_the_package():
    pyproject = ROOT / "pyproject.toml"
    text = pyproject.read_text()
    assert not re.search(r'^version\s*=\s*"', text, re.M), "a second, static version"
    assert re.search(r'^dynamic = \["version"\]$', text, re.M)
    assert re.search(r'^version = \{ attr = "fastatari.__version__" \}$', text, re.M)
