"""Videos of Atari play: what the game shows next to what the agent sees.

:func:`side_by_side`
    One video frame: the raw screen, then the newest observation frame (or the whole stack),
    upscaled to the screen's height.
:class:`VideoWriter`
    Writes RGB frames to ``.mp4`` (OpenCV) or ``.gif`` (Pillow).
:class:`VectorVideoRecorder`
    Records every K-th episode of one env of a :class:`fastatari.AtariVectorEnv`.

OpenCV and Pillow are optional: ``pip install "fastatari[video]"``.
"""

from __future__ import annotations

import io
import math
import numbers
import os
import struct
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from fastatari._files import check_not_symlink, check_output
from fastatari.core.options import AtariOptions

if TYPE_CHECKING:
    from fastatari.vector.env import AtariVectorEnv

__all__ = ["VIDEO_FORMATS", "VectorVideoRecorder", "VideoWriter", "observation_frames",
           "side_by_side"]

#: File extensions :class:`VideoWriter` writes.
VIDEO_FORMATS: Tuple[str, ...] = (".mp4", ".gif")

_EXTRA = 'pip install "fastatari[video]"'


# -- frame composition -------------------------------------------------------------------------
def observation_frames(observation: np.ndarray, options: AtariOptions) -> np.ndarray:
    """The frames of an observation stack as ``(k, H, W, C)``, oldest first.

    Parameters
    ----------
    observation : ndarray, uint8
        One (unbatched) observation in any layout ``options`` describes: ``(k, H, W)``,
        ``(k, H, W, 3)``, ``(H, W, k)`` or ``(H, W, 3k)``.
    options : AtariOptions
        The options the observation was made with.

    Returns
    -------
    ndarray, uint8
        ``(k, H, W, 1)`` for gray stacks, ``(k, H, W, 3)`` for RGB ones (a view when possible).
    """
    obs = np.asarray(observation)
    if obs.shape != options.observation_shape or obs.dtype != np.uint8:
        raise ValueError(f"observation of shape {obs.shape} and dtype {obs.dtype} does not match "
                         f"the options: expected uint8 {options.observation_shape}")
    k, c = options.stack_size, options.channels
    if options.channels_last:
        # (H, W, k*c) with frame j in channels j*c .. j*c + c - 1
        return obs.reshape(options.height, options.width, k, c).transpose(2, 0, 1, 3)
    return obs[..., np.newaxis] if c == 1 else obs


def _upscale(frame: np.ndarray, height: int) -> np.ndarray:
    """Nearest-neighbour resize of ``(h, w, C)`` to ``height`` rows (aspect kept), as RGB."""
    h, w = frame.shape[:2]
    width = max(1, round(w * height / h))
    # source index of each output pixel: floor(i * h / height), as OpenCV's INTER_NEAREST
    rows = np.arange(height) * h // height
    cols = np.arange(width) * w // width
    out = frame[rows[:, None], cols[None, :]]
    if out.shape[2] == 1:
        out = np.repeat(out, 3, axis=2)
    return out


def side_by_side(screen_rgb: np.ndarray, observation: np.ndarray, options: AtariOptions,
                 *, all_frames: bool = False) -> np.ndarray:
    """The raw screen next to what the agent sees, as one RGB image.

    Parameters
    ----------
    screen_rgb : ndarray, uint8, (S, 160, 3)
        The raw screen (``env.render()`` with ``render_mode="rgb_array"``).
    observation : ndarray, uint8
        The observation stack, in the layout ``options`` describes.
    options : AtariOptions
        The env's options (``env.options``).
    all_frames : bool, default False
        Show every frame of the stack, oldest to newest, instead of only the newest.

    Returns
    -------
    ndarray, uint8, (S, 160 + n * W', 3)
        The screen unchanged on the left, then ``n`` (1 or ``k``) observation frames upscaled
        with nearest-neighbour to ``S`` rows (``W' = round(W * S / H)``); gray frames become
        three equal channels.
    """
    screen = np.asarray(screen_rgb)
    if screen.ndim != 3 or screen.shape[2] != 3 or screen.dtype != np.uint8:
        raise ValueError(f"screen_rgb must be a uint8 (H, W, 3) array, got {screen.dtype} "
                         f"{screen.shape}")
    frames = observation_frames(observation, options)
    shown = frames if all_frames else frames[-1:]
    height = screen.shape[0]
    return np.concatenate([screen, *(_upscale(f, height) for f in shown)], axis=1)


