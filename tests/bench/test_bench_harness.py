"""What every section shares: round-robin measurement, per-round ratios, rates, tables."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fastatari.bench.harness import (
    FRAME_SKIP,
    RATE_HEADER,
    Contender,
    Rate,
    draw_actions,
    markdown_table,
    measure,
    median_ratio,
    rate,
    rate_rows,
    rates,
)
from fastatari.bench.sections.envs import CEILING, EnvsReport, markdown_envs


def test_measure_goes_round_robin_and_drops_the_warm_up():
    calls: list[tuple[str, int]] = []
    contenders = [Contender(name, units, lambda r, name=name: calls.append((name, r)))
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
    r = rate([0.001, 0.004, 0.002], ceiling=[0.0005, 0.001, 0.002], system="s", note="n",
             num_envs=8)  # ratios 0.5, 0.25, 1
    assert (r.system, r.note, r.num_envs) == ("s", "n", 8)
    assert r.steps_per_s == pytest.approx(500.0)
    assert r.frames_per_s == pytest.approx(500.0 * FRAME_SKIP)
    assert r.ratio_to_ceiling == pytest.approx(0.5)
    assert r.rounds_steps_per_s == pytest.approx([1000.0, 250.0, 500.0])
    assert math.isnan(rate([0.001], ceiling=None).ratio_to_ceiling)


def test_draw_actions_a_row_per_round_seeded():
    rows = draw_actions(3, 4, 2, 5)  # seed, actions, rounds, steps
    assert rows.shape == (3, 5) and rows.dtype == np.int32
    assert rows.min() >= 0 and rows.max() < 4
    np.testing.assert_array_equal(rows, draw_actions(3, 4, 2, 5))
    assert not np.array_equal(rows, draw_actions(4, 4, 2, 5))
    assert draw_actions(5, 6, 2, 3, 4).shape == (3, 3, 4)  # a batch per step: a vector env


def test_markdown_table():
    assert markdown_table(["a", "b"], [["1", "2"], ["x", "y"]]) == (
        "| a | b |\n|---|---|\n| 1 | 2 |\n| x | y |")
    assert markdown_table(["only"], []) == "| only |\n|---|"


def test_rate_rows_format():
    result = Rate("sys", 12345.6, 49382.4, 0.876, "a note", [])
    assert rate_rows([result]) == [["sys", "12,346", "49,382", "0.88", "a note"]]


def test_env_rates_against_the_same_rounds_ceiling():
    contenders = [Contender(name, 1, lambda r: None, note=f"{name} note")
                  for name in (CEILING, "mine")]
    seconds = {CEILING: [1.0, 2.0, 4.0], "mine": [2.0, 2.0, 2.0]}
    report = EnvsReport(rates(contenders, seconds, CEILING), {"gone": "ImportError: no"})
    ceiling, mine = report.rates
    assert ceiling.ratio_to_ceiling == 1.0
    assert mine.steps_per_s == 0.5 and mine.ratio_to_ceiling == 1.0  # ratios 0.5, 1, 2
    assert mine.rounds_steps_per_s == [0.5, 0.5, 0.5]
    assert markdown_envs(report, {"steps": 10}).splitlines()[2:] == [
        "| " + " | ".join(RATE_HEADER) + " |", "|---|---|---|---|---|",
        f"| {CEILING} | 0 | 2 | 1.00 | {CEILING} note |",
        "| mine | 0 | 2 | 1.00 | mine note |",
        "| gone | — | — | — | skipped: ImportError: no |"]
    assert EnvsReport().rates == [] and EnvsReport().skipped == {}
