"""fastatari.tools.video: side-by-side frames for every observation layout, mp4/gif round trips,
VectorVideoRecorder's episode selection, and errors."""
from __future__ import annotations

import sys
import tracemalloc

import cv2
import numpy as np
import pytest

from fastatari import AtariEnv, AtariOptions, make_vec
from fastatari.tools.video import VectorVideoRecorder, VideoWriter, side_by_side

FAST = dict(repeat_action_probability=0.0, max_num_frames_per_episode=400)


def read_mp4(path) -> list:
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame[..., ::-1])  # BGR -> RGB
    capture.release()
    return frames


def newest_frame(obs: np.ndarray, options: AtariOptions) -> np.ndarray:
    """The last frame of a stack as (H, W, 3), written out per layout."""
    if options.channels_last:
        frame = obs[..., -1:] if options.grayscale_obs else obs[..., -3:]
    else:
        frame = obs[-1][..., None] if options.grayscale_obs else obs[-1]
    return np.repeat(frame, 3, axis=2) if frame.shape[2] == 1 else frame


def upscaled(frame: np.ndarray, height: int) -> np.ndarray:
    """OpenCV's nearest-neighbour resize as the reference."""
    h, w = frame.shape[:2]
    return cv2.resize(frame, (round(w * height / h), height), interpolation=cv2.INTER_NEAREST)


def played(steps: int = 12, **options):
    """(screen, observation, previous observation, options) after a few seeded steps."""
    env = AtariEnv("breakout", render_mode="rgb_array", repeat_action_probability=0.0,
                   **options)
    obs, _ = env.reset(seed=3)
    prev = obs
    for t in range(steps):
        prev = obs
        obs, *_ = env.step(1 if t == 0 else 2 + t % 2)  # FIRE, then RIGHT/LEFT
    screen = env.render()
    options = env.options
    env.close()
    return screen, obs, prev, options


LAYOUTS = [dict(grayscale_obs=g, channels_last=c, stack_size=k, screen_size=s)
           for g in (True, False) for c in (False, True) for k in (1, 4)
           for s in (84, (80, 105), (41, 50))]


# -- side_by_side --------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda d: "-".join(map(str, d.values())))
def test_side_by_side_every_layout(layout):
    screen, obs, _, options = played(**layout)
    image = side_by_side(screen, obs, options)
    right = upscaled(newest_frame(obs, options), 210)
    assert image.dtype == np.uint8 and image.shape == (210, 160 + right.shape[1], 3)
    assert np.array_equal(image[:, :160], screen)
    assert np.array_equal(image[:, 160:], right)
    if options.grayscale_obs:  # three equal channels
        assert (image[:, 160:] == image[:, 160:, :1]).all()


@pytest.mark.parametrize("grayscale", [True, False])
def test_side_by_side_all_frames_oldest_to_newest(grayscale):
    screen, obs, prev, options = played(grayscale_obs=grayscale, stack_size=4)
    image = side_by_side(screen, obs, options, all_frames=True)
    width = 210  # 84 x 84 upscaled to 210 rows
    assert image.shape == (210, 160 + 4 * width, 3)
    assert np.array_equal(image[:, :160], screen)
    frames = obs if not grayscale else obs[..., None].repeat(3, axis=3)
    for j in range(4):
        panel = image[:, 160 + j * width:160 + (j + 1) * width]
        assert np.array_equal(panel, upscaled(np.ascontiguousarray(frames[j]), 210))
    # the last panel is the newest frame: the default image's right part
    assert np.array_equal(image[:, -width:], side_by_side(screen, obs, options)[:, 160:])
    # the stack shifts by one per step, so the previous newest frame is now second-newest
    before = side_by_side(screen, prev, options)[:, 160:]
    assert np.array_equal(image[:, -2 * width:-width], before)