# -- writers -----------------------------------------------------------------------------------
def video_format(path: str) -> str:
    """The lower-case extension of ``path`` if :class:`VideoWriter` writes it, else ValueError."""
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in VIDEO_FORMATS:
        raise ValueError(f"unsupported video format {ext or '(no extension)'!r} in {path!r}: "
                         f"use {' or '.join(VIDEO_FORMATS)}")
    return ext


def check_fps(fps: Any) -> float:
    """``fps`` as a float: a finite number > 0 (``ValueError`` otherwise; OpenCV's writer
    never returns for an infinite one)."""
    if isinstance(fps, bool) or not isinstance(fps, numbers.Real) or not float(fps) > 0 \
            or not math.isfinite(fps):
        raise ValueError(f"fps must be a finite number > 0, got {fps!r}")
    return float(fps)


def check_video_path(path: str, follow_symlinks: bool = False) -> str:
    """Raise now what writing a video to ``path`` would raise later; return its extension.

    Nothing is created: missing folders are made when the first frame is written. An existing
    file is overwritten, but not through a symbolic link unless ``follow_symlinks``.

    Raises
    ------
    IsADirectoryError
        ``path`` is a directory.
    ValueError
        Its extension is not one of :data:`VIDEO_FORMATS`.
    NotADirectoryError
        A parent of ``path`` is a file.
    PermissionError
        ``path``, or the folder it would be created in, is not writable.
    OSError
        ``path`` is a symbolic link and ``follow_symlinks`` is False.
    """
    path = str(path)
    check_not_symlink(path, follow_symlinks)
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot write a video to {path!r}: it is a directory (name a "
                                f"file in it, e.g. {os.path.join(path, 'play.mp4')!r})")
    ext = video_format(path)
    check_output(path, follow_symlinks, "a video")
    return ext


class _Mp4Backend:
    """MPEG-4 through OpenCV, opened at the first frame (its size fixes the video's)."""

    def __init__(self, path: str, fps: float) -> None:
        try:
            import cv2
        except ImportError:
            raise ImportError(f"writing .mp4 videos needs OpenCV: {_EXTRA}") from None
        self._cv2 = cv2
        self._path, self._fps = path, fps
        self._writer: Any = None
        self._pad = (0, 0)

    def write(self, frame: np.ndarray) -> None:
        cv2 = self._cv2
        if self._writer is None:
            h, w = frame.shape[:2]
            # 4:2:0 codecs need even sizes; OpenCV would crop the odd row/column, so pad it
            self._pad = (h % 2, w % 2)
            size = (w + self._pad[1], h + self._pad[0])
            self._writer = cv2.VideoWriter(self._path, cv2.VideoWriter_fourcc(*"mp4v"),
                                           float(self._fps), size)
            if not self._writer.isOpened():
                self._writer = None
                raise OSError(f"cannot write a video to {self._path!r}: OpenCV could not open "
                              f"it (mp4v codec, {size[0]}x{size[1]})")
        if any(self._pad):
            frame = np.pad(frame, ((0, self._pad[0]), (0, self._pad[1]), (0, 0)))
        self._writer.write(np.ascontiguousarray(frame[..., ::-1]))  # OpenCV wants BGR

    def close(self) -> None:
        if self._writer is not None:
            self._writer.release()
            self._writer = None


