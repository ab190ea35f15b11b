"""EpisodeRecorder: reports checked against the episode infos the test collects itself, to CSV
and to TensorBoard (read back with tensorboard's EventAccumulator), and the missing-library
error."""
from __future__ import annotations

import builtins
import csv

import numpy as np
import pytest

from fastatari import make_vec, scores
from fastatari.tools.episodes import FIELDS, EpisodeRecorder

# Space Invaders pays quickly, so returns differ; 400 frames end a game in about 100 steps.
GAME = dict(game="space_invaders", repeat_action_probability=0.0,
            max_num_frames_per_episode=400, clip_rewards=True)
LOG_EVERY = 50
LOGGED = FIELDS + ("mean_hns_100",)  # one game with a reference score: its HNS too


def play(recorder, steps=160):
    """Random play; returns the reports the recorder must have written, from the episode
    infos seen here: [(step, {field: value})]."""
    rng = np.random.default_rng(0)
    n = recorder.num_envs
    returns, lengths, latest = [], [], {}
    global_step, reports = 0, []
    recorder.reset(seed=0)
    for _ in range(steps):
        _, _, _, _, info = recorder.step(rng.integers(recorder.single_action_space.n, size=n))
        if "game" in info:
            for i in np.flatnonzero(info["_game"]):
                returns.append(float(info["game"]["r"][i]))
                lengths.append(int(info["game"]["l"][i]))
                latest[i] = returns[-1]
        global_step += n
        if global_step % LOG_EVERY < n and returns:  # crossed a multiple of LOG_EVERY
            reports.append((global_step, {
                "last_return": returns[-1], "mean_return_100": np.mean(returns[-100:]),
                "min_return": min(latest.values()), "max_return": max(latest.values()),
                "mean_length": np.mean(lengths[-100:]), "episodes": len(returns),
                "mean_hns_100": scores.human_normalized(GAME["game"], np.mean(returns[-100:]))}))
    assert len(returns) >= 2
    assert len(set(returns)) >= 2, "returns should differ for a meaningful check"
    return reports