def test_side_by_side_same_image_for_both_layouts():
    first = played(stack_size=3, grayscale_obs=False)
    last = played(stack_size=3, grayscale_obs=False, channels_last=True)
    assert np.array_equal(side_by_side(*first[:2], first[3], all_frames=True),
                          side_by_side(*last[:2], last[3], all_frames=True))


def test_side_by_side_errors():
    options = AtariOptions()
    screen = np.zeros((210, 160, 3), np.uint8)
    with pytest.raises(ValueError) as error:
        side_by_side(screen, np.zeros((84, 84, 4), np.uint8), options)
    assert str(error.value) == ("observation of shape (84, 84, 4) and dtype uint8 does not match "
                                "the options: expected uint8 (4, 84, 84)")
    with pytest.raises(ValueError) as error:
        side_by_side(screen[..., 0], np.zeros((4, 84, 84), np.uint8), options)
    assert str(error.value) == "screen_rgb must be a uint8 (H, W, 3) array, got uint8 (210, 160)"


# -- VideoWriter ---------------------------------------------------------------------------
def distinct_frames(count: int, height: int, width: int) -> list:
    """Blocky frames of a few colours, all different: exact in a GIF, easy for MPEG-4."""
    frames = []
    for i in range(count):
        frame = np.zeros((height, width, 3), np.uint8)
        frame[:, :, 0] = 40 + 15 * i
        frame[: height // 2, : width // 2] = (200, 200 - 10 * i, 30)
        frames.append(frame)
    return frames


def test_mp4_round_trip(tmp_path):
    frames = distinct_frames(12, 210, 370)
    path = tmp_path / "sub" / "clip.mp4"  # missing folders are created
    with VideoWriter(path, fps=15) as video:
        for frame in frames:
            video.write(frame)
    assert video.closed and video.frames_written == 12
    back = read_mp4(path)
    assert len(back) == 12 and back[0].shape == (210, 370, 3)
    assert cv2.VideoCapture(str(path)).get(cv2.CAP_PROP_FPS) == 15
    # lossy codec: close on average, not equal
    for ours, theirs in zip(frames, back, strict=True):
        assert np.abs(ours.astype(int) - theirs).mean() < 6


def test_mp4_odd_size_is_padded_not_cropped(tmp_path):
    path = tmp_path / "odd.mp4"
    with VideoWriter(path) as video:
        for frame in distinct_frames(3, 211, 371):
            video.write(frame)
    back = read_mp4(path)
    assert len(back) == 3 and back[0].shape == (212, 372, 3)


def test_gif_round_trip(tmp_path):
    image_module = pytest.importorskip("PIL.Image")
    frames = distinct_frames(7, 60, 90)
    path = tmp_path / "clip.gif"
    with VideoWriter(path, fps=20) as video:
        for frame in frames:
            video.write(frame)
    with image_module.open(path) as gif:
        assert gif.n_frames == 7 and gif.size == (90, 60)
        assert gif.info["duration"] == 50
        for i, frame in enumerate(frames):
            gif.seek(i)
            assert np.array_equal(np.asarray(gif.convert("RGB")), frame)


def test_gif_palettes_are_exact(tmp_path):
    # every frame 256 colours (the most a GIF frame holds), none shared with the others: each
    # frame's own colour table, decoded back exactly
    image_module = pytest.importorskip("PIL.Image")
    frames = []
    for i in range(4):
        colours = np.stack(np.meshgrid(np.arange(16) * 16 + i, np.arange(16) * 16 + 4 * i,
                                       [255 - 60 * i], indexing="ij"), -1).reshape(256, 3)
        index = np.random.default_rng(i).permutation(np.arange(60 * 40) % 256)
        frames.append(colours[index.reshape(60, 40)].astype(np.uint8))
    path = tmp_path / "palettes.gif"
    with VideoWriter(path, fps=25) as video:
        for frame in frames:
            video.write(frame)
    with image_module.open(path) as gif:
        assert gif.n_frames == 4 and gif.info["loop"] == 0
        for i, frame in enumerate(frames):
            gif.seek(i)
            assert len(np.unique(frame.reshape(-1, 3), axis=0)) == 256
            assert gif.info["duration"] == 40
            assert np.array_equal(np.asarray(gif.convert("RGB")), frame)


def test_writer_without_frames_writes_nothing(tmp_path):
    with VideoWriter(tmp_path / "empty.mp4"):
        pass
    assert not (tmp_path / "empty.mp4").exists()


def test_writer_errors(tmp_path, monkeypatch):
    with pytest.raises(ValueError) as error:
        VideoWriter(tmp_path / "clip.avi")
    assert str(error.value) == (f"unsupported video format '.avi' in "
                                f"{str(tmp_path / 'clip.avi')!r}: use .mp4 or .gif")
    with pytest.raises(ValueError, match=r"^unsupported video format '\(no extension\)'"):
        VideoWriter(tmp_path / "clip")
    with pytest.raises(ValueError) as error:
        VideoWriter(tmp_path / "clip.mp4", fps=0)
    assert str(error.value) == "fps must be a finite number > 0, got 0"
    for fps in (float("inf"), float("nan")):  # OpenCV's writer would never return for inf
        with pytest.raises(ValueError, match="fps must be a finite number > 0"):
            VideoWriter(tmp_path / "clip.mp4", fps=fps)

    path = str(tmp_path / "clip.mp4")
    video = VideoWriter(path)
    video.write(np.zeros((210, 370, 3), np.uint8))
    with pytest.raises(ValueError) as error:
        video.write(np.zeros((210, 160, 3), np.uint8))
    assert str(error.value) == (f"frame 1 of {path!r} is 160x210 but the video is 370x210: "
                                f"every frame of a video must have the same size")
    with pytest.raises(ValueError) as error:
        video.write(np.zeros((210, 370, 3), np.float32))
    assert str(error.value) == ("a video frame must be a uint8 (H, W, 3) RGB array, got float32 "
                                "(210, 370, 3)")
    video.close()
    with pytest.raises(RuntimeError) as error:
        video.write(np.zeros((210, 370, 3), np.uint8))
    assert str(error.value) == f"VideoWriter for {path!r} is closed"

    # paths that cannot be written: raised at construction, before any frame
    notes = tmp_path / "notes.txt"
    notes.write_text("not a folder")
    with pytest.raises(NotADirectoryError) as error:
        VideoWriter(notes / "sub" / "clip.gif")
    assert str(error.value) == (f"cannot write a video to {str(notes / 'sub' / 'clip.gif')!r}: "
                                f"{str(notes)!r} is a file, not a directory")
    (tmp_path / "clips.mp4").mkdir()
    for folder in (tmp_path, tmp_path / "clips.mp4"):
        with pytest.raises(IsADirectoryError) as error:
            VideoWriter(folder)
        assert str(error.value) == (f"cannot write a video to {str(folder)!r}: it is a directory "
                                    f"(name a file in it, e.g. {str(folder / 'play.mp4')!r})")
    with monkeypatch.context() as patch:  # as root every path is writable: pretend otherwise
        patch.setattr("os.access", lambda *args: False)
        with pytest.raises(PermissionError) as error:
            VideoWriter(tmp_path / "new" / "clip.mp4")
        assert str(error.value) == (f"cannot write a video to "
                                    f"{str(tmp_path / 'new' / 'clip.mp4')!r}: no permission to "
                                    f"write in {str(tmp_path)!r}")
        with pytest.raises(PermissionError) as error:
            VideoWriter(path)  # exists: written above
        assert str(error.value) == f"cannot write a video to {path!r}: permission denied"

    # the optional libraries: None in sys.modules makes their import fail
    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(ImportError) as error:
        VideoWriter(tmp_path / "clip.mp4")
    assert str(error.value) == 'writing .mp4 videos needs OpenCV: pip install "fastatari[video]"'
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError) as error:
        VideoWriter(tmp_path / "clip.gif")
    assert str(error.value) == 'writing .gif videos needs Pillow: pip install "fastatari[video]"'


