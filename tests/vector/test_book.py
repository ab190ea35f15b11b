"""fastatari.vector._book: the per-env bookkeeping, apart from any process."""
from __future__ import annotations

import numpy as np
import pytest
from gymnasium.error import AlreadyPendingCallError

from fastatari.vector._book import EnvBook, Phase
from fastatari.vector.messages import Op, Reply, ReplyKind


def test_send_answer_receive_in_answer_order():
    book = EnvBook(4)
    assert book.in_flight() == 0
    ops, run = book.dispatch(np.array([0, 2, 3]))
    assert run.tolist() == [0, 2, 3] and ops[[0, 2, 3]].tolist() == [Op.STEP] * 3
    with pytest.raises(AlreadyPendingCallError, match="env 2"):
        book.check_idle(np.array([1, 2]), "send")
    book.apply([Reply(ReplyKind.DONE, envs=np.array([3, 0]))])
    assert book.in_flight() == 3 and book.answered() == 2
    assert book.take_answered(2).tolist() == [3, 0]
    assert book.in_flight() == 1
    book.check_idle(np.array([0, 1, 3]), "send")


def test_ended_envs_reset_at_their_next_step():
    book = EnvBook(3)
    book.set(slice(None), np.array([False, True, False]))
    ops, run = book.dispatch(np.arange(3))
    assert ops.tolist() == [Op.STEP, Op.RESET, Op.STEP] and run.tolist() == [0, 1, 2]
    book.all_idle()
    book.reset(np.array([1]))
    assert not book.ended_of(slice(None)).any() and book.in_flight() == 0


def test_a_restart_is_answered_at_once_and_reported_once():
    book = EnvBook(3)
    book.set(slice(None), np.array([True, False, False]))
    book.apply([Reply(ReplyKind.RESTARTED, envs=np.array([], np.int64),
                      restarted=np.array([0, 1]))])
    assert book.ended_of(np.arange(3)).tolist() == [False, False, False]  # fresh games
    _, run = book.dispatch(np.arange(3))
    assert run.tolist() == [2] and book.answered() == 2  # the restarted hold their result
    mask = np.ones(3, bool)
    assert book.report_restarted(np.arange(3), mask).tolist() == [True, True, False]
    assert not book.report_restarted(np.arange(3), mask).any()


def test_set_and_get_carry_a_block():
    book = EnvBook(4)
    book.set(slice(2, 4), [True, False], [False, True])
    ended, restarted = book.get(slice(None))
    assert ended.tolist() == [False, False, True, False]
    assert restarted.tolist() == [False, False, False, True]
    book.set(np.array([0]), True)  # restarted unchanged
    assert book.get(slice(None))[1].tolist() == [False, False, False, True]


def test_the_answer_queue_keeps_answer_order_round_after_round():
    """Envs sent, answered in several replies and taken in batches of any size, round after
    round: always in answer order; never more than are held."""
    rng = np.random.default_rng(0)
    book, idle, flying, expected = EnvBook(5), set(range(5)), set(), []
    for _ in range(200):
        send = rng.permutation(sorted(idle))[:rng.integers(0, len(idle) + 1)]
        if send.size:
            book.dispatch(send)
        idle -= set(send.tolist())
        flying |= set(send.tolist())
        for part in np.array_split(rng.permutation(sorted(flying)), rng.integers(1, 3)):
            book.apply([Reply(ReplyKind.DONE, envs=part.astype(np.int64))])
            expected += part.tolist()
        flying.clear()
        count = int(rng.integers(0, book.answered() + 1))
        taken = book.take_answered(count).tolist()
        assert taken == expected[:count] and book.in_flight() == len(expected) - count
        expected = expected[count:]
        idle |= set(taken)
    with pytest.raises(ValueError, match="answered envs asked for"):
        book.take_answered(book.answered() + 1)


def test_an_env_answered_twice_is_queued_once():
    book = EnvBook(3)
    book.dispatch(np.array([0, 1]))
    book.apply([Reply(ReplyKind.DONE, envs=np.array([1])),
                Reply(ReplyKind.RESTARTED, envs=np.array([1, 0]), restarted=np.array([0, 1]))])
    assert book.answered() == 2 and book.take_answered(2).tolist() == [1, 0]
    assert book.in_flight() == 0


def test_the_phases_are_the_shared_codes():
    book = EnvBook(2)
    book.dispatch(np.array([1]))
    assert [Phase.IDLE, Phase.IN_FLIGHT, Phase.ANSWERED] == [0, 1, 2]
    assert book.in_flight() == 1
