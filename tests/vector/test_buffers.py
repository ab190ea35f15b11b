"""fastatari.vector.buffers: the layout's offsets, the typed views, sharing one region of
shared memory between mappings and processes, and closing without leaks."""
from __future__ import annotations

import dataclasses
import os
import sys
import textwrap

import numpy as np
import pytest

from fastatari.core.schema import GAME_FIELDS, INFO_FIELDS, STEP_FIELDS
from fastatari.vector import buffers as buffers_module
from fastatari.vector.buffers import Layout, SharedBuffers, SharedMemory
from fastatari.vector.host import HOST

from .._processes import blocks_held, linux_only
from .._python import run_code

OBS_SHAPES = [(4, 84, 84), (84, 84, 4), (1, 7, 5), (4, 84, 84, 3), (210, 160, 12), (3,)]
NUM_ENVS = [1, 3, 8, 17]


def memfd_fds() -> set:
    """This process's descriptors of fastatari shared memory regions."""
    held = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "memfd:fastatari" in os.readlink(f"/proc/self/fd/{fd}"):
                held.add(int(fd))
        except OSError:
            pass
    return held


#: The memory as Linux has it (an unnamed memfd; skipped elsewhere, and where
#: FASTATARI_PLATFORM_PATHS forces another platform's).
memfd_only = pytest.mark.skipif(HOST.memory != "memfd", reason="Linux's memfd")
#: Each way of shared memory this machine can run: its own, and other POSIX's (an unlinked
#: file) where it is POSIX.
POSIX_MEMORY = ["memfd", "file"] if HOST.memory == "memfd" else [HOST.memory]


@pytest.fixture
def buffers():
    buf = SharedBuffers(Layout(5, (4, 6, 7)))
    yield buf
    buf.close()


@pytest.fixture(params=POSIX_MEMORY)
def memory(request, monkeypatch):
    """Each POSIX way of shared memory this machine runs (``HOST.memory``, forced)."""
    monkeypatch.setattr(buffers_module, "HOST", dataclasses.replace(HOST, memory=request.param))
    return request.param


# -- layout --------------------------------------------------------------------------------------
@pytest.mark.parametrize("obs_shape", OBS_SHAPES)
@pytest.mark.parametrize("num_envs", NUM_ENVS)
def test_offsets_are_aligned_disjoint_and_in_bounds(num_envs, obs_shape):
    layout = Layout(num_envs, obs_shape)
    spans = []
    for name, (offset, dtype, shape) in layout.offsets().items():
        assert offset % 64 == 0, name
        # per-env columns, but the control words (at 0, one region for all)
        assert shape[0] == num_envs if name != "control" else (offset, shape) == (0, (320,))
        end = offset + int(np.prod(shape)) * dtype.itemsize
        assert end <= layout.nbytes, name
        spans.append((offset, end, name))
    spans.sort()
    for (_, end, name), (start, _, following) in zip(spans[:-1], spans[1:], strict=True):
        assert end <= start, f"{name} overlaps {following}"
    assert spans[-1][1] == layout.nbytes  # no slack after the last column


def test_layout_columns_cover_the_schema():
    names = set(Layout(2, (4, 84, 84)).offsets())
    expected = {"control", "obs", "final_obs", "action", "op", "ticket", "pending", "progress",
                "game_done", "has_final", "life_loss", "obs_serial", "final_serial"}
    expected |= {f.name for f in STEP_FIELDS + INFO_FIELDS}
    expected |= {"final_" + f.name for f in INFO_FIELDS}
    expected |= {"game_" + f.name for f in GAME_FIELDS}
    assert names == expected


def test_batch_slots_hold_a_recv_batch_each_in_arrays_of_their_own():
    """A batch slot per recv batch the workers write in place: every result column with
    batch_size rows, env_id and mark; each array on its own memoryview (a view a caller makes
    counts on it, as on an output slot), none open at first."""
    layout = Layout(5, (4, 6, 7), batch_slots=3, batch_size=2)
    buf = SharedBuffers(layout)
    try:
        assert buf.batch_first.tolist() == [-1, -1, -1]
        assert len(buf.batches) == 3
        for slot in buf.batches:
            assert slot["obs"].shape == (2, 4, 6, 7) and slot["obs"].dtype == np.uint8
            assert slot["mark"].shape == slot["env_id"].shape == (2,)
            for f in STEP_FIELDS + INFO_FIELDS:
                assert slot[f.name].shape == (2, *f.shape)
                assert slot[f.name].dtype.type is np.dtype(f.dtype).type  # int64, not longlong
            for f in GAME_FIELDS:
                assert slot["game_" + f.name].dtype == np.dtype(f.dtype)
            obs = slot["obs"]
            before = sys.getrefcount(obs)
            view = obs[1:]
            after = sys.getrefcount(obs)
            assert after == before + 1  # (pytest's rewriting holds what an assert reads)
            del view, obs
        ends = sorted((offset, offset + int(np.prod(shape)) * dtype.itemsize)
                      for offset, dtype, shape in layout.offsets().values())
        assert all(a[1] <= b[0] for a, b in zip(ends, ends[1:], strict=False))  # none overlap
        assert ends[-1][1] <= layout.nbytes
    finally:
        buf.close()


