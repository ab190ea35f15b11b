"""The diagnostics' arithmetic on made-up timings: fits, ratios, bounds, summaries and their
tables. Nothing here emulates or starts a process."""
from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from benchmarks.sections import (
    async_policy,
    envpool_async,
    multigame,
    multigame_startup,
    ray,
    trainer,
    transport,
)
from fastatari.bench.harness import QUICK, BenchConfig, rate

# --- async ---------------------------------------------------------------------------------------


def test_async_speedups_compare_sync_at_the_async_batch_size():
    batch, envs = async_policy.ASYNC_BATCH, async_policy.ASYNC_ENVS
    seconds = {f"sync N={batch}, 2 ms busy-wait policy": [3.0, 3.0, 3.0],
               f"sync N={envs}, 2 ms busy-wait policy": [100.0, 100.0, 100.0],
               f"async N={envs} batch {batch}, 2 ms busy-wait policy": [1.0, 2.0, 1.5],
               f"sync N={batch}, 2 ms sleep policy": [1.0, 1.0, 1.0]}  # no async: no entry
    assert async_policy.async_speedups(seconds) == {"busy-wait policy": 2.0}


def test_envpool_async_ratios_are_fastataris_rate_over_envpools_per_policy():
    no, sleep = envpool_async.POLICIES
    seconds = {envpool_async.name_of("fastatari", no): [1.0, 1.0, 1.0],
               envpool_async.name_of("envpool", no): [2.0, 3.0, 1.0],
               envpool_async.name_of("fastatari", sleep): [1.0]}  # no EnvPool: none
    assert envpool_async.ratios(seconds) == {no: 2.0}
    assert envpool_async.ENVS == 3 * envpool_async.BATCH
    assert f"N={envpool_async.ENVS} batch {envpool_async.BATCH}" in envpool_async.name_of(
        "envpool", sleep)


def test_envpool_async_table_says_skipped_for_rows_not_measured():
    no, sleep = envpool_async.POLICIES
    ours = envpool_async.SYSTEMS["fastatari"]
    report = envpool_async.EnvPoolAsyncReport(
        rates=[rate([1 / 5000.0], None, envpool_async.name_of("fastatari", no), "n"),
               rate([1 / 3000.0], None, envpool_async.name_of("fastatari", sleep), "n")],
        skipped={"envpool": "ModuleNotFoundError: envpool"}, load={"other_cores": 0.0})
    lines = envpool_async.markdown_envpool_async(report, {}).split("\n\n")[2].splitlines()
    assert lines[2] == f"| {ours} | {no} | 5,000 | 20,000 | n |"
    assert lines[3] == f"| EnvPool | {no} | skipped | — | ModuleNotFoundError: envpool |"
    assert lines[5] == f"| EnvPool | {sleep} | skipped | — | ModuleNotFoundError: envpool |"
    assert len(lines) == 6  # no ratio without EnvPool
    report.ratios = {no: 1.25}
    assert (f"{ours} / EnvPool, async, per round, median: {no}: 1.25×"
            in envpool_async.markdown_envpool_async(report, {}))


# --- trainer -------------------------------------------------------------------------------------


def trainer_result(w: int, n: int, us: float, copy: bool = False,
                   emulate: bool = False) -> trainer.TrainerResult:
    return trainer.TrainerResult(w, n, copy, emulate, 64, us, 1.0, 2 * us, [us])


def test_fit_recovers_known_fixed_per_worker_and_per_env_costs():
    points = trainer.transport_points()
    results = [trainer_result(w, n, 20.0 + 1.5 * w + 0.03 * n) for n, w in points]
    fit = trainer.fit_costs(results, "synthetic", copy=False)
    assert fit is not None and fit.rows == len(points)
    assert (fit.fixed_us, fit.per_worker_us, fit.per_env_us) == pytest.approx((20.0, 1.5, 0.03))
    assert fit.max_residual_us == pytest.approx(0.0, abs=1e-9)
    assert fit.predict(10, 100) == pytest.approx(38.0)
    # one row off the plane by 5 µs: least squares spreads it, the largest residual shows it
    results[0] = trainer_result(results[0].num_workers, results[0].num_envs,
                                results[0].cpu_us + 5.0)
    noisy = trainer.fit_costs(results, "synthetic", copy=False)
    assert 0.0 < noisy.max_residual_us <= 5.0


