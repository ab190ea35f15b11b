"""One shared-memory region holding every per-env array the workers write and the trainer reads.

The columns come from :mod:`fastatari.core.schema` (plus the observations and a few control words),
so a new info field needs no edit here. The memory has no name in the file system where the
platform allows it (Linux ``memfd_create``; elsewhere on POSIX a temporary file unlinked at
once): it is passed to the workers as a file descriptor and disappears with the last process
that maps it, so a killed trainer cannot leak it. (On Windows it has a name, and Windows frees it
with its last handle.) Which of these: :data:`fastatari.vector.host.HOST`'s ``memory``.
"""

from __future__ import annotations

import mmap
import os
import sys
import tempfile
import uuid
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from fastatari.core.schema import GAME_FIELDS, INFO_FIELDS, STEP_FIELDS, Field
from fastatari.vector.host import HOST

#: The control words at offset 0: fa_wait.h's FA_CONTROL_BYTES (a test holds them equal;
#: written here so that the layout needs no compiled module).
CONTROL_BYTES = 320
#: Output slots with ``copy=True``: a training loop holds the last observations while it asks
#: for the next (two slots in turn); the third serves a loop that keeps one more batch.
#: Untouched slots cost no memory (the pages are mapped at their first write).
OUTPUT_SLOTS = 3

__all__ = ["Layout", "OUTPUT_SLOTS", "SharedMemory", "SharedBuffers"]

ColumnSpec = Tuple[str, Tuple[int, ...]]  # (dtype, per-env shape)


def _columns(obs_shape: Tuple[int, ...], continuous: bool) -> Dict[str, ColumnSpec]:
    columns: Dict[str, ColumnSpec] = {
        "obs": ("uint8", obs_shape),
        "final_obs": ("uint8", obs_shape),  # same-step autoreset: the ended episode's last obs
        # an action index, or a continuous action (radius, theta, fire)
        "action": ("float32", (3,)) if continuous else ("int64", ()),
        "op": ("uint8", ()),  # the env's next op (messages.Op), written by the trainer, taken
        #                       (set back to 0) by its worker
        "ticket": ("int64", ()),  # the order of its last completion (-1: not completed)
        "pending": ("uint32", ()),  # at each worker's first env: a message waits in its pipe
        "progress": ("int64", ()),  # at each worker's first env: envs it completed
        "game_done": ("bool", ()),  # this step ended a game: game_* hold its statistics
        "has_final": ("bool", ()),  # final_* hold the ended episode's last step
        "life_loss": ("bool", ()),  # life_loss_info: a life lost, the episode goes on
        # which stack obs holds: one more after a step's frame is pushed onto it, two more
        # after any other change (a reset, a restore): the stack a step pushed onto is known
        "obs_serial": ("int64", ()),
        "final_serial": ("int64", ()),  # final_obs's (same-step autoreset, a restart's)
    }
    for field in STEP_FIELDS:
        columns[field.name] = (field.dtype, field.shape)
    for field in INFO_FIELDS:
        columns[field.name] = (field.dtype, field.shape)
        columns["final_" + field.name] = (field.dtype, field.shape)
    for field in GAME_FIELDS:
        columns["game_" + field.name] = (field.dtype, field.shape)
    return columns


def _batch_columns(obs_shape: Tuple[int, ...]) -> Dict[str, ColumnSpec]:
    """The columns of a batch slot, one row per env of a ``recv`` batch: what a ``recv``
    returns, written by the workers in place, and each row's ``mark`` (the ticket of the
    completion that wrote it)."""
    every = _columns(obs_shape, False)
    names = ["obs", *(f.name for f in STEP_FIELDS), *(f.name for f in INFO_FIELDS),
             "game_done", *("game_" + f.name for f in GAME_FIELDS)]
    return dict({name: every[name] for name in names}, env_id=("int64", ()), mark=("int64", ()))


