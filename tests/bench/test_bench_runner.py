"""The runner: chosen sections only, contenders timed together, the report's Markdown and JSON."""
from __future__ import annotations

import pytest

from fastatari.bench import REGISTRY, BenchConfig, markdown_report, run_benchmark
from fastatari.bench.harness import Contender, Contenders, Section, Work
from fastatari.bench.runner import Report


class Bar:
    def __init__(self, total: int) -> None:
        self.total, self.updates, self.closed = total, 0, False

    def update(self, n: int = 1) -> None:
        self.updates += n

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_sections():
    """Two sections whose contenders are timed together, one that plans its own rounds, and
    one that must not run; ``events`` records what happened, in order."""
    events: list[str] = []

    def flat(name: str, count: int) -> Section:
        def contenders(config: BenchConfig) -> Contenders:
            built = [Contender(f"{name} {k}", 10,
                               lambda r, name=name, k=k: events.append(f"run {name} {k} {r}"),
                               close=lambda name=name, k=k: events.append(f"close {name} {k}"))
                     for k in range(count)]
            return Contenders(built, lambda seconds: sorted(seconds))

        return Section(name, f"{name} help", lambda result, config: f"## {name}: {result}",
                       contenders=contenders)

    def planned(name: str) -> Section:
        def plan(config: BenchConfig) -> Work:
            def run(bar) -> str:
                events.append(f"run {name}")
                bar.update(5)
                return f"{name} result"

            return Work(5, run)

        return Section(name, f"{name} help", lambda result, config: f"## {name}: {result}",
                       plan=plan)

    return events, (flat("one", 2), planned("own"), flat("two", 1), planned("never"))


def test_only_chosen_sections_run_and_timed_ones_share_round_robin_rounds(fake_sections):
    events, sections = fake_sections
    bars: list[Bar] = []
    config = BenchConfig(rounds=2, sections=("own", "two", "one"))

    def progress(total: int) -> Bar:
        bars.append(Bar(total))
        return bars[0]

    report = run_benchmark(config, progress, sections=sections)
    # every round goes over all timed contenders, in registry order; round 0 is the warm-up
    rounds = [f"run {c} {r}" for r in range(3) for c in ("one 0", "one 1", "two 0")]
    closes = ["close one 0", "close one 1", "close two 0"]
    # the timed contenders are closed before the planned section starts
    assert events[:len(rounds)] == rounds
    assert sorted(events[len(rounds):len(rounds) + 3]) == closes
    assert events[len(rounds) + 3:] == ["run own"]
    (bar,) = bars
    assert bar.total == 3 * (config.rounds + 1) + 5
    assert bar.updates == bar.total and bar.closed
    assert report.results == {"one": ["one 0", "one 1", "two 0"],
                              "two": ["one 0", "one 1", "two 0"], "own": "own result"}
    markdown = markdown_report(report)
    # parts in registry order, whatever the order on the command line
    assert markdown.index("## one") < markdown.index("## own") < markdown.index("## two")
    assert "## never" not in markdown
    assert markdown.startswith("breakout, random actions, sticky actions off; 2 rounds")


def test_the_json_has_every_registered_sections_keys_when_nothing_ran():
    report = Report({"cpu": "test"}, {"game": "pong"})
    assert report.to_dict() == {
        "environment": {"cpu": "test"}, "config": {"game": "pong"},
        "envs": None, "kernels": None, "vector": None}
    assert report.sections == REGISTRY


def test_an_unwritable_report_path_is_refused_before_any_measurement(tmp_path, capsys,
                                                                     monkeypatch):
    from fastatari import bench
    from fastatari.cli import main

    monkeypatch.setattr(bench, "run_benchmark", None)  # nothing may be measured
    (tmp_path / "afile").write_text("")
    for argv in (["--json", str(tmp_path)], ["--json", str(tmp_path / "afile" / "r.json")],
                 ["--section", "vector", "--plot", str(tmp_path)]):
        assert main(["bench", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("fastatari bench: error: cannot write the report")