class _GifBackend:
    """Animated GIF written frame by frame, so memory stays one frame whatever the length.

    Pillow's own ``save(save_all=True)`` keeps every frame until the end, whether
    ``append_images`` is a list or an iterator (``GifImagePlugin._write_multiple_frames``), so
    here Pillow encodes one frame at a time, as a one-image GIF, and this class writes the
    GIF89a container around those images: only the rectangle that changed since the previous
    frame, with its own colour table, drawn over it; identical consecutive frames become one
    longer frame (as Pillow does). Each frame reaches the file when the next one differs.
    Pillow's writer's memory grows with the recording (the README's Benchmarks section has
    the measurement); this one's does not.
    """

    def __init__(self, path: str, fps: float) -> None:
        try:
            from PIL import Image
        except ImportError:
            raise ImportError(f"writing .gif videos needs Pillow: {_EXTRA}") from None
        self._image = Image
        self._path = path
        self._delay_cs = max(1, round(100.0 / fps))  # GIF delays are whole centiseconds
        self._file: Any = None
        self._canvas: Optional[np.ndarray] = None  # what the GIF shows after the last frame
        self._pending = b""  # the last changed frame's image, written with its delay
        self._pending_cs = 0

    def write(self, frame: np.ndarray) -> None:
        canvas = self._canvas
        if self._file is None or canvas is None:  # the first frame (both are set together)
            try:
                self._file = open(self._path, "wb")
            except OSError as error:
                raise type(error)(f"cannot write a video to {self._path!r}: "
                                  f"{error.strerror or error}") from None
            height, width = frame.shape[:2]
            # logical screen without a global colour table, then loop forever (NETSCAPE2.0)
            self._file.write(b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0)
                             + b"!\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00")
            self._canvas = frame.copy()
            self._pending, self._pending_cs = self._encode(frame, 0, 0), self._delay_cs
            return
        changed = np.any(frame != canvas, axis=2)
        rows = np.flatnonzero(changed.any(axis=1))
        if rows.size == 0 and self._pending_cs + self._delay_cs <= 0xFFFF:
            self._pending_cs += self._delay_cs
            return
        self._write_pending()
        if rows.size == 0:  # the 16-bit delay is full: show the same image again
            self._pending_cs = self._delay_cs
            return
        cols = np.flatnonzero(changed.any(axis=0))
        top, left = int(rows[0]), int(cols[0])
        box = frame[top:rows[-1] + 1, left:cols[-1] + 1]
        self._pending, self._pending_cs = self._encode(box, left, top), self._delay_cs
        np.copyto(canvas, frame)

    def _encode(self, image: np.ndarray, left: int, top: int) -> bytes:
        """One image as a GIF image block placed at (left, top): descriptor, colour table, data."""
        buffer = io.BytesIO()
        self._image.fromarray(np.ascontiguousarray(image), "RGB").save(buffer, "GIF",
                                                                      interlace=False)
        gif = buffer.getvalue()
        # https://www.w3.org/Graphics/GIF/spec-gif89a.txt: header (6 bytes), logical screen
        # descriptor (7), global colour table, extensions ('!' ... 0), image descriptor (',')
        screen_flags = gif[10]
        table_end = 13 + ((3 << (screen_flags & 7) + 1) if screen_flags & 0x80 else 0)
        start = table_end
        while gif[start] == 0x21:
            start += 2
            while gif[start]:
                start += gif[start] + 1
            start += 1
        height, width = image.shape[:2]
        flags = gif[start + 9]
        if not flags & 0x80 and screen_flags & 0x80:  # the global table becomes a local one
            flags |= 0x80 | (screen_flags & 7)
            table = gif[13:table_end]
        else:
            table = b""
        descriptor = b"," + struct.pack("<HHHHB", left, top, width, height, flags)
        return descriptor + table + gif[start + 10:-1]  # drop the trailer ';'

    def _write_pending(self) -> None:
        # graphic control extension: the delay, and "do not dispose" so that the next
        # frame's rectangle is drawn over this image
        self._file.write(b"!\xf9\x04\x04" + struct.pack("<H", self._pending_cs) + b"\x00\x00"
                         + self._pending)
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            try:
                self._write_pending()
                self._file.write(b";")
            finally:
                self._file.close()
                self._file = None
        self._canvas, self._pending = None, b""


