"""Other processes' load meanwhile: the warning above the threshold, the load line."""
from __future__ import annotations

import math

from benchmarks.load import OTHER_LOAD_WARNING, LoadWatch, load_line, not_idle_warning


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
