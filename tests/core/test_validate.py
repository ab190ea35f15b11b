"""fastatari.core.validate: each checker's accepted and refused values, with the exception type
the module documents and a message naming the argument."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fastatari.core import validate
from fastatari.core.validate import (
    check_actions,
    check_bool,
    check_env_ids,
    check_int,
    check_probability,
    check_seed,
    check_seeds,
    check_timeout,
    is_int,
)


# -- is_int --------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0, -3, 2**70, np.int8(1), np.uint64(7), np.int64(-1)])
def test_is_int_accepts_python_and_numpy_ints(value):
    assert is_int(value)


@pytest.mark.parametrize("value", [True, False, np.bool_(True), 1.0, np.float32(2), "1", None,
                                   np.array(1), [1]])
def test_is_int_refuses_bools_floats_and_containers(value):
    assert not is_int(value)


# -- check_int -----------------------------------------------------------------------------------
@pytest.mark.parametrize("value, minimum, maximum", [
    (1, 1, None), (5, 1, 5), (0, 0, 0), (2**40, 1, None), (np.int64(3), 1, 4),
    (np.uint8(255), 0, 255), (np.int32(-2), -2, 2),
])
def test_check_int_accepts(value, minimum, maximum):
    got = check_int("frame_skip", value, minimum, maximum)
    assert got == value and type(got) is int


@pytest.mark.parametrize("value, minimum, maximum, within", [
    (0, 1, None, ">= 1"),
    (-1, 0, None, ">= 0"),
    (6, 1, 5, r"in \[1, 5\]"),
    (np.int64(0), 1, 4, r"in \[1, 4\]"),
    (True, 0, None, ">= 0"),
    (np.bool_(True), 0, None, ">= 0"),
    (1.0, 1, None, ">= 1"),
    (np.float64(2.0), 1, None, ">= 1"),
    ("4", 1, None, ">= 1"),
    (None, 1, None, ">= 1"),
])
def test_check_int_refuses_with_value_error_naming_the_argument(value, minimum, maximum, within):
    # ValueError even for a non-int: documented in check_int (options come from config files).
    with pytest.raises(ValueError, match=f"^frame_skip must be an int {within}, got "):
        check_int("frame_skip", value, minimum, maximum)


# -- check_bool ----------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [True, False, np.bool_(True), np.bool_(False)])
def test_check_bool_accepts_python_and_numpy_bools(value):
    got = check_bool("copy", value)
    assert got is bool(value)


@pytest.mark.parametrize("value", [1, 0, "no", "True", None, 1.0, np.int64(1), np.array([True])])
def test_check_bool_refuses(value):
    with pytest.raises(ValueError, match="^copy must be a bool, got "):
        check_bool("copy", value)


# -- check_probability ---------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0, 1, 0.0, 0.25, 1.0, np.float32(0.5), np.int64(1)])
def test_check_probability_accepts(value):
    got = check_probability("repeat_action_probability", value)
    assert got == float(value) and type(got) is float


@pytest.mark.parametrize("value", [-0.01, 1.01, 2, math.nan, math.inf, -math.inf, True,
                                   np.bool_(False), "0.5", None])
def test_check_probability_refuses(value):
    with pytest.raises(ValueError,
                       match=r"^repeat_action_probability must be a float in \[0, 1\], got "):
        check_probability("repeat_action_probability", value)


# -- check_timeout -------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [1, 1.0, 5, 5.0, 3600, 1e300, np.float64(1.5), np.int64(2)])
def test_check_timeout_accepts_finite_numbers_from_one_second(value):
    got = check_timeout("timeout", value)
    assert got == float(value) and type(got) is float


def test_check_timeout_none_waits_forever():
    assert check_timeout("timeout", None) is None


@pytest.mark.parametrize("value", [0, 0.0, -1, -1e-9, 1e-6, 0.999, math.nan, math.inf,
                                   -math.inf, "5", True, False, np.bool_(True), [5], 10**400])
def test_check_timeout_refuses(value):
    """Absurd deadlines too: 1 µs would kill every healthy worker as hung; 10**400 s is no
    float (it raised OverflowError)."""
    with pytest.raises(ValueError, match="^timeout must be None \\(wait forever\\) or a finite "
                                         "number of seconds >= 1, got "):
        check_timeout("timeout", value)


# -- check_seed / check_seeds --------------------------------------------------------------------
@pytest.mark.parametrize("value", [None, 0, 1, 2**63, np.int64(5), np.uint32(9)])
def test_check_seed_accepts(value):
    got = check_seed(value)
    assert got == value
    assert got is None or type(got) is int


@pytest.mark.parametrize("value", [True, False, np.bool_(True), 1.0, "1", [1], np.array(1)])
def test_check_seed_refuses_wrong_types_with_type_error(value):
    with pytest.raises(TypeError, match="^seed must be a non-negative int or None, got "):
        check_seed(value)


@pytest.mark.parametrize("value", [-1, np.int64(-5)])
def test_check_seed_refuses_negative_with_value_error(value):
    with pytest.raises(ValueError, match="^seed must be a non-negative int or None, got "):
        check_seed(value)


def test_check_seed_names_the_argument():
    with pytest.raises(ValueError, match=r"^seed\[3\] must be"):
        check_seed(-1, "seed[3]")


def test_check_seeds_none_continues_every_env():
    assert check_seeds(None, 3) == [None, None, None]


@pytest.mark.parametrize("base", [0, 7, np.int64(7)])
def test_check_seeds_int_gives_consecutive_seeds(base):
    got = check_seeds(base, 4)
    assert got == [int(base) + i for i in range(4)]
    assert all(type(s) is int for s in got)


@pytest.mark.parametrize("seeds", [[3, None, 0], (1, 2, 3), np.array([4, 5, 6]),
                                   [np.int64(1), np.uint8(2), None], range(3)])
def test_check_seeds_sequence_of_one_per_env(seeds):
    got = check_seeds(seeds, 3)
    assert got == [None if s is None else int(s) for s in seeds]


@pytest.mark.parametrize("seed, error, match", [
    (-1, ValueError, "^seed must be a non-negative int or None, got -1"),
    (True, TypeError, "^seed must be None, an int or a sequence of 2 seeds, got True"),
    (1.5, TypeError, "^seed must be None, an int or a sequence of 2 seeds, got 1.5"),
    ("12", TypeError, "^seed must be None, an int or a sequence of 2 seeds, got '12'"),
    (b"12", TypeError, "^seed must be None, an int or a sequence of 2 seeds"),
    ({1, 2}, TypeError, "^seed must be None, an int or a sequence of 2 seeds"),
    ([1], ValueError, r"^seed must have one entry per env \(2\), got 1"),
    ([1, 2, 3], ValueError, r"^seed must have one entry per env \(2\), got 3"),
    ([0, -1], ValueError, r"^seed\[1\] must be a non-negative int or None, got -1"),
    ([0, True], TypeError, r"^seed\[1\] must be a non-negative int or None, got True"),
    ([1.0, 2], TypeError, r"^seed\[0\] must be a non-negative int or None, got 1.0"),
    (np.array([1.0, 2.0]), TypeError, r"^seed\[0\] must be a non-negative int or None"),
    (["1", "2"], TypeError, r"^seed\[0\] must be a non-negative int or None, got '1'"),
])
def test_check_seeds_refuses(seed, error, match):
    with pytest.raises(error, match=match):
        check_seeds(seed, 2)


# -- check_actions -------------------------------------------------------------------------------
@pytest.mark.parametrize("actions", [[0, 3, 1], np.array([0, 3, 1], np.int32),
                                     np.array([0, 3, 1], np.uint8), (0, 3, 1)])
def test_check_actions_accepts_ints_in_range(actions):
    got = check_actions(actions, 3, 4)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [0, 3, 1])


def test_check_actions_keeps_int64_arrays_without_copy():
    actions = np.array([1, 2], np.int64)
    assert check_actions(actions, 2, 4) is actions


@pytest.mark.parametrize("actions", [0, np.int64(0), np.array(1), None, "01"])
def test_check_actions_refuses_scalars_with_type_error(actions):
    # gymnasium's vector envs raise TypeError for step(0)
    with pytest.raises(TypeError, match="^actions must be an array of 3 ints, got "):
        check_actions(actions, 3, 4)


@pytest.mark.parametrize("actions", [[0.0, 1.0, 2.0], np.array([0, 1, 2], np.float32),
                                     [True, False, True], ["0", "1", "2"]])
def test_check_actions_refuses_non_integer_dtypes_with_type_error(actions):
    with pytest.raises(TypeError, match="^actions must be integers, got dtype "):
        check_actions(actions, 3, 4)


@pytest.mark.parametrize("actions, shape", [([0, 1], r"\(2,\)"), ([0, 1, 2, 3], r"\(4,\)"),
                                            ([[0, 1, 2]], r"\(1, 3\)")])
def test_check_actions_refuses_wrong_shapes_with_value_error(actions, shape):
    with pytest.raises(ValueError, match=rf"^actions must have shape \(3,\), got {shape}"):
        check_actions(actions, 3, 4)


@pytest.mark.parametrize("actions, index, value", [([0, 4, 1], 1, 4), ([-1, 0, 0], 0, -1),
                                                   ([0, 0, 99], 2, 99)])
def test_check_actions_refuses_out_of_range_with_value_error(actions, index, value):
    with pytest.raises(ValueError, match=(rf"^actions must be in \[0, 4\) \(Discrete\(4\)\); "
                                          rf"actions\[{index}\] = {value}$")):
        check_actions(actions, 3, 4)


def test_check_actions_refuses_ragged_lists_with_type_error():
    with pytest.raises(TypeError, match="^actions must be an array of ints"):
        check_actions([[0], [1, 2], 3], 3, 4)


# -- check_env_ids -------------------------------------------------------------------------------
@pytest.mark.parametrize("env_ids, expected", [
    (None, [0, 1, 2, 3]), (2, [2]), (np.int64(3), [3]), ([3, 0], [3, 0]),
    (np.array([1, 2], np.uint8), [1, 2]), ((0,), [0]), (range(1, 3), [1, 2]),
])
def test_check_env_ids_accepts(env_ids, expected):
    got = check_env_ids(env_ids, 4)
    assert got.dtype == np.int64 and got.ndim == 1
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("env_ids", [True, 1.0, [1.0], [True, False], "1", [[0, 1]],
                                     np.array(2), np.zeros(0)])
def test_check_env_ids_refuses_wrong_types_with_type_error(env_ids):
    with pytest.raises(TypeError, match="^env_ids must be an int or a 1-d array of ints, got "):
        check_env_ids(env_ids, 4)


@pytest.mark.parametrize("env_ids, match", [
    (np.zeros(0, np.int64), "^env_ids must name at least one env$"),
    (4, r"^env_ids must be in \[0, 4\), got 4"),
    ([-1, 0], r"^env_ids must be in \[0, 4\), got \[-1, 0\]"),
    ([0, 9], r"^env_ids must be in \[0, 4\)"),
    ([1, 1], r"^env_ids must not repeat, got \[1, 1\]"),
    (np.array([0, 2, 0]), "^env_ids must not repeat"),
])
def test_check_env_ids_refuses_bad_values_with_value_error(env_ids, match):
    with pytest.raises(ValueError, match=match):
        check_env_ids(env_ids, 4)


def test_check_env_ids_refuses_an_empty_list_like_an_empty_int_array():
    with pytest.raises(ValueError, match="^env_ids must name at least one env$"):
        check_env_ids([], 4)


def test_all_names_are_exported():
    for name in validate.__all__:
        assert callable(getattr(validate, name))


def test_an_observation_past_the_machines_memory_names_its_options():
    """numpy's own MemoryError ("Unable to allocate 6.27 PiB ...") did not say which option
    asked for it."""
    from fastatari import AtariOptions

    with pytest.raises(MemoryError, match=r"^observations of shape \(1000000000000, 84, 84\) "
                                          r"\(stack_size=1000000000000, screen_size=84\) need "
                                          r"6.27 PiB, more than this machine's memory"):
        AtariOptions(stack_size=10**12)
