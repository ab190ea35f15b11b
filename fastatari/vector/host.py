"""What the vector env does differently on each platform, decided once, in one place.

The platforms differ in four things the local executor uses (the waits' own difference, futex,
eventfd and epoll against naps, is compiled: ``csrc/fa_wait.c``, :data:`_wait.FAST_WAITS`):

- **starting a worker**: a fresh interpreter with its descriptors inherited (``subprocess``,
  ``pass_fds``: POSIX), or a multiprocessing ``spawn`` child (Windows, which has no descriptor
  passing for ``subprocess``; spawn re-imports the trainer's ``__main__``);
- **the shared memory**: an unnamed ``memfd`` (Linux), a temporary file unlinked at once (other
  POSIX), or a mapping with a name, freed with its last handle (Windows);
- **watching the pipes**: ``poll(2)``, or ``multiprocessing.connection.wait`` (Windows);
- **pinning workers to CPUs** (``cpus=``): ``os.sched_setaffinity`` (Linux only).

:data:`HOST` holds this platform's choices. ``FASTATARI_PLATFORM_PATHS=macos`` or ``=windows``
makes this machine take that platform's paths wherever it can run them, so that the suite tests
them on Linux (``.ci/run`` runs the vector suite so): ``macos`` is the portable waits, the
unlinked file and no pinning; ``windows`` is the portable waits, spawn, multiprocessing's pipe
waits and no pinning (a named mapping needs Windows: the memory is still passed as a
descriptor, which spawn inherits on POSIX). ``FASTATARI_PORTABLE_WAITS=1`` forces the portable
waits alone. Both are read once, when this module is imported.
"""

from __future__ import annotations

import dataclasses
import os
import select
import sys
from typing import Mapping, Optional

__all__ = ["HOST", "Host", "detect"]

#: The values of FASTATARI_PLATFORM_PATHS.
PLATFORMS = ("macos", "windows")


@dataclasses.dataclass(frozen=True)
class Host:
    """One platform's ways (see the module's docstring); :data:`HOST` is this one's."""

    #: Whose paths these are: ``sys.platform``, or the platform FASTATARI_PLATFORM_PATHS names.
    platform: str
    #: The portable waits even where the compiled fast ones exist.
    portable_waits: bool
    #: Workers are multiprocessing ``spawn`` children (else ``subprocess`` with ``pass_fds``).
    spawn: bool
    #: The shared memory: ``"memfd"``, ``"file"`` (unlinked at once) or ``"named"``.
    memory: str
    #: The pipes are watched with ``select.poll`` (else ``multiprocessing.connection.wait``).
    poll: bool
    #: ``cpus=`` pins workers (``os.sched_setaffinity``).
    affinity: bool


def detect(environ: Optional[Mapping[str, str]] = None) -> Host:
    """This platform's ways, as ``environ``'s (default: ``os.environ``)
    FASTATARI_PLATFORM_PATHS and FASTATARI_PORTABLE_WAITS force them; a forced platform keeps
    the ways this machine cannot run (a named mapping off Windows, a descriptor-passing
    ``subprocess`` on it)."""
    environ = os.environ if environ is None else environ
    windows = sys.platform == "win32"
    native = Host(
        platform=sys.platform,
        portable_waits=environ.get("FASTATARI_PORTABLE_WAITS") == "1",
        spawn=windows,
        memory="named" if windows else "memfd" if hasattr(os, "memfd_create") else "file",
        poll=not windows and hasattr(select, "poll"),
        affinity=not windows and hasattr(os, "sched_setaffinity"))
    forced = environ.get("FASTATARI_PLATFORM_PATHS", "")
    if not forced:
        return native
    if forced not in PLATFORMS:
        raise ValueError(f"FASTATARI_PLATFORM_PATHS must be one of {', '.join(PLATFORMS)} or "
                         f"empty, got {forced!r}")
    if forced == "macos":
        return dataclasses.replace(
            native, platform="darwin", portable_waits=True, affinity=False,
            memory="file" if native.memory == "memfd" else native.memory)
    return dataclasses.replace(native, platform="win32", portable_waits=True, spawn=True,
                               poll=False, affinity=False)


#: This process's ways: read once, at import.
HOST = detect()