def test_gif_stores_changed_rectangles_and_merges_repeats(tmp_path):
    image_module = pytest.importorskip("PIL.Image")
    frames, canvas = [], np.full((60, 90, 3), (40, 0, 0), np.uint8)
    for i in range(5):  # a square moving right and down, leaving a trail
        canvas = canvas.copy()
        canvas[10 + i:20 + i, 5 * i:5 * i + 7] = (200, 40 * i, 30)
        frames += [canvas] * (2 if i == 2 else 1)  # frame 2 shown twice
    path = tmp_path / "moving.gif"
    with VideoWriter(path, fps=20) as video:
        for frame in frames:
            video.write(frame)
    assert video.frames_written == 6
    with image_module.open(path) as gif:
        assert gif.n_frames == 5 and gif.info["loop"] == 0
        durations, boxes = [], []
        for i in range(5):
            gif.seek(i)
            durations.append(gif.info["duration"])
            boxes.append(gif.dispose_extent)  # the rectangle stored for this frame
            assert np.array_equal(np.asarray(gif.convert("RGB")), frames[i + (i > 2)])
    assert durations == [50, 50, 100, 50, 50]
    # the whole first frame, then only where the square moved to: (left, top, right, bottom)
    assert boxes == [(0, 0, 90, 60)] + [(5 * i, 10 + i, 5 * i + 7, 20 + i) for i in (1, 2, 3, 4)]


