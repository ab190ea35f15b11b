"""The kernels are byte-identical to the OpenCV/numpy pipeline they replace, on every SIMD path.

The expected bytes come from ``reference`` (OpenCV's arithmetic as it runs on x86-64, in NumPy),
the same on every platform; ``test_reference.py`` holds it equal to OpenCV on x86-64.
"""
from __future__ import annotations

import platform

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastatari import kernels

from .reference import resize_area as ref_area
from .reference import rgb_to_gray as ref_gray

SIZES = [(84, 84), (64, 48), (48, 64), (53, 71), (80, 105), (40, 70), (160, 105), (33, 17),
         (1, 1), (159, 209), (160, 210), (7, 200)]


def reference_stack_step(prev_img, last_img, stack, channels_last, maxpool=True):
    """The pipeline the fused kernels replace: max -> INTER_AREA -> roll and assign."""
    frame = np.maximum(prev_img, last_img) if maxpool else last_img
    if channels_last:
        h, w = stack.shape[:2]
        k = stack.shape[2] // (3 if frame.ndim == 3 else 1)
        small = ref_area(frame, (w, h))
        out = stack.reshape(h, w, k, -1).copy()
        out[:, :, :-1] = out[:, :, 1:]
        out[:, :, -1] = small.reshape(h, w, -1)
        return out.reshape(stack.shape)
    h, w = stack.shape[1:3]
    out = np.roll(stack, -1, axis=0)
    out[-1] = ref_area(frame, (w, h))
    return out


def stack_for(size, k, rgb, channels_last, rng):
    w, h = size
    if channels_last:
        shape = (h, w, 3 * k) if rgb else (h, w, k)
    else:
        shape = (k, h, w, 3) if rgb else (k, h, w)
    return rng.integers(0, 256, shape, dtype=np.uint8)


def test_simd_paths_listed():
    assert kernels.simd_available()[0] == "scalar"
    assert kernels.simd_path() in kernels.simd_available()
    if platform.machine().lower() in ("aarch64", "arm64"):  # NEON is baseline there
        assert kernels.simd_available() == ["scalar", "neon"]
        assert kernels.simd_path() == "neon"


def test_rgb_to_gray_all_triples(simd):
    # every one of the 2^24 RGB triples
    v = np.arange(1 << 24, dtype=np.uint32)
    rgb = np.stack([(v >> 16) & 255, (v >> 8) & 255, v & 255], axis=-1).astype(np.uint8)
    rgb = rgb.reshape(4096, 4096, 3)
    assert np.array_equal(kernels.rgb_to_gray(rgb), ref_gray(rgb))


def test_rgb_to_gray_every_length(simd):
    """Vector bodies and scalar tails: every length from 1 to 70 pixels, exact."""
    rng = np.random.default_rng(4)
    for n in range(1, 71):
        rgb = rng.integers(0, 256, (n, 3), dtype=np.uint8)
        expected = ref_gray(rgb[None])[0]
        assert np.array_equal(kernels.rgb_to_gray(rgb), expected), n


def test_rgb_to_gray_real_frames(simd, game_frames):
    for frames in game_frames.values():
        for _, _, rgb in frames:
            assert np.array_equal(kernels.rgb_to_gray(rgb), ref_gray(rgb))


@pytest.mark.parametrize("size", SIZES)
def test_resize_area_real_frames(simd, game_frames, size):
    for frames in game_frames.values():
        for _, gray, rgb in frames[::3]:
            assert np.array_equal(kernels.resize_area(gray, size), ref_area(gray, size))
            assert np.array_equal(kernels.resize_area(rgb, size), ref_area(rgb, size))


