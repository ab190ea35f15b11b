"""FrameStore's chunks: a chunk goes back to the spares only once no stored transition refers
to it, whatever order the ring's slots refer to frames in (a slot of zero padding refers to
none; an n-step observation refers to frames stored puts before)."""

from __future__ import annotations

import numpy as np
import pytest

from fastatari.replay._core import CHUNK, FrameStore

SHAPE, STACK = (4, 6, 5), 4


def check_all(store: FrameStore, history: list) -> None:
    """Every slot gathers back, byte for byte, what was put there; and the oldest frame
    needed is the oldest any slot (or the last pair) refers to."""
    slots = np.repeat(np.arange(store.size), store.n_envs)
    envs = np.tile(np.arange(store.n_envs), store.size)
    obs, next_obs = store.gather(slots, envs)
    put = [history[-1 - (store.pos - 1 - slot) % store.capacity] for slot in range(store.size)]
    for got, want, name in ((obs, 0, "obs"), (next_obs, 1, "next_obs")):
        want = np.concatenate([pair[want] for pair in put])
        bad = [slot for slot in range(store.size)
               if got[slot * store.n_envs:(slot + 1) * store.n_envs].tobytes()
               != want[slot * store.n_envs:(slot + 1) * store.n_envs].tobytes()]
        assert not bad, f"{name} of slots {bad} differ from what was put"
    state = store.state_dict()
    refs = state["refs"] if store.full else state["refs"][:store.pos]
    used = np.concatenate([refs[refs >= 0], state["last"][state["last"] >= 0]])
    assert store.oldest_needed() == (used.min() if used.size else store.next_serial)


def random_pair(rng: np.random.Generator, n_envs: int = 1) -> tuple:
    return (rng.integers(1, 256, (n_envs, *SHAPE), dtype=np.uint8),
            rng.integers(1, 256, (n_envs, *SHAPE), dtype=np.uint8))


@pytest.mark.parametrize("capacity", [400, 150])
def test_a_slot_of_zeros_does_not_free_frames_later_slots_use(capacity):
    """Slot 1 all zeros (refers to no frame), random stacks elsewhere: once the ring wraps,
    slot 1 is the oldest, yet the slots after it still need their frames."""
    store = FrameStore(capacity, 1, SHAPE, STACK, 0)
    rng = np.random.default_rng(0)
    zeros = np.zeros((1, *SHAPE), np.uint8)
    history = []
    for t in range(4 * max(capacity, 2 * CHUNK // (2 * STACK))):
        pair = (zeros, zeros) if t % capacity == 1 else random_pair(rng)
        store.put(*pair)
        history.append(pair)
        if t % 17 == 0 or t % capacity in (0, 1, 2):
            check_all(store, history)
    check_all(store, history)


def test_zero_slots_anywhere_in_many_streams():
    """Zero stacks in each stream at random slots, random stacks elsewhere."""
    store = FrameStore(200, 2, SHAPE, STACK, 0)
    rng = np.random.default_rng(1)
    history = []
    for t in range(1500):
        obs, nxt = random_pair(rng, 2)
        obs[rng.random(2) < 0.5] = 0
        nxt[rng.random(2) < 0.5] = 0
        store.put(obs, nxt)
        history.append((obs, nxt))
        if t % 7 == 0:
            check_all(store, history)
    check_all(store, history)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_n_step_lookback_across_a_stream_that_jumps(n):
    """Every n-th observation is the next observation put n puts before (found there by the
    lookback) and everything else is new: when that earlier slot is overwritten, the slot
    after it refers only to newer frames, yet the later slot still needs the older ones (128
    streams: a put fills a chunk, so a chunk freed too early is reused at once)."""
    store = FrameStore(20, 128, SHAPE, STACK, 0)
    rng = np.random.default_rng(n)
    history = []
    for t in range(100):
        obs, nxt = random_pair(rng, 128)
        if t % n == 0 and t >= n:
            obs = history[-n][1]
        store.put(obs, nxt, lookback=n)
        history.append((obs, nxt))
        check_all(store, history)
    assert store.frames_stored <= 2 * STACK * 128 * (store.capacity + n)


def test_state_round_trip_keeps_the_true_oldest():
    """A store loaded from a state releases chunks as the original does."""
    store = FrameStore(200, 1, SHAPE, STACK, 0)
    rng = np.random.default_rng(2)
    zeros = np.zeros((1, *SHAPE), np.uint8)
    history = []
    for t in range(700):
        pair = (zeros, zeros) if t % 200 == 3 else random_pair(rng)
        store.put(*pair)
        history.append(pair)
    copy = FrameStore(200, 1, SHAPE, STACK, 0)
    copy.load_state_dict(store.state_dict())
    check_all(copy, history)
    for t in range(700):
        pair = (zeros, zeros) if t % 200 == 3 else random_pair(rng)
        store.put(*pair)
        copy.put(*pair)
        history.append(pair)
        if t % 13 == 0:
            check_all(copy, history)
            assert copy.oldest_needed() == store.oldest_needed()
    check_all(copy, history)