def test_gif_is_written_as_frames_come(tmp_path):
    # a frame reaches the file once the next one differs, so nothing piles up in memory
    image_module = pytest.importorskip("PIL.Image")
    path = tmp_path / "long.gif"
    frames = distinct_frames(2, 210, 370)
    sizes = []
    with VideoWriter(path) as video:
        video.write(frames[1])  # opens the file (and imports Pillow) outside the trace
        tracemalloc.start()
        try:
            for i in range(150):  # held as RGB arrays, these would take 35 MB
                video.write(frames[i % 2])
                sizes.append(path.stat().st_size)
            held, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert np.all(np.diff(sizes) > 0)
    assert held < frames[0].nbytes and peak < 2 * frames[0].nbytes
    # identical frames merge until the 16-bit delay (655.35 s) is full, then start anew
    path = tmp_path / "still.gif"
    with VideoWriter(path, fps=1) as video:
        for _ in range(701):
            video.write(frames[0])
    with image_module.open(path) as gif:
        assert gif.n_frames == 2
        assert gif.info["duration"] == 655_000
        gif.seek(1)
        assert gif.info["duration"] == 46_000


# -- VectorVideoRecorder -------------------------------------------------------------------
@pytest.fixture(scope="module")
def rendering_envs():
    envs = make_vec("breakout", 2, num_workers=1, render_mode="rgb_array", **FAST)
    yield envs
    envs.close()


