# Thin Cython layer over csrc/: validate every argument, then run the C kernel without the GIL.
# Directives (boundscheck, wraparound, ...) are set in setup.py.
cimport numpy as cnp
from libc.limits cimport INT_MAX
from libc.stdint cimport uint8_t, uintptr_t

from fastatari.kernels._csrc cimport (
    FA_ENOMEM,
    FA_EUPSCALE,
    FA_OK,
    FA_SRC_IMAGE,
    FA_SRC_PALETTE,
    FA_SRC_RGB_GRAY,
    fa_all_known,
    fa_plan,
    fa_plan_free,
    fa_plan_init,
    fa_process,
    fa_rgb_to_gray,
    fa_simd_available,
    fa_simd_name,
    fa_simd_select,
    fa_source,
    fa_stack_shift,
)

import numpy as np

cnp.import_array()

cdef class _Plan:
    """The resize tables for one (src, dst, channels) geometry, built once and cached."""
    cdef fa_plan plan

    def __cinit__(self, int src_h, int src_w, int dst_h, int dst_w, int cn):
        cdef int err = fa_plan_init(&self.plan, src_h, src_w, dst_h, dst_w, cn)
        if err == FA_EUPSCALE:
            raise ValueError(
                f"resize_area only downscales: ({src_w}, {src_h}) -> ({dst_w}, {dst_h}) enlarges "
                "an axis (OpenCV's INTER_AREA switches to bilinear there)")
        if err == FA_ENOMEM:
            raise MemoryError("out of memory building resize tables")
        if err != FA_OK:
            raise ValueError(f"cannot resize ({src_w}, {src_h}) to ({dst_w}, {dst_h})")

    def __dealloc__(self):
        fa_plan_free(&self.plan)


cdef dict _plans = {}

cdef _Plan _plan_for(Py_ssize_t src_h, Py_ssize_t src_w, Py_ssize_t dst_h, Py_ssize_t dst_w,
                     Py_ssize_t cn):
    # The C side counts pixels and row bytes in int: refuse what would wrap around there.
    if (max(src_h, src_w, dst_h, dst_w, cn) > INT_MAX
            or src_w * cn > INT_MAX or dst_w * cn > INT_MAX):
        raise ValueError(
            f"cannot resize ({src_w}, {src_h}) to ({dst_w}, {dst_h}) with {cn} channels: the "
            f"kernels take at most {INT_MAX} pixels per axis and bytes per row")
    key = (src_h, src_w, dst_h, dst_w, cn)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _Plan(src_h, src_w, dst_h, dst_w, cn)
    return <_Plan>plan