def test_continuous_actions_get_a_float32_action_row_per_env():
    _, dtype, shape = Layout(5, (4, 84, 84), continuous=True).offsets()["action"]
    assert (dtype, shape) == (np.float32, (5, 3))
    _, dtype, shape = Layout(5, (4, 84, 84)).offsets()["action"]
    assert (dtype, shape) == (np.int64, (5,))


def test_layout_is_hashable_and_compares_by_value():
    assert Layout(2, (4, 84, 84)) == Layout(2, (4, 84, 84))
    assert Layout(2, (4, 84, 84)) != Layout(3, (4, 84, 84))
    assert len({Layout(2, (1,)), Layout(2, (1,))}) == 1


# -- typed views ---------------------------------------------------------------------------------
@pytest.mark.parametrize("obs_shape", [(4, 84, 84), (84, 84, 12)])
def test_views_have_the_layout_dtypes_and_shapes(obs_shape):
    n = 3
    buf = SharedBuffers(Layout(n, obs_shape))
    try:
        assert buf.obs.dtype == np.uint8 and buf.obs.shape == (n,) + obs_shape
        assert buf.final_obs.dtype == np.uint8 and buf.final_obs.shape == (n,) + obs_shape
        for view, dtype in [(buf.action, np.int64), (buf.op, np.uint8), (buf.ticket, np.int64),
                            (buf.pending, np.uint32), (buf.progress, np.int64),
                            (buf.game_done, np.bool_),
                            (buf.has_final, np.bool_)]:
            assert view.dtype == dtype and view.shape == (n,)
        for field in STEP_FIELDS:
            view = getattr(buf, field.name)
            assert view.dtype == np.dtype(field.dtype), field.name
            assert view.shape == (n,) + field.shape, field.name
        for table, fields in [(buf.info, INFO_FIELDS), (buf.final_info, INFO_FIELDS),
                              (buf.game, GAME_FIELDS)]:
            assert list(table) == [f.name for f in fields]
            for field in fields:
                view = table[field.name]
                assert view.dtype == np.dtype(field.dtype), field.name
                assert view.shape == (n,) + field.shape, field.name
    finally:
        buf.close()


def test_new_block_is_zeroed(buffers):
    assert not buffers.obs.any()
    assert not buffers.reward.any()
    assert not any(column.any() for column in buffers.info.values())


def test_views_do_not_alias_each_other(buffers):
    buffers.obs[...] = 255
    buffers.final_obs[...] = 255
    buffers.action[...] = -1
    assert not buffers.op.any() and not buffers.ticket.any() and not buffers.pending.any()
    assert not buffers.control.any() and not buffers.reward.any()
    assert not any(column.any() for column in buffers.info.values())
    buffers.info["lives"][:] = 5
    assert not buffers.final_info["lives"].any()
    assert not buffers.game["l"].any()


# -- sharing -------------------------------------------------------------------------------------
def test_two_mappings_of_one_descriptor_see_each_other(buffers):
    other = SharedBuffers(buffers.layout, os.dup(buffers.handle))
    try:
        buffers.obs[2, 1, 3, 4] = 77
        buffers.info["lives"][4] = 3
        assert other.obs[2, 1, 3, 4] == 77
        assert other.info["lives"][4] == 3
        other.reward[0] = -1.5
        other.game["r"][1] = 12.0
        assert buffers.reward[0] == -1.5
        assert buffers.game["r"][1] == 12.0
    finally:
        other.close()
    assert buffers.reward[0] == -1.5  # the first mapping outlives the second


