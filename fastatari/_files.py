"""Files fastatari writes for the user (videos, episode logs, evaluation results, benchmark
reports): a private utility below every module that writes one.

An existing file is overwritten, but never through a symbolic link unless the caller asks: a
link planted where a log or video goes would otherwise redirect the write to any file the user
can write. :func:`check_output` says, before any work starts, what writing a path would raise
later; :func:`write_atomically` refuses a link again when it writes, then writes the whole file
into a temporary file beside it and renames it into place: a link planted between that check and
the rename is replaced, not followed, and a failed write leaves the old file as it was.
"""

from __future__ import annotations

import errno
import os
import secrets
from typing import BinaryIO, Callable, Optional

__all__ = ["check_not_symlink", "check_output", "write_atomically"]


def check_not_symlink(path: str, follow_symlinks: bool = False) -> None:
    """``OSError`` (``ELOOP``, as ``open`` with ``O_NOFOLLOW`` gives) when ``path`` is a
    symbolic link and ``follow_symlinks`` is False."""
    if not follow_symlinks and os.path.islink(path):
        raise OSError(errno.ELOOP, f"refusing to write through the symbolic link {path!r} "
                                   f"(-> {os.readlink(path)!r}); pass follow_symlinks=True "
                                   f"(on the command line: --follow-symlinks) to write to "
                                   f"its target")


def check_output(path: str, follow_symlinks: bool = False, what: str = "a file") -> None:
    """Raise now what writing ``what`` to ``path`` would raise later. Nothing is created:
    missing folders are made at the write.

    Raises
    ------
    OSError
        ``path`` is a symbolic link and ``follow_symlinks`` is False (``ELOOP``).
    IsADirectoryError
        ``path`` is a directory.
    NotADirectoryError
        A parent of ``path`` is a file.
    PermissionError
        ``path``, or the folder it would be created in, is not writable; or ``path`` exists
        and is not a regular file (a device such as ``/dev/full``, a pipe).
    """
    check_not_symlink(path, follow_symlinks)
    target = os.path.realpath(path) if follow_symlinks else path
    if os.path.isdir(target):
        raise IsADirectoryError(f"cannot write {what} to {path!r}: it is a directory (name a "
                                f"file in it)")
    if os.path.exists(target):
        if not os.path.isfile(target):
            raise PermissionError(f"cannot write {what} to {path!r}: it exists and is not a "
                                  f"regular file")
        if not os.access(target, os.W_OK):
            raise PermissionError(f"cannot write {what} to {path!r}: permission denied")
    # the nearest existing ancestor: the folder the file, or the missing folders, go in
    ancestor = os.path.dirname(target)
    while ancestor and not os.path.exists(ancestor) and os.path.dirname(ancestor) != ancestor:
        ancestor = os.path.dirname(ancestor)
    ancestor = ancestor or os.curdir
    if not os.path.isdir(ancestor):
        raise NotADirectoryError(f"cannot write {what} to {path!r}: {ancestor!r} is a file, "
                                 f"not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot write {what} to {path!r}: no permission to write in "
                              f"{ancestor!r}")


def write_atomically(path: str, write: Callable[[BinaryIO], object],
                     follow_symlinks: bool = False) -> None:
    """Create or replace ``path`` with what ``write`` writes into the binary file it is given.

    Missing folders are created. The content goes into a new file in ``path``'s folder, which
    is then renamed over ``path``: readers see the old file or the whole new one, a write that
    fails (a full disk, an exception in ``write``) leaves the old one. A symbolic link at
    ``path`` is refused (``OSError``, ``ELOOP``) — one planted after that check is replaced by
    the rename, never followed — unless ``follow_symlinks``, which writes to the link's target
    instead. A new file gets the usual permissions (0666 less the umask), a replaced one keeps
    its own; an existing path that is not a regular file, or not writable, is refused
    (``PermissionError``), as :func:`check_output` refuses it.
    """
    check_output(path, follow_symlinks)  # again: the path may have changed since
    target = os.path.realpath(path) if follow_symlinks else path
    try:
        existing: Optional[os.stat_result] = os.lstat(target)
    except FileNotFoundError:
        existing = None
    folder = os.path.dirname(target)
    if folder:
        os.makedirs(folder, exist_ok=True)
    temporary = os.path.join(folder, f".{os.path.basename(target)}.{secrets.token_hex(4)}.tmp")
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_BINARY", 0))  # O_NOFOLLOW: POSIX; O_BINARY: Windows
    fd = os.open(temporary, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        if existing is not None:  # an overwrite keeps the file's permissions
            os.chmod(temporary, existing.st_mode & 0o777)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
