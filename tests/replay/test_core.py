"""FrameStore: every sampled stack is the stack that was added, whatever the stream; each
frame stored once where stacks continue; memory follows the frames alive."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from fastatari.replay._core import CHUNK, FrameStore, SumTree

from .streams import frame_stacks


def fill(store: FrameStore, steps: int, **stream) -> list:
    """Put ``steps`` steps of one stream per env; the pairs put, oldest first."""
    streams = [frame_stacks(np.random.default_rng(e), steps, k=store.stack, **stream)
               for e in range(store.n_envs)]
    history = []
    for _ in range(steps):
        items = [next(s) for s in streams]
        pair = (np.stack([i[0] for i in items]), np.stack([i[1] for i in items]))
        store.put(*pair)
        history.append(pair)
    return history


def check_all(store: FrameStore, history: list) -> None:
    """Every slot of every env gathers back exactly what was put there."""
    slots = np.repeat(np.arange(store.size), store.n_envs)
    envs = np.tile(np.arange(store.n_envs), store.size)
    obs, next_obs = store.gather(slots, envs)
    for i, (slot, env) in enumerate(zip(slots, envs, strict=True)):
        age = (store.pos - 1 - slot) % store.capacity  # 0: the last put
        want_obs, want_next = history[-1 - age]
        np.testing.assert_array_equal(obs[i], want_obs[env])
        np.testing.assert_array_equal(next_obs[i], want_next[env])


@pytest.mark.parametrize("padding", ["zero", "reset"])
@pytest.mark.parametrize("capacity,n_envs", [(1, 1), (7, 1), (50, 3), (400, 2)])
def test_gathers_exactly_what_was_put_through_wraps(padding, capacity, n_envs):
    """Zero or repeated-frame padding (gymnasium's two), episodic life (EnvPool's: a lost
    life ends nothing in the stack), streams that jump, a ring that wraps."""
    store = FrameStore(capacity, n_envs, (4, 6, 5), 4, 0)
    history = []
    for _ in range(6):
        history += fill(store, 137, padding=padding, garbage=0.05, life_every=5)
        check_all(store, history)


def test_unrelated_stacks_are_stored_whole_and_exact():
    store = FrameStore(20, 2, (4, 6, 5), 4, 0)
    check_all(store, fill(store, 75, garbage=1.0))


@pytest.mark.parametrize("shape,stack,axis", [((6, 5, 4), 4, -1), ((6, 5, 12), 4, 2),
                                              ((4, 3, 5, 3), 4, 0), ((8, 6, 5), 4, 0)])
def test_any_layout(shape, stack, axis):
    """Channels last (one run per pixel), colour stacks, frames of several channels: the
    stream's channels-first stacks moved into the layout."""
    store = FrameStore(30, 2, shape, stack, axis)
    frame = (6, 5) if shape != (4, 3, 5, 3) else (3, 5, 3)
    streams = [frame_stacks(np.random.default_rng(e), 100, k=4, frame=frame,
                            garbage=0.05) for e in range(2)]
    history = []

    def layout(stack_first: np.ndarray) -> np.ndarray:
        if shape == (6, 5, 4):
            return np.moveaxis(stack_first, 0, -1)
        if shape == (6, 5, 12):  # 4 frames of 3 channels (RGB-like), channels last
            return np.concatenate([np.stack([f, f ^ 1, f ^ 2], -1) for f in stack_first], -1)
        if shape == (8, 6, 5):  # 4 frames of 2 channels, channels first
            return np.concatenate([np.stack([f, f ^ 1]) for f in stack_first])
        return stack_first

    for _ in range(100):
        items = [next(s) for s in streams]
        pair = (np.stack([layout(i[0]) for i in items]), np.stack([layout(i[1]) for i in items]))
        store.put(*pair)
        history.append(pair)
    check_all(store, history)


