"""fastatari.vector._wait: the vector env's hot path in shared memory (fa_wait.c), apart
from the kernels: publishing and waiting for commands, taking ops, completing envs in ticket
order, waiting for completions (woken by the eventfd, or by a pipe), and the argument checks."""
from __future__ import annotations

import math
import os
import select
import sys
import threading
import time

import numpy as np
import pytest

from fastatari.vector import _wait
from fastatari.vector._wait import (
    CONTROL_BYTES,
    DONE,
    EVENT,
    TIMEOUT,
    claim,
    complete,
    completed,
    generation,
    publish,
    wait_done,
    wait_generation,
)

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="eventfd, epoll")


def control_words() -> np.ndarray:
    """A cache-line aligned control region, as the shared memory's first bytes are."""
    raw = np.zeros(CONTROL_BYTES + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    return raw[start:start + CONTROL_BYTES]


def later(action, delay=0.05):
    timer = threading.Timer(delay, action)
    timer.start()
    return timer


def test_generation_published_and_seen_by_a_waiting_thread():
    control = control_words()
    assert generation(control) == 0
    start = time.perf_counter()
    assert not wait_generation(control, 0, 0.0, 0.02)  # nothing published: times out
    assert time.perf_counter() - start >= 0.02
    timer = later(lambda: publish(control))  # the waiter sleeps (no spin) and is woken
    assert wait_generation(control, 0, 0.0, 10.0)
    timer.join()
    assert generation(control) == 1
    assert wait_generation(control, 0, 0.0, 0.0)  # differs already: at once


def test_many_sleeping_waiters_all_woken_by_one_publish():
    """The wake is passed on (two per woken waiter): every sleeper sees the publish."""
    control = control_words()
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(
        wait_generation(control, 0, 0.0, 10.0))) for _ in range(9)]
    for thread in threads:
        thread.start()
    time.sleep(0.1)  # all asleep
    start = time.perf_counter()
    publish(control)
    for thread in threads:
        thread.join()
    assert seen == [True] * 9 and time.perf_counter() - start < 5.0


def test_claim_takes_an_op_once():
    ops = np.array([0, 1, 2], np.uint8)
    assert [claim(ops, i) for i in range(3)] == [0, 1, 2]
    assert not ops.any() and claim(ops, 1) == 0


def test_every_start_names_its_output_slot():
    control, tickets = control_words(), np.zeros(3, np.int64)
    op, in_flight = np.zeros(3, np.uint8), np.zeros(3, np.uint8)
    hot = _wait.Transport(control, tickets, op, in_flight, -1, -1, None, _wait.SpinRule(0.0))
    hot.run(np.array([0, 2, 0], np.uint8), 1)
    assert _wait.output(control) == 1 and op.tolist() == [0, 2, 0]
    assert in_flight.tolist() == [0, 1, 0] and tickets[1] == -1 and generation(control) == 1
    hot.run(None)  # none named: none
    assert _wait.output(control) == -1 and op.tolist() == [1, 1, 1]


def test_a_take_with_a_limit_leaves_the_later_envs_in_flight():
    """A recv takes the first envs to finish; those done after them stay in flight, counted,
    for the next take."""
    control, tickets = control_words(), np.zeros(4, np.int64)
    op, in_flight = np.zeros(4, np.uint8), np.zeros(4, np.uint8)
    hot = _wait.Transport(control, tickets, op, in_flight, -1, -1, None, _wait.SpinRule(0.0))
    hot.run(None)
    for i in (2, 0, 3):  # env 2 finishes first, then 0, then 3; env 1 is still running
        complete(control, tickets, i, -1)
    assert hot.take_done(True, 2).tolist() == [2, 0] and hot.collected == 2
    assert in_flight.tolist() == [0, 1, 0, 1]
    assert hot.wait_done(hot.collected + 1, 0.0) == DONE  # env 3's completion, not taken yet
    assert hot.take_done(True).tolist() == [3] and hot.collected == 3
    assert in_flight.tolist() == [0, 1, 0, 0]
    hot.close()  # the pool's memory is gone: nothing runs over it
    for call in (lambda: hot.run(None), lambda: hot.take_done(True),
                 lambda: hot.wait_done(0, 0.0), lambda: hot.run_and_wait(None)):
        with pytest.raises(RuntimeError, match="workers were closed"):
            call()


def test_envs_lost_with_their_worker_leave_no_ticket_unaccounted():
    """A worker that dies between taking an env's ticket and completing it leaves the ticket
    held in the env's word (-2 - ticket); dropping the envs lost counts that ticket lost (the
    trainer then knows the gap instead of waiting for it), frees the word, and takes the envs
    out of flight. An env lost before it took a ticket leaves nothing to count."""
    control, tickets = control_words(), np.zeros(4, np.int64)
    op, in_flight = np.zeros(4, np.uint8), np.zeros(4, np.uint8)
    hot = _wait.Transport(control, tickets, op, in_flight, -1, -1, None, _wait.SpinRule(0.0))
    hot.run(None)
    complete(control, tickets, 0, -1)  # ticket 0
    tickets[2] = -2 - 1  # ticket 1, taken by env 2 when its worker died
    hot.drop(np.array([2, 3], np.int32))  # env 3 had not finished
    assert hot.lost == 1 and tickets.tolist() == [0, -1, -1, -1]
    assert in_flight.tolist() == [1, 1, 0, 0]
    hot.drop([1])
    assert hot.lost == 1 and in_flight.tolist() == [1, 0, 0, 0]
    with pytest.raises(IndexError, match="out of range"):
        hot.drop([4])
    assert in_flight.tolist() == [1, 0, 0, 0]