class VideoWriter:
    """Write RGB frames to a ``.mp4`` (OpenCV, ``mp4v``) or ``.gif`` (Pillow) file.

    Parameters
    ----------
    path : str or os.PathLike
        The file; its extension picks the format. Missing parent folders are created at the
        first frame.
    fps : float, default 30
        Frames per second of playback.
    follow_symlinks : bool, default False
        An existing file at ``path`` is overwritten; a symbolic link there is refused unless
        this is True.

    Raises
    ------
    ValueError
        For an extension other than ``.mp4``/``.gif``, or an ``fps`` that is not a finite
        number > 0.
    OSError
        When ``path`` cannot be written (:func:`check_video_path`: a directory, a parent that
        is a file, no permission), here rather than at the first frame; at the first frame,
        when opening the file still fails.
    ImportError
        When the format's library (OpenCV or Pillow) is missing.

    Notes
    -----
    Every frame must be a uint8 ``(H, W, 3)`` RGB array of the first frame's size. The file is
    complete after :meth:`close` (or leaving the ``with`` block); a writer closed before any
    frame writes no file. MPEG-4 is lossy, and odd sizes are padded with one black row or
    column. A GIF is written as the frames come (memory stays one frame, however long the
    video): each frame stores only the rectangle that changed, with its own palette of up to
    256 colours, and identical consecutive frames become one longer frame; delays are whole
    centiseconds, ``round(100 / fps)``.

    Examples
    --------
    >>> with VideoWriter("play.mp4", fps=15) as video:  # doctest: +SKIP
    ...     video.write(env.render())
    """

    def __init__(self, path: str | os.PathLike, fps: float = 30.0,
                 follow_symlinks: bool = False) -> None:
        self.path = os.fspath(path)
        ext = check_video_path(self.path, follow_symlinks)
        self.fps = check_fps(fps)
        self._follow_symlinks = follow_symlinks
        backend = _Mp4Backend if ext == ".mp4" else _GifBackend
        self._backend: Optional[Any] = backend(self.path, self.fps)
        self._shape: Optional[Tuple[int, ...]] = None
        self.frames_written = 0

    def write(self, frame: np.ndarray) -> None:
        """Append one uint8 ``(H, W, 3)`` RGB frame."""
        if self._backend is None:
            raise RuntimeError(f"VideoWriter for {self.path!r} is closed")
        frame = np.asarray(frame)
        if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
            raise ValueError(f"a video frame must be a uint8 (H, W, 3) RGB array, got "
                             f"{frame.dtype} {frame.shape}")
        if self._shape is None:
            parent = os.path.dirname(self.path)
            if parent:
                os.makedirs(parent, exist_ok=True)
            check_not_symlink(self.path, self._follow_symlinks)  # the file is opened now
            self._shape = frame.shape
        elif frame.shape != self._shape:
            raise ValueError(f"frame {self.frames_written} of {self.path!r} is {frame.shape[1]}x"
                             f"{frame.shape[0]} but the video is {self._shape[1]}x"
                             f"{self._shape[0]}: every frame of a video must have the same size")
        self._backend.write(frame)
        self.frames_written += 1

    def close(self) -> None:
        """Finish the file. Safe to call more than once."""
        if self._backend is not None:
            backend, self._backend = self._backend, None
            backend.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._backend is None

    def __enter__(self) -> "VideoWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (f"VideoWriter({self.path!r}, fps={self.fps:g}, {self.frames_written} frames, "
                f"{state})")