@pytest.mark.parametrize("still", [0.0, 0.5])
def test_continuing_stacks_store_one_frame_each(still):
    """A stream of continuing stacks (no episode ends) stores one frame per transition after
    the first stack, and zero padding is never stored; a screen that stands still (a frame
    equal to the one before) does not mislead the matching."""
    store = FrameStore(10_000, 1, (4, 6, 5), 4, 0)
    history = fill(store, 500, episode=10**9, still=still)
    assert store.frames_stored <= 501  # the first frame, then one per step (or fewer)
    check_all(store, history)
    # every pair shifts by one: shared, the two are overlapping views, equal to the copies
    shared = store.gather(np.arange(500), np.zeros(500, int), shared=True)
    obs, next_obs = store.gather(np.arange(500), np.zeros(500, int))
    assert np.shares_memory(*shared)
    np.testing.assert_array_equal(shared[0], obs)
    np.testing.assert_array_equal(shared[1], next_obs)


def test_shared_views_only_where_every_pair_shifts_by_one():
    store = FrameStore(50, 1, (4, 6, 5), 4, 0)
    history = fill(store, 50, garbage=1.0)  # nothing continues: two arrays of their own
    obs, next_obs = store.gather([0, 1], [0, 0], shared=True)
    assert not np.shares_memory(obs, next_obs)
    np.testing.assert_array_equal(next_obs, np.stack([history[0][1][0], history[1][1][0]]))
    channels_last = FrameStore(5, 1, (6, 5, 4), 4, -1)
    stack = np.random.default_rng(0).integers(0, 4, (1, 6, 5, 5), dtype=np.uint8)
    channels_last.put(np.ascontiguousarray(stack[..., :4]), np.ascontiguousarray(stack[..., 1:]))
    channels_last.put(np.ascontiguousarray(stack[..., :4]), np.ascontiguousarray(stack[..., 1:]))
    assert not np.shares_memory(*channels_last.gather([0, 1], [0, 0], shared=True))


