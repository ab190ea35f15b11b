"""The diagnostics' registry and ``python -m benchmarks``, which takes every section from it."""
from __future__ import annotations

import importlib
import pkgutil

import pytest

from benchmarks import __main__ as command
from benchmarks import sections as sections_package
from benchmarks.sections import REGISTRY, SECTIONS
from fastatari.bench import SECTIONS as BENCH_SECTIONS


def test_every_section_module_is_registered_once_under_its_name():
    modules = [info.name for info in pkgutil.iter_modules(sections_package.__path__)]
    assert len(modules) == len(REGISTRY)
    for name in modules:
        module = importlib.import_module(f"benchmarks.sections.{name}")
        assert sum(section is module.SECTION for section in REGISTRY) == 1, name
        assert module.SECTION.name == name
    assert len(set(SECTIONS)) == len(SECTIONS)
    assert not set(SECTIONS) & set(BENCH_SECTIONS)  # fastatari bench keeps its own


@pytest.mark.parametrize("name", SECTIONS)
def test_every_section_is_reachable_from_the_command_line(name):
    args = command.build_parser().parse_args(["--section", name, "--quick", "--rounds", "2"])
    config = command.config_of(args)
    assert config.sections == (name,) and config.rounds == 2 and config.quick


def test_the_command_line_lists_the_sections_and_needs_one(capsys):
    assert command.main(["--list"]) == 0
    assert capsys.readouterr().out.split() == list(SECTIONS)
    with pytest.raises(SystemExit):
        command.main([])
    assert "name a section with --section" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        command.build_parser().parse_args(["--section", "vector"])  # fastatari bench's
    assert "invalid choice: 'vector'" in capsys.readouterr().err


def test_help_lists_every_section_with_its_help(capsys):
    with pytest.raises(SystemExit):
        command.build_parser().parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for section in REGISTRY:
        assert f"{section.name} {' '.join(section.help.split())}" in out