# -- vector env recorder -----------------------------------------------------------------------
class VectorVideoRecorder(gymnasium.vector.VectorWrapper):
    """Record one env's raw screens for every K-th episode of a vector env.

    Parameters
    ----------
    envs : fastatari.AtariVectorEnv
        Created with ``render_mode="rgb_array"``.
    path_pattern : str
        Formatted with ``episode`` (that env's episode index, from 0) and ``env_id``; the
        extension picks the format (``.mp4`` or ``.gif``).
    every_k_episodes : int, default 10
        Record episodes 0, K, 2K, ... of the env.
    env_id : int, default 0
        The env to record.
    fps : float, optional
        Playback speed; default real time, ``60 / frame_skip``.
    follow_symlinks : bool, default False
        As :class:`VideoWriter`: existing files are overwritten, symbolic links refused.

    Notes
    -----
    A recorded episode's file holds the screen after its reset and after each of its steps;
    it is closed at the step that ends the episode (``terminated | truncated`` for the env),
    and :attr:`video_paths` lists the finished files. With ``autoreset_mode="same_step"`` the
    env resets inside that step, so its last screen is never seen and the video stops one
    screen earlier. ``reset()`` ends the recorded episode early and starts the next index.
    Only :meth:`step` records: ``send``/``recv`` raise. Other attributes pass through.
    """

    env: AtariVectorEnv  # its render(env_ids) gives the screens

    def __init__(self, envs: AtariVectorEnv,
                 path_pattern: str = "videos/env{env_id}-episode{episode:04d}.mp4",
                 every_k_episodes: int = 10, env_id: int = 0,
                 fps: Optional[float] = None, follow_symlinks: bool = False) -> None:
        super().__init__(envs)
        mode = getattr(envs, "render_mode", None)
        if mode != "rgb_array":
            raise ValueError(f"VectorVideoRecorder needs a vector env created with "
                             f"render_mode='rgb_array', got render_mode={mode!r}")
        if isinstance(every_k_episodes, bool) or not isinstance(every_k_episodes, int) \
                or every_k_episodes < 1:
            raise ValueError(f"every_k_episodes must be an int >= 1, got {every_k_episodes!r}")
        if isinstance(env_id, bool) or not isinstance(env_id, int) \
                or not 0 <= env_id < envs.num_envs:
            raise ValueError(f"env_id must be an int in [0, {envs.num_envs}), got {env_id!r}")
        try:
            first, second = (path_pattern.format(episode=e, env_id=env_id) for e in (0, 1))
        except (KeyError, IndexError, ValueError) as error:
            raise ValueError(f"path_pattern {path_pattern!r} must format with the fields "
                             f"episode and env_id only: {error!r}") from None
        if first == second:
            raise ValueError(f"path_pattern {path_pattern!r} must contain {{episode}} (e.g. "
                             f"'videos/episode{{episode:04d}}.mp4'), or every video would be "
                             f"written to the same file")
        check_video_path(first, follow_symlinks)
        if fps is None:
            options = getattr(envs, "options", None)
            fps = 60.0 / options.frame_skip if isinstance(options, AtariOptions) else 30.0
        self.path_pattern = path_pattern
        self.every_k_episodes = every_k_episodes
        self.env_id = env_id
        self.fps = check_fps(fps)
        self.follow_symlinks = follow_symlinks
        self.video_paths: List[str] = []
        self._same_step = envs.metadata.get("autoreset_mode") == AutoresetMode.SAME_STEP
        self._episode = -1  # the env's current episode index; -1 before the first reset
        self._resets_next_step = False  # next_step autoreset: the next step starts an episode
        self._writer: Optional[VideoWriter] = None

    # -- recording -------------------------------------------------------------------------
    def _screen(self) -> np.ndarray:
        screens = self.env.render(env_ids=[self.env_id])
        assert screens is not None  # render_mode="rgb_array", checked at construction
        return screens[0]

    def _start_episode(self) -> None:
        self._episode += 1
        self._resets_next_step = False
        if self._episode % self.every_k_episodes == 0:
            path = self.path_pattern.format(episode=self._episode, env_id=self.env_id)
            self._writer = VideoWriter(path, self.fps, self.follow_symlinks)
            self._writer.write(self._screen())

    def _end_episode(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()
            if writer.frames_written:
                self.video_paths.append(writer.path)

    @property
    def recording(self) -> bool:
        """Whether the current episode of the env is being recorded."""
        return self._writer is not None

    # -- VectorEnv API ---------------------------------------------------------------------
    def reset(self, *, seed: Any = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
        """Reset (pass-through); a reset of the recorded env starts its next episode."""
        result = self.env.reset(seed=seed, options=options)
        mask = None if options is None else options.get("reset_mask")
        if mask is None or bool(np.asarray(mask)[self.env_id]):
            self._end_episode()
            self._start_episode()
        return result

    def step(self, actions: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          Dict[str, Any]]:
        """Step (pass-through), recording the env's screen while its episode is recorded."""
        result = self.env.step(actions)
        terminated, truncated = result[2], result[3]
        ended = bool(terminated[self.env_id] or truncated[self.env_id])
        if self._resets_next_step:  # this step was the env's autoreset
            self._start_episode()
        elif ended and self._same_step:  # the screen already shows the next episode
            self._end_episode()
            self._start_episode()
            return result
        elif self._writer is not None:
            self._writer.write(self._screen())
        if ended:
            self._end_episode()
            self._resets_next_step = True
        return result

    # ignore[override]: AtariVectorEnv's render (one array of screens, not gymnasium's tuple)
    def render(self, env_ids: Any = None) -> Optional[np.ndarray]:  # type: ignore[override]
        """The wrapped env's raw screens (pass-through)."""
        return self.env.render(env_ids=env_ids)

    def send(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("VectorVideoRecorder records step() only; send()/recv() would "
                                  "bypass it (step the env, or unwrap it with .env)")

    def recv(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("VectorVideoRecorder records step() only; send()/recv() would "
                                  "bypass it (step the env, or unwrap it with .env)")

    def close(self, **kwargs: Any) -> None:
        """Finish an unfinished video, then close the env."""
        self._end_episode()
        self.env.close(**kwargs)

    def __getattr__(self, name: str) -> Any:
        # only reached for names the wrapper lacks; private ones stay private (and avoid
        # recursion while __init__ has not set self.env yet)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.env, name)
