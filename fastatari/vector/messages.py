"""The messages between the trainer and its workers through their pipes, encoded in one place.

Steps do not use the pipes: the trainer writes each env's :class:`Op` into shared memory and
publishes it, the worker completes each env there (``csrc/fa_wait.c``). The pipes carry
start-up, the rare commands, their replies and errors. Every message is one ``send_bytes``
of a connection: a one-byte tag, then a payload.

Commands (trainer -> worker), each announced by the worker's ``pending`` word and a publish:

======  =================================================================================
tag     payload
======  =================================================================================
``r``   RESET: pickled ``[(env_id, seed or None), ...]``. Answered by DONE.
``g``   RENDER: pickled ``[env_id, ...]``. Answered by RENDERED.
``k``   CLONE: pickled ``[env_id, ...]``. Answered by CLONED.
``s``   RESTORE: pickled ``[(env_id, GameState), ...]``. Answered by DONE.
``c``   CLOSE: nothing. Not answered; the worker exits.
======  =================================================================================

Replies (worker -> trainer): ``y`` READY (the worker's first resets are done), ``d`` DONE,
``g`` RENDERED (pickled list of RGB screens), ``k`` CLONED (pickled list of
:class:`~fastatari.core.snapshot.GameState`), ``e`` ERROR (the worker's traceback, UTF-8). A
worker whose command raises (an op of a step, a reset, a render) sends ERROR, unasked, and
exits: the trainer replaces it as it replaces a dead one.

Start-up: the worker's first message from the trainer is :class:`WorkerConfig`, pickled.
"""

from __future__ import annotations

import enum
import pickle
from dataclasses import dataclass, field
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

from fastatari.core.options import AtariOptions
from fastatari.vector._wait import OPS
from fastatari.vector.buffers import Handle, Layout

__all__ = ["GAME_FACTORY", "Command", "Op", "Reply", "ReplyKind", "WorkerConfig",
           "decode_command", "decode_reply", "encode_clone", "encode_close", "encode_error",
           "encode_render", "encode_reset", "encode_restore"]

ResetRequest = Tuple[int, Optional[int]]  # (env id, seed or None)

#: What a worker builds its games with, imported in the worker: a class or function taking
#: :class:`~fastatari.core.game.AtariGame`'s arguments ``(rom, options, stack=, seed=)`` and
#: answering what the worker asks of a game. Another one stands in for the emulator where
#: something else is measured or tested (a benchmark of the transport, an injected fault).
GAME_FACTORY = "fastatari.core.game:AtariGame"


class Op(enum.IntEnum):
    """What the trainer asks of one env (its ``op`` word in shared memory; the values are
    declared once, in ``_codes.pxd``)."""

    IDLE = OPS["IDLE"]
    STEP = OPS["STEP"]
    RESET = OPS["RESET"]


class Command(bytes, enum.Enum):
    """A command's tag byte."""

    RESET = b"r"
    RENDER = b"g"
    CLONE = b"k"
    RESTORE = b"s"
    CLOSE = b"c"


class ReplyKind(bytes, enum.Enum):
    """A reply's tag byte; RESTARTED is the trainer's own: the worker died (or hung) and a
    new one took its place, its envs reset and reported truncated."""

    READY = b"y"
    DONE = b"d"
    RENDERED = b"g"
    CLONED = b"k"
    ERROR = b"e"
    RESTARTED = b"!"


class Reply(NamedTuple):
    """A decoded reply (a named tuple: one is made per worker per step). ``payload``:
    RENDERED's screens, CLONED's game states, ERROR's traceback, and RESTARTED's when the
    worker was restarted because it raised (None when it died or hung). Set by the executor:
    ``envs``, the envs a step's DONE covers, or those whose replies died with a RESTARTED
    worker; ``restarted``, the envs a RESTARTED worker's replacement reset (its whole block);
    ``source``, who answered (``"worker 3"``)."""

    kind: ReplyKind
    payload: Any = None
    envs: Any = None
    restarted: Any = None
    source: str = ""


@dataclass(frozen=True)
class WorkerConfig:
    """Everything a worker needs to start; sent once, right after it is launched."""

    index: int
    env_ids: Tuple[int, ...]  # ascending; not necessarily contiguous (cost-balanced)
    games: Tuple[Tuple[str, AtariOptions], ...]  # (ROM id, options) of each env of env_ids
    layout: Layout
    same_step: bool
    resets: Tuple[ResetRequest, ...]  # run before READY
    reset_ahead: bool = False  # next-step autoreset: reset ended envs right after answering
    ale_actions: bool = False  # actions are ALE's 18 (enum order) whatever each game's set
    restarted: bool = False  # the resets replace games lost with a dead worker
    cpu: Optional[int] = None  # pin the process to this CPU before touching memory
    game_factory: str = GAME_FACTORY  # "module:qualname" of what builds each game
    wake_fd: int = -1  # the eventfd that wakes the trainer (inherited; -1: it naps)
    memory: Optional[Handle] = field(default=None)  # the shared memory, where not inherited


# -- commands ------------------------------------------------------------------------------------
def encode_reset(requests: Sequence[ResetRequest]) -> bytes:
    return Command.RESET.value + pickle.dumps(list(requests), pickle.HIGHEST_PROTOCOL)


def encode_render(env_ids: Sequence[int]) -> bytes:
    return Command.RENDER.value + pickle.dumps([int(i) for i in env_ids])


def encode_clone(env_ids: Sequence[int]) -> bytes:
    return Command.CLONE.value + pickle.dumps([int(i) for i in env_ids])


def encode_restore(items: Sequence[Tuple[int, Any]]) -> bytes:
    return Command.RESTORE.value + pickle.dumps(list(items), pickle.HIGHEST_PROTOCOL)


def encode_close() -> bytes:
    return Command.CLOSE.value


def decode_command(data: bytes) -> Tuple[Command, Any]:
    command = Command(data[:1])
    payload = pickle.loads(data[1:]) if command is not Command.CLOSE else None
    return command, payload


# -- replies -------------------------------------------------------------------------------------
READY = ReplyKind.READY.value
DONE = ReplyKind.DONE.value


def encode_ready() -> bytes:
    return READY


def encode_rendered(screens: List[Any]) -> bytes:
    return ReplyKind.RENDERED.value + pickle.dumps(screens, pickle.HIGHEST_PROTOCOL)


def encode_cloned(states: List[Any]) -> bytes:
    return ReplyKind.CLONED.value + pickle.dumps(states, pickle.HIGHEST_PROTOCOL)


def encode_error(text: str) -> bytes:
    return ReplyKind.ERROR.value + text.encode("utf-8", "replace")


_DONE_REPLY = Reply(ReplyKind.DONE)


def decode_reply(data: bytes) -> Reply:
    if data == DONE:
        return _DONE_REPLY
    kind = ReplyKind(data[:1])
    if kind in (ReplyKind.RENDERED, ReplyKind.CLONED):
        return Reply(kind, pickle.loads(data[1:]))
    if kind is ReplyKind.ERROR:
        return Reply(kind, data[1:].decode("utf-8", "replace"))
    return Reply(kind)
