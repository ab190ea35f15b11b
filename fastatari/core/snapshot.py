"""Snapshots: one env's whole state, taken by ``clone()`` and put back by ``restore()``.

A :class:`GameState` is what :meth:`fastatari.core.game.AtariGame.snapshot` takes: the emulator
with its random generator (ALE's sticky-action rolls), the no-op generator, the observation
stack and the frame an early-ending step pools with, lives, and the game's statistics so far;
under next-step autoreset also the reset a worker already ran for an ended episode. An
:class:`EnvSnapshot` wraps it with what it belongs to (game, options, ale-py version) and a
digest, so that a snapshot from another game, other options or a damaged copy is refused
before any env is touched.

Frames are stored zlib-compressed (Atari frames shrink ~50x, in tens of microseconds); the
emulator's state (~14 KB) is stored as ALE serializes it.
"""

from __future__ import annotations

import hashlib
import math
import warnings
import zlib
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, Mapping, Optional, Sequence, Tuple

import ale_py
import numpy as np

from fastatari.core.options import AtariOptions
from fastatari.core.romfacts import loaded_facts
from fastatari.core.validate import is_int

__all__ = ["INEXACT_RESTORE", "EnvSnapshot", "GameState", "PendingReset", "check_snapshots",
           "pack_frames", "unpack_frames", "warn_if_inexact"]

_NUM_ACTIONS = len(ale_py.Action.__members__)  # ALE's full action set

#: Bumped when the snapshot's content changes: older snapshots are then refused.
FORMAT = 1


#: ROMs whose restore ale-py 0.12.1 does not make exact, and what differs: measured over every
#: ROM ale-py ships (the README's table); :func:`warn_if_inexact` warns for them.
INEXACT_RESTORE: Dict[str, str] = {
    "qbert": "restored into a freshly loaded or just reset emulator (a new process or env), "
             "RAM and screen differ from the first frame, rewards and lives later (ALE does not "
             "save the TIA's partial-frame flag; fixed after ale-py 0.12.1, ALE #732)",
    "tetris": "restored into a freshly loaded or just reset emulator, RAM and screen differ "
              "from the first frame (as Q*bert; fixed after ale-py 0.12.1, ALE #732)",
    "miniature_golf": "ALE saves five of its values as booleans and loads them as ints: a "
                      "restored game may score a hole wrongly (fixed after ale-py 0.12.1, "
                      "ALE #732)",
    "tic_tac_toe_3d": "the screen of the first frames after a restore differs (ALE does not "
                      "save the frame buffer): observations differ, the game does not",
    "yars_revenge": "the screen of the first frame after a restore differs (ALE does not save "
                    "the frame buffer): observations differ when that frame is grabbed "
                    "(frame_skip <= 2)",
}


def warn_if_inexact(game: str) -> None:
    """A ``UserWarning`` when ALE does not restore ``game`` exactly (:data:`INEXACT_RESTORE`)."""
    why = INEXACT_RESTORE.get(game)
    if why is not None:
        warnings.warn(f"fastatari: {game}'s restore is not exact with ale-py "
                      f"{ale_py.__version__}: {why}", UserWarning, stacklevel=3)


def pack_frames(*frames: np.ndarray) -> bytes:
    """uint8 arrays, concatenated and compressed (level 1: fast, and frames compress well)."""
    return zlib.compress(b"".join(np.ascontiguousarray(f).tobytes() for f in frames), 1)


def unpack_frames(data: bytes, *shapes: Tuple[int, ...]) -> Tuple[np.ndarray, ...]:
    """The arrays :func:`pack_frames` packed, given their shapes (``ValueError`` if the data
    is not zlib's or does not hold exactly that many bytes)."""
    if not isinstance(data, bytes):
        raise ValueError(f"snapshot frames must be bytes, got {type(data).__name__}")
    try:
        raw = zlib.decompress(data)
    except zlib.error as error:
        raise ValueError(f"snapshot frames are damaged: {error}") from None
    sizes = [int(np.prod(shape)) for shape in shapes]
    if len(raw) != sum(sizes):
        raise ValueError(f"snapshot frames hold {len(raw)} bytes, expected {sum(sizes)}")
    out, start = [], 0
    for shape, size in zip(shapes, sizes, strict=True):
        out.append(np.frombuffer(raw, np.uint8, size, start).reshape(shape))
        start += size
    return tuple(out)