@st.composite
def shrinks(draw):
    """A random uint8 image, gray or RGB, up to 260x200, and a size to shrink it to."""
    h, w = draw(st.integers(1, 260)), draw(st.integers(1, 200))
    fy, fx = draw(st.floats(0.01, 1.0)), draw(st.floats(0.01, 1.0))
    cn = draw(st.sampled_from([1, 3]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    img = rng.integers(0, 256, (h, w, cn) if cn == 3 else (h, w), np.uint8)
    return img, (max(1, int(w * fx)), max(1, int(h * fy)))


@settings(max_examples=150, deadline=None)
@given(case=shrinks())
def test_resize_area_random_images(case):
    img, size = case
    for path in kernels.simd_available():
        previous = kernels.set_simd_path(path)
        try:
            assert np.array_equal(kernels.resize_area(img, size), ref_area(img, size)), path
        finally:
            kernels.set_simd_path(previous)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("size", [(84, 84), (64, 48), (53, 71), (80, 105)])
def test_step_palette_gray_and_rgb(simd, game_frames, size, channels_last):
    rng = np.random.default_rng(0)
    for frames in game_frames.values():
        # LUTs read off the frames themselves: the palette index -> ALE's gray / RGB
        gray_lut = np.zeros(256, np.uint8)
        rgb_lut = np.zeros((256, 3), np.uint8)
        for idx, gray, rgb in frames:
            gray_lut[idx] = gray
            rgb_lut[idx] = rgb
        for (i0, g0, c0), (i1, g1, c1) in zip(frames[:-1:2], frames[1::2], strict=False):
            for lut, img0, img1, is_rgb in ((gray_lut, g0, g1, False), (rgb_lut, c0, c1, True)):
                stack = stack_for(size, 4, is_rgb, channels_last, rng)
                expected = reference_stack_step(img0, img1, stack, channels_last)
                kernels.step_palette(i0, i1, lut, stack, channels_last=channels_last)
                assert np.array_equal(stack, expected)


@pytest.mark.parametrize("k", [1, 2, 4, 5])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("grayscale", [True, False])
def test_step_rgb(simd, game_frames, k, channels_last, grayscale):
    rng = np.random.default_rng(1)
    for frames in game_frames.values():
        for (_, _, c0), (_, _, c1) in zip(frames[:8:2], frames[1:8:2], strict=False):
            for maxpool in (True, False):
                stack = stack_for((84, 84), k, not grayscale, channels_last, rng)
                if grayscale:
                    prev_img = ref_gray(c0)
                    last_img = ref_gray(c1)
                else:
                    prev_img, last_img = c0, c1
                expected = reference_stack_step(prev_img, last_img, stack, channels_last, maxpool)
                kernels.step_rgb(c0, c1, stack, grayscale=grayscale, maxpool=maxpool,
                                 channels_last=channels_last)
                assert np.array_equal(stack, expected)


def test_step_palette_any_lut_and_screen(simd):
    """Generic screens (other heights, PAL-like) and random LUTs, through every path."""
    rng = np.random.default_rng(7)
    for h, w in [(210, 160), (250, 160), (214, 160), (230, 160), (37, 41)]:
        lut = rng.integers(0, 256, 256, dtype=np.uint8)
        a = rng.integers(0, 256, (h, w), dtype=np.uint8)
        b = rng.integers(0, 256, (h, w), dtype=np.uint8)
        stack = np.zeros((4, 30, 21), np.uint8)
        expected = reference_stack_step(lut[a], lut[b], stack, False)
        kernels.step_palette(a, b, lut, stack)
        assert np.array_equal(stack, expected)


def test_step_palette_without_maxpool(simd, game_frames):
    idx0, gray0, _ = game_frames["breakout"][0]
    idx1, gray1, _ = game_frames["breakout"][1]
    lut = np.zeros(256, np.uint8)
    lut[idx0], lut[idx1] = gray0, gray1
    stack = np.zeros((4, 84, 84), np.uint8)
    kernels.step_palette(idx0, idx1, lut, stack, maxpool=False)
    assert np.array_equal(stack[-1], ref_area(gray1, (84, 84)))
    assert not stack[:-1].any()


def test_all_known(simd):
    known = np.zeros(256, np.uint8)
    known[[0, 2, 4, 255]] = 1
    screen = np.array([[0, 2, 4, 255] * 40] * 3, np.uint8)
    assert kernels.all_known(screen, known)
    for pos in (0, 63, 64, 479):
        bad = screen.copy()
        bad.flat[pos] = 3
        assert not kernels.all_known(bad, known)


def test_all_known_every_index_and_position(simd):
    """Each of the 256 indices, alone unknown, is found wherever it sits (vector body or tail)."""
    rng = np.random.default_rng(5)
    for missing in range(256):
        known = np.ones(256, np.uint8)
        known[missing] = 0
        screen = rng.choice(np.delete(np.arange(256), missing), 101).astype(np.uint8)
        assert kernels.all_known(screen, known)
        for pos in (0, 31, 32, 63, 64, 95, 100):
            bad = screen.copy()
            bad[pos] = missing
            assert not kernels.all_known(bad, known), (missing, pos)


class TestErrors:
    def test_upscale_rejected(self):
        with pytest.raises(ValueError, match="only downscales"):
            kernels.resize_area(np.zeros((10, 10), np.uint8), (11, 10))

    def test_wrong_dtype(self):
        with pytest.raises(TypeError, match="src must have dtype uint8"):
            kernels.resize_area(np.zeros((10, 10), np.float32), (5, 5))

    def test_not_an_array(self):
        with pytest.raises(TypeError, match="src must be a numpy.ndarray"):
            kernels.rgb_to_gray([[1, 2, 3]])

    def test_non_contiguous(self):
        with pytest.raises(ValueError, match="prev must be C-contiguous"):
            a = np.zeros((210, 320), np.uint8)[:, ::2]
            kernels.step_palette(a, np.zeros((210, 160), np.uint8), np.zeros(256, np.uint8),
                                 np.zeros((4, 84, 84), np.uint8))

    def test_prev_last_mismatch(self):
        with pytest.raises(ValueError, match="prev and last must have the same shape"):
            kernels.step_palette(np.zeros((210, 160), np.uint8), np.zeros((250, 160), np.uint8),
                                 np.zeros(256, np.uint8), np.zeros((4, 84, 84), np.uint8))

    def test_bad_lut(self):
        with pytest.raises(ValueError, match="lut must have shape"):
            kernels.step_palette(np.zeros((210, 160), np.uint8), np.zeros((210, 160), np.uint8),
                                 np.zeros(128, np.uint8), np.zeros((4, 84, 84), np.uint8))

    def test_stack_wrong_layout(self):
        with pytest.raises(ValueError, match="stack must be an RGB stack"):
            kernels.step_palette(np.zeros((210, 160), np.uint8), np.zeros((210, 160), np.uint8),
                                 np.zeros((256, 3), np.uint8), np.zeros((4, 84, 84), np.uint8))

    def test_stack_larger_than_screen(self):
        stack = np.full((4, 300, 84), 7, np.uint8)
        with pytest.raises(ValueError, match="only downscales"):
            kernels.step_palette(np.zeros((210, 160), np.uint8), np.zeros((210, 160), np.uint8),
                                 np.zeros(256, np.uint8), stack)
        assert (stack == 7).all()  # untouched

    def test_read_only_stack(self):
        stack = np.zeros((4, 84, 84), np.uint8)
        stack.flags.writeable = False
        with pytest.raises(ValueError, match="stack must be writeable"):
            kernels.step_rgb(np.zeros((210, 160, 3), np.uint8), np.zeros((210, 160, 3), np.uint8),
                             stack)

    def test_bad_size(self):
        with pytest.raises(TypeError, match="size must be a"):
            kernels.resize_area(np.zeros((10, 10), np.uint8), 5)

    def test_unknown_simd(self):
        with pytest.raises(ValueError, match="unknown SIMD path 'neon9000': use one of 'scalar'"):
            kernels.set_simd_path("neon9000")

    @pytest.mark.parametrize("name", [None, b"scalar", 2])
    def test_simd_name_not_a_str(self, name):
        with pytest.raises(TypeError, match="name must be one of 'scalar', 'neon', 'avx2', "
                                            "'avx512vbmi', 'auto', got"):
            kernels.set_simd_path(name)

    def test_simd_path_not_on_this_cpu(self):
        # no CPU runs them all: neon is AArch64's, the others x86-64's
        missing = [n for n in ("neon", "avx2", "avx512vbmi") if n not in kernels.simd_available()]
        with pytest.raises(ValueError, match="not available on this CPU"):
            kernels.set_simd_path(missing[0])


class TestSizeArguments:
    """``size`` is OpenCV's dsize: two ints (Python or numpy, not bool), positive, in C int."""

    img = np.arange(210 * 160, dtype=np.uint8).reshape(210, 160)

    @pytest.mark.parametrize("size", [(84.9, 84.9), (84, 84.0), ("84", "84"), (True, True),
                                      (84, np.float32(84)), (84, np.bool_(True)), (84, None)])
    def test_not_ints(self, size):
        with pytest.raises(TypeError, match=r"size must be a \(width, height\) pair of ints"):
            kernels.resize_area(self.img, size)

    @pytest.mark.parametrize("size", [5, "ab", (84,), (84, 84, 1), None])
    def test_not_a_pair(self, size):
        with pytest.raises(TypeError, match=r"size must be a \(width, height\) pair of ints"):
            kernels.resize_area(self.img, size)

    @pytest.mark.parametrize("size", [(0, 84), (84, -1), (2**40, 84), (84, 2**31),
                                      (np.uint64(2**63), 84), (84, np.int64(-5))])
    def test_out_of_range(self, size):
        with pytest.raises(ValueError, match=r"size must hold ints in \[1, 2147483647\]"):
            kernels.resize_area(self.img, size)

    @pytest.mark.parametrize("size", [(np.int64(84), np.int64(84)), (np.uint8(84), 84),
                                      np.array([84, 84]), [84, 84]])
    def test_numpy_ints_and_sequences(self, size):
        assert np.array_equal(kernels.resize_area(self.img, size), ref_area(self.img, (84, 84)))

    @staticmethod
    def huge(shape):
        """An untouched array past C int's range (virtual memory only), or skip."""
        try:
            return np.empty(shape, np.uint8)
        except MemoryError:
            pytest.skip(f"cannot reserve {shape}")

    def test_source_past_c_int(self):
        src = self.huge((1, 2**31))
        with pytest.raises(ValueError, match="at most 2147483647 pixels per axis"):
            kernels.resize_area(src, (1, 1))

    def test_row_bytes_past_c_int(self):
        src = self.huge((1, 2**30, 2))
        with pytest.raises(ValueError, match="bytes per row"):
            kernels.resize_area(src, (1, 1))

    def test_stack_frames_past_c_int(self):
        stack = self.huge((2**31, 1, 1))
        screen = np.zeros((210, 160), np.uint8)
        with pytest.raises(ValueError, match="stack holds 2147483648 frames"):
            kernels.step_palette(screen, screen, np.zeros(256, np.uint8), stack)


class TestOverlap:
    """An output that shares memory with an input is refused before anything is written."""

    def test_resize_out_overlaps_src(self):
        buf = np.arange(210 * 160 + 84 * 84, dtype=np.uint8)
        src = buf[:210 * 160].reshape(210, 160)
        out = buf[210 * 160 - 1:210 * 160 - 1 + 84 * 84].reshape(84, 84)  # one byte in common
        before = buf.copy()
        with pytest.raises(ValueError, match="out overlaps src"):
            kernels.resize_area(src, (84, 84), out=out)
        with pytest.raises(ValueError, match="out overlaps src"):
            kernels.resize_area(src, (160, 210), out=src)
        assert np.array_equal(buf, before)

    def test_adjacent_is_not_overlap(self):
        buf = np.arange(210 * 160 + 84 * 84, dtype=np.uint8)
        src = buf[:210 * 160].reshape(210, 160)
        out = buf[210 * 160:].reshape(84, 84)
        kernels.resize_area(src, (84, 84), out=out)
        assert np.array_equal(out, ref_area(src, (84, 84)))

    def test_rgb_to_gray_out_overlaps_src(self):
        rgb = np.arange(10 * 3, dtype=np.uint8).reshape(10, 3)
        with pytest.raises(ValueError, match="out overlaps src"):
            kernels.rgb_to_gray(rgb, out=rgb.reshape(-1)[5:15])

    @pytest.mark.parametrize("which", ["prev", "last", "lut"])
    def test_step_palette_stack_overlaps_input(self, which):
        n_screen, n_stack = 210 * 160, 4 * 84 * 84
        buf = np.zeros(n_screen + n_stack, np.uint8)
        shared = buf[:n_screen] if which != "lut" else buf[:256]
        stack = buf[n_screen - 8:n_screen - 8 + n_stack].reshape(4, 84, 84)
        args = {"prev": np.zeros((210, 160), np.uint8), "last": np.zeros((210, 160), np.uint8),
                "lut": np.arange(256, dtype=np.uint8)}
        args[which] = shared.reshape(args[which].shape)
        if which == "lut":
            stack = buf[200:200 + n_stack].reshape(4, 84, 84)
        buf[:] = 7
        with pytest.raises(ValueError, match=f"stack overlaps {which}"):
            kernels.step_palette(args["prev"], args["last"], args["lut"], stack)
        assert (buf == 7).all()

    @pytest.mark.parametrize("which", ["prev", "last"])
    def test_step_rgb_stack_overlaps_input(self, which):
        n_screen, n_stack = 210 * 160 * 3, 4 * 84 * 84
        buf = np.full(n_screen + n_stack, 7, np.uint8)
        frames = {"prev": np.zeros((210, 160, 3), np.uint8),
                  "last": np.zeros((210, 160, 3), np.uint8)}
        frames[which] = buf[:n_screen].reshape(210, 160, 3)
        stack = buf[n_screen - 1:n_screen - 1 + n_stack].reshape(4, 84, 84)
        with pytest.raises(ValueError, match=f"stack overlaps {which}"):
            kernels.step_rgb(frames["prev"], frames["last"], stack)
        assert (buf == 7).all()

    def test_prev_and_last_may_be_one_array(self):
        screen = np.random.default_rng(1).integers(0, 256, (210, 160), dtype=np.uint8)
        lut = np.arange(256, dtype=np.uint8)
        stack = np.zeros((2, 84, 84), np.uint8)
        kernels.step_palette(screen, screen, lut, stack)
        assert np.array_equal(stack[-1], ref_area(screen, (84, 84)))


@pytest.mark.parametrize("size", [(84, 84), (64, 48), (53, 71), (30, 7)])
def test_repeated_rows_share_work_exactly(simd, size):
    """Runs of identical rows (in one frame, the other, or both) reuse the row above's
    horizontal pass: the result must not change."""
    rng = np.random.default_rng(3)
    lut = rng.integers(0, 256, 256, dtype=np.uint8)
    for trial in range(20):
        a = rng.integers(0, 256, (210, 160), dtype=np.uint8)
        b = rng.integers(0, 256, (210, 160), dtype=np.uint8)
        for frame in (a, b) if trial % 3 == 0 else (a,) if trial % 3 == 1 else (b,):
            for start in rng.integers(1, 209, 12):
                frame[start:start + rng.integers(1, 30)] = frame[start - 1]
        if trial % 2:
            a[:] = a[0]  # a whole screen of one row
        stack = np.zeros((2, size[1], size[0]), np.uint8)
        expected = reference_stack_step(lut[a], lut[b], stack, False)
        kernels.step_palette(a, b, lut, stack)
        assert np.array_equal(stack, expected)
        rgb_a, rgb_b = a[..., None].repeat(3, -1), b[..., None].repeat(3, -1)
        rgb_a[..., 1] ^= 0x5A
        gray_stack = np.zeros((1, size[1], size[0]), np.uint8)
        kernels.step_rgb(rgb_a, rgb_b, gray_stack)
        gray = np.maximum(ref_gray(rgb_a),
                          ref_gray(rgb_b))
        assert np.array_equal(gray_stack[0], ref_area(gray, size))
