"""What every section shares: round-robin measurement, per-round ratios, rates, tables, and the
load line."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fastatari.bench.harness import (
    FRAME_SKIP,
    RATE_HEADER,
    BenchConfig,
    Contender,
    draw_actions,
    draw_vector_actions,
    markdown_table,
    measure,
    median_ratio,
    rate,
    rate_rows,
)
from fastatari.bench.load import OTHER_LOAD_WARNING, LoadWatch, load_line, not_idle_warning
from fastatari.bench.sections.envs import CEILING, EnvResult, EnvsReport, env_results, env_table


def test_measure_goes_round_robin_and_drops_the_warm_up():
    calls: list[tuple[str, int]] = []
    contenders = [Contender("s", name, units, lambda r, name=name: calls.append((name, r)))
                  for name, units in (("a", 10), ("b", 1))]

    class Bar:
        updates = 0

        def update(self, n: int = 1) -> None:
            Bar.updates += n

    seconds = measure(contenders, rounds=3, progress=Bar())
    assert calls == [(name, r) for r in range(4) for name in ("a", "b")]
    assert {name: len(samples) for name, samples in seconds.items()} == {"a": 3, "b": 3}
    assert Bar.updates == 8


def test_median_ratio_is_per_round_not_a_ratio_of_medians():
    numerators, denominators = [1.0, 10.0, 100.0], [1.0, 20.0, 50.0]  # ratios 1, 0.5, 2
    assert median_ratio(numerators, denominators) == 1.0
    assert np.median(numerators) / np.median(denominators) == 0.5


def test_rate_from_seconds_per_step():
    r = rate([0.001, 0.004, 0.002], ceiling=[0.0005, 0.001, 0.002])  # ratios 0.5, 0.25, 1
    assert r.steps_per_s == pytest.approx(500.0)
    assert r.frames_per_s == pytest.approx(500.0 * FRAME_SKIP)
    assert r.ratio_to_ceiling == pytest.approx(0.5)
    assert r.rounds_steps_per_s == pytest.approx([1000.0, 250.0, 500.0])
    assert math.isnan(rate([0.001], ceiling=None).ratio_to_ceiling)


def test_draw_actions_rows_per_round_seeded():
    rows = draw_actions(seed=3, num_actions=4, rounds=2, steps=5)
    assert np.array(rows).shape == (3, 5)
    assert all(0 <= action < 4 for row in rows for action in row)
    assert rows == draw_actions(seed=3, num_actions=4, rounds=2, steps=5)
    assert rows != draw_actions(seed=4, num_actions=4, rounds=2, steps=5)


def test_draw_vector_actions_a_batch_per_step_per_round():
    config = BenchConfig(rounds=2, seed=5)
    rows = draw_vector_actions(config, num_actions=6, shape=(3, 4))
    assert rows.shape == (3, 3, 4) and rows.dtype == np.int32
    assert rows.min() >= 0 and rows.max() < 6
    np.testing.assert_array_equal(rows, draw_vector_actions(config, 6, (3, 4)))


def test_markdown_table():
    assert markdown_table(["a", "b"], [["1", "2"], ["x", "y"]]) == (
        "| a | b |\n|---|---|\n| 1 | 2 |\n| x | y |")
    assert markdown_table(["only"], []) == "| only |\n|---|"


def test_rate_rows_format():
    result = EnvResult("sys", 12345.6, 49382.4, 0.876, "a note", [])
    assert rate_rows([result]) == [["sys", "12,346", "49,382", "0.88", "a note"]]


def test_env_results_ratios_against_the_same_rounds_ceiling():
    contenders = [Contender("envs", name, 1, lambda r: None, note=f"{name} note")
                  for name in (CEILING, "mine")]
    seconds = {CEILING: [1.0, 2.0, 4.0], "mine": [2.0, 2.0, 2.0]}
    report = env_results(contenders, seconds, {"gone": "ImportError: no"})
    ceiling, mine = report.envs
    assert ceiling.ratio_to_ceiling == 1.0
    assert mine.steps_per_s == 0.5 and mine.ratio_to_ceiling == 1.0  # ratios 0.5, 1, 2
    assert mine.rounds_steps_per_s == [0.5, 0.5, 0.5]
    assert env_table(report).splitlines() == [
        "| " + " | ".join(RATE_HEADER) + " |", "|---|---|---|---|---|",
        f"| {CEILING} | 0 | 2 | 1.00 | {CEILING} note |",
        "| mine | 0 | 2 | 1.00 | mine note |",
        "| gone | — | — | — | skipped: ImportError: no |"]
    assert EnvsReport().envs == [] and EnvsReport().skipped == {}


def test_not_idle_warning_above_the_threshold_only():
    assert not_idle_warning(OTHER_LOAD_WARNING) == ""
    assert not_idle_warning(float("nan")) == ""  # not measured
    assert not_idle_warning(OTHER_LOAD_WARNING + 0.01, "the rows") == (
        "**Warning: the machine was not idle; the rows are not to be trusted.** ")


def test_load_line():
    assert load_line({"other_cores": 0.05}, "the section", "worker restarts: 2") == (
        "Other load: processes outside the harness took 0.05 cores on average during the "
        "section; worker restarts: 2.")
    busy = load_line({"other_cores": 0.5}, "the rounds", "actor restarts: 0")
    assert busy.startswith("**Warning: the machine was not idle; the figures are not to be "
                           "trusted.** Other load: processes outside the harness took 0.50 ")
    assert "took nan cores" in load_line({}, "the section", "worker restarts: 0")


def test_load_watch_without_a_start_sample_reports_nan():
    watch = LoadWatch()
    watch.start = None  # /proc was not readable
    load = watch.stop()
    assert set(load) == {"other_cores", "steal_cores"}
    assert all(math.isnan(value) for value in load.values())