@pytest.mark.skipif(sys.platform == "win32", reason="descriptors are passed on POSIX")
def test_a_child_process_given_the_descriptor_writes_what_the_parent_reads(memory):
    buffers = SharedBuffers(Layout(5, (4, 6, 7)))  # (in the fixture's way: memfd or file)
    child = textwrap.dedent(f"""
        import sys
        from fastatari.vector.buffers import Layout, SharedBuffers
        buf = SharedBuffers(Layout(5, (4, 6, 7)), {buffers.handle})
        assert buf.action[1] == 41, buf.action[1]
        buf.action[1] = 42
        buf.obs[3, 0, 5, 6] = 200
        buf.final_info["frame_number"][2] = 123456789
        buf.close()
    """)
    try:
        buffers.action[1] = 41
        run_code(child, pass_fds=(buffers.handle,), check=True, timeout=60)
        assert buffers.action[1] == 42
        assert buffers.obs[3, 0, 5, 6] == 200
        assert buffers.final_info["frame_number"][2] == 123456789
    finally:
        buffers.close()


# -- closing -------------------------------------------------------------------------------------
def test_close_is_idempotent():
    buf = SharedBuffers(Layout(2, (4, 84, 84)))
    buf.close()
    buf.close()
    assert not hasattr(buf, "obs")
    assert buf.memory.fd is None


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX descriptors")
def test_close_while_a_view_is_held_closes_the_descriptor():
    buf = SharedBuffers(Layout(2, (4, 84, 84)))
    fd = buf.handle
    view = buf.obs  # as AtariVectorEnv(copy=False) hands out
    buf.close()
    buf.close()
    assert buf.memory.fd is None
    with pytest.raises(OSError):
        os.fstat(fd)
    if HOST.memory == "memfd":
        assert blocks_held()  # the view maps it
        del view
        assert not blocks_held()  # the last view unmapped it, while buf lives


# In a child process: reading an unmapped view is a segmentation fault, not an exception.
HELD_VIEW_CHILD = textwrap.dedent("""
    from fastatari.vector.buffers import Layout, SharedBuffers
    buf = SharedBuffers(Layout(2, (4, 84, 84)))
    obs, lives = buf.obs, buf.info["lives"]
    obs[1, 2] = 9
    lives[1] = 4
    buf.close()
    obs[0, 0, 0, 0] = 1
    print(int(obs[1, 2, 0, 0]), int(obs[0, 0, 0, 0]), int(lives[1]))
""")


def test_close_while_a_view_is_held_keeps_the_view_valid():
    child = run_code(HELD_VIEW_CHILD, timeout=60)
    assert child.returncode == 0, f"child died with {child.returncode}: {child.stderr[-500:]}"
    assert child.stdout.split() == ["9", "1", "4"]


def test_shared_block_close_is_idempotent():
    memory = SharedMemory(4096)
    memory.close()
    memory.close()
    assert memory.fd is None


@linux_only
@memfd_only
def test_block_is_an_unnamed_memfd_not_in_dev_shm():
    before = set(os.listdir("/dev/shm"))
    buf = SharedBuffers(Layout(4, (4, 84, 84)))
    try:
        target = os.readlink(f"/proc/self/fd/{buf.handle}")
        assert target.startswith("/memfd:fastatari")
        assert not [n for n in set(os.listdir("/dev/shm")) - before if "fastatari" in n]
        assert os.fstat(buf.handle).st_size == buf.layout.nbytes
    finally:
        buf.close()


@linux_only
@memfd_only
def test_close_leaves_no_memfd_descriptor():
    held = memfd_fds()  # blocks earlier tests in this process may still hold
    buf = SharedBuffers(Layout(4, (4, 84, 84)))
    assert buf.handle in memfd_fds() - held  # (mmap holds a duplicate of it too)
    buf.close()
    assert memfd_fds() == held
    first = SharedBuffers(Layout(2, (1,)))
    second = SharedBuffers(first.layout, os.dup(first.handle))  # as a worker maps it
    second.close()
    first.close()
    assert memfd_fds() == held


@linux_only
def test_the_file_memory_of_other_posix_has_no_name_left_and_goes_with_its_descriptor(
        monkeypatch):
    """Elsewhere on POSIX (macOS), a temporary file unlinked before anyone could leak it:
    nothing of it in the file system while it lives, and closed with its last descriptor."""
    monkeypatch.setattr(buffers_module, "HOST", dataclasses.replace(HOST, memory="file"))
    before = set(os.listdir("/dev/shm"))
    buf = SharedBuffers(Layout(4, (4, 84, 84)))
    fd = buf.handle
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
        assert "fastatari-" in target and target.endswith(" (deleted)"), target
        assert not [n for n in set(os.listdir("/dev/shm")) - before if "fastatari" in n]
        assert os.fstat(fd).st_size == buf.layout.nbytes
    finally:
        buf.close()
    with pytest.raises(OSError):
        os.fstat(fd)
