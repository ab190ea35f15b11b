"""The registry of ``fastatari bench``'s sections, and the command line that takes it."""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

import pytest

from fastatari import cli
from fastatari.bench import DEFAULT_SECTIONS, QUICK, REGISTRY, SECTIONS, BenchConfig, Section
from fastatari.bench import sections as sections_package
from fastatari.bench.harness import Work


def section_modules() -> list[str]:
    return [info.name for info in pkgutil.iter_modules(sections_package.__path__)]


def test_every_section_module_is_registered_once():
    modules = section_modules()
    assert len(modules) == len(REGISTRY)
    for name in modules:
        module = importlib.import_module(f"fastatari.bench.sections.{name}")
        assert sum(section is module.SECTION for section in REGISTRY) == 1, name
        assert module.SECTION.name == name  # the module is named after its section


def test_names_are_unique_and_every_section_runs_by_default():
    assert SECTIONS == tuple(section.name for section in REGISTRY)
    assert len(set(SECTIONS)) == len(SECTIONS)
    assert DEFAULT_SECTIONS == SECTIONS == BenchConfig().sections  # the diagnostics: benchmarks/


def test_every_section_has_help_and_one_way_to_run():
    for section in REGISTRY:
        assert section.help.strip(), section.name
        assert (section.plan is None) != (section.contenders is None), section.name


def test_a_section_needs_exactly_one_way_to_run():
    def markdown(result, config):
        return ""

    with pytest.raises(ValueError, match="'nothing': give one of plan and contenders"):
        Section("nothing", "runs nothing", markdown)
    with pytest.raises(ValueError, match="'both'"):
        Section("both", "runs twice", markdown, plan=lambda config: Work(0, lambda bar: None),
                contenders=lambda config: None)


@pytest.mark.parametrize("name", SECTIONS)
def test_every_section_is_reachable_from_the_command_line(name):
    args = cli.build_parser().parse_args(["bench", "--section", name])
    assert cli.bench_config(args).sections == (name,)


def test_the_command_line_takes_no_other_section(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["bench", "--section", "nonsense"])
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err


def test_bench_help_lists_every_section_with_its_help(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["bench", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # unwrapped
    for section in REGISTRY:
        assert f"{section.name} {section.help}" in out
    assert "(repeatable; default: all)" in out and "python -m benchmarks" in out


def test_bench_config_from_the_command_line():
    parser = cli.build_parser()
    config = cli.bench_config(parser.parse_args(["bench"]))
    assert config == BenchConfig()
    # --quick sets the sizes, an explicit flag wins; a section named twice runs once, in order
    config = cli.bench_config(parser.parse_args(
        ["bench", "--quick", "--rounds", "7", "--section", "vector", "--section", "envs",
         "--section", "vector", "--vector-envs", "4,1,4"]))
    assert config.rounds == 7
    assert config.steps == QUICK["steps"] and config.startup_repeats == QUICK["startup_repeats"]
    assert config.vector_envs == (1, 4)
    assert config.sections == ("vector", "envs")


@dataclass
class Figures:
    rate: float


def test_default_json_is_the_result_under_the_section_name():
    section = Section("figures", "a test section", lambda result, config: "",
                      plan=lambda config: Work(0, lambda bar: Figures(1.5)))
    assert section.to_json(Figures(1.5)) == {"figures": {"rate": 1.5}}
    assert section.to_json(None) == {"figures": None}