def test_fit_needs_three_rows_with_workers_and_envs_not_in_line():
    assert trainer.fit_costs([trainer_result(1, 2, 10.0), trainer_result(2, 4, 12.0)],
                             "two", False) is None
    in_line = [trainer_result(w, 2 * w, 10.0 + w) for w in (1, 2, 4, 8)]  # N = 2·W always
    assert trainer.fit_costs(in_line, "N = 2W", False) is None


def test_the_grid_has_the_asked_rows_and_quick_cuts_it():
    rows = trainer.grid(quick=False)
    transport_rows = {(r.num_envs, r.num_workers, r.copy) for r in rows if not r.emulate}
    for w in trainer.TRANSPORT_WORKERS:
        for n in (2 * w, trainer.SHARED_ENVS):
            assert {(n, w, False), (n, w, True)} <= transport_rows
    for n in trainer.SWEEP_ENVS:
        assert {(n, 2, False), (n, 2, True)} <= transport_rows
    assert [(r.num_envs, r.num_workers) for r in rows if r.emulate] == list(
        trainer.EMULATION_POINTS)
    assert not any(r.copy for r in rows if r.emulate)
    assert len(set(rows)) == len(rows)
    quick = trainer.grid(quick=True)
    assert len(quick) <= 10 and sum(r.num_workers for r in quick) <= 32
    assert len(trainer.groups(quick)) == 1
    # the quick rows still determine the fit
    assert trainer.fit_costs([trainer_result(r.num_workers, r.num_envs, 1.0) for r in quick
                              if not r.emulate and not r.copy], "quick", False) is not None
    assert trainer.trainer_units(BenchConfig(**QUICK)) == len(quick) * (QUICK["rounds"] + 1)


def test_groups_cap_live_workers_and_keep_a_points_rows_together():
    rows = trainer.grid(quick=False)
    planned = trainer.groups(rows, max_workers=trainer.MAX_LIVE_WORKERS)
    assert [row for group in planned for row in group] == rows
    for group in planned:
        assert sum(r.num_workers for r in group) <= trainer.MAX_LIVE_WORKERS
    where = {row: index for index, group in enumerate(planned) for row in group}
    for row in rows:
        twin = trainer.Row(row.num_workers, row.num_envs, not row.copy, row.emulate)
        assert where.get(twin, where[row]) == where[row]
    # a point larger than the cap gets a group of its own
    big = [trainer.Row(64, 64, False, False), trainer.Row(64, 64, True, False)]
    assert trainer.groups([trainer.Row(1, 2, False, False), *big], max_workers=100) == [
        [trainer.Row(1, 2, False, False)], big]


def test_trainer_summary_takes_medians_fits_each_copy_and_renders(monkeypatch):
    monkeypatch.setattr(trainer, "usable_cores", lambda: 2)
    config = BenchConfig(rounds=3, vector_steps=512)
    samples = {}
    for n, w in trainer.transport_points():
        for copy in (False, True):
            us = 30.0 + 2.0 * w + (3.0 if copy else 0.01) * n
            samples[trainer.Row(w, n, copy, False)] = [
                trainer.Sample(us + d, 1.0, 4 * us) for d in (-1.0, 0.0, 1.0)]
    samples[trainer.Row(2, 64, False, True)] = [trainer.Sample(100.0, 1.0, 9000.0)] * 3
    report = trainer.summarise(config, samples)
    assert len(report.results) == len(samples) and report.usable_cores == 2
    by_copy = {fit.copy: fit for fit in report.fits}
    assert by_copy[False].per_env_us == pytest.approx(0.01)
    assert by_copy[True].per_env_us == pytest.approx(3.0)
    assert by_copy[True].per_worker_us == pytest.approx(2.0)
    emulation = report.results[-1]
    assert (emulation.emulate, emulation.cpu_us, emulation.steps_per_round) == (True, 100.0, 8)
    assert report.results[0].steps_per_round == 64 and report.results[0].rounds_cpu_us == [
        pytest.approx(report.results[0].cpu_us + d) for d in (-1.0, 0.0, 1.0)]

    report.load, report.load_group, report.worker_restarts = {"other_cores": 0.5}, "g", 0
    markdown = trainer.markdown_trainer(report, {"rounds": 3})
    assert markdown.count("\n| ") == 1 + len(samples)  # header and rows
    assert "| emulation | False | 2 | 64 | 8 | 100.0 | 1.00 | 9,000 | 0.01 | — |" in markdown
    assert ("- transport only, copy=False (16 rows): trainer CPU µs/step = 30.00 + 2.000·W "
            "+ 0.0100·N") in markdown
    assert "2 usable cores" in markdown
    assert "**Warning: the machine was not idle" in markdown
    assert markdown.endswith("worker restarts: 0.")
    assert trainer.signed(-0.5, 2) == "− 0.50"


