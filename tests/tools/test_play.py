"""fastatari.tools.play and ``fastatari play``: the CLI end to end (recording, printed episodes,
seeding), play() against an env driven by hand, and every error as one line."""
from __future__ import annotations

import re

import cv2
import numpy as np
import pytest

from fastatari import AtariEnv
from fastatari.cli import main
from fastatari.tools.play import play
from fastatari.tools.video import VideoWriter

from .test_video import FAST, read_mp4


def test_cli_play_records_one_frame_per_step(tmp_path, capsys):
    path = tmp_path / "x.mp4"
    assert main(["play", "breakout", "--steps", "200", "--record", str(path)]) == 0
    out = capsys.readouterr().out
    assert "breakout: 200 steps in " in out
    assert f"wrote {path} (200 frames)" in out
    frames = read_mp4(path)
    assert len(frames) == 200
    assert frames[0].shape == (210, 160 + 210, 3)  # screen + 84x84 upscaled to 210x210


def test_cli_play_gif_options(tmp_path):
    pytest.importorskip("PIL")
    path = tmp_path / "x.gif"
    argv = ["play", "pong", "--steps", "30", "--seed", "1", "--record", str(path),
            "--no-grayscale", "--channels-last", "--stack-size", "2", "--screen-size", "80x105",
            "--frame-skip", "5", "--all-frames", "--fps", "25"]
    assert main(argv) == 0
    from PIL import Image

    with Image.open(path) as gif:
        assert gif.size == (160 + 2 * 160, 210)  # two 80x105 frames at twice the size
        assert gif.info["duration"] == 40


def test_cli_play_prints_episodes_and_is_seeded(capsys):
    argv = ["play", "breakout", "--steps", "400", "--seed", "5", "--sticky", "0"]
    assert main(argv) == 0
    first = capsys.readouterr().out.splitlines()
    assert main(argv) == 0
    second = capsys.readouterr().out.splitlines()
    episodes = [line for line in first if line.startswith("episode ")]
    assert episodes and episodes == [line for line in second if line.startswith("episode ")]
    assert episodes[0].startswith("episode 1: return ") and episodes[0].endswith(" steps")
    assert first[-1].startswith("breakout: 400 steps in ")
    assert f", {len(episodes)} episodes: return mean " in first[-1]


def test_play_matches_an_env_driven_by_hand():
    result = play("breakout", 300, seed=7, **FAST)
    env = AtariEnv("breakout", **FAST)
    rng = np.random.default_rng(7)
    env.reset(seed=7)
    episodes, ret, length = [], 0.0, 0
    for _ in range(300):
        _, reward, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        ret, length = ret + reward, length + 1
        if terminated or truncated:
            episodes.append((ret, length))
            env.reset()
            ret, length = 0.0, 0
    assert result.episodes == episodes and result.unfinished == (ret, length)


def test_cli_play_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["play", "breakout", "--policy", "greedy"])
    assert stop.value.code == 2
    assert re.search(r"argument --policy: invalid choice: 'greedy' \(choose from '?random'?\)",
                     capsys.readouterr().err)
    with pytest.raises(SystemExit):
        main(["play", "breakout", "--screen-size", "84x"])
    assert "expected N or WxH (like 84 or 80x105), got '84x'" in capsys.readouterr().err
    assert main(["play", "breakout", "--steps", "5", "--record", str(tmp_path / "x.avi")]) == 2
    assert "fastatari play: error: unsupported video format '.avi'" in capsys.readouterr().err
    for flag, value, words in [("--fps", "inf", "must be a finite number > 0, got inf"),
                               ("--seed", "-1", "must be a non-negative int, got -1")]:
        with pytest.raises(SystemExit) as stop:
            main(["play", "breakout", "--steps", "5", flag, value,
                  "--record", str(tmp_path / "x.mp4")])
        assert stop.value.code == 2
        assert f"argument {flag}: {words}" in capsys.readouterr().err


