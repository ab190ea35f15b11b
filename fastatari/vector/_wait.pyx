# The vector workers' wait for their next command, apart from the kernels (csrc/fa_wait.c).
# Directives (boundscheck, wraparound, ...) are set in setup.py.
from libc.stdint cimport int64_t, uint64_t

from fastatari._csrc_wait cimport fa_wait_change


def wait_change(int64_t[::1] words, Py_ssize_t index, int64_t seen, double seconds):
    """Watch ``words[index]`` (shared memory) until it is no longer ``seen``, for at most
    ``seconds``, yielding the core between looks. True if it changed.

    Not a kernel: a vector worker's short wait for its next command, cheaper than being woken.

    Parameters
    ----------
    words : ndarray, int64, 1-D, C-contiguous, writeable   # IN, written by another process
    index : int
        0 <= index < len(words); IndexError otherwise.
    seen : int
        The value to wait away from.
    seconds : float
        >= 0 (ValueError otherwise, NaN included); ``math.inf`` waits without a limit.
    """
    if not 0 <= index < words.shape[0]:
        raise IndexError(f"index {index} out of range for {words.shape[0]} words")
    if not seconds >= 0:
        raise ValueError(f"seconds must be >= 0, got {seconds}")
    cdef const int64_t *word = <const int64_t *>&words[index]
    # 2**64 ns (585 years) and more, inf included, means no deadline (fa_wait.h); casting a
    # double past uint64_t's range is undefined in C, so saturate before the cast
    cdef double ns_float = seconds * 1e9
    cdef uint64_t ns = <uint64_t>-1 if ns_float >= 18446744073709551616.0 else <uint64_t>ns_float
    cdef int changed
    with nogil:
        changed = fa_wait_change(word, seen, ns)
    return bool(changed)
