"""A replay memory's ``save``, ``load`` and ``open``: a checkpoint folder of it alone
(:mod:`fastatari.checkpoint`: incremental, atomic, checked, no pickle)."""

from __future__ import annotations

from typing import Any, Dict, Optional, Type, TypeVar

__all__ = ["Saving"]

M = TypeVar("M", bound="Saving")


class Saving:
    """``save``, ``load`` and ``open`` for a memory that has ``state_dict(pieces=)``,
    ``load_state_dict``, a ``disk`` folder (or None) and :meth:`init_args`."""

    @property
    def disk(self) -> Optional[str]:
        """The folder the frames live in, or None (in memory)."""
        raise NotImplementedError

    def init_args(self) -> Dict[str, Any]:
        """The constructor's arguments that make a memory of this one's shape (JSON-ready;
        not ``disk`` or a device, which say where it lives, not what it holds)."""
        raise NotImplementedError

    def _folder(self, folder: Any) -> Any:
        if folder is None:
            if self.disk is None:
                raise ValueError("a folder is needed: this memory is not on disk (disk=None)")
            return self.disk
        return folder

    def save(self, folder: Any = None) -> Dict[str, int]:
        """Save this memory as a checkpoint into ``folder`` (default: its ``disk`` folder),
        over the one there: only what changed since the last save into it is written, and
        a memory on disk lists its complete chunks as links to its files. Returns the bytes
        written and linked, and the files listed (:func:`fastatari.checkpoint.save`)."""
        from fastatari import checkpoint
        return checkpoint.save(self._folder(folder), memory=self)

    def load(self, folder: Any = None) -> None:
        """Take the memory saved in ``folder`` (default: its ``disk`` folder), every file
        checked first; a memory on disk maps the checkpoint's complete chunks (read only)
        instead of copying them (:func:`fastatari.checkpoint.load`)."""
        from fastatari import checkpoint
        checkpoint.load(self._folder(folder), memory=self)

    @classmethod
    def open(cls: Type[M], folder: Any, **changes: Any) -> M:
        """The memory saved in ``folder`` (by :meth:`save`), made with the arguments it was
        made with and loaded, its frames on disk in that folder (``disk=None`` among
        ``changes`` to hold them in memory; a prioritized buffer's ``device=``, too)."""
        from fastatari import checkpoint
        args = checkpoint.memory_args(folder, cls.__name__)
        args["disk"] = folder
        args.update(changes)
        try:
            memory = cls(**args)
        except (TypeError, ValueError) as error:
            raise checkpoint.CheckpointError(
                f"{folder}: the arguments saved with the memory, with {sorted(changes)} "
                f"changed, do not make a {cls.__name__}: {error}") from None
        memory.load(folder)
        return memory