def test_recorder_every_kth_episode(tmp_path):
    envs = make_vec("breakout", 2, num_workers=1, render_mode="rgb_array", **FAST)
    recorder = VectorVideoRecorder(envs, str(tmp_path / "env{env_id}-ep{episode}.mp4"),
                                   every_k_episodes=2, env_id=1)
    assert recorder.num_envs == 2 and recorder.options.max_num_frames_per_episode == 400
    recorder.reset(seed=0)
    first_screen = envs.render(env_ids=[1])[0]
    rng = np.random.default_rng(0)
    lengths = []
    while len(lengths) < 4:  # episodes are truncated at 400 frames, so ~100 steps each
        _, _, terminated, truncated, info = recorder.step(rng.integers(0, 4, 2))
        if terminated[1] or truncated[1]:
            lengths.append(int(info["game"]["l"][1]))
            assert not recorder.recording
    recorder.step(rng.integers(0, 4, 2))  # env 1's autoreset: episode 4 starts, recorded
    assert recorder.recording
    recorder.close()
    assert envs.closed
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["env1-ep0.mp4", "env1-ep2.mp4", "env1-ep4.mp4"]
    assert recorder.video_paths == [str(tmp_path / n) for n in names]
    for episode in (0, 2):
        frames = read_mp4(tmp_path / f"env1-ep{episode}.mp4")
        # the screen after the reset, then one per step of the episode
        assert len(frames) == 1 + lengths[episode]
        assert frames[0].shape == (210, 160, 3)
    assert np.abs(read_mp4(tmp_path / "env1-ep0.mp4")[0].astype(int) - first_screen).mean() < 6
    assert len(read_mp4(tmp_path / "env1-ep4.mp4")) == 1  # closed right after it started


def test_recorder_same_step_autoreset(tmp_path):
    envs = make_vec("breakout", 1, render_mode="rgb_array", autoreset_mode="same_step", **FAST)
    with envs:
        recorder = VectorVideoRecorder(envs, str(tmp_path / "{episode}.mp4"), every_k_episodes=1)
        recorder.reset(seed=1)
        rng = np.random.default_rng(1)
        lengths = []
        while len(lengths) < 2:
            _, _, terminated, truncated, info = recorder.step(rng.integers(0, 4, 1))
            if terminated[0] or truncated[0]:
                lengths.append(int(info["final_info"]["game"]["l"][0]))
        recorder.close()
    # the reset screen and every step's but the last: that step's screen is the next episode's
    for episode, length in enumerate(lengths):
        assert len(read_mp4(tmp_path / f"{episode}.mp4")) == length
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.mp4", "1.mp4", "2.mp4"]


def test_recorder_errors(rendering_envs, tmp_path):
    with make_vec("breakout", 1, **FAST) as plain:
        with pytest.raises(ValueError) as error:
            VectorVideoRecorder(plain)
    assert str(error.value) == ("VectorVideoRecorder needs a vector env created with "
                                "render_mode='rgb_array', got render_mode=None")
    with pytest.raises(ValueError) as error:
        VectorVideoRecorder(rendering_envs, every_k_episodes=0)
    assert str(error.value) == "every_k_episodes must be an int >= 1, got 0"
    with pytest.raises(ValueError) as error:
        VectorVideoRecorder(rendering_envs, env_id=2)
    assert str(error.value) == "env_id must be an int in [0, 2), got 2"
    with pytest.raises(ValueError) as error:
        VectorVideoRecorder(rendering_envs, "videos/latest.mp4")
    assert str(error.value) == ("path_pattern 'videos/latest.mp4' must contain {episode} (e.g. "
                                "'videos/episode{episode:04d}.mp4'), or every video would be "
                                "written to the same file")
    with pytest.raises(ValueError, match=r"^path_pattern 'v/\{run\}-\{episode\}.mp4' must format"):
        VectorVideoRecorder(rendering_envs, "v/{run}-{episode}.mp4")
    with pytest.raises(ValueError, match=r"^unsupported video format '.webm'"):
        VectorVideoRecorder(rendering_envs, "v/{episode}.webm")
    notes = tmp_path / "notes.txt"
    notes.write_text("not a folder")
    with pytest.raises(NotADirectoryError) as error:  # episode 0's path, checked at once
        VectorVideoRecorder(rendering_envs, str(notes / "{episode}.mp4"))
    assert str(error.value) == (f"cannot write a video to {str(notes / '0.mp4')!r}: "
                                f"{str(notes)!r} is a file, not a directory")
    recorder = VectorVideoRecorder(rendering_envs, str(tmp_path / "{episode}.mp4"))
    with pytest.raises(NotImplementedError, match="records step"):
        recorder.send(np.zeros(2, int))