def test_csv_reports_match_episode_infos(tmp_path):
    envs = make_vec(GAME["game"], 2, num_workers=1,
                    **{k: v for k, v in GAME.items() if k != "game"})
    recorder = EpisodeRecorder(envs, tmp_path / "run", backend="csv", log_every=LOG_EVERY)
    try:
        assert recorder.backend == "csv"
        expected = play(recorder)
    finally:
        recorder.close()
    assert envs.closed
    with open(tmp_path / "run" / "episodes.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["step", *LOGGED]
    assert len(rows) - 1 == len(expected) >= 2
    for row, (step, values) in zip(rows[1:], expected, strict=True):
        assert int(row[0]) == step
        for name, text in zip(LOGGED, row[1:], strict=True):
            assert float(text) == pytest.approx(values[name]), name


def test_tensorboard_scalars_read_back(tmp_path):
    pytest.importorskip("tensorboardX")
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    envs = make_vec(GAME["game"], 2, num_workers=1,
                    **{k: v for k, v in GAME.items() if k != "game"})
    recorder = EpisodeRecorder(envs, tmp_path, backend="tensorboard", log_every=LOG_EVERY)
    try:
        assert recorder.backend == "tensorboard"
        expected = play(recorder)
    finally:
        recorder.close()
    events = event_accumulator.EventAccumulator(str(tmp_path))
    events.Reload()
    assert set(events.Tags()["scalars"]) == {f"episodes/{name}" for name in LOGGED}
    for name in LOGGED:
        scalars = events.Scalars(f"episodes/{name}")
        assert [s.step for s in scalars] == [step for step, _ in expected]
        assert [s.value for s in scalars] == pytest.approx(
            [values[name] for _, values in expected], rel=1e-6), name


def test_send_recv_pass_through_and_record_by_env_id(tmp_path):
    envs = make_vec("breakout", 3, num_workers=3, batch_size=1, repeat_action_probability=0.0,
                    max_num_frames_per_episode=80)
    recorder = EpisodeRecorder(envs, tmp_path, backend="csv", log_every=10)
    try:
        recorder.reset(seed=0)
        recorder.send(np.zeros(3, int))
        ended = set()
        for _ in range(150):
            _, _, _, _, info = recorder.recv()
            env_id = info["env_id"]
            if "game" in info:
                ended.add(int(env_id[0]))
                assert recorder.env_returns[env_id[0]] == info["game"]["r"][0]
            recorder.send(np.zeros(1, int), env_id)
        assert recorder.global_step == 150
        assert ended == {0, 1, 2}
        assert recorder.worker_pids == envs.worker_pids  # other attributes pass through
        recorder.recv()
    finally:
        recorder.close()


def test_missing_tensorboard_libraries(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_tensorboard(name, *args, **kwargs):
        if name.split(".")[0] in ("torch", "tensorboardX"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tensorboard)
    envs = make_vec("pong", 1, repeat_action_probability=0.0)
    try:
        with pytest.raises(ImportError, match=r'pip install "fastatari\[tensorboard\]"'):
            EpisodeRecorder(envs, tmp_path, backend="tensorboard")
        recorder = EpisodeRecorder(envs, tmp_path, backend="auto")
        assert recorder.backend == "csv" and (tmp_path / "episodes.csv").exists()
        assert recorder.stats() is None  # no game finished yet
        with pytest.raises(ValueError, match="backend must be"):
            EpisodeRecorder(envs, tmp_path, backend="wandb")
    finally:
        envs.close()


def test_multi_game_envs_get_one_curve_per_game(tmp_path):
    games = ["pong", "breakout", "breakout"]
    envs = make_vec(games, 3, num_workers=1, full_action_space=True,
                    repeat_action_probability=0.0, max_num_frames_per_episode=200)
    recorder = EpisodeRecorder(envs, tmp_path / "run", backend="csv", log_every=50)
    per_game = {"pong": [], "breakout": []}
    try:
        assert recorder.game_names == ("pong", "breakout")
        recorder.reset(seed=0)
        rng = np.random.default_rng(0)
        for _ in range(200):
            *_, info = recorder.step(rng.integers(0, 18, 3))
            if "game" in info:
                for i in np.flatnonzero(info["_game"]):
                    per_game[games[i]].append(float(info["game"]["r"][i]))
        stats = recorder.stats()
    finally:
        recorder.close()
    assert all(per_game.values())
    hns = []
    for name, returns in per_game.items():
        assert stats[f"{name}/mean_return_100"] == pytest.approx(np.mean(returns[-100:]))
        hns.append(scores.human_normalized(name, np.mean(returns[-100:])))
        assert stats[f"{name}/hns_100"] == pytest.approx(hns[-1])
    assert stats["suite/median_hns"] == pytest.approx(np.median(hns))
    assert stats["suite/iqm_hns"] == pytest.approx(np.mean(hns))  # two games: both in the IQM
    with open(tmp_path / "run" / "episodes.csv", newline="") as f:
        header = next(csv.reader(f))
    assert header == ["step", *FIELDS, "pong/mean_return_100", "breakout/mean_return_100",
                      "pong/hns_100", "breakout/hns_100", "suite/median_hns", "suite/iqm_hns"]


@pytest.mark.eval
def test_interquartile_mean_is_rliables_iqm():
    rliable_metrics = pytest.importorskip("rliable.metrics")
    values = np.random.default_rng(1).normal(size=(1, 13))
    assert scores.interquartile_mean(values) == pytest.approx(
        rliable_metrics.aggregate_iqm(values))


def test_csv_log_is_not_written_through_a_symlink_unless_asked(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("precious")
    (tmp_path / "episodes.csv").symlink_to(target)
    with make_vec("breakout", 1, num_workers=1) as envs:
        with pytest.raises(OSError, match="symbolic link"):
            EpisodeRecorder(envs, tmp_path, backend="csv")
        assert target.read_text() == "precious"
        EpisodeRecorder(envs, tmp_path, backend="csv", follow_symlinks=True)._writer.close()
        assert target.read_text().startswith("step,")