def test_completions_are_counted_in_ticket_order():
    control = control_words()
    tickets = np.full(4, -1, np.int64)
    for i in (2, 0, 3):
        complete(control, tickets, i, -1)
    assert tickets.tolist() == [1, -1, 0, 2] and completed(control) == 3
    assert np.argsort(tickets[[0, 2, 3]]).tolist() == [1, 0, 2]  # env 2 first, then 0, 3


def test_wait_done_portable_naps_until_the_count():
    control = control_words()
    tickets = np.full(2, -1, np.int64)
    start = time.perf_counter()
    assert wait_done(control, 1, -1, -1, 0.0, 0.02) == TIMEOUT
    assert time.perf_counter() - start >= 0.02
    timer = later(lambda: complete(control, tickets, 1, -1))
    assert wait_done(control, 1, -1, -1, 0.0, 10.0) == DONE
    timer.join()
    assert wait_done(control, 1, -1, -1, 0.0, 0.0) == DONE  # reached already


@linux_only
def test_wait_done_sleeps_on_epoll_woken_by_the_target_completion_or_a_pipe():
    control = control_words()
    tickets = np.full(3, -1, np.int64)
    evfd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    epoll = select.epoll()
    reader, writer = os.pipe()
    try:
        epoll.register(evfd, select.EPOLLIN)
        epoll.register(reader, select.EPOLLIN)
        # two completions, the trainer waits for both: only the second writes the eventfd
        timer = later(lambda: [complete(control, tickets, i, evfd) for i in (0, 1)])
        assert wait_done(control, 2, epoll.fileno(), evfd, 0.0, 10.0) == DONE
        timer.join()
        assert completed(control) == 2
        # a worker's pipe speaks (its death: end of file; an error): EVENT, at once
        timer = later(lambda: os.close(writer))
        start = time.perf_counter()
        assert wait_done(control, 3, epoll.fileno(), evfd, 0.0, 10.0) == EVENT
        assert time.perf_counter() - start < 5.0
        timer.join()
        epoll.unregister(reader)
        assert wait_done(control, 3, epoll.fileno(), evfd, 0.0, 0.05) == TIMEOUT
    finally:
        epoll.close()
        os.close(evfd)
        os.close(reader)


@pytest.mark.parametrize("seconds", [math.inf, 1e12, 1e300, None])
def test_a_wait_past_the_clock_has_no_deadline(seconds):
    """2**64 ns and more (and None) saturate to "no deadline" instead of one in the past."""
    control = control_words()
    timer = later(lambda: publish(control))
    assert wait_generation(control, 0, 0.0, seconds)
    timer.join()


def test_spin_rule_sleeps_after_missed_spins_and_probes():
    rule = _wait.SpinRule(5e-6, patience=3, probe=4)
    assert rule.spin() == 5e-6
    for _ in range(2):
        rule.waited(1e-3)  # outlasted the spin
    assert rule.spin() == 5e-6  # patience not spent yet
    rule.waited(1e-3)
    # sleeps at once, but every 4th wait spins to find out
    assert [rule.spin() for _ in range(8)] == [0.0, 0.0, 0.0, 5e-6] * 2
    rule.waited(0.0)  # found its result at once: tells nothing
    assert rule.spin() == 0.0
    rule.waited(3e-6)  # within the spin: spins again
    assert rule.spin() == 5e-6
    never = _wait.SpinRule(5e-6, patience=1)
    never.waited(1.0)
    assert {never.spin() for _ in range(50)} == {0.0}  # no probe
    with pytest.raises(ValueError, match="patience >= 1"):
        _wait.SpinRule(5e-6, patience=0)