cdef cnp.ndarray _check(object arr, str name, int min_ndim, int max_ndim, bint writable=False):
    """A uint8, C-contiguous ndarray with min_ndim..max_ndim dimensions, or a precise error."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(arr).__name__}")
    cdef cnp.ndarray a = <cnp.ndarray>arr
    if cnp.PyArray_TYPE(a) != cnp.NPY_UINT8:
        raise TypeError(f"{name} must have dtype uint8, got {a.dtype}")
    if not (min_ndim <= a.ndim <= max_ndim):
        want = str(min_ndim) if min_ndim == max_ndim else f"{min_ndim} or {max_ndim}"
        raise ValueError(f"{name} must have {want} dimensions, got shape {_shape(a)}")
    if not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise ValueError(f"{name} must be C-contiguous (use numpy.ascontiguousarray)")
    if writable and not cnp.PyArray_ISWRITEABLE(a):
        raise ValueError(f"{name} must be writeable")
    if a.size == 0:
        raise ValueError(f"{name} is empty: shape {_shape(a)}")
    return a


cdef inline tuple _shape(cnp.ndarray a):
    return (<object>a).shape


cdef inline const uint8_t *_ptr(cnp.ndarray a):
    return <const uint8_t *>cnp.PyArray_DATA(a)


cdef int _check_apart(cnp.ndarray out, str out_name, cnp.ndarray src, str src_name) except -1:
    """Refuse an output that overlaps an input: the kernels read and write in one pass.

    The bounds check of ``np.may_share_memory``, done in C: calling it from here would cost
    about 0.2 us per pair, up to three pairs per step. Every array here is C-contiguous, so its
    bytes are exactly [data, data + nbytes) and the check is exact: no false alarms.
    """
    cdef uintptr_t o = <uintptr_t>cnp.PyArray_DATA(out)
    cdef uintptr_t s = <uintptr_t>cnp.PyArray_DATA(src)
    if o < s + <uintptr_t>cnp.PyArray_NBYTES(src) and s < o + <uintptr_t>cnp.PyArray_NBYTES(out):
        raise ValueError(
            f"{out_name} overlaps {src_name}: the output must not share memory with an input")
    return 0


cdef cnp.ndarray _output(object out, tuple shape, int min_ndim, int max_ndim,
                         cnp.ndarray src):
    """``out`` checked (uint8, C-contiguous, writeable, of ``shape``, apart from ``src``), or a
    new array of ``shape``."""
    if out is None:
        out = np.empty(shape, np.uint8)
    cdef cnp.ndarray o = _check(out, "out", min_ndim, max_ndim, writable=True)
    if _shape(o) != shape:
        raise ValueError(f"out must have shape {shape}, got {_shape(o)}")
    _check_apart(o, "out", src, "src")
    return o


def rgb_to_gray(src, out=None):
    """Convert RGB to gray, byte-identical to ``cv2.cvtColor(src, cv2.COLOR_RGB2GRAY)``.

    Parameters
    ----------
    src : ndarray, uint8, shape (..., 3), C-contiguous
    out : ndarray, uint8, shape src.shape[:-1], optional
        Written in place when given; must not overlap ``src`` (ValueError).
    """
    cdef cnp.ndarray s = _check(src, "src", 1, 32)
    if s.shape[s.ndim - 1] != 3:
        raise ValueError(f"src must end in 3 RGB channels, got shape {_shape(s)}")
    cdef cnp.ndarray o = _output(out, _shape(s)[:s.ndim - 1], 0, 32, s)
    cdef size_t n = s.size // 3
    cdef const uint8_t *rgb = _ptr(s)
    cdef uint8_t *gray = <uint8_t *>_ptr(o)
    with nogil:
        fa_rgb_to_gray(rgb, gray, n)
    return o


cdef tuple _size_arg(object size, str name):
    """A (width, height) pair of positive ints that fit a C int, as OpenCV's ``dsize``.

    Integers only (Python or numpy, not bool): a float would be truncated silently, a string or
    a bool is a mistake. TypeError for the wrong type, ValueError for a value out of range.
    """
    try:
        w, h = size
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a (width, height) pair of ints, got {size!r}") from None
    for v in (w, h):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(
                f"{name} must be a (width, height) pair of ints, got {size!r} "
                f"(holding {type(v).__name__})")
    if not (0 < w <= INT_MAX and 0 < h <= INT_MAX):
        raise ValueError(f"{name} must hold ints in [1, {INT_MAX}], got {size!r}")
    return int(w), int(h)


def resize_area(src, size, out=None):
    """Downscale, byte-identical to ``cv2.resize(src, size, interpolation=cv2.INTER_AREA)``.

    Parameters
    ----------
    src : ndarray, uint8, shape (h, w) or (h, w, channels), C-contiguous
    size : (width, height)
        OpenCV's order (its ``dsize``): ints, Python or numpy (TypeError for floats, bools,
        strings), positive and within C int (ValueError). Neither may exceed the source's:
        upscaling raises ValueError.
    out : ndarray, uint8, shape (height, width[, channels]), optional
        Must not overlap ``src`` (ValueError).
    """
    cdef cnp.ndarray s = _check(src, "src", 2, 3)
    cdef Py_ssize_t w, h, cn
    w, h = _size_arg(size, "size")
    cn = 1 if s.ndim == 2 else s.shape[2]
    cdef tuple shape = (h, w)
    if s.ndim == 3:
        shape = (h, w, cn)
    cdef _Plan plan = _plan_for(s.shape[0], s.shape[1], h, w, cn)
    cdef cnp.ndarray o = _output(out, shape, 2, 3, s)
    cdef fa_source source
    source.kind = FA_SRC_IMAGE
    source.a = _ptr(s)
    source.b = NULL
    source.stride = s.shape[1] * cn
    source.lut = NULL
    cdef int err
    cdef uint8_t *dst = <uint8_t *>_ptr(o)
    with nogil:
        err = fa_process(&plan.plan, &source, dst, w * cn, cn)
    if err != FA_OK:
        raise MemoryError("out of memory in resize_area")
    return o


cdef int _fused_step(cnp.ndarray stack, bint channels_last, int cn, fa_source *source,
                     Py_ssize_t src_h, Py_ssize_t src_w) except -1:
    """Shift the stack by one frame and resize the source into its newest slot."""
    cdef Py_ssize_t k, dst_h, dst_w
    cdef Py_ssize_t row_stride, px_stride
    if cn == 1:
        if stack.ndim != 3:
            layout = "(height, width, k)" if channels_last else "(k, height, width)"
            raise ValueError(f"stack must be a gray stack {layout}, got shape {_shape(stack)}")
        if channels_last:
            dst_h, dst_w, k = stack.shape[0], stack.shape[1], stack.shape[2]
        else:
            k, dst_h, dst_w = stack.shape[0], stack.shape[1], stack.shape[2]
    else:
        if channels_last:
            if stack.ndim != 3 or stack.shape[2] % 3:
                raise ValueError(
                    f"stack must be an RGB stack (height, width, 3 * k), got shape {_shape(stack)}")
            dst_h, dst_w, k = stack.shape[0], stack.shape[1], stack.shape[2] // 3
        else:
            if stack.ndim != 4 or stack.shape[3] != 3:
                raise ValueError(
                    f"stack must be an RGB stack (k, height, width, 3), got shape {_shape(stack)}")
            k, dst_h, dst_w = stack.shape[0], stack.shape[1], stack.shape[2]
    if k > INT_MAX:
        raise ValueError(f"stack holds {k} frames; the kernels take at most {INT_MAX}")
    cdef _Plan plan = _plan_for(src_h, src_w, dst_h, dst_w, cn)
    cdef size_t frame_bytes = <size_t>dst_h * dst_w * cn
    cdef uint8_t *base = <uint8_t *>cnp.PyArray_DATA(stack)
    cdef uint8_t *newest
    if channels_last:
        newest = base + (k - 1) * cn
        row_stride = <Py_ssize_t>dst_w * k * cn
        px_stride = k * cn
    else:
        newest = base + (k - 1) * frame_bytes
        row_stride = <Py_ssize_t>dst_w * cn
        px_stride = cn
    cdef int err
    with nogil:
        fa_stack_shift(base, <int>k, frame_bytes, cn, channels_last)
        err = fa_process(&plan.plan, source, newest, row_stride, px_stride)
    if err != FA_OK:
        raise MemoryError("out of memory in a fused step")
    return 0


cdef void _check_pair(cnp.ndarray p, cnp.ndarray last_a) except *:
    if _shape(p) != _shape(last_a):
        raise ValueError(
            f"prev and last must have the same shape, got {_shape(p)} and {_shape(last_a)}")


def step_palette(prev, last, lut, stack, *, bint maxpool=True, bint channels_last=False):
    """One fused step from two ALE palette-index screens, in place.

    Maps both screens through ``lut``, takes their elementwise max, area-resizes to the stack's
    frame size, drops the oldest frame of ``stack`` and writes the result as the newest (last).
    Byte-identical to ``lut[prev]``, ``lut[last]`` -> ``np.maximum`` -> ``cv2.resize(INTER_AREA)``
    -> roll and assign.

    Parameters
    ----------
    prev, last : ndarray, uint8, shape (h, w)         # IN, as ``ale.getScreen`` fills them
    lut : ndarray, uint8, shape (256,) or (256, 3)    # IN, palette -> gray or RGB
    stack : ndarray, uint8                            # IN/OUT
        gray: (k, H, W), or (H, W, k) with ``channels_last``;
        RGB: (k, H, W, 3), or (H, W, 3k) with ``channels_last``.
        Must not overlap ``prev``, ``last`` or ``lut`` (ValueError).
    maxpool : bool
        False: use ``last`` alone (``prev`` is still validated).
    """
    cdef cnp.ndarray p = _check(prev, "prev", 2, 2)
    cdef cnp.ndarray last_a = _check(last, "last", 2, 2)
    _check_pair(p, last_a)
    cdef cnp.ndarray t = _check(lut, "lut", 1, 2)
    cdef int cn = 1 if t.ndim == 1 else t.shape[1]
    if t.shape[0] != 256 or cn not in (1, 3):
        raise ValueError(f"lut must have shape (256,) or (256, 3), got {_shape(t)}")
    cdef cnp.ndarray s = _check(stack, "stack", 3, 4, writable=True)
    _check_apart(s, "stack", p, "prev")
    _check_apart(s, "stack", last_a, "last")
    _check_apart(s, "stack", t, "lut")
    cdef fa_source source
    source.kind = FA_SRC_PALETTE
    source.a = _ptr(last_a)
    source.b = _ptr(p) if maxpool else NULL
    source.stride = last_a.shape[1]
    source.lut = _ptr(t)
    _fused_step(s, channels_last, cn, &source, last_a.shape[0], last_a.shape[1])


def step_rgb(prev, last, stack, *, bint grayscale=True, bint maxpool=True,
             bint channels_last=False):
    """One fused step from two RGB frames (h, w, 3), in place.

    With ``grayscale`` each frame is converted as ``cv2.cvtColor(COLOR_RGB2GRAY)`` before the
    max; otherwise the max is per channel and the stack holds RGB frames. Layouts as in
    :func:`step_palette`; ``stack`` must not overlap ``prev`` or ``last`` (ValueError).
    """
    cdef cnp.ndarray p = _check(prev, "prev", 3, 3)
    cdef cnp.ndarray last_a = _check(last, "last", 3, 3)
    _check_pair(p, last_a)
    if last_a.shape[2] != 3:
        raise ValueError(f"last must be an RGB frame (h, w, 3), got shape {_shape(last_a)}")
    cdef cnp.ndarray s = _check(stack, "stack", 3, 4, writable=True)
    _check_apart(s, "stack", p, "prev")
    _check_apart(s, "stack", last_a, "last")
    cdef fa_source source
    source.kind = FA_SRC_RGB_GRAY if grayscale else FA_SRC_IMAGE
    source.a = _ptr(last_a)
    source.b = _ptr(p) if maxpool else NULL
    source.stride = last_a.shape[1] * 3
    source.lut = NULL
    _fused_step(s, channels_last, 1 if grayscale else 3, &source, last_a.shape[0], last_a.shape[1])


def all_known(indices, known):
    """True when ``known[i]`` is nonzero for every palette index ``i`` in ``indices``.

    ``known`` is a uint8 array of shape (256,). Used to learn palette LUTs from ALE lazily.
    """
    cdef cnp.ndarray i = _check(indices, "indices", 1, 32)
    cdef cnp.ndarray k = _check(known, "known", 1, 1)
    if k.shape[0] != 256:
        raise ValueError(f"known must have shape (256,), got {_shape(k)}")
    cdef int ok
    cdef const uint8_t *idx = _ptr(i)
    cdef const uint8_t *table = _ptr(k)
    cdef size_t n = i.size
    with nogil:
        ok = fa_all_known(idx, n, table)
    return bool(ok)


def simd_path():
    """The SIMD variant the kernels use now: "avx512vbmi", "avx2", "neon" or "scalar"."""
    return fa_simd_name().decode()


#: Every variant any platform has (neon on AArch64, the others on x86-64), best last, then "auto".
_SIMD_NAMES = ("scalar", "neon", "avx2", "avx512vbmi", "auto")


def simd_available():
    """The SIMD variants this CPU can run, best last."""
    return [name for name in _SIMD_NAMES[:-1] if fa_simd_available(name.encode())]


def set_simd_path(name):
    """Force a SIMD variant ("scalar", "neon", "avx2", "avx512vbmi" or "auto"); returns the
    previous one.

    All variants give identical bytes; this exists for tests and benchmarks. TypeError for a
    name that is not a str, ValueError for an unknown name or one this CPU cannot run.
    """
    if not isinstance(name, str):
        raise TypeError(
            f"name must be one of {', '.join(map(repr, _SIMD_NAMES))}, got {name!r}")
    if name not in _SIMD_NAMES:
        raise ValueError(
            f"unknown SIMD path {name!r}: use one of {', '.join(map(repr, _SIMD_NAMES))}")
    previous = simd_path()
    if fa_simd_select(name.encode()) != 0:
        raise ValueError(
            f"SIMD path {name!r} is not available on this CPU; available: {simd_available()}")
    return previous
