"""Files fastatari writes for the user (videos, episode logs): an existing file is overwritten,
but never through a symbolic link unless the caller asks (a link planted where a log or video
goes would otherwise redirect the write to any file the user can write)."""

from __future__ import annotations

import errno
import os

__all__ = ["check_not_symlink"]


def check_not_symlink(path: str, follow_symlinks: bool = False) -> None:
    """``OSError`` (``ELOOP``, as ``open`` with ``O_NOFOLLOW`` gives) when ``path`` is a
    symbolic link and ``follow_symlinks`` is False."""
    if not follow_symlinks and os.path.islink(path):
        raise OSError(errno.ELOOP, f"refusing to write through the symbolic link {path!r} "
                                   f"(-> {os.readlink(path)!r}); pass follow_symlinks=True "
                                   f"(fastatari play: --follow-symlinks) to write to its "
                                   f"target")