def test_memory_follows_the_frames_alive():
    store = FrameStore(CHUNK, 2, (4, 6, 5), 4, 0)
    fill(store, 20 * CHUNK, episode=10**9)
    assert store.frames_stored <= 2 * CHUNK + 8  # one frame per transition alive
    # the chunks those frames span, a chunk being filled, the spares; the frame references
    chunks = -(-store.frames_stored // CHUNK) + 1 + 2
    references = (CHUNK + 1) * 2 * 2 * 4 * 8
    assert store.nbytes <= chunks * CHUNK * 6 * 5 + references


def test_state_dict_and_pickle_round_trip_exactly():
    store = FrameStore(33, 2, (4, 6, 5), 4, 0)
    history = fill(store, 100, garbage=0.1)
    copies = pickle.loads(pickle.dumps(store)), _loaded(store)
    for copy in copies:
        check_all(copy, history)
        assert (copy.pos, copy.full, copy.frames_stored) == (store.pos, store.full,
                                                             store.frames_stored)
    more = fill(store, 40, garbage=0.1)
    for copy in copies:  # and each goes on as the original does
        fill(copy, 40, garbage=0.1)
        check_all(copy, history + more)
        assert copy.frames_stored == store.frames_stored


def _loaded(store: FrameStore) -> FrameStore:
    copy = FrameStore(33, 2, (4, 6, 5), 4, 0)
    copy.load_state_dict(store.state_dict())
    return copy


def test_a_state_referring_to_missing_frames_is_refused_and_nothing_changes():
    store = FrameStore(8, 1, (4, 6, 5), 4, 0)
    history = fill(store, 5)
    state = store.state_dict()
    state["refs"] = state["refs"].copy()
    state["refs"][0, 0, 0, 0] = store.next_serial + 5
    with pytest.raises(ValueError, match="refer to frames"):
        store.load_state_dict(state)
    check_all(store, history)
    with pytest.raises(ValueError, match="shape"):
        FrameStore(9, 1, (4, 6, 5), 4, 0).load_state_dict(store.state_dict())


def test_bad_input_is_refused_before_anything_changes():
    store = FrameStore(8, 2, (4, 6, 5), 4, 0)
    history = fill(store, 3)
    good = history[-1][1]
    for obs, error in ((good.astype(np.int16), TypeError), (good[:1], ValueError),
                       (good[..., :4], ValueError), (list(good), TypeError)):
        with pytest.raises(error):
            store.put(obs, good)
        with pytest.raises(error):
            store.put(good, obs)
    assert store.pos == 3
    check_all(store, history)
    for slots in ([3], [-1], np.array([2**64 - 1], np.uint64)):
        with pytest.raises(IndexError, match="written"):
            store.gather(slots, [0], shared=True)
    with pytest.raises(IndexError):
        store.gather([0], [2])
    with pytest.raises(IndexError):
        store.gather([0], [-1])
    none = np.zeros(0, int)
    for shared in (False, True):  # nothing drawn: empty stacks of the stacks' shape
        assert [a.shape for a in store.gather(none, none, shared=shared)] == [(0, 4, 6, 5)] * 2
    # strided index arrays are taken as they are
    obs, _ = store.gather(np.arange(4)[::2], np.zeros(4, int)[::2])
    np.testing.assert_array_equal(obs[1], history[2][0][0])
    with pytest.raises(ValueError, match="one length"):
        store.gather([0, 1], [0])
    with pytest.raises(ValueError, match="C-contiguous"):
        store.gather([0], [0], out_obs=np.empty((1, 4, 6, 5), np.float32))
    for shape, stack, axis in (((4, 6, 5), 3, 0), ((4, 6, 5), 4, 3), ((4, 6, 5), 0, 0)):
        with pytest.raises(ValueError):
            FrameStore(8, 1, shape, stack, axis)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_n_step_pairs_store_each_frame_once_or_twice(n):
    """(obs at t, obs at t + n), as an n-step memory puts them: the observation continues the
    last one by a frame, the next observation the last next one; each frame stored once while
    n is below the stack size, twice beyond (a pair then shares no frame, and the frame an
    observation adds was stored n puts before); every stack gathers back exactly."""
    store = FrameStore(10_000, 1, (4, 6, 5), 4, 0)
    stacks = [obs for obs, _, _, _ in frame_stacks(np.random.default_rng(0), 300 + n,
                                                   episode=10**9)]
    history = []
    for t in range(300):
        pair = (stacks[t][None], stacks[t + n][None])
        store.put(*pair)
        history.append(pair)
    check_all(store, history)
    assert store.frames_stored <= (1 if n < 4 else 2) * (300 + n + 1)


def test_sum_tree_finds_each_item_for_its_share_of_the_mass():
    tree = SumTree(6)
    priorities = np.array([1.0, 0.0, 2.5, 0.0, 0.5, 4.0])
    tree.set(np.arange(6), priorities)
    assert tree.total == pytest.approx(8.0)
    masses = (np.arange(8000) + 0.5) / 1000  # evenly over [0, 8)
    counts = np.bincount(tree.find(masses), minlength=6)
    np.testing.assert_array_equal(counts, priorities * 1000)
    assert tree.find([8.0])[0] == 5  # past the end: the last item with a priority
    tree.set([5, 5], [1.0, 0.0])  # the last value wins
    assert tree.total == pytest.approx(4.0) and tree.find([3.99])[0] == 4
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(tree)).get(np.arange(6)),
                                  tree.get(np.arange(6)))
    for values, error in (([-1.0], ValueError), ([np.nan], ValueError), ([1, 2], ValueError)):
        with pytest.raises(error):
            tree.set([0], values)
    with pytest.raises(IndexError):
        tree.set([6], [1.0])
    with pytest.raises(ValueError, match="every priority is 0"):
        SumTree(3).find([0.0])