@dataclass(frozen=True)
class Layout:
    """Where each column lives in the shared memory: picklable, so workers map the same views."""

    num_envs: int
    obs_shape: Tuple[int, ...]
    continuous: bool = False  # the action column holds continuous actions
    #: Output slots: whole observation batches the workers also write (see SharedBuffers)
    outputs: int = 0
    #: Batch slots of ``batch_size`` rows: ``recv`` batches the workers write in place
    batch_slots: int = 0
    batch_size: int = 0

    def offsets(self) -> Dict[str, Tuple[int, np.dtype, Tuple[int, ...]]]:
        """Column name -> (byte offset, dtype, full shape); columns are cache-line aligned,
        after the control words (:data:`CONTROL_BYTES` at offset 0), then the output slots
        and the batch slots (``batch_first``, then ``batch<s>.<column>``)."""
        placed: List[Tuple[str, str, Tuple[int, ...]]] = [
            (name, dtype, (self.num_envs,) + shape)
            for name, (dtype, shape) in _columns(self.obs_shape, self.continuous).items()]
        if self.outputs:
            placed.append(("outputs", "uint8", (self.outputs, self.num_envs) + self.obs_shape))
        if self.batch_slots:
            placed.append(("batch_first", "int64", (self.batch_slots,)))
            placed += [(f"batch{s}.{name}", dtype, (self.batch_size,) + shape)
                       for s in range(self.batch_slots)
                       for name, (dtype, shape) in _batch_columns(self.obs_shape).items()]
        out: Dict[str, Tuple[int, np.dtype, Tuple[int, ...]]] = {
            "control": (0, np.dtype(np.uint8), (CONTROL_BYTES,))}
        offset = CONTROL_BYTES
        for name, dtype, full in placed:
            dt = np.dtype(dtype)
            offset = (offset + 63) // 64 * 64
            out[name] = (offset, dt, full)
            offset += int(np.prod(full, dtype=np.int64)) * dt.itemsize
        return out

    @property
    def nbytes(self) -> int:
        offset, dtype, shape = list(self.offsets().values())[-1]
        return max(1, offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)


Handle = Union[int, str]  # a file descriptor (POSIX) or a mapping name (Windows)


class SharedMemory:
    """A shared-memory segment of ``size`` bytes that cannot outlive the processes mapping it.

    ``SharedMemory(size)`` creates it; ``SharedMemory(size, handle)`` maps one created elsewhere
    (:attr:`handle`: a file descriptor to pass to a child process, or on Windows the mapping's
    name, which Windows frees with its last handle).
    """

    def __init__(self, size: int, handle: Optional[Handle] = None) -> None:
        self.size = size
        self.fd: Optional[int] = None
        if HOST.memory == "named":
            name = handle if isinstance(handle, str) else f"fastatari-{uuid.uuid4().hex}"
            self.handle: Handle = name
            self.mmap = _named_mapping(size, name)
            return
        if handle is None:
            handle = _anonymous_file(size)
        self.fd = self.handle = int(handle)
        self.mmap = mmap.mmap(self.fd, size)

    def close(self) -> None:
        """Close the descriptor and unmap; while views of the memory live, the mapping goes
        with the last of them instead. Safe to call more than once."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        mapping = self.__dict__.get("mmap")
        if mapping is not None:
            try:
                mapping.close()
            except BufferError:  # views hold the mapping: the last of them unmaps it
                del self.mmap


def _named_mapping(size: int, name: str) -> mmap.mmap:
    """``size`` zero bytes of shared memory named ``name`` (Windows: freed with its last
    handle)."""
    if sys.platform != "win32":  # (no HOST has "named" memory elsewhere)
        raise OSError("a named shared mapping needs Windows")
    return mmap.mmap(-1, size, tagname=name)


def _anonymous_file(size: int) -> int:
    """A descriptor of ``size`` zero bytes of shared memory with no name anywhere."""
    if HOST.memory == "memfd":  # Linux
        fd = os.memfd_create("fastatari", os.MFD_CLOEXEC)
    else:  # other POSIX: a temporary file, unlinked before anyone could leak it
        directory = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix="fastatari-", dir=directory)
        os.unlink(path)
    os.ftruncate(fd, size)
    return fd


def _slots(memory: mmap.mmap, offset: int, dtype: np.dtype, shape: Tuple[int, ...]
           ) -> Tuple[np.ndarray, ...]:
    """One uint8 array per slot of ``shape[0]``, each on its own shaped memoryview of
    ``memory`` (:func:`_own_view`)."""
    size = int(np.prod(shape[1:]))
    return tuple(_own_view(memory, at, dtype, shape[1:])
                 for at in range(offset, offset + shape[0] * size, size))


def _format(dtype: np.dtype) -> str:
    """The memoryview (struct) format NumPy reads back as ``dtype`` itself: int64 is ``l``
    where a C long has 8 bytes and ``q`` elsewhere (``q`` on Linux reads back as the distinct
    ``longlong`` type)."""
    return next(c for c in "B?bhHiIlLqQfd" if np.dtype(c).type is dtype.type)


def _own_view(memory: mmap.mmap, offset: int, dtype: np.dtype, shape: Tuple[int, ...]
              ) -> np.ndarray:
    """An array of ``memory`` at ``offset`` on a memoryview of its own, shaped already: every
    view a caller makes of it is based on it, so its reference count tells whether it is held
    (and the memory is not unmapped under an array a caller holds: the view exports it)."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    flat = memoryview(memory)[offset:offset + nbytes]
    view = flat.cast(_format(dtype), shape)  # type: ignore[call-overload]
    return np.asarray(view)