class TestErrors:
    def test_control_too_small_or_misaligned(self):
        with pytest.raises(ValueError, match=f"control must hold {CONTROL_BYTES} bytes"):
            publish(np.zeros(8, np.uint8))
        with pytest.raises(ValueError, match="64-byte aligned"):
            publish(control_words_misaligned())

    def test_index_out_of_range(self):
        with pytest.raises(IndexError, match="env 3 out of range for 3 ops"):
            claim(np.zeros(3, np.uint8), 3)
        with pytest.raises(IndexError, match="env -1 out of range for 2 tickets"):
            complete(control_words(), np.zeros(2, np.int64), -1, -1)

    def test_a_row_rule_checks_its_columns_and_targets(self):
        from fastatari.vector._wait import Deliverer, RowRule

        done, reward = np.zeros(4, np.bool_), np.zeros(4, np.float32)
        with pytest.raises(ValueError, match="kind must be one of"):
            RowRule([("reward", reward, "sum")], done, None)
        with pytest.raises(ValueError, match="C-contiguous with 4 rows"):
            RowRule([("reward", np.zeros(8, np.float32)[::2], "plain")], done, None)
        rule = RowRule([("reward", reward, "plain")], done, None)
        assert rule.names == ("reward",)
        slot = {"reward": np.zeros(3, np.float64), "env_id": np.zeros(3, np.int64),
                "mark": np.zeros(3, np.int64)}  # rows of 8 bytes, not the column's 4
        with pytest.raises(ValueError, match="reward must be C-contiguous with 3 rows of 4"):
            Deliverer(control_words(), np.zeros(4, np.int64), np.full(1, -1, np.int64),
                      [slot], rule)
        with pytest.raises(ValueError, match="the 2 envs of tickets"):
            Deliverer(control_words(), np.zeros(2, np.int64), np.full(0, -1, np.int64), [],
                      rule)

    @pytest.mark.parametrize("seconds", [-1.0, math.nan])
    def test_bad_timeout(self, seconds):
        with pytest.raises(ValueError, match="timeout must be >= 0 or None"):
            wait_generation(control_words(), 0, 0.0, seconds)
        with pytest.raises(ValueError, match="timeout must be >= 0 or None"):
            wait_done(control_words(), 1, -1, -1, 0.0, seconds)

    def test_wrong_dtype(self):
        with pytest.raises(ValueError, match="Buffer dtype mismatch"):
            claim(np.zeros(2, np.int32), 0)

    def test_not_contiguous(self):
        with pytest.raises(ValueError, match="contiguous"):
            claim(np.zeros(4, np.uint8)[::2], 0)


def control_words_misaligned() -> np.ndarray:
    raw = np.zeros(CONTROL_BYTES + 64, np.uint8)
    start = (-raw.ctypes.data) % 64 + 1
    return raw[start:start + CONTROL_BYTES]


def test_the_layout_reserves_the_control_words():
    from fastatari.vector.buffers import CONTROL_BYTES as reserved

    assert reserved == CONTROL_BYTES


def test_not_in_the_kernels():
    from fastatari.kernels import _kernels

    assert not hasattr(_kernels, "publish") and _wait.FAST_WAITS == sys.platform.startswith(
        "linux")


def test_a_deliverer_writes_each_ticket_into_the_row_of_the_batch_open_for_it():
    """Deliverer: the env's ticket first, then its row of the slot whose batch holds that
    ticket (row ticket - first): the columns as they are, a finished game's statistics only
    where its game ended (zeros elsewhere), terminated or'ed with the life lost, its env_id,
    and last its mark; then the completion. A ticket no open slot holds writes nothing."""
    from fastatari.vector._wait import Deliverer, RowRule
    from fastatari.vector.buffers import Layout, SharedBuffers

    buf = SharedBuffers(Layout(4, (2, 3, 3), batch_slots=2, batch_size=2))
    try:
        b = buf
        b.obs[:] = np.arange(4, dtype=np.uint8)[:, None, None, None] + 1
        b.reward[:] = [0.5, 1.5, 2.5, 3.5]
        b.terminated[:] = [False, False, True, False]
        b.life_loss[:] = [True, False, False, False]
        b.game_done[:] = [False, True, False, False]
        b.game["r"][:] = [7.0, 8.0, 9.0, 10.0]
        for slot in b.batches:
            slot["game_r"][:] = -1.0
        rule = RowRule([("obs", b.obs, "plain"), ("reward", b.reward, "plain"),
                        ("terminated", b.terminated, "terminated"),
                        ("game_done", b.game_done, "plain"), ("game_r", b.game["r"], "game")],
                       b.game_done, b.life_loss)
        deliver = Deliverer(b.control, b.ticket, b.batch_first, b.batches, rule)
        b.batch_first[:] = [-1, 2]  # slot 1 holds the batch of tickets 2 and 3
        for i in (3, 2, 0, 1):  # tickets 0, 1, 2, 3
            deliver.complete(i, -1)
        assert b.ticket.tolist() == [2, 3, 1, 0] and completed(b.control) == 4
        slot = b.batches[1]
        assert slot["env_id"].tolist() == [0, 1] and slot["mark"].tolist() == [2, 3]
        np.testing.assert_array_equal(slot["obs"], b.obs[[0, 1]])
        assert slot["reward"].tolist() == [0.5, 1.5]
        assert slot["terminated"].tolist() == [True, False]  # env 0 lost a life
        assert slot["game_done"].tolist() == [False, True]
        assert slot["game_r"].tolist() == [0.0, 8.0]  # env 0's game went on
        untouched = b.batches[0]
        assert not untouched["obs"].any() and untouched["game_r"].tolist() == [-1.0, -1.0]
        with pytest.raises(IndexError, match="out of range"):
            deliver.complete(4, -1)
    finally:
        buf.close()  # (views still held keep the mapping until they go)
