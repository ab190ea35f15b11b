"""A checkpoint folder: a JSON manifest and raw array files, written incrementally and
atomically, read back checked. Nothing in it is code.

::

    folder/
      manifest.json    format and version, the state's document (:mod:`.tree`), each array's
                       dtype, shape and files, each file's size and BLAKE2b checksum
      data/            the arrays' bytes (C order): one file per array, named by its checksum;
                       a frame store's frames in pieces of at most one chunk, named by where
                       their frames come from (its lineage token) and their serials

**Incremental.** A file the previous manifest already lists is not written again: an array
whose checksum is unchanged, and a piece of frames with the same token and serials (a serial's
frame never changes within a lineage: ``FrameStore.lineage``), which is not even read. So a save
after the first writes the arrays that changed and the frames added since (and the chunk at each
end), not the whole memory. A piece that is a whole chunk of a store on disk (``disk=``: a file
the store never writes again) is a hard link to the store's file, not a copy, where the folder
is on the same file system.

**Atomic.** New files are written under temporary names, flushed to disk and renamed; then the
manifest is, in one rename; only then are the files no manifest lists removed. A process killed
at any point leaves the previous manifest and every file it lists in place.

**Checked.** A load reads the manifest, then every file, each against its size and checksum,
before it returns anything: a damaged, truncated or foreign checkpoint raises
:class:`CheckpointError` naming the file.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from fastatari.replay._core import CHUNK, map_array, mapping_of

__all__ = ["FORMAT", "MANIFEST", "VERSION", "CheckpointError", "manifest", "read", "write"]

FORMAT = "fastatari-checkpoint"
VERSION = 1
MANIFEST = "manifest.json"
DATA = "data"


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded: damaged, truncated, foreign or of another version
    (the message names the file)."""


