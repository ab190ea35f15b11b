"""fastatari.vector._wait: the vector workers' wait for their next command (not a kernel)."""
from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

from fastatari.vector._wait import wait_change


def change_later(words, index, value, delay=0.05):
    timer = threading.Timer(delay, lambda: words.__setitem__(index, value))
    timer.start()
    return timer


def test_wait_change_sees_another_thread_and_times_out():
    words = np.zeros(3, np.int64)
    start = time.perf_counter()
    assert not wait_change(words, 1, 0, 0.02)
    assert time.perf_counter() - start >= 0.02
    words[1] = 5
    assert wait_change(words, 1, 0, 10.0)  # differs already: returns at once
    timer = change_later(words, 2, 1)
    start = time.perf_counter()
    assert wait_change(words, 2, 0, 10.0)  # runs without the GIL, so the timer thread can write
    assert time.perf_counter() - start < 5.0
    timer.join()


def test_wait_change_zero_seconds_looks_once():
    words = np.array([7], np.int64)
    assert not wait_change(words, 0, 7, 0.0)
    assert wait_change(words, 0, 6, 0.0)


@pytest.mark.parametrize("seconds", [math.inf, 1e12, 1e300])
def test_wait_change_past_the_clock_waits_without_a_deadline(seconds):
    """2**64 ns and more saturate to "no deadline" instead of wrapping to one in the past."""
    words = np.zeros(1, np.int64)
    timer = change_later(words, 0, 1)
    assert wait_change(words, 0, 0, seconds)
    timer.join()


def test_wait_change_takes_any_64_bit_int_buffer():
    words = np.zeros(2, np.longlong)  # 'q' where int64 is 'l'
    assert not wait_change(words, 1, 0, 0.0)


class TestErrors:
    def test_index_out_of_range(self):
        words = np.zeros(3, np.int64)
        with pytest.raises(IndexError, match="index 3 out of range for 3 words"):
            wait_change(words, 3, 0, 0.0)
        with pytest.raises(IndexError, match="index -1 out of range"):
            wait_change(words, -1, 0, 0.0)

    @pytest.mark.parametrize("seconds", [-1.0, math.nan])
    def test_bad_seconds(self, seconds):
        with pytest.raises(ValueError, match="seconds must be >= 0"):
            wait_change(np.zeros(1, np.int64), 0, 0, seconds)

    def test_wrong_dtype(self):
        with pytest.raises(ValueError, match="Buffer dtype mismatch"):
            wait_change(np.zeros(2, np.int32), 0, 0, 0.0)

    def test_not_contiguous(self):
        with pytest.raises(ValueError, match="contiguous"):
            wait_change(np.zeros(4, np.int64)[::2], 0, 0, 0.0)

    def test_float_index(self):
        with pytest.raises(TypeError):
            wait_change(np.zeros(2, np.int64), 0.5, 0, 0.0)


def test_not_in_the_kernels():
    from fastatari import _kernels

    assert not hasattr(_kernels, "wait_change")