def test_an_existing_file_is_overwritten_a_symlink_refused_unless_asked(tmp_path, capsys):
    target = tmp_path / "target.txt"
    target.write_text("precious")
    link = tmp_path / "play.mp4"
    link.symlink_to(target)
    assert main(["play", "breakout", "--steps", "3", "--record", str(link)]) == 2
    assert "refusing to write through the symbolic link" in capsys.readouterr().err
    with pytest.raises(OSError, match="symbolic link"):
        VideoWriter(link)
    assert target.read_text() == "precious"
    assert main(["play", "breakout", "--steps", "3", "--record", str(link),
                 "--follow-symlinks"]) == 0
    assert target.stat().st_size > len("precious")  # asked: written through the link
    plain = tmp_path / "plain.gif"
    plain.write_text("old")
    with VideoWriter(plain) as video:  # a file (not a link) is overwritten
        video.write(np.zeros((4, 4, 3), np.uint8))
    assert plain.read_bytes()[:6] == b"GIF89a"



def bad_record_paths(tmp_path) -> list:
    """(path, the error it must give) for paths ``--record`` cannot write."""
    notes = tmp_path / "notes.txt"
    notes.write_text("not a folder")
    (tmp_path / "clips.mp4").mkdir()
    return [
        (notes / "out.mp4", f"{str(notes)!r} is a file, not a directory"),
        (notes / "sub" / "out.gif", f"{str(notes)!r} is a file, not a directory"),
        (tmp_path, f"it is a directory (name a file in it, e.g. "
                   f"{str(tmp_path / 'play.mp4')!r})"),
        (tmp_path / "clips.mp4", f"it is a directory (name a file in it, e.g. "
                                 f"{str(tmp_path / 'clips.mp4' / 'play.mp4')!r})"),
    ]


def test_cli_play_bad_record_path_is_one_error_line(tmp_path, capsys, monkeypatch):
    # raised before the env steps even once
    monkeypatch.setattr(AtariEnv, "step", lambda *args: pytest.fail("stepped"))
    cases = [(path, f"cannot write a video to {str(path)!r}: {why}")
             for path, why in bad_record_paths(tmp_path)]
    cases += [(tmp_path / "x.avi", f"unsupported video format '.avi' in "
                                   f"{str(tmp_path / 'x.avi')!r}: use .mp4 or .gif"),
              (tmp_path / "x", f"unsupported video format '(no extension)' in "
                               f"{str(tmp_path / 'x')!r}: use .mp4 or .gif")]
    for path, message in cases:
        assert main(["play", "breakout", "--steps", "5", "--record", str(path)]) == 2
        captured = capsys.readouterr()
        assert captured.err == f"fastatari play: error: {message}\n"
        assert captured.out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clips.mp4", "notes.txt"]


def test_cli_play_record_errors_at_the_first_frame(tmp_path, capsys, monkeypatch):
    # what only opening the file can tell (e.g. /proc as root) is still one line, after 1 step
    class Closed:
        def __init__(self, *args):
            pass

        def isOpened(self):
            return False

    monkeypatch.setattr(cv2, "VideoWriter", Closed)
    path = tmp_path / "x.mp4"
    assert main(["play", "breakout", "--steps", "5", "--record", str(path)]) == 2
    assert capsys.readouterr().err == (f"fastatari play: error: cannot write a video to "
                                       f"{str(path)!r}: OpenCV could not open it (mp4v codec, "
                                       f"370x210)\n")

    def refuse(name, mode):
        raise PermissionError(13, "Permission denied", name)

    monkeypatch.setattr("fastatari.tools.video.open", refuse, raising=False)
    path = tmp_path / "x.gif"
    assert main(["play", "breakout", "--steps", "5", "--record", str(path)]) == 2
    assert capsys.readouterr().err == (f"fastatari play: error: cannot write a video to "
                                       f"{str(path)!r}: Permission denied\n")


def test_cli_play_record_creates_missing_folders(tmp_path, capsys):
    path = tmp_path / "new" / "folders" / "x.gif"
    assert main(["play", "breakout", "--steps", "3", "--record", str(path)]) == 0
    assert f"wrote {path} (3 frames)" in capsys.readouterr().out and path.is_file()
