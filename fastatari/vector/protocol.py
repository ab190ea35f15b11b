"""The messages between the trainer and its workers, encoded and decoded in one place.

Every message is one ``send_bytes`` of a connection: a one-byte tag, then a payload.

Commands (trainer -> worker):

======  =================================================================================
tag     payload
======  =================================================================================
``s``   STEP: ``chunk`` (uint16, little-endian), then one :class:`Op` byte per env of the
        worker, in its ``env_ids`` order. Answered by DONE after every ``chunk`` envs run and
        after the last (``chunk`` 0: once, after the last). The only per-step message: raw
        bytes, nothing pickled.
``r``   RESET: pickled ``[(env_id, seed or None), ...]``. Answered by DONE.
``g``   RENDER: pickled ``[env_id, ...]``. Answered by RENDERED.
``c``   CLOSE: nothing. Not answered; the worker exits.
======  =================================================================================

Replies (worker -> trainer): ``y`` READY (the worker's first resets are done), ``d`` DONE, ``g``
RENDERED (pickled list of RGB screens), ``e`` ERROR (the worker's traceback, UTF-8). A command
that raises is answered by ERROR instead of its (remaining) DONE replies.

Start-up: the worker's first message from the trainer is :class:`WorkerConfig`, pickled.
"""

from __future__ import annotations

import enum
import pickle
from dataclasses import dataclass, field
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

from fastatari.core.options import AtariOptions
from fastatari.vector.buffers import Handle, Layout

__all__ = ["Command", "Op", "Reply", "ReplyKind", "WorkerConfig", "decode_reply",
           "encode_close", "encode_render", "encode_reset", "encode_step", "decode_step"]

ResetRequest = Tuple[int, Optional[int]]  # (env id, seed or None)


class Op(enum.IntEnum):
    """What a STEP command asks of one env."""

    IDLE = 0
    STEP = 1
    RESET = 2


class Command(bytes, enum.Enum):
    """A command's tag byte."""

    STEP = b"s"
    RESET = b"r"
    RENDER = b"g"
    CLOSE = b"c"


class ReplyKind(bytes, enum.Enum):
    """A reply's tag byte; RESTARTED is the trainer's own: the worker died (or hung) and a
    new one took its place, its envs reset and reported truncated."""

    READY = b"y"
    DONE = b"d"
    RENDERED = b"g"
    ERROR = b"e"
    RESTARTED = b"!"


class Reply(NamedTuple):
    """A decoded reply (a named tuple: one is made per worker per step). ``payload``:
    RENDERED's screens, ERROR's traceback. Set by the executor: ``envs``, the envs a step's
    DONE covers, those an ERROR left unanswered, or those whose replies died with a RESTARTED
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
    prereset: bool = False  # next-step autoreset: reset ended envs right after answering
    ale_actions: bool = False  # actions are ALE's 18 (enum order) whatever each game's set
    restarted: bool = False  # the resets replace games lost with a dead worker
    cpu: Optional[int] = None  # pin the process to this CPU before touching memory
    emulate: bool = True  # False: a step only writes its reward (the transport's benchmark)
    memory: Optional[Handle] = field(default=None)  # the shared memory, where not inherited


# -- commands ------------------------------------------------------------------------------------
def encode_step(chunk: int, ops: bytes) -> bytes:
    return Command.STEP.value + chunk.to_bytes(2, "little") + ops


def decode_step(data: bytes) -> Tuple[int, bytes]:
    """``(chunk, ops)`` of a STEP command."""
    return int.from_bytes(data[1:3], "little"), data[3:]


def encode_reset(requests: Sequence[ResetRequest]) -> bytes:
    return Command.RESET.value + pickle.dumps(list(requests), pickle.HIGHEST_PROTOCOL)


def encode_render(env_ids: Sequence[int]) -> bytes:
    return Command.RENDER.value + pickle.dumps([int(i) for i in env_ids])


def encode_close() -> bytes:
    return Command.CLOSE.value


def decode_command(data: bytes) -> Tuple[Command, Any]:
    """A command other than STEP (the worker reads STEP's tag first, on its fast path)."""
    command = Command(data[:1])
    payload = pickle.loads(data[1:]) if command in (Command.RESET, Command.RENDER) else None
    return command, payload


# -- replies -------------------------------------------------------------------------------------
READY = ReplyKind.READY.value
DONE = ReplyKind.DONE.value


def encode_ready() -> bytes:
    return READY


def encode_rendered(screens: List[Any]) -> bytes:
    return ReplyKind.RENDERED.value + pickle.dumps(screens, pickle.HIGHEST_PROTOCOL)


def encode_error(text: str) -> bytes:
    return ReplyKind.ERROR.value + text.encode("utf-8", "replace")


_DONE_REPLY = Reply(ReplyKind.DONE)


def decode_reply(data: bytes) -> Reply:
    if data == DONE:
        return _DONE_REPLY
    kind = ReplyKind(data[:1])
    if kind is ReplyKind.RENDERED:
        return Reply(kind, pickle.loads(data[1:]))
    if kind is ReplyKind.ERROR:
        return Reply(kind, data[1:].decode("utf-8", "replace"))
    return Reply(kind)
