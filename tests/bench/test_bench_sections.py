"""The sections' arithmetic on made-up timings: speedups, ratios, summaries and their tables.
Nothing here emulates or starts a process."""
from __future__ import annotations

import pytest

from fastatari.bench.harness import FRAME_SKIP, Contender, Rate
from fastatari.bench.sections import kernels, vector

# --- kernels -------------------------------------------------------------------------------------


def test_kernel_speedups_against_the_same_comparisons_baseline():
    def contender(comparison: str, simd: str | None) -> Contender:
        return Contender(f"{comparison} {simd}", 1, lambda r: None, comparison=comparison,
                         implementation="impl", simd=simd)

    contenders = [contender("a", None), contender("a", "avx2"), contender("b", None),
                  contender("b", "avx2")]
    seconds = {"a None": [4e-6, 8e-6, 6e-6], "a avx2": [1e-6, 2e-6, 3e-6],
               "b None": [1e-6, 1e-6, 1e-6], "b avx2": [2e-6, 2e-6, 2e-6]}
    report = kernels.kernel_results(contenders, seconds)
    assert [r.speedup for r in report.results] == pytest.approx([1.0, 4.0, 1.0, 0.5])
    assert [r.us_per_step for r in report.results] == pytest.approx([6.0, 2.0, 1.0, 2.0])
    table = kernels.markdown_kernels(report, {"kernel_calls": 10}).split("\n\n")[1].splitlines()
    assert table[2] == "| a | impl | OpenCV/numpy | 6.0 | 1.0× |"
    assert table[3] == "| a | impl | avx2 | 2.0 | 4.0× |"


# --- vector --------------------------------------------------------------------------------------


def vector_rate(system: str, num_envs: int, steps_per_s: float, ratio: float = 0.5) -> Rate:
    return Rate(system, steps_per_s, steps_per_s * FRAME_SKIP, ratio, "", [], num_envs)


def test_scaling_table_columns_only_for_systems_measured():
    report = vector.VectorReport(2, None, rates=[
        vector_rate(vector.CEILING, 1, 1000.0, 1.0),
        vector_rate(vector.FASTATARI, 1, 800.0, 0.8),
        vector_rate(vector.CEILING, 8, 2000.0, 1.0),
        vector_rate(vector.FASTATARI, 8, 1500.0, 0.75),
        vector_rate(vector.NAMES["gymnasium"], 8, 1234.4, 0.6)])
    assert vector.scaling_table(report).splitlines() == [
        f"| num_envs | {vector.CEILING} | {vector.FASTATARI} | gymnasium AsyncVectorEnv | "
        f"{vector.FASTATARI} ÷ ceiling |", "|---|---|---|---|---|",
        "| 1 | 1,000 | 800 | — | 0.80 |", "| 8 | 2,000 | 1,500 | 1,234 | 0.75 |"]


def test_scaling_table_sets_fastatari_against_the_sync_barrier_bound_where_measured():
    report = vector.VectorReport(2, None, rates=[
        vector_rate(vector.CEILING, 8, 2000.0, 1.0),
        vector_rate(vector.BOUND, 8, 1800.0, 0.9),
        vector_rate(vector.FASTATARI, 8, 1620.0, 0.81),
        vector_rate(vector.CEILING, 16, 2000.0, 1.0),
        vector_rate(vector.FASTATARI, 16, 1600.0, 0.8)])
    assert vector.scaling_table(report).splitlines() == [
        f"| num_envs | {vector.CEILING} | {vector.BOUND} | {vector.FASTATARI} | "
        f"{vector.FASTATARI} ÷ ceiling | {vector.FASTATARI} ÷ bound |",
        "|---|---|---|---|---|---|",
        "| 8 | 2,000 | 1,800 | 1,620 | 0.81 | 0.90 |", "| 16 | 2,000 | — | 1,600 | 0.80 | — |"]


def test_startup_summary_takes_medians_and_the_table_adds_children_to_the_main_growth():
    def run(startup: float, delta: float, children: float) -> dict:
        return {"system": "x", "num_envs": 16, "import_s": 0.5, "startup_s": startup,
                "processes": 3, "main_rss_delta_mb": delta, "children_rss_mb": children,
                "pss_delta_mb": 42.0}

    samples = {vector.FASTATARI: [run(1.0, 10.0, 200.0), run(3.0, 30.0, 100.0),
                                  run(2.0, 20.0, 300.0)], "EnvPool": []}
    report = vector.VectorReport(2, None, startup=vector.startup_summary(samples))
    (system, result), = report.startup.items()
    assert system == vector.FASTATARI
    assert (result["startup_s"], result["main_rss_delta_mb"], result["children_rss_mb"]) == (
        2.0, 20.0, 200.0)
    assert result["rounds_startup_s"] == [1.0, 3.0, 2.0]
    assert vector.startup_table(report).splitlines()[2] == (
        f"| {vector.FASTATARI} | 2.00 | 0.50 | 3 | 20 | 200 | 220 | 42 |")


def test_the_headline_has_the_group_at_vector_envs_and_fastataris_ratios():
    report = vector.VectorReport(2, "1.2.5", rates=[
        vector_rate(vector.CEILING, vector.VECTOR_ENVS, 2000.0, 1.0),
        vector_rate(vector.FASTATARI, vector.VECTOR_ENVS, 1500.0, 0.75),
        vector_rate(vector.FASTATARI, 1, 800.0, 0.8)],
        ratios={f"{vector.FASTATARI} / EnvPool": 1.25})
    markdown = vector.markdown_vector(report, {"vector_steps": 4096, "startup_repeats": 3})
    headline = markdown.split(f"#### Throughput, N={vector.VECTOR_ENVS}, sync step\n\n")[1]
    assert headline.split("\n\n")[0].count("\n| ") == 2  # the N=8 rows only
    assert f"{vector.FASTATARI} / EnvPool: 1.25× (per round, median)" in markdown
    assert markdown.startswith("### Vector envs\n\nEnvPool 1.2.5; 2 usable cores")
