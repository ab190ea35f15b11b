"""tests/ mirrors the package (tests/ray for fastatari.ray, tests/envpool for fastatari.envpool),
so its folders carry the names of packages the tests import. pytest imports the tests with
``--import-mode=importlib`` (pyproject's addopts), which never puts tests/ on sys.path: a
folder there cannot stand in for the real package, as an empty namespace package, wherever that
package is not installed (CI's default run has no ray or envpool)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FOLDERS = sorted(p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__")


def test_tests_are_never_on_sys_path(pytestconfig):
    assert pytestconfig.getoption("importmode") == "importlib"
    assert TESTS not in {Path(p).resolve() for p in sys.path if p}


@pytest.mark.parametrize("name", FOLDERS)
def test_no_test_folder_stands_in_for_a_package(name):
    spec = importlib.util.find_spec(name)
    if spec is not None:
        where = [spec.origin] if spec.origin else list(spec.submodule_search_locations or ())
        assert not any(TESTS in Path(p).resolve().parents for p in where), where