@dataclass(frozen=True, eq=False)
class PendingReset:
    """Next-step autoreset: the reset a worker ran as soon as an episode ended. The game's
    state is already after it; its observation and info are handed out by the next step."""

    obs: bytes  # packed observation stack
    info: Dict[str, Any]


@dataclass(frozen=True, eq=False)
class GameState:
    """One game's state (see :meth:`fastatari.core.game.AtariGame.snapshot`)."""

    emulator: bytes  # ALEState.serialize(), with its random generator
    np_random: Mapping[str, Any]  # the no-op generator's bit_generator.state
    frames: bytes  # packed: the observation stack, then the pooled full-resolution frame
    lives: int
    continue_game: bool  # episodic_life: the next reset continues the game
    episode: Tuple[float, int, float]  # the game's raw return, agent steps, seconds so far
    # sticky actions: the action (ALE value, paddle strength) the emulator repeats for the
    # first held_frames frames after this state, which ALE's state leaves out (see
    # fastatari.core.sticky); None when no frame repeats it
    held: Optional[Tuple[int, float]] = None
    held_frames: int = 0
    pending: Optional[PendingReset] = None

    def unpack(self, stack_shape: Tuple[int, ...], pooled_shape: Tuple[int, ...]
               ) -> Tuple[np.ndarray, np.ndarray, ale_py.ALEState]:
        """Check every field and return what a restore puts back: the observation stack, the
        pooled frame and the emulator's state. ``ValueError`` for anything a game could not
        take (frames that are not zlib's or not of these shapes, emulator bytes ALE cannot
        read, a generator state numpy refuses, lives, statistics or a held action of the
        wrong kind): a restore checks all of it before it changes anything."""
        stack, pooled = unpack_frames(self.frames, stack_shape, pooled_shape)
        if not isinstance(self.emulator, bytes):
            raise ValueError(f"snapshot emulator state must be bytes, got "
                             f"{type(self.emulator).__name__}")
        try:
            emulator = ale_py.ALEState(self.emulator)
        except Exception:  # truncated or foreign bytes: nanobind's SystemError
            raise ValueError(f"snapshot emulator state ({len(self.emulator)} bytes) is not one "
                             f"ALE can read") from None
        try:
            np.random.PCG64().state = self.np_random  # type: ignore[assignment]
        except Exception as error:  # TypeError, ValueError, KeyError: all damage
            raise ValueError(f"snapshot np_random is not a PCG64 state: {error!r}") from None
        _check(is_int(self.lives) and self.lives >= 0, "lives", self.lives,
               "an int >= 0")
        _check(isinstance(self.continue_game, (bool, np.bool_)), "continue_game",
               self.continue_game, "a bool")
        episode = self.episode
        _check(isinstance(episode, tuple) and len(episode) == 3 and _is_real(episode[0])
               and is_int(episode[1]) and episode[1] >= 0 and _is_real(episode[2]),
               "episode", episode, "(return, agent steps >= 0, seconds)")
        held = self.held
        _check(held is None or (isinstance(held, tuple) and len(held) == 2
                                and is_int(held[0]) and 0 <= held[0] < _NUM_ACTIONS
                                and _is_real(held[1])),
               "held", held, f"None or (ALE action in [0, {_NUM_ACTIONS}), strength)")
        _check(is_int(self.held_frames) and self.held_frames >= 0
               and (held is not None or self.held_frames == 0), "held_frames",
               self.held_frames, "an int >= 0, 0 without a held action")
        if self.pending is not None:
            _check(isinstance(self.pending, PendingReset) and isinstance(self.pending.info, dict),
                   "pending", self.pending, "None or a PendingReset with an info dict")
            unpack_frames(self.pending.obs, stack_shape)
        return stack, pooled, emulator

    def parts(self) -> Iterator[bytes]:
        """Everything it holds, as bytes, for a digest."""
        yield self.emulator
        yield repr(sorted(self.np_random.items())).encode()
        yield self.frames
        yield repr((self.lives, self.continue_game, self.episode, self.held,
                    self.held_frames)).encode()
        if self.pending is not None:
            yield self.pending.obs
            yield repr(sorted((key, _plain(value)) for key, value in
                              self.pending.info.items())).encode()