class SharedBuffers:
    """Typed numpy views over a :class:`SharedMemory`, one per column of the :class:`Layout`.

    Info columns are in :attr:`info` (and, for same-step autoreset, :attr:`final_info`) by
    :data:`fastatari.core.schema.INFO_FIELDS` name; episode statistics by
    :data:`fastatari.core.schema.GAME_FIELDS` name (in :attr:`game`).

    :attr:`outputs` holds the output slots, one array of every env's observation each, which
    the step can return instead of a copy of :attr:`obs`: each slot's array is based on its
    own memoryview, so that every view of it a caller makes is based on that array, and the
    array's reference count tells whether the slot is still held.

    :attr:`batches` holds the batch slots the same way, one dict of columns each
    (``batch_size`` rows: the observations, the step's fields, every info and game column,
    ``env_id`` and ``mark``): the workers write each env's results of an async step into the
    row of a ``recv`` batch in place, where :attr:`batch_first` (one per slot, -1: closed)
    says which tickets' rows a slot holds (:class:`~fastatari.vector._wait.Deliverer`).
    """

    control: np.ndarray
    obs: np.ndarray
    final_obs: np.ndarray
    action: np.ndarray
    op: np.ndarray
    ticket: np.ndarray
    pending: np.ndarray
    progress: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    game_done: np.ndarray
    has_final: np.ndarray
    life_loss: np.ndarray
    obs_serial: np.ndarray
    final_serial: np.ndarray
    info: Dict[str, np.ndarray]
    final_info: Dict[str, np.ndarray]
    game: Dict[str, np.ndarray]
    outputs: Tuple[np.ndarray, ...]
    batch_first: np.ndarray
    batches: Tuple[Dict[str, np.ndarray], ...]

    def __init__(self, layout: Layout, handle: Optional[Handle] = None) -> None:
        self.layout = layout
        self.memory = SharedMemory(layout.nbytes, handle)
        # frombuffer (not ndarray(buffer=...)) exports the mmap's buffer, so the mmap refuses to
        # unmap while a view lives (BufferError) instead of leaving the view dangling.
        offsets = layout.offsets()
        outputs = offsets.pop("outputs", None)
        self.outputs = () if outputs is None else _slots(self.memory.mmap, *outputs)
        slot_names = [name for name in offsets if name.startswith("batch")]
        slot_views = {name: _own_view(self.memory.mmap, *offsets.pop(name))
                      for name in slot_names}
        self.batch_first = slot_views.pop("batch_first", np.full(0, -1, np.int64))
        if handle is None:  # made here: no batch is open (-1)
            self.batch_first[:] = -1
        self.batches = tuple({name.split(".", 1)[1]: view for name, view in slot_views.items()
                              if name.startswith(f"batch{s}.")}
                             for s in range(layout.batch_slots))
        views = {name: np.frombuffer(self.memory.mmap, dtype, int(np.prod(shape)),
                                     offset).reshape(shape)
                 for name, (offset, dtype, shape) in offsets.items()}
        self.control = views["control"]
        self.obs = views["obs"]
        self.final_obs = views["final_obs"]
        self.action = views["action"]
        self.op = views["op"]
        self.ticket = views["ticket"]
        self.pending = views["pending"]
        self.progress = views["progress"]
        self.reward = views["reward"]
        self.terminated = views["terminated"]
        self.truncated = views["truncated"]
        self.game_done = views["game_done"]
        self.has_final = views["has_final"]
        self.life_loss = views["life_loss"]
        self.obs_serial = views["obs_serial"]
        self.final_serial = views["final_serial"]
        self.info = {f.name: views[f.name] for f in INFO_FIELDS}
        self.final_info = {f.name: views["final_" + f.name] for f in INFO_FIELDS}
        self.game = {f.name: views["game_" + f.name] for f in GAME_FIELDS}
        # what the envs write: the columns a remote executor ships back (not the commands)
        self._results = {name: view for name, view in views.items()
                         if name not in ("control", "action", "op", "ticket", "pending",
                                         "progress")}
        self._open = True

    def result_columns(self, fields: Sequence[Field], with_obs: bool = True
                       ) -> List[Tuple[str, np.ndarray, str]]:
        """The columns of the envs' results that a batch of them has, each as ``(name,
        column, kind)``: its name in a batch slot, and how an env's row is written
        (:class:`~fastatari.vector._wait.RowRule`: ``"plain"``; ``"terminated"``, or'ed with
        a lost life where asked; ``"game"``, a finished game's statistics, zeros where none
        ended). ``fields``: the info fields of the envs' options; ``with_obs``: the
        observations too (a ``recv`` batch has them; a step's come from an output slot)."""
        columns = [("obs", self.obs, "plain")] if with_obs else []
        columns += [("reward", self.reward, "plain"), ("terminated", self.terminated, "terminated"),
                    ("truncated", self.truncated, "plain")]
        columns += [(f.name, self.info[f.name], "plain") for f in fields]
        columns.append(("game_done", self.game_done, "plain"))
        columns += [("game_" + f.name, self.game[f.name], "game") for f in GAME_FIELDS]
        return columns

    def rows(self, ids: np.ndarray, finals: bool) -> Dict[str, np.ndarray]:
        """Copies of the result columns' rows ``ids`` (the ``final_*`` columns only with
        ``finals``): what an executor on another machine sends back."""
        return {name: view[ids] for name, view in self._results.items()
                if finals or not name.startswith("final_")}

    def put_rows(self, ids: np.ndarray, rows: Dict[str, np.ndarray]) -> None:
        """Write :meth:`rows` of another buffer set into the rows ``ids`` of this one."""
        for name, values in rows.items():
            self._results[name][ids] = values

    @property
    def handle(self) -> Handle:
        """What a worker needs to map the same memory (see :class:`SharedMemory`)."""
        return self.memory.handle

    def close(self) -> None:
        """Drop the views and unmap. If the caller still holds views (``copy=False``, or
        output slots), the mapping lives on until the last of them goes; the memory is freed
        with its last user either way."""
        if not self._open:
            return
        self._open = False
        for name in ("control", "obs", "final_obs", "action", "op", "ticket", "pending",
                     "progress", "reward", "terminated", "truncated", "game_done", "has_final",
                     "life_loss", "obs_serial", "final_serial", "info", "final_info", "game",
                     "_results", "outputs", "batch_first", "batches"):
            delattr(self, name)
        self.memory.close()
