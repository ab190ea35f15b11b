"""The folder a replay memory's frames live in on disk (``disk=FOLDER``).

Each frame store there writes its chunks as files of a folder of its own, ``live-*``, held by
a lock on its ``lock`` file while the store lives and removed with it. A store killed with its
process leaves its folder behind: the next store made in the same folder removes every
``live-*`` folder whose lock nobody holds (the system lets go of a dead process's locks).
A checkpoint saved into the folder (:func:`fastatari.checkpoint.save`, a memory's ``save``)
lists the complete chunks as hard links to these files, so they outlive the store.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import weakref
from pathlib import Path
from typing import IO, Any

__all__ = ["LiveFolder"]

PREFIX = "live-"
LOCK = "lock"


def _try_lock(f: IO[bytes]) -> bool:
    """Take the lock of the open file ``f`` without waiting: whether it was free."""
    try:
        if sys.platform == "win32":
            import msvcrt
            msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _sweep(folder: Path) -> None:
    """Remove the ``live-*`` folders of stores that are gone (their lock free)."""
    for path in folder.glob(PREFIX + "*"):
        try:
            with open(path / LOCK, "rb") as f:
                if not _try_lock(f):
                    continue  # a store in use, in this process or another
        except OSError:
            continue  # being made (no lock file yet), or not a store's
        shutil.rmtree(path, ignore_errors=True)


def _same_file(f: IO[bytes], path: Path) -> bool:
    """Whether ``path`` still names the open file ``f`` (not removed since it was opened)."""
    try:
        return os.path.samestat(os.fstat(f.fileno()), os.stat(path))
    except OSError:
        return False


def _remove(path: Path, lock: IO[bytes]) -> None:
    lock.close()
    shutil.rmtree(path, ignore_errors=True)


class LiveFolder:
    """One frame store's own folder of chunk files under ``folder`` (an existing folder),
    locked while this object lives, removed when it goes (or at the interpreter's exit)."""

    def __init__(self, folder: Any) -> None:
        folder = Path(os.fspath(folder))
        if not folder.is_dir():
            raise ValueError(f"disk must be an existing folder, got {str(folder)!r}")
        _sweep(folder)
        for _ in range(100):
            path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=folder))
            lock = open(path / LOCK, "wb")
            if _try_lock(lock) and _same_file(lock, path / LOCK):
                break
            # another store's sweep took the lock between the file's making and ours (and may
            # have removed the folder): a new one
            lock.close()
            shutil.rmtree(path, ignore_errors=True)
        else:
            raise OSError(f"cannot make a locked folder in {folder}")
        self.path = path
        self._finalizer = weakref.finalize(self, _remove, path, lock)

    def _chunk_path(self, number: int) -> str:
        return str(self.path / f"{number}.frames")

    def new_chunk(self, number: int, nbytes: int) -> str:
        """A new file for chunk ``number``, ``nbytes`` of zeros: its name. An old file of that
        name is unlinked first, never rewritten (a checkpoint's hard link may share it)."""
        path = self._chunk_path(number)
        self.drop(number)
        with open(path, "xb") as f:
            f.truncate(nbytes)
        return path

    def drop(self, number: int) -> None:
        """Unlink chunk ``number``'s file, if there is one (its mapping stays valid; where the
        system refuses while it is mapped, it goes with the folder)."""
        try:
            os.unlink(self._chunk_path(number))
        except OSError:
            pass

    def close(self) -> None:
        """Remove the folder now (every chunk unmapped first, where the system needs it)."""
        self._finalizer()
