"""fastatari.checkpoint: a run's state in one folder, saved incrementally and atomically,
loaded exactly, and every damaged or foreign checkpoint refused with the objects unchanged."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import fastatari
from fastatari import checkpoint
from fastatari.checkpoint import CheckpointError, files
from fastatari.replay import PrioritizedReplayBuffer, ReplayMemory

from .replay.streams import frame_stacks
from .replay.twins import assert_same

SHAPE = (4, 42, 42)  # frames big beside the bookkeeping (refs: 64 bytes a transition)
N_ENVS = 2
SHORT = dict(repeat_action_probability=0.0, max_num_frames_per_episode=400, num_workers=1)


def feed(memory, steps: int, seed: int) -> None:
    """``steps`` steps of ``N_ENVS`` streams into ``memory`` (either kind)."""
    rng = np.random.default_rng(seed)
    streams = [frame_stacks(rng, steps, frame=SHAPE[1:]) for _ in range(N_ENVS)]
    for _ in range(steps):
        obs, nxt, term, trunc = (np.array(column) for column in zip(*(next(s) for s in streams),
                                                                    strict=True))
        actions, rewards = rng.integers(0, 6, N_ENVS), rng.normal(size=N_ENVS)
        if isinstance(memory, PrioritizedReplayBuffer):
            memory.add(obs, actions, rewards, nxt, term, trunc)
        else:
            memory.add(obs, nxt, actions, rewards, term, trunc)


def memories(**kw):
    """Makers of each kind of memory (``kw``: ``disk=``, for one on disk)."""
    return {"memory": lambda: ReplayMemory(8000, SHAPE, n_envs=N_ENVS, **kw),
            "prioritized": lambda: PrioritizedReplayBuffer(8000, SHAPE, None, 3, 0.9,
                                                           n_envs=N_ENVS, **kw)}


def equal_samples(a, b) -> bool:
    try:
        same_samples(a, b)
    except AssertionError:
        return False
    return True


def same_samples(a, b) -> None:
    def draw(memory):
        if isinstance(memory, PrioritizedReplayBuffer):  # (it draws from np.random, CleanRL's)
            np.random.seed(1)
            return memory.sample(64)
        return memory.sample(64, np.random.default_rng(1))

    for x, y in zip(draw(a), draw(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("kind", ["memory", "prioritized"])
def test_a_memory_round_trips_and_saves_again_incrementally(tmp_path, kind):
    make = memories()[kind]
    memory = make()
    feed(memory, 4500, 0)  # several chunks of frames a stream, the ring wrapped
    first = checkpoint.save(tmp_path, memory=memory)
    feed(memory, 50, 1)
    second = checkpoint.save(tmp_path, memory=memory)
    assert second["bytes"] < first["bytes"] / 2  # the new frames, the ends, the columns
    listed = json.loads((tmp_path / files.MANIFEST).read_text())["files"]
    assert sorted(listed) == sorted(f"data/{p.name}" for p in (tmp_path / "data").iterdir())
    loaded = make()
    checkpoint.load(tmp_path, memory=loaded)
    assert_same(loaded, memory)
    same_samples(loaded, memory)
    # a save from the loaded memory into the same folder reuses what it loaded
    feed(loaded, 10, 2)
    feed(memory, 10, 2)
    assert checkpoint.save(tmp_path, memory=loaded)["bytes"] < first["bytes"] / 2
    again = make()
    checkpoint.load(tmp_path, memory=again)
    same_samples(again, memory)


def test_envs_generators_and_arrays_resume_exactly(tmp_path):
    with fastatari.make_vec("breakout", 3, **SHORT) as envs, \
            fastatari.make_vec("breakout", 3, **SHORT) as resumed:
        envs.reset(seed=3)
        rng = np.random.default_rng(9)
        for _ in range(30):
            obs = envs.step(rng.integers(0, 4, 3))[0]
        checkpoint.save(tmp_path, envs=envs, rngs={"policy": rng},
                        arrays={"obs": obs, "step": 30, "scale": np.float32(0.5),
                                "none yet": np.zeros((0, 4), np.int16)})
        other = np.random.default_rng(0)
        arrays = checkpoint.load(tmp_path, envs=resumed, rngs={"policy": other})
        np.testing.assert_array_equal(arrays["obs"], obs)
        assert arrays["step"] == 30 and arrays["scale"].dtype == np.float32
        assert arrays["none yet"].shape == (0, 4) and arrays["none yet"].dtype == np.int16
        for _ in range(40):
            actions = rng.integers(0, 4, 3)
            np.testing.assert_array_equal(other.integers(0, 4, 3), actions)
            ours, theirs = resumed.step(actions), envs.step(actions)
            for x, y in zip(ours[:4], theirs[:4], strict=True):
                np.testing.assert_array_equal(x, y)


def test_what_was_not_saved_is_refused(tmp_path):
    memory = ReplayMemory(100, SHAPE, n_envs=N_ENVS)
    checkpoint.save(tmp_path, arrays={"x": np.arange(3)})
    with pytest.raises(ValueError, match="holds no memory"):
        checkpoint.load(tmp_path, memory=memory)
    checkpoint.save(tmp_path, rngs={"a": np.random.default_rng(0)})
    with pytest.raises(ValueError, match=r"generators \['a'\] saved"):
        checkpoint.load(tmp_path, rngs={"b": np.random.default_rng(0)})
    with pytest.raises(TypeError, match="numpy Generator, a RandomState or np.random"):
        checkpoint.save(tmp_path, rngs={"a": np.random.SeedSequence(0)})
    np.random.seed(4)
    checkpoint.save(tmp_path, rngs={"global": np.random, "legacy": np.random.RandomState(2)})
    want = np.random.random(3)
    legacy = np.random.RandomState(0)
    checkpoint.load(tmp_path, rngs={"global": np.random, "legacy": legacy})
    np.testing.assert_array_equal(np.random.random(3), want)
    np.testing.assert_array_equal(legacy.random(3), np.random.RandomState(2).random(3))
    with pytest.raises(FileNotFoundError):
        checkpoint.load(tmp_path / "none", memory=memory)


def damaged(folder: Path, how: str) -> str:
    """Damage the checkpoint in ``folder``; the file the error must name."""
    manifest = json.loads((folder / files.MANIFEST).read_text())
    data = sorted(manifest["files"], key=lambda name: -manifest["files"][name]["bytes"])[0]
    path = folder / data
    if how == "flipped byte":
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 2] ^= 1
        path.write_bytes(bytes(raw))
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[:-7])
    elif how == "missing":
        path.unlink()
    elif how == "grown":
        path.write_bytes(path.read_bytes() + b"\0")
    else:
        if how == "other version":
            manifest["version"] = 99
        elif how == "foreign":
            manifest["format"] = "something else"
        elif how == "outside the folder":
            entry = manifest["files"].pop(data)
            manifest["files"]["data/../../secret"] = entry
            for array in manifest["arrays"].values():
                for piece in array.get("pieces", [array]):
                    if piece.get("file") == data:
                        piece["file"] = "data/../../secret"
        elif how == "unknown record":
            manifest["document"]["memory"] = {"$record": "os.system", "fields": {}}
        elif how == "not json":
            (folder / files.MANIFEST).write_text("{not json")
            return files.MANIFEST
        (folder / files.MANIFEST).write_text(json.dumps(manifest))
        return "secret" if how == "outside the folder" else (
            "document" if how == "unknown record" else files.MANIFEST)
    return data


@pytest.mark.parametrize("how", ["flipped byte", "truncated", "missing", "grown",
                                 "other version", "foreign", "outside the folder",
                                 "unknown record", "not json"])
def test_a_damaged_or_foreign_checkpoint_is_refused_and_nothing_changes(tmp_path, how):
    memory, twin = (ReplayMemory(3000, SHAPE, n_envs=N_ENVS) for _ in range(2))
    for m in (memory, twin):
        feed(m, 1500, 0)
    checkpoint.save(tmp_path, memory=memory)
    named = damaged(tmp_path, how)
    for m in (memory, twin):
        feed(m, 20, 5)
    with pytest.raises(CheckpointError, match=named.replace(".", r"\.").split("/")[-1]):
        checkpoint.load(tmp_path, memory=memory)
    assert_same(memory, twin)
    same_samples(memory, twin)


class Crash(Exception):
    """Stands for a process killed at that point of a save."""


@pytest.mark.parametrize("on_disk", [False, True])
@pytest.mark.parametrize("kind", ["memory", "prioritized"])
def test_a_save_cut_short_anywhere_leaves_the_previous_checkpoint(tmp_path, kind, on_disk,
                                                                  monkeypatch):
    """Every write, link, flush, rename and removal of a save in turn fails (as a kill there
    would stop it): the previous checkpoint still loads, whole, and the next save completes.
    On disk, the memories' complete chunks are links (and the loaded ones map them)."""
    frames = tmp_path / "frames"
    frames.mkdir()
    make = memories(**(dict(disk=str(frames)) if on_disk else {}))[kind]
    memory = make()
    feed(memory, 1500, 0)
    checkpoint.save(tmp_path, memory=memory)
    saved = make()
    checkpoint.load(tmp_path, memory=saved)
    feed(memory, 300, 1)
    calls = {"n": 0, "at": -1}
    real = {"replace": os.replace, "fsync": os.fsync, "unlink": Path.unlink, "link": os.link}

    def step(name):
        def wrapped(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == calls["at"]:
                raise Crash(name)
            return real[name](*args, **kwargs)
        return wrapped

    monkeypatch.setattr(os, "replace", step("replace"))
    monkeypatch.setattr(os, "fsync", step("fsync"))
    monkeypatch.setattr(Path, "unlink", step("unlink"))
    monkeypatch.setattr(os, "link", step("link"))
    checkpoint.save(tmp_path / "count", memory=memory)  # how many steps a save has
    points = calls["n"]
    assert points > 5
    linked = sum(p.stat().st_nlink > 1 for p in (tmp_path / "count" / "data").iterdir())
    assert bool(linked) == on_disk
    for at in range(1, points + 1):
        calls.update(n=0, at=at)
        try:
            checkpoint.save(tmp_path, memory=memory)
            completed = True
        except Crash:
            completed = False
        calls["at"] = -1
        loaded = make()
        checkpoint.load(tmp_path, memory=loaded)
        # cut short before the manifest's rename: the previous checkpoint; after it (the
        # removal of what no manifest lists): the new one; whole, either way
        committed = completed or not equal_samples(loaded, saved)
        same_samples(loaded, memory if committed else saved)
        if committed:
            checkpoint.save(tmp_path, memory=saved)  # the previous one again, for the next
    calls["at"] = -1
    checkpoint.save(tmp_path, memory=memory)
    loaded = make()
    checkpoint.load(tmp_path, memory=loaded)
    same_samples(loaded, memory)
    leftovers = [p.name for p in (tmp_path / "data").iterdir() if p.name.endswith(".tmp")]
    assert not leftovers


def test_the_tree_builds_only_fastatari_records():
    from fastatari.checkpoint import tree

    with pytest.raises(TypeError, match="object array"):
        tree.encode({"x": np.array([None])})
    class Foreign:
        pass

    with pytest.raises(TypeError, match="x: a Foreign cannot be saved"):
        tree.encode({"x": Foreign()})
    state = {"b": b"\0\1", "t": (1, 2.5, None), "f": float("nan"), "$odd": [np.int8(3)],
             "big": 2 ** 100}
    document, arrays = tree.encode(state)
    back = tree.decode(json.loads(json.dumps(document, allow_nan=False)), arrays)
    assert back["b"] == b"\0\1" and back["t"] == (1, 2.5, None) and np.isnan(back["f"])
    assert back["$odd"][0].dtype == np.int8 and back["big"] == 2 ** 100
    with pytest.raises(ValueError, match="unknown record"):
        tree.decode({"$record": "Popen", "fields": {}}, {})