def _checksum(data: Any) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def _frame_stores(document: Any, arrays: Dict[str, np.ndarray]) -> Dict[str, Tuple[int, str]]:
    """The frames arrays of the frame store states in ``document``: each one's key, with the
    serial of its first row and the key of its store's lineage array (the frames are one
    array, or a tuple of pieces in serial order: ``FrameStore.state_dict(pieces=True)``)."""
    found: Dict[str, Tuple[int, str]] = {}

    def walk(value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            # a store's keys, or a memory's flat ones ("frames.frames", "frames.lineage", ...)
            for key in value:
                if not key.endswith("frames"):
                    continue
                prefix = key[:-len("frames")]
                frames, lineage = value[key], value.get(prefix + "lineage")
                first = value.get(prefix + "first_serial")
                if not (isinstance(lineage, dict) and "$array" in lineage
                        and isinstance(first, int) and isinstance(frames, dict)):
                    continue
                parts = frames.get("$tuple", [frames])
                if not all(isinstance(part, dict) and "$array" in part for part in parts):
                    continue
                for part in parts:
                    found[part["$array"]] = (first, lineage["$array"])
                    first += len(arrays[part["$array"]])
            for item in value.values():
                walk(item)

    walk(document)
    return found


def _pieces(first: int, count: int, lineage: np.ndarray) -> List[Tuple[int, int, int]]:
    """``(token, lo, hi)``: serials ``[first, first + count)`` cut at every chunk's start and
    wherever the lineage's token changes."""
    cuts = {first, first + count}
    cuts.update(range((first // CHUNK + 1) * CHUNK, first + count, CHUNK))
    cuts.update(int(start) for _, start in lineage.tolist() if first < start < first + count)
    bounds = sorted(cuts)
    pieces = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        row = int(np.searchsorted(lineage[:, 1], lo, side="right")) - 1
        pieces.append((int(lineage[row, 0]), lo, hi))
    return pieces


class _Writer:
    """Writes the files of one save into ``folder/data``, each under a temporary name first."""

    def __init__(self, folder: Path, old_files: Dict[str, Dict[str, Any]]) -> None:
        self.folder, self.old_files = folder, old_files
        self.files: Dict[str, Dict[str, Any]] = {}
        self.written = self.linked = 0  # bytes

    def keep(self, name: str) -> bool:
        """Whether ``name`` is in the previous checkpoint (listed, and there): reused."""
        entry = self.old_files.get(name)
        path = self.folder / name
        if entry is None or not path.is_file() or path.stat().st_size != entry["bytes"]:
            return False
        self.files[name] = entry
        return True

    def put(self, name: str, data: memoryview, checksum: Optional[str] = None) -> None:
        # (a listed file is not written again: an array's name is its checksum, and a piece
        # of frames is put only once keep() has not found it)
        if name in self.files or self.keep(name):
            return
        checksum = checksum or _checksum(data)
        path = self.folder / name
        temporary = path.with_name(path.name + ".tmp")
        with open(temporary, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
        self.files[name] = {"bytes": data.nbytes, "blake2b": checksum}
        self.written += data.nbytes

    def link(self, name: str, piece: np.ndarray) -> bool:
        """List ``piece``, all of a file mapped by a frame store on disk (which never writes a
        complete chunk again), as a hard link to that file; False where the file cannot be
        linked (gone, another file system, none of them): the caller writes it."""
        mapping = mapping_of(piece)
        if mapping is None:
            return False
        path = self.folder / name
        temporary = path.with_name(path.name + ".tmp")
        try:
            temporary.unlink(missing_ok=True)
            os.link(mapping.path, temporary)
        except OSError:
            return False
        checksum = _checksum(_bytes_of(piece))
        mapping.flush()  # what was written through the mapping, in the file, on disk
        fd = os.open(temporary, os.O_RDWR | getattr(os, "O_BINARY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
        self.files[name] = {"bytes": piece.nbytes, "blake2b": checksum}
        self.linked += piece.nbytes
        return True


def _bytes_of(array: np.ndarray) -> memoryview:
    """The bytes of ``array`` in C order (its own memory where it is C-contiguous)."""
    if not array.nbytes:
        return memoryview(bytearray())  # (writable, as a read fills it)
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8).data


def write(folder: Any, document: Any, arrays: Dict[str, np.ndarray]) -> Dict[str, int]:
    """Save ``document`` and ``arrays`` (:func:`fastatari.checkpoint.tree.encode`'s) into
    ``folder`` (made if needed), over the checkpoint there, if any. Returns what it wrote:
    ``{"bytes": ..., "linked": ..., "files": ...}`` (bytes written, bytes of hard links to a
    store's files made, files listed)."""
    folder = Path(folder)
    (folder / DATA).mkdir(parents=True, exist_ok=True)
    try:
        old_files = manifest(folder)["files"]
    except (CheckpointError, FileNotFoundError):
        old_files = {}  # nothing to reuse (a damaged one is overwritten whole)
    writer = _Writer(folder, old_files)
    stores = _frame_stores(document, arrays)
    entries: Dict[str, Any] = {}
    for key, array in arrays.items():
        entry: Dict[str, Any] = {"dtype": array.dtype.str, "shape": list(array.shape)}
        if key in stores and array.ndim == 2:
            first, lineage_key = stores[key]
            lineage = arrays[lineage_key]
            entry["pieces"] = []
            for token, lo, hi in _pieces(first, len(array), lineage):
                name = f"{DATA}/frames-{token & (2 ** 64 - 1):016x}-{lo}-{hi}.bin"
                piece = array[lo - first:hi - first]
                if not (writer.keep(name)  # (a kept piece is not even read)
                        or writer.link(name, piece)):
                    writer.put(name, _bytes_of(piece))
                entry["pieces"].append({"file": name, "serials": [lo, hi]})
        else:
            data = _bytes_of(array)
            checksum = _checksum(data)
            name = f"{DATA}/{checksum}.bin"
            writer.put(name, data, checksum)
            entry["file"] = name
        entries[key] = entry
    contents = {"format": FORMAT, "version": VERSION, "document": document,
                "arrays": entries, "files": writer.files}
    text = json.dumps(contents, indent=1, allow_nan=False).encode()
    temporary = folder / (MANIFEST + ".tmp")
    with open(temporary, "wb") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, folder / MANIFEST)  # the commit
    _sync_folder(folder)
    for path in (folder / DATA).iterdir():  # what no manifest lists any more
        if f"{DATA}/{path.name}" not in writer.files:
            try:
                path.unlink()
            except OSError:  # (Windows: mapped by a store; unlisted, removed by a later save)
                pass
    return {"bytes": writer.written + len(text), "linked": writer.linked,
            "files": len(writer.files) + 1}


def _sync_folder(folder: Path) -> None:
    """Make the renames in ``folder`` durable (where the system can)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # (Windows opens no folder)
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def manifest(folder: Any) -> Dict[str, Any]:
    """The manifest of the checkpoint in ``folder``, its format and version checked (its
    files are not read: :func:`read` does)."""
    path = Path(folder) / MANIFEST
    try:
        contents = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{path}: not a fastatari checkpoint manifest ({error})") from None
    if not isinstance(contents, dict) or contents.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a fastatari checkpoint manifest")
    if contents.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint version {contents.get('version')!r}, this "
                              f"fastatari reads version {VERSION}")
    for key in ("document", "arrays", "files"):
        if key not in contents:
            raise CheckpointError(f"{path}: the manifest lacks {key!r}")
    return contents


def read(folder: Any) -> Tuple[Any, Dict[str, np.ndarray]]:
    """The document and arrays of the checkpoint in ``folder``, every file checked first
    (:class:`CheckpointError` naming the one that is not as the manifest says;
    ``FileNotFoundError`` when there is no checkpoint)."""
    folder = Path(folder)
    contents = manifest(folder)
    files = contents["files"]
    arrays: Dict[str, np.ndarray] = {}
    try:
        for key, entry in contents["arrays"].items():
            dtype = np.dtype(entry["dtype"])
            if dtype.hasobject:
                raise CheckpointError(f"{folder / MANIFEST}: array {key!r} of objects")
            pieces = (entry["pieces"] if "pieces" in entry
                      else [{"file": entry["file"], "serials": None}])
            shape = tuple(entry["shape"])
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if "pieces" in entry and len(pieces) == 1 and nbytes:  # frames: mapped, read only
                path = _check_file(folder, pieces[0]["file"], files, nbytes)
                arrays[key] = map_array(path, dtype, shape)
                continue
            array = np.empty(shape, dtype)
            flat = _bytes_of(array)
            start = 0
            row = array.nbytes // len(array) if array.ndim and len(array) else 0
            for piece in pieces:
                lo_hi = piece["serials"]
                size = (lo_hi[1] - lo_hi[0]) * row if lo_hi is not None else array.nbytes
                _read_file(folder, piece["file"], files, flat[start:start + size])
                start += size
            if start != array.nbytes:
                raise CheckpointError(f"{folder / MANIFEST}: the files of {key!r} hold "
                                      f"{start} bytes, its shape {array.nbytes}")
            arrays[key] = array
    except (KeyError, TypeError, ValueError, IndexError) as error:
        if isinstance(error, CheckpointError):
            raise
        raise CheckpointError(f"{folder / MANIFEST}: a damaged manifest ({error!r})") from None
    return contents["document"], arrays


def _listed(folder: Path, name: str, files: Dict[str, Any], nbytes: int) -> Dict[str, Any]:
    """The manifest's entry of the file ``name`` (in ``data/``, of ``nbytes`` bytes)."""
    entry = files.get(name)
    if entry is None or os.path.dirname(name) != DATA or ".." in name:
        raise CheckpointError(f"{folder / name}: not a file of this checkpoint's manifest")
    if entry["bytes"] != nbytes:
        raise CheckpointError(f"{folder / name}: the manifest says {entry['bytes']} bytes "
                              f"where its array needs {nbytes}")
    return entry


def _check_file(folder: Path, name: str, files: Dict[str, Any], nbytes: int) -> Path:
    """Check the file ``name`` against the manifest's ``files``, reading it in blocks (for a
    memory map of it)."""
    path = folder / name
    entry = _listed(folder, name, files, nbytes)
    digest, block = hashlib.blake2b(digest_size=20), bytearray(1 << 24)
    got = 0
    try:
        with open(path, "rb") as f:
            while count := f.readinto(block):
                digest.update(memoryview(block)[:count])
                got += count
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing") from None
    if got != nbytes:
        raise CheckpointError(f"{path}: truncated or grown ({got} bytes, {nbytes} expected)")
    if digest.hexdigest() != entry["blake2b"]:
        raise CheckpointError(f"{path}: damaged (its checksum is not the manifest's)")
    return path


def _read_file(folder: Path, name: str, files: Dict[str, Any], out: memoryview) -> None:
    """Read the file ``name`` into ``out``, checking it against the manifest's ``files``."""
    path = folder / name
    entry = _listed(folder, name, files, out.nbytes)
    try:
        with open(path, "rb") as f:
            got = f.readinto(out)
            extra = f.read(1)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing") from None
    if got != out.nbytes or extra:
        raise CheckpointError(f"{path}: truncated or grown ({got} bytes read, "
                              f"{out.nbytes} expected)")
    if _checksum(out) != entry["blake2b"]:
        raise CheckpointError(f"{path}: damaged (its checksum is not the manifest's)")
