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
from fastatari.evaluation.suites import ATARI_5

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
    # a set's order follows PYTHONHASHSEED: each game would get other seeds run to run
    (dict(games={"pong", "breakout"}), TypeError, "sequence"),
    (dict(games=["pong", "pong"]), ValueError, "named twice"),
    (dict(games=["pong", "Pong"]), ValueError, "named twice"),
    (dict(games=[]), ValueError, "no game"),
    (dict(games=None), TypeError, "sequence"),
    (dict(games=123), TypeError, "sequence"),
    (dict(protocol=None), TypeError, "protocol must be a str"),
    (dict(protocol="machado2018:bogus"), ValueError, "unknown protocol"),
    (dict(protocol="machado2018:train"), ValueError, "evaluation variant"),
    (dict(policy="json:nothing"), ValueError, "has no attribute 'nothing'"),
    (dict(policy="json:__doc__"), TypeError, "not a callable"),
    (dict(policy=3), TypeError, "policy must be"),
])
def test_bad_input_is_refused_before_any_env_starts(kwargs, error, match, monkeypatch):
    from fastatari.evaluation import evaluate as module

    def no_env(*args, **kw):
        raise AssertionError("an env was started")

    monkeypatch.setattr(module, "AtariVectorEnv", no_env)
    games = kwargs.pop("games", "atari5")
    with pytest.raises(error, match=match):
        evaluate(games, progress=False, **kwargs)


@pytest.mark.rl
def test_a_file_that_is_not_torchscript_is_a_clear_error(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from fastatari.evaluation import evaluate as module

    monkeypatch.setattr(module, "AtariVectorEnv", None)  # no env may start
    text = tmp_path / "policy.txt"
    text.write_text("not a model")
    weights = tmp_path / "weights.pt"
    torch.save(torch.nn.Linear(2, 2).state_dict(), weights)
    for path in (text, weights):
        with pytest.raises(ValueError, match="is not TorchScript"):
            evaluate("pong", policy=str(path), progress=False)


# -- fastatari evaluate: its outputs are checked before the run, and written whole ------------
@pytest.fixture
def no_run(monkeypatch):
    """``evaluate`` replaced by a stand-in that records whether the run started."""
    from fastatari.evaluation import evaluate as module

    runs = []
    monkeypatch.setattr(module, "evaluate", lambda *a, **k: runs.append(1))
    return runs


@pytest.mark.parametrize("flag, path, match", [
    ("--json", "adir", "is a directory"),
    ("--json", "afile/out.json", "'afile' is a file"),
    ("--csv", "afile/sub/out.csv", "'afile' is a file"),
    ("--json", "/dev/full", "not a regular file"),
    ("--plot", "out.xyz", "matplotlib writes"),
    ("--json", "link.json", "symbolic link"),
])
def test_an_unwritable_output_is_refused_before_the_run(flag, path, match, tmp_path,
                                                        monkeypatch, capsys, no_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("")
    (tmp_path / "link.json").symlink_to(tmp_path / "target.json")
    if flag == "--plot":
        pytest.importorskip("matplotlib")
    assert main(["evaluate", "--game", "pong", flag, path]) == 2
    err = capsys.readouterr().err
    assert "fastatari evaluate: error:" in err and match in err and "Traceback" not in err
    assert no_run == []
    assert not (tmp_path / "target.json").exists()


@pytest.mark.parametrize("argv, match", [
    (["--game", "pong", "--game", "Pong"], "named twice"),
    (["--game", "pong", "--policy", "json:nothing"], "has no attribute 'nothing'"),
])
def test_command_line_mistakes_are_one_line_errors(argv, match, capsys, monkeypatch):
    from fastatari.evaluation import evaluate as module

    monkeypatch.setattr(module, "AtariVectorEnv", None)
    assert main(["evaluate", *argv]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err


def one_game_result():
    return evaluate("pong", episodes=1, progress=False, max_num_frames_per_episode=200)


def test_outputs_are_written_whole_into_new_folders_never_through_links(tmp_path):
    result = one_game_result()
    result.write_json(str(tmp_path / "new" / "folder" / "out.json"))
    assert json.loads((tmp_path / "new" / "folder" / "out.json").read_text())["games"] == [
        "pong"]
    # a link planted after the command's check is refused at the write, never followed
    target = tmp_path / "precious.txt"
    target.write_text("keep")
    (tmp_path / "out.csv").symlink_to(target)
    with pytest.raises(OSError, match="symbolic link"):
        result.write_csv(str(tmp_path / "out.csv"))
    assert target.read_text() == "keep"
    # unless asked to follow it
    result.write_csv(str(tmp_path / "out.csv"), follow_symlinks=True)
    assert (tmp_path / "out.csv").is_symlink() and target.read_text().startswith("game,")
    # a failed write leaves the old file and no temporary one
    old = tmp_path / "old.json"
    old.write_text("old")

    def fail(f):
        f.write(b"half")
        raise OSError("disk full")

    from fastatari._files import write_atomically

    with pytest.raises(OSError, match="disk full"):
        write_atomically(str(old), fail)
    assert old.read_text() == "old"
    # a device is refused (a rename would replace it), as check_output refuses it
    with pytest.raises(PermissionError, match="not a regular file"):
        write_atomically("/dev/null", lambda f: f.write(b"x"))
    # a replaced file keeps its permissions
    old.chmod(0o640)
    write_atomically(str(old), lambda f: f.write(b"new"))
    assert old.read_bytes() == b"new" and old.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["new", "precious.txt", "out.csv", "old.json"])


def test_a_plot_is_written_in_the_format_of_its_name(tmp_path):
    pytest.importorskip("matplotlib")
    result = one_game_result()
    result.plot(str(tmp_path / "plotfile"))  # no extension: PNG, under the name given
    assert (tmp_path / "plotfile").read_bytes()[:4] == b"\x89PNG"
    result.plot(str(tmp_path / "plot.svg"))
    assert b"<svg" in (tmp_path / "plot.svg").read_bytes()[:500]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plot.svg", "plotfile"]


def test_one_output_that_fails_at_the_end_does_not_stop_the_others(tmp_path, monkeypatch,
                                                                    capsys):
    from fastatari.evaluation import evaluate as module

    result = one_game_result()
    monkeypatch.setattr(module, "evaluate", lambda *a, **k: result)

    def full_disk(self, path, follow_symlinks=False):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(module.Evaluation, "write_json", full_disk)
    code = main(["evaluate", "--game", "pong", "--json", str(tmp_path / "a.json"), "--csv",
                 str(tmp_path / "a.csv")])
    assert code == 1
    assert "could not write" in capsys.readouterr().err
    assert (tmp_path / "a.csv").exists()


def test_ctrl_c_ends_the_command_without_a_traceback(monkeypatch, capsys):
    from fastatari.evaluation import evaluate as module

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "evaluate", interrupted)
    assert main(["evaluate", "--game", "pong"]) == 130
    assert "interrupted" in capsys.readouterr().err


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
