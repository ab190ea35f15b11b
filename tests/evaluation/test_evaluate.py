"""``fastatari evaluate`` and :func:`fastatari.evaluate`: the random policy on Atari-5
end to end (short episodes), the same numbers for the same seed, every game and file written,
and bad input refused before any env starts."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from fastatari import scores
from fastatari.cli import main
from fastatari.evaluation.evaluate import evaluate
from fastatari.suites import ATARI_5

SHORT = dict(max_num_frames_per_episode=1500)  # episodes of at most 375 steps


def test_random_policy_on_atari_5_end_to_end(tmp_path, capsys):
    paths = {kind: tmp_path / f"results.{kind}" for kind in ("json", "csv", "png")}
    code = main(["evaluate", "--suite", "atari5", "--episodes", "2", "--max-frames", "1500",
                 "--json", str(paths["json"]), "--csv", str(paths["csv"]),
                 "--plot", str(paths["png"])])
    assert code == 0
    printed = capsys.readouterr().out
    assert all(game in printed for game in ATARI_5)
    data = json.loads(paths["json"].read_text())
    assert data["games"] == list(ATARI_5) and data["protocol"] == "machado2018"
    assert data["options"]["repeat_action_probability"] == 0.25  # the protocol's
    assert data["options"]["max_num_frames_per_episode"] == 1500  # the override
    for result in data["results"]:
        assert np.array(result["returns"]).shape == (1, 2)
        assert all(length <= 375 for length in np.ravel(result["lengths"]))
        expected = scores.human_normalized(result["game"], result["mean"])
        assert result["hns"] == pytest.approx(expected)
        assert result["low"] <= result["mean"] <= result["high"]
    rows = list(csv.reader(paths["csv"].open()))
    assert [row[0] for row in rows[1:6]] == list(ATARI_5)
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_same_seed_gives_the_same_numbers_another_seed_others():
    runs = [evaluate(ATARI_5[:2], episodes=2, seed=s, progress=False, **SHORT).to_json()
            for s in (3, 3, 4)]
    assert runs[0] == runs[1]
    assert runs[0]["results"] != runs[2]["results"]


def test_a_policy_is_called_on_the_observations_of_the_unfinished_episodes():
    batches = []

    def fire(obs):
        batches.append(obs.shape)
        return np.ones(len(obs), np.int64)

    result = evaluate("pong", episodes=3, policy=fire, progress=False, **SHORT)
    assert batches[0] == (2, 4, 84, 84)  # the check before the run
    assert batches[1] == (3, 4, 84, 84) and all(b[0] <= 3 for b in batches[1:])
    assert np.array(result.results[0].returns).shape == (1, 3)


def wrong_shape(obs):
    return np.zeros((len(obs), 2), np.int64)


def invalid_action(obs):
    return np.full(len(obs), 99)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(protocol="nature"), ValueError, "unknown protocol"),
    (dict(games=["tetris"]), ValueError, "no reference score for game 'tetris'"),
    (dict(policy=wrong_shape), ValueError, "shape"),
    (dict(policy=invalid_action), ValueError, "99"),
    (dict(policy="no_such_module:act"), ImportError, "no_such_module"),
    (dict(episodes=0), ValueError, "episodes"),
    (dict(table="nope"), ValueError, "table"),
])
def test_bad_input_is_refused_before_any_env_starts(kwargs, error, match, monkeypatch):
    import fastatari.vector

    def no_env(*args, **kw):
        raise AssertionError("an env was started")

    monkeypatch.setattr(fastatari.vector, "make_vec", no_env)
    monkeypatch.setattr(fastatari, "make_vec", no_env, raising=False)
    games = kwargs.pop("games", "atari5")
    with pytest.raises(error, match=match):
        evaluate(games, progress=False, **kwargs)


@pytest.mark.eval
def test_aggregates_are_rliables_on_the_episodes():
    pytest.importorskip("rliable")
    result = evaluate(ATARI_5, episodes=2, progress=False, **SHORT)
    assert set(result.aggregates) == set(scores.METRICS)
    matrix = np.stack([scores.human_normalized(r.game, np.ravel(r.returns))
                       for r in result.results], axis=1)
    expected = scores.aggregate(matrix, seed=0)
    for name, value in result.aggregates.items():
        assert value == pytest.approx(expected[name]._asdict())


@pytest.mark.rl
def test_a_torchscript_file_is_a_policy(tmp_path):
    torch = pytest.importorskip("torch")

    class Fire(torch.nn.Module):
        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            return torch.ones(obs.shape[0], dtype=torch.int64)

    path = tmp_path / "policy.pt"
    torch.jit.script(Fire()).save(str(path))
    scripted = evaluate("pong", episodes=2, policy=str(path), progress=False, **SHORT)
    by_hand = evaluate("pong", episodes=2, policy=lambda obs: np.ones(len(obs), np.int64),
                       progress=False, **SHORT)
    assert scripted.results[0].returns == by_hand.results[0].returns
