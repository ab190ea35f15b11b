"""A replay memory on disk (``disk=FOLDER``): exact, a file per chunk in a folder of the store's
own (no descriptor held per file, removed with the store or after a kill by the next store),
saved as a checkpoint that links its complete chunks, and reopened after its process ended."""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from fastatari import checkpoint
from fastatari.checkpoint import CheckpointError
from fastatari.replay import PrioritizedReplayBuffer, ReplayMemory
from fastatari.replay._core import CHUNK, FrameStore

from ..test_checkpoint import SHAPE, feed, memories, same_samples
from .test_core import check_all, fill
from .twins import assert_same


def live_folders(folder) -> list:
    return sorted(p for p in folder.iterdir() if p.name.startswith("live-"))


def test_a_store_on_disk_is_exact_and_its_folder_goes_with_it(tmp_path):
    store = FrameStore(3 * CHUNK, 2, (4, 6, 5), 4, 0, disk=str(tmp_path))
    history = fill(store, 4 * CHUNK, garbage=0.05)
    check_all(store, history)
    [live] = live_folders(tmp_path)
    chunk_files = sorted(p.name for p in live.iterdir() if p.suffix == ".frames")
    assert len(chunk_files) == len(store.state_dict(pieces=True)["frames"])  # one per live chunk
    copy = pickle.loads(pickle.dumps(store))
    assert copy.disk == str(tmp_path)
    check_all(copy, history)
    del store, copy
    gc.collect()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="existing folder"):
        FrameStore(8, 1, (4, 6, 5), 4, 0, disk=str(tmp_path / "missing"))


def test_a_killed_stores_folder_is_removed_by_the_next_store_and_no_other(tmp_path):
    code = ("import os, sys, numpy as np; from fastatari.replay._core import FrameStore\n"
            "s = FrameStore(64, 1, (4, 6, 5), 4, 0, disk=sys.argv[1])\n"
            "s.put(np.ones((1, 4, 6, 5), np.uint8), np.full((1, 4, 6, 5), 2, np.uint8))\n"
            "os._exit(0)  # no finalizer runs: as a kill\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, cwd=tmp_path.parent)
    [orphan] = live_folders(tmp_path)
    held = FrameStore(64, 1, (4, 6, 5), 4, 0, disk=str(tmp_path))  # sweeps the orphan
    [mine] = live_folders(tmp_path)
    assert mine != orphan
    other = FrameStore(64, 1, (4, 6, 5), 4, 0, disk=str(tmp_path))  # leaves the held one
    assert len(live_folders(tmp_path)) == 2
    del held, other


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd (Linux)")
def test_a_store_on_disk_holds_no_descriptor_per_chunk(tmp_path):
    """Thousands of chunk files mapped, none kept open (a process may hold 256 on macOS)."""
    store = FrameStore(1, 64, (4, 2, 2), 4, 0, disk=str(tmp_path))
    before = len(os.listdir("/proc/self/fd"))
    rng = np.random.default_rng(0)
    stacks = rng.integers(0, 256, (40, 2, 64, 4, 2, 2), np.uint8)  # unrelated: 8 frames each
    for i in range(600):  # 600 * 64 streams * 8 frames: 300 chunks, every one alive at a time
        store.put(*stacks[i % 40])
        if i == 599:
            live = len(store.state_dict(pieces=True)["frames"])
    assert store.next_serial >= 300 * CHUNK and live >= 1
    assert len(os.listdir("/proc/self/fd")) <= before + 2


@pytest.mark.parametrize("kind", ["memory", "prioritized"])
def test_a_memory_on_disk_saves_by_links_and_reopens_exactly(tmp_path, kind):
    make = memories()[kind]
    memory, twin = memories(disk=str(tmp_path))[kind](), make()
    feed(memory, 4500, 0)  # chunks complete, released, the ring wrapped
    feed(twin, 4500, 0)
    first = memory.save()  # into its own folder
    assert first["linked"] > first["bytes"]  # the complete chunks are links, not copies
    linked = [p for p in (tmp_path / "data").iterdir() if p.stat().st_nlink == 2]
    assert linked  # the checkpoint's name and the store's
    feed(memory, 3000, 1)  # chunks the checkpoint lists are released, their store names gone
    feed(twin, 3000, 1)
    del memory
    gc.collect()  # (the process ends: the store's own folder goes, the checkpoint stays)
    assert not live_folders(tmp_path)
    reopened = type(twin).open(tmp_path)  # the state of the save, not of what followed
    saved_twin = make()
    feed(saved_twin, 4500, 0)
    assert_same(reopened, saved_twin)
    same_samples(reopened, saved_twin)
    # the checkpoint's complete chunks are mapped, not copied: the store's own folder holds
    # only the chunks at the ends
    own = [p for p in live_folders(tmp_path)[0].iterdir() if p.suffix == ".frames"]
    assert len(own) <= 2 * (2 if kind == "prioritized" else 1)
    feed(reopened, 3000, 1)
    feed(saved_twin, 3000, 1)
    assert_same(reopened, saved_twin)
    second = reopened.save()
    assert second["bytes"] + second["linked"] < first["bytes"] + first["linked"]
    in_memory = type(twin).open(tmp_path, disk=None)
    assert in_memory.disk is None
    assert_same(in_memory, saved_twin)
    same_samples(in_memory, reopened)


def test_open_refuses_what_is_not_a_memory_of_its_class(tmp_path):
    memory = ReplayMemory(100, SHAPE, n_envs=2)
    feed(memory, 10, 0)
    memory.save(tmp_path / "m")
    with pytest.raises(CheckpointError, match="holds a ReplayMemory, not a PrioritizedReplay"):
        PrioritizedReplayBuffer.open(tmp_path / "m")
    checkpoint.save(tmp_path / "a", arrays={"x": np.zeros(3)})
    with pytest.raises(CheckpointError, match="no replay memory"):
        ReplayMemory.open(tmp_path / "a")
    with pytest.raises(ValueError, match="not on disk"):
        memory.save()
    with pytest.raises(CheckpointError, match="do not make a ReplayMemory: .*n_step"):
        ReplayMemory.open(tmp_path / "m", n_step=3)
    assert_same(ReplayMemory.open(tmp_path / "m", disk=None), memory)


def test_a_store_whose_new_folder_a_sweep_took_makes_another(tmp_path, monkeypatch):
    """Another process's sweep may lock (and remove) a store's folder between its making and
    the store's lock: the store makes another, and nothing of the first is left."""
    from fastatari.replay import disk

    real, tries = disk._try_lock, []

    def swept_first(f):
        tries.append(f.name)
        return len(tries) > 1 and real(f)

    monkeypatch.setattr(disk, "_try_lock", swept_first)
    store = FrameStore(64, 1, (4, 6, 5), 4, 0, disk=str(tmp_path))
    assert len(tries) == 2 and len(live_folders(tmp_path)) == 1
    assert str(live_folders(tmp_path)[0]) in tries[1]
    del store