# --- transport -----------------------------------------------------------------------------------


def test_fit_line_recovers_a_line_and_models_the_ratio():
    medians = {w: 50.0 + 10.0 * w for w in (1, 2, 4, 8)}
    fit = transport.fit_line("all", medians, big_e=400.0)
    assert fit.intercept_us == pytest.approx(50.0) and fit.slope_us == pytest.approx(10.0)
    assert fit.workers == [1, 2, 4, 8]
    for cores, ratio in fit.predicted_ratio.items():
        assert ratio == pytest.approx(400.0 / (400.0 + 50.0 + 10.0 * cores))
    falling = transport.fit_line("all", {1: 100.0, 2: 50.0}, big_e=400.0)  # T < 0 further on
    assert all(ratio == 1.0 for ratio in falling.predicted_ratio.values())


@pytest.mark.parametrize("cores, fits", [(4, 2), (2, 1), (64, 1)])
def test_transport_report_fits_again_where_every_worker_has_a_core(monkeypatch, cores, fits):
    monkeypatch.setattr(transport, "usable_cores", lambda: cores)
    seconds = {transport.CEILING_ONE_CORE: [100e-6, 300e-6, 200e-6]}  # e = 200 µs
    for w in transport.TRANSPORT_WORKERS:
        seconds[transport.name_of(w)] = [(20.0 + 5.0 * w) * 1e-6] * 3
    report = transport.transport_report(BenchConfig(vector_steps=400), seconds,
                                        {"other_cores": 0.0}, restarts=1)
    assert report.emulation_us == pytest.approx(200.0) and report.steps_per_round == 100
    big_e = transport.ENVS_PER_WORKER * 200.0
    for result in report.results:
        t = 20.0 + 5.0 * result.num_workers
        assert result.num_envs == transport.ENVS_PER_WORKER * result.num_workers
        assert result.us_per_step == pytest.approx(t)
        assert result.expected_ratio == pytest.approx(big_e / (big_e + t))
    assert len(report.fits) == fits
    if fits == 2:
        assert report.fits[1].workers == [w for w in transport.TRANSPORT_WORKERS if w < cores]
    markdown = transport.markdown_transport(report, {})
    assert markdown.count("\n| ") == 1 + len(transport.TRANSPORT_WORKERS)  # header and rows
    assert ("includes the workers and the trainer sharing them" in markdown) == (
        cores <= max(transport.TRANSPORT_WORKERS))
    assert markdown.endswith("worker restarts: 1.")


# --- multigame -----------------------------------------------------------------------------------


def test_spearman_rank_correlation():
    a = np.array([1.0, 5.0, 2.0, 9.0])
    assert multigame.spearman(a, a ** 2) == pytest.approx(1.0)
    assert multigame.spearman(a, -a) == pytest.approx(-1.0)


def test_assignment_bound_is_mean_load_over_the_largest():
    us = {"pong": 1.0, "breakout": 3.0}
    assert multigame.assignment_bound(("pong", "breakout"), 2, True, us) == pytest.approx(2 / 3)
    assert multigame.assignment_bound(("pong", "breakout"), 1, False, us) == 1.0
    # two envs of each game on two workers: balanced puts a game on each worker, contiguous too
    games = ("pong", "pong", "breakout", "breakout")
    assert multigame.assignment_bound(games, 2, False, us) == pytest.approx(4 / 6)