def _is_real(value: Any) -> bool:
    return is_int(value) or (isinstance(value, (float, np.floating)) and math.isfinite(value))


def _check(ok: bool, name: str, value: Any, rule: str) -> None:
    if not ok:
        raise ValueError(f"snapshot {name} must be {rule}, got {value!r}")


def _plain(value: Any) -> Any:
    return value.tobytes() if isinstance(value, np.ndarray) else value


def _digest(parts: Sequence[bytes]) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()


@dataclass(frozen=True, eq=False)
class EnvSnapshot:
    """One env's state: restore it into any env of the same game and options (an
    :class:`~fastatari.AtariEnv`, any env of a vector env, in this process or another) and that
    env continues exactly as the cloned one would have. Picklable, about 16 KB for 84x84 gray
    frames.

    Attributes
    ----------
    game : str
        The ROM id.
    options : AtariOptions
        The game's options (mode and difficulty included).
    state : GameState
        The game's state.
    ended : bool
        The env's last step ended its episode, and the next step resets it (next-step
        autoreset), or the caller must (``autoreset_mode="disabled"``).
    seed : int or None
        Its last reset seed (a restarted worker seeds the env's new game from it).
    """

    game: str
    options: AtariOptions
    state: GameState
    ended: bool = False
    seed: Optional[int] = None
    ale_py_version: str = ale_py.__version__
    format: int = FORMAT
    digest: bytes = field(default=b"", repr=False)

    def __post_init__(self) -> None:
        if not self.digest:
            object.__setattr__(self, "digest", self._compute_digest())

    def _compute_digest(self) -> bytes:
        head = repr((self.game, self.options, self.ended, self.seed, self.ale_py_version,
                     self.format)).encode()
        return _digest([head, *self.state.parts()])

    def check(self, game: str, options: AtariOptions) -> None:
        """``ValueError`` unless this is an intact snapshot of ``game`` with ``options``, from
        this snapshot format and ale-py version, whose every field a game can take
        (:meth:`GameState.unpack`). The digest finds damage, not forgery: it is no signature,
        and a snapshot (like any pickle) from someone else is only as safe as its source."""
        if self.format != FORMAT:
            raise ValueError(f"snapshot format {self.format} is not this fastatari's "
                             f"({FORMAT})")
        if self.ale_py_version != ale_py.__version__:
            raise ValueError(f"snapshot taken with ale-py {self.ale_py_version}, this is ale-py "
                             f"{ale_py.__version__}: emulator states do not carry over")
        if self.game != game:
            raise ValueError(f"snapshot of {self.game!r} cannot restore a {game!r} env")
        if self.options != options:
            theirs, ours = vars(self.options), vars(options)
            differ = {k: (theirs[k], ours[k]) for k in ours if theirs.get(k) != ours[k]}
            raise ValueError(f"snapshot taken with other options (snapshot's, env's): {differ}")
        if self._compute_digest() != self.digest:
            raise ValueError("snapshot is damaged: its content does not match its digest")
        # the digest says the content is what was written, not that a game can take it
        screen = loaded_facts(game).screen
        self.state.unpack(options.observation_shape,
                          screen if options.grayscale_obs else screen + (3,))


def check_snapshots(snapshots: Any, count: int) -> Sequence[EnvSnapshot]:
    """``snapshots`` as a sequence of ``count`` :class:`EnvSnapshot` (``ValueError`` for
    anything else, as for a foreign object)."""
    if isinstance(snapshots, EnvSnapshot) or not isinstance(snapshots, (list, tuple)):
        raise ValueError(f"snapshots must be a list of {count} EnvSnapshot (what clone() "
                         f"returns), got {type(snapshots).__name__}")
    if len(snapshots) != count:
        raise ValueError(f"{len(snapshots)} snapshots for {count} envs")
    for snap in snapshots:
        if not isinstance(snap, EnvSnapshot):
            raise ValueError(f"not a fastatari snapshot: {type(snap).__name__}")
    return snapshots