def test_multigame_summary_against_the_mix_ceiling():
    games = ("pong", "breakout")
    assignments = {"both": games, "pong twice": ("pong", "pong")}
    workers = {"both": 2, "pong twice": 1}
    per_round = [np.array([1e-3, 3e-3]), np.array([2e-3, 2e-3]), np.array([1e-3, 5e-3])]
    seconds = {}
    for pool in assignments:
        seconds[multigame.name_of(pool, True)] = [1e-3, 1e-3, 1e-3]
        seconds[multigame.name_of(pool, False)] = [2e-3, 1e-3, 4e-3]
    report = multigame.MultigameReport(2, 2, len(games), {}, 24)
    multigame.summarise(report, games, assignments, workers, per_round, seconds)

    assert [c.us_per_step for c in report.costs] == pytest.approx([1000.0, 3000.0])  # medians
    assert report.cost_spread_us == pytest.approx(
        {"min": 1000.0, "median": 2000.0, "max": 3000.0, "mean": 2000.0})
    by = {(r.pool, r.system): r for r in report.results}
    # "both": each game half the envs, 2 cores: per-round ceiling (s_pong + s_breakout) / 2 / 2
    ceiling = [(1e-3 + 3e-3) / 4, (2e-3 + 2e-3) / 4, (1e-3 + 5e-3) / 4]
    mix = by[("both", multigame.CEILING)]
    assert mix.steps_per_s == pytest.approx(1.0 / statistics.median(ceiling))
    assert mix.ratio_to_ceiling == 1.0 and mix.balance is None
    balanced = by[("both", multigame.name_of("both", True))]
    assert balanced.ratio_to_ceiling == pytest.approx(1.0)  # 1 ms per step against 1, 1, 1.5
    assert balanced.assignment_bound == pytest.approx(2 / 3)  # one game per worker
    # "pong twice": all pong, 1 core
    pong = by[("pong twice", multigame.CEILING)]
    assert pong.rounds_steps_per_s == pytest.approx([1000.0, 500.0, 1000.0])
    assert report.balanced_over_contiguous == pytest.approx({"both": 2.0, "pong twice": 2.0})
    assert report.modelled_bound[multigame.name_of("pong twice", False)] == {1: 1.0}
    assert not math.isnan(report.cost_rank_correlation)  # both games are in the cost table


def test_multigame_startup_medians_and_table():
    report = multigame_startup.summarise(multigame_startup.StartupReport(57, 2, [
        multigame_startup.StartupSample(True, [1.0, 3.0], [0.5, 0.5]),
        multigame_startup.StartupSample(False, [2.0, 2.0], [1.0, 2.0])]))
    assert report.median_s == {
        "balanced": {"construct_s": 2.0, "reset_s": 0.5, "total_s": 2.5},
        "contiguous": {"construct_s": 2.0, "reset_s": 1.5, "total_s": 3.5}}
    markdown = multigame_startup.markdown_startup(report, {"seed": 0})
    assert "| balanced | 2.00 | 0.50 | 2.50 |" in markdown and "median of 2" in markdown


# --- ray -----------------------------------------------------------------------------------------


def test_ray_summary_ratios_per_call_cost_and_model():
    seconds = {}
    for mode in ray.MODES:
        seconds[f"{ray.LOCAL}, {mode}"] = [1e-4, 1e-4, 1e-4]
        seconds[f"{ray.ONE_ACTOR}, {mode}"] = [2e-4, 3e-4, 4e-4]
        seconds[f"{ray.TWO_NODES}, {mode}"] = [1e-4, 2e-4, 1e-4]
    report = ray.RayReport(ray.RAY_ENVS, ray.ROLLOUT_STEPS, usable_cores=2)
    ray.summarise(report, seconds, local_workers=4)
    by = {(r.system, r.mode): r for r in report.results}
    assert len(by) == len(ray.SYSTEMS) * len(ray.MODES)
    assert by[(ray.ONE_ACTOR, "sync")].ratio_to_local == pytest.approx(1 / 3)
    assert by[(ray.ONE_ACTOR, "sync")].steps_per_s == pytest.approx(1 / 3e-4)
    assert by[(ray.TWO_NODES, "async")].ratio_to_local == pytest.approx(1.0)
    # c: the per-round difference in seconds per agent step × the agent steps of one call
    assert report.call_us["sync"] == pytest.approx(2e-4 * ray.RAY_ENVS * 1e6)
    assert report.call_us["rollout"] == pytest.approx(2e-4 * ray.RAY_ENVS * ray.ROLLOUT_STEPS
                                                      * 1e6)
    assert report.env_step_us == pytest.approx(1e-4 * 2 * 1e6)  # min(workers, cores) = 2
    factor = (1 - ray.MAX_OVERHEAD) / ray.MAX_OVERHEAD
    for cores, envs in report.envs_per_node["sync"].items():
        assert envs == pytest.approx(factor * report.call_us["sync"] * cores
                                     / report.env_step_us)
    # a rollout call covers T steps and, here, costs T times a step call: the same envs
    assert report.envs_per_node["rollout"] == pytest.approx(report.envs_per_node["sync"])
    assert "| ray, 1 actor | sync | 3,333 | 0.33 |" in ray.markdown_ray(report, {})
