"""Bit-for-bit comparisons of ``envc.rng`` against the installed ``jax.random`` (the scalar samplers on site keys:
element s of JAX's vector draw from the scope key; docs/spec-language.md 13.4)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.extend.random import threefry_2x32

from envc import rng

U32 = 2**32
I32_MIN, I32_MAX = -(2**31), 2**31 - 1

HYP = settings(max_examples=60, deadline=None, derandomize=True)

words = st.integers(0, U32 - 1)
keys = st.tuples(words, words)


def jkey(key: rng.Key) -> jax.Array:
    """Raw (legacy) uint32[2] jax key for an envc key."""
    return jnp.asarray(np.array(key, dtype=np.uint32))


def as_tuple(a: Any) -> rng.Key:
    """Convert a raw jax key array to a Key tuple."""
    arr = np.asarray(a)
    assert arr.shape == (2,) and arr.dtype == np.uint32
    return (int(arr[0]), int(arr[1]))


def many_keys(seed: int, n: int) -> tuple[list[rng.Key], jax.Array]:
    """N keys (derived by jax.random.split) as envc tuples and as a jax batch."""
    batch = jax.random.split(jax.random.PRNGKey(seed), n)
    return [as_tuple(k) for k in batch], batch


# Batched jax samplers: jitted once per (batch size, dtype); bounds are traced.
_v_bits: Callable[..., jax.Array] = jax.jit(jax.vmap(lambda k: jax.random.bits(k, (), jnp.uint32)))
SITES = 4  # draw sites 0..3 of each scope key


@functools.cache
def _sites(kind: str) -> Callable[..., jax.Array]:
    """JAX's samplers over a vector of SITES per scope key: element s is the spec's scalar draw at site s."""
    if kind == "uniform":
        return jax.jit(jax.vmap(lambda k, lo, hi: jax.random.uniform(k, (SITES,), jnp.float32, lo, hi),
                                in_axes=(0, None, None)))
    return jax.jit(jax.vmap(lambda k, p: jax.random.bernoulli(k, p, (SITES,)), in_axes=(0, None)))


def site_keys(scopes: list[rng.Key]) -> list[list[rng.Key]]:
    """The site keys `fold_in(k, s)` of sites 0..SITES-1 of each scope key."""
    return [[rng.fold_in(k, s) for s in range(SITES)] for k in scopes]


def randint_by_definition(site_key: rng.Key, lo: int, hi: int) -> int:
    """docs/spec-language.md 13.4, restated: with (hb, lb) the site key's words and the span after clipping,
    the offset is `(hb * 2**32 + lb) mod span` for spans up to 2**16, else `lb mod span` (a span of 2**32 wraps
    to 0 in jax's uint32 arithmetic and keeps `lb`)."""
    hb, lb = site_key
    clo, chi = max(min(lo, I32_MAX), I32_MIN), max(min(hi, I32_MAX), I32_MIN)
    span = 1 if chi <= clo else chi - clo + (1 if hi > I32_MAX else 0)
    off = (hb * 2**32 + lb) % span if span <= 2**16 else lb % span
    v = (clo + off) & (U32 - 1)
    return v - U32 if v > I32_MAX else v


SEEDS = [
    0,
    1,
    2,
    42,
    123456789,
    2**31 - 1,
    2**31,
    2**32 - 1,
    2**32,
    2**32 + 5,
    2**40 + 7,
    2**63 - 1,
    -1,
    -7,
    -(2**31),
    -(2**63),
]
SHAPES = [(), (1,), (5,), (3, 4), (100,)]
TEST_KEYS: list[rng.Key] = [(0, 0), (0, 42), (123, 456), (U32 - 1, U32 - 1)]


def test_matched_jax_configuration() -> None:
    """The module documents this jax configuration; fail loudly if it changes."""
    config: Any = jax.config  # flags are dynamic attributes
    assert config.jax_threefry_partitionable is True
    assert config.jax_enable_x64 is False
    assert config.jax_default_prng_impl == "threefry2x32"


# ---------------------------------------------------------------- threefry


@pytest.mark.parametrize(
    ("key", "ctr", "expected"),
    [
        # Random123 known-answer vectors for threefry2x32_20.
        ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
        (
            (0xFFFFFFFF, 0xFFFFFFFF),
            (0xFFFFFFFF, 0xFFFFFFFF),
            (0x1CB996FC, 0xBB002BE7),
        ),
        (
            (0x13198A2E, 0x03707344),
            (0x243F6A88, 0x85A308D3),
            (0xC4923A9C, 0x483DF7A0),
        ),
    ],
)
def test_threefry_known_answers(key: rng.Key, ctr: tuple[int, int], expected: tuple[int, int]) -> None:
    assert rng._threefry_scalar(*key, *ctr) == expected
    y0, y1 = rng.threefry2x32(key, np.array([ctr[0]]), np.array([ctr[1]]))
    assert (int(y0[0]), int(y1[0])) == expected


@HYP
@given(key=keys, seed=st.integers(0, 2**31 - 1))
def test_threefry_vector_scalar_and_jax_agree(key: rng.Key, seed: int) -> None:
    x = np.random.default_rng(seed).integers(0, U32, size=(2, 6), dtype=np.uint32)
    y0, y1 = rng.threefry2x32(key, x[0], x[1])
    assert y0.dtype == np.uint32 and y0.shape == (6,)
    for i in range(6):
        assert rng._threefry_scalar(*key, int(x[0, i]), int(x[1, i])) == (
            int(y0[i]),
            int(y1[i]),
        )
    # jax's threefry_2x32 hashes the first half of `count` with the second half.
    out = np.asarray(threefry_2x32(jkey(key), jnp.asarray(x.reshape(-1))))
    np.testing.assert_array_equal(out, np.concatenate([y0, y1]))


def test_threefry_broadcasts_and_keeps_shape() -> None:
    x0 = np.arange(12, dtype=np.uint32).reshape(3, 4)
    y0, y1 = rng.threefry2x32((5, 6), x0, np.uint32(9))
    assert y0.shape == y1.shape == (3, 4)
    assert rng._threefry_scalar(5, 6, 7, 9) == (int(y0[1, 3]), int(y1[1, 3]))


# ---------------------------------------------------------------- keys


@pytest.mark.parametrize("seed", SEEDS)
def test_key_from_seed(seed: int) -> None:
    expected = as_tuple(jax.random.PRNGKey(seed))
    assert rng.key_from_seed(seed) == expected
    assert as_tuple(jax.random.key_data(jax.random.key(seed))) == expected


@pytest.mark.parametrize("seed", [2**63, 2**64 - 1, -(2**63) - 1])
def test_key_from_seed_overflow_like_jax(seed: int) -> None:
    with pytest.raises(OverflowError):
        jax.random.PRNGKey(seed)
    with pytest.raises(OverflowError):
        rng.key_from_seed(seed)


@HYP
@given(seed=st.integers(-(2**63), 2**63 - 1))
def test_key_from_seed_hypothesis(seed: int) -> None:
    assert rng.key_from_seed(seed) == as_tuple(jax.random.PRNGKey(seed))


def test_as_key() -> None:
    raw = jax.random.PRNGKey(7)
    typed = jax.random.key(7)
    expected = (0, 7)
    assert rng.as_key((0, 7)) == expected
    assert rng.as_key(np.array([0, 7], dtype=np.uint32)) == expected
    assert rng.as_key(raw) == expected
    assert rng.as_key(typed) == expected
    split_typed = jax.random.split(typed)[1]
    assert rng.as_key(split_typed) == rng.split(expected)[1]
    with pytest.raises(ValueError):
        rng.as_key((0, U32))
    with pytest.raises(ValueError):
        rng.as_key(np.zeros(3, dtype=np.uint32))
    with pytest.raises(ValueError):
        rng.as_key(jax.random.key(0, impl="rbg"))


@pytest.mark.parametrize("num", [0, 1, 2, 3, 7, 8, 9, 100])
@pytest.mark.parametrize("key", TEST_KEYS)
def test_split(key: rng.Key, num: int) -> None:
    expected = [as_tuple(k) for k in jax.random.split(jkey(key), num)]
    got = rng.split(key, num)
    assert got == expected
    assert all(type(w) is int for k in got for w in k)


def test_split_default_num_and_nested() -> None:
    jk = jax.random.PRNGKey(2024)
    k = rng.key_from_seed(2024)
    assert rng.split(k) == [as_tuple(x) for x in jax.random.split(jk)]
    for depth_path in [(0, 0, 0), (1, 0, 2), (2, 1, 1)]:
        jcur, cur = jk, k
        for i in depth_path:
            jcur = jax.random.split(jcur, 3)[i]
            cur = rng.split(cur, 3)[i]
        assert cur == as_tuple(jcur)


@HYP
@given(key=keys, num=st.sampled_from([1, 2, 3, 7]))
def test_split_hypothesis(key: rng.Key, num: int) -> None:
    assert rng.split(key, num) == [as_tuple(k) for k in jax.random.split(jkey(key), num)]


FOLD_DATA = [0, 1, 2, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1]


@pytest.mark.parametrize("key", TEST_KEYS)
def test_fold_in(key: rng.Key) -> None:
    for data in FOLD_DATA:
        assert rng.fold_in(key, data) == as_tuple(jax.random.fold_in(jkey(key), data))


def test_fold_in_negative_int32_data_wraps() -> None:
    key = (11, 22)
    for data in [-1, -2, I32_MIN]:
        expected = as_tuple(jax.random.fold_in(jkey(key), np.int32(data)))
        assert rng.fold_in(key, data) == expected
        assert rng.fold_in(key, data) == rng.fold_in(key, data + U32)


def test_fold_in_equals_split_entry() -> None:
    # A property of partitionable mode: fold_in(k, i) == split(k, n)[i].
    key = (3, 4)
    assert [rng.fold_in(key, i) for i in range(20)] == rng.split(key, 20)


@HYP
@given(key=keys, data=words)
def test_fold_in_hypothesis(key: rng.Key, data: int) -> None:
    assert rng.fold_in(key, data) == as_tuple(jax.random.fold_in(jkey(key), data))


# ---------------------------------------------------------------- bits


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("key", TEST_KEYS)
def test_bits(key: rng.Key, shape: tuple[int, ...]) -> None:
    got = rng.bits(key, shape)
    expected = np.asarray(jax.random.bits(jkey(key), shape, jnp.uint32))
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.uint32 and got.shape == shape
    np.testing.assert_array_equal(got, expected)


@HYP
@given(key=keys)
def test_bits_hypothesis(key: rng.Key) -> None:
    np.testing.assert_array_equal(rng.bits(key, (3, 4)), np.asarray(jax.random.bits(jkey(key), (3, 4), jnp.uint32)))
    assert rng.bits_scalar(key) == int(jax.random.bits(jkey(key), (), jnp.uint32))


def test_bits_scalar_batch() -> None:
    tuples, batch = many_keys(5, 256)
    expected = np.asarray(_v_bits(batch))
    assert [rng.bits_scalar(k) for k in tuples] == expected.tolist()


# ---------------------------------------------------------------- uniform

UNIFORM_RANGES = [
    (0.0, 1.0),
    (-0.05, 0.05),
    (-3.0, -1.0),
    (-1.0, 2.0),
    (0.1, 0.7),
    (1e-3, 1e6),
    (-1e-30, 3.3),
    (2.5, 2.5),
    (2.0, 1.0),
]


@pytest.mark.parametrize(("lo", "hi"), UNIFORM_RANGES)
def test_uniform_vector(lo: float, hi: float) -> None:
    for key in TEST_KEYS[:2]:
        for shape in [(), (5,), (3, 4), (2000,)]:
            got = rng.uniform(key, shape, lo, hi)
            expected = np.asarray(jax.random.uniform(jkey(key), shape, jnp.float32, lo, hi))
            assert got.dtype == np.float32 and got.shape == shape
            np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize(("lo", "hi"), UNIFORM_RANGES)
def test_uniform_scalar(lo: float, hi: float) -> None:
    """The scalar draw at site s of scope key k is element s of `jax.random.uniform(k, (s + 1,))`."""
    tuples, batch = many_keys(17, 128)
    expected = np.asarray(_sites("uniform")(batch, lo, hi)).reshape(-1)
    got = np.array([rng.uniform_scalar(sk, lo, hi) for row in site_keys(tuples) for sk in row], dtype=np.float64)
    # Every value must be a float32 value, bit-identical to jax.
    np.testing.assert_array_equal(got, got.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(got.astype(np.float32).view(np.uint32), expected.view(np.uint32))


def test_site_bits_are_the_scope_keys_bit_stream() -> None:
    tuples, batch = many_keys(5, 64)
    expected = np.asarray(jax.vmap(lambda k: jax.random.bits(k, (SITES,), jnp.uint32))(batch))
    assert [[rng.site_bits(sk) for sk in row] for row in site_keys(tuples)] == expected.tolist()


def test_uniform_default_bounds() -> None:
    key = (9, 10)
    np.testing.assert_array_equal(rng.uniform(key, (7,)), np.asarray(jax.random.uniform(jkey(key), (7,))))
    assert rng.uniform_scalar(rng.fold_in(key, 3)) == float(jax.random.uniform(jkey(key), (7,))[3])


def test_uniform_is_fused_multiply_add() -> None:
    # XLA contracts `f * span + lo` into one FMA; check we do too (a plain
    # float32 multiply then add differs on ~half of these samples).
    key = (0, 0)
    f = rng.uniform(key, (2000,))
    lo, hi = np.float32(-0.05), np.float32(0.05)
    unfused = np.maximum(lo, f * (hi - lo) + lo)
    got = rng.uniform(key, (2000,), -0.05, 0.05)
    assert (got != unfused).sum() > 100


F = 2.0**-23  # float32 ulp at 1.0


@pytest.mark.parametrize(
    ("a", "b", "c"),
    [
        # a * b == 1 + 2**-11 + 2**-24 is a float32 tie; c breaks it. Naive
        # double rounding (f64 sum, then f32 cast) gets the first case wrong.
        (1 + 2.0**-12, 1 + 2.0**-12, 2.0**-80),
        (1 + 2.0**-12, 1 + 2.0**-12, -(2.0**-80)),
        (1 + 2.0**-12, 1 + 2.0**-12, 0.0),
        (-(1 + 2.0**-12), 1 + 2.0**-12, -(2.0**-80)),
        (0.5 + 7 * F, 3.0, -1.5),
        (1 - F, 1e-3, 1e6),
        (0.0, 5.0, -0.05),
    ],
)
def test_fma_f32_is_correctly_rounded(a: float, b: float, c: float) -> None:
    from fractions import Fraction

    exact = Fraction(a) * Fraction(b) + Fraction(c)
    lo = np.float32(float(exact))
    cands = [np.nextafter(lo, np.float32(-np.inf)), lo, np.nextafter(lo, np.float32(np.inf))]
    best = min(cands, key=lambda y: (abs(Fraction(float(y)) - exact), int(np.float32(y).view(np.uint32)) & 1))
    assert rng._fma_f32(a, b, c) == float(best)
    arr = rng._fma_f32_array(np.array([a, a], np.float32), np.float32(b), np.float32(c))
    np.testing.assert_array_equal(arr, np.array([best, best], np.float32))


@HYP
@given(
    key=keys,
    lo=st.floats(-1e6, 1e6, width=32),
    width=st.floats(0.0, 1e6, width=32),
)
def test_uniform_hypothesis(key: rng.Key, lo: float, width: float) -> None:
    hi = lo + width
    expected = np.asarray(jax.random.uniform(jkey(key), (5,), jnp.float32, lo, hi))
    np.testing.assert_array_equal(rng.uniform(key, (5,), lo, hi).view(np.uint32), expected.view(np.uint32))
    assert rng.uniform_scalar(rng.fold_in(key, 4), lo, hi) == float(expected[4])


# ---------------------------------------------------------------- randint

RANDINT_RANGES = [
    (0, 1),
    (0, 2),
    (0, 3),
    (0, 7),
    (-5, 5),
    (0, 2**16),
    (0, 2**16 + 1),
    (-1000, 10**9),
    (0, 2**31 - 1),
    (I32_MIN, 0),
    (I32_MIN, I32_MAX),
    (I32_MAX - 1, I32_MAX),
    (5, 5),
    (5, 2),
    (I32_MAX, I32_MIN),
]


@pytest.mark.parametrize(("lo", "hi"), RANDINT_RANGES)
def test_randint_vector(lo: int, hi: int) -> None:
    for key in TEST_KEYS[:2]:
        for shape in [(), (5,), (3, 4), (2000,)]:
            got = rng.randint(key, lo, hi, shape)
            expected = np.asarray(jax.random.randint(jkey(key), shape, lo, hi, jnp.int32))
            assert got.dtype == np.int32 and got.shape == shape
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(("lo", "hi"), RANDINT_RANGES)
def test_randint_scalar(lo: int, hi: int) -> None:
    tuples, _ = many_keys(23, 512)
    got = [rng.randint_scalar(k, lo, hi) for k in tuples]
    assert got == [randint_by_definition(k, lo, hi) for k in tuples]
    assert all(type(v) is int for v in got)
    if lo < hi:
        assert all(lo <= v < hi for v in got)


OUT_OF_INT32_RANGES = [
    (0, 2**40),
    (-(2**40), 5),
    (-(2**40), 2**40),
    (I32_MIN, 2**31),
    (-(2**31) + 3, 2**31),
    (2**35, 2**36),
    (-(2**40), -(2**35)),
]


@pytest.mark.parametrize(("lo", "hi"), OUT_OF_INT32_RANGES)
def test_randint_clips_like_jax_x64(lo: int, hi: int) -> None:
    # x32 jax rejects such Python ints; with x64 on, int64 bounds are clipped
    # to int32 (and maxval > int32 max widens the span by one).
    key = (77, 88)
    with jax.enable_x64(True):
        expected = np.asarray(jax.random.randint(jkey(key), (9,), np.int64(lo), np.int64(hi), jnp.int32))
    np.testing.assert_array_equal(rng.randint(key, lo, hi, (9,)), expected)
    # Partitionable mode: a scalar draw equals element 0 of a vector draw.
    assert int(rng.randint(key, lo, hi, ())) == int(expected[0])
    assert rng.randint_scalar(key, lo, hi) == randint_by_definition(key, lo, hi)


@HYP
@given(key=keys, a=st.integers(I32_MIN, I32_MAX), b=st.integers(I32_MIN, I32_MAX))
def test_randint_hypothesis(key: rng.Key, a: int, b: int) -> None:
    lo, hi = min(a, b), max(a, b)
    got = rng.randint_scalar(key, lo, hi)
    assert got == randint_by_definition(key, lo, hi)
    assert lo == hi or lo <= got < hi
    np.testing.assert_array_equal(
        rng.randint(key, lo, hi, (5,)),
        np.asarray(jax.random.randint(jkey(key), (5,), lo, hi, jnp.int32)),
    )


# ---------------------------------------------------------------- bernoulli


@pytest.mark.parametrize("p", [0.0, 0.25, 0.5, 1.0, 0.3, 1e-8, 0.999999])
def test_bernoulli_scalar(p: float) -> None:
    tuples, batch = many_keys(31, 128)
    expected = np.asarray(_sites("bernoulli")(batch, np.float32(p))).reshape(-1)
    got = [rng.bernoulli_scalar(sk, p) for row in site_keys(tuples) for sk in row]
    assert got == expected.tolist()
    assert all(type(v) is bool for v in got)
    if p == 0.0:
        assert not any(got)
    if p == 1.0:
        assert all(got)


def test_bernoulli_boundary_is_strict() -> None:
    # p equal to the drawn uniform gives False (u < p), the next float32 up True;
    # p is rounded to float32 first, so u * (1 + 2**-30) behaves like u.
    for key in TEST_KEYS:
        u = rng.uniform_scalar(rng.fold_in(key, 2))
        above = float(np.nextafter(np.float32(u), np.float32(2.0)))
        for p, expected in [(u, False), (u * (1 + 2.0**-30), False), (above, True)]:
            assert rng.bernoulli_scalar(rng.fold_in(key, 2), p) is expected
            assert bool(jax.random.bernoulli(jkey(key), np.float32(p), (3,))[2]) is expected


@HYP
@given(key=keys, p=st.floats(0.0, 1.0), site=st.integers(0, 9))
def test_bernoulli_hypothesis(key: rng.Key, p: float, site: int) -> None:
    expected = bool(jax.random.bernoulli(jkey(key), p, (site + 1,))[site])
    assert rng.bernoulli_scalar(rng.fold_in(key, site), p) == expected


# ---------------------------------------------------------------- choice_mask

MASK = [False, True, False, True, True, False, True]


def test_choice_mask_known_answers() -> None:
    key = rng.key_from_seed(0)
    got = [rng.choice_mask(rng.fold_in(key, i), MASK) for i in range(10)]
    assert got == [4, 3, 3, 4, 4, 3, 6, 6, 6, 6]


def test_choice_mask_matches_definition() -> None:
    true_idx = np.flatnonzero(MASK)
    tuples, _ = many_keys(41, 256)
    r = [randint_by_definition(k, 0, len(true_idx)) for k in tuples]
    got = [rng.choice_mask(k, MASK) for k in tuples]
    assert got == true_idx[r].tolist()
    assert set(got) == set(true_idx.tolist())  # every True entry is reachable
    assert got == [rng.choice_mask(k, MASK) for k in tuples]  # deterministic


def test_choice_mask_edge_cases() -> None:
    for key in TEST_KEYS:
        assert rng.choice_mask(key, []) == 0
        assert rng.choice_mask(key, [False] * 5) == 0
        assert rng.choice_mask(key, [False, False, True]) == 2
        assert rng.choice_mask(key, list(np.array([False, True]))) == 1


@HYP
@given(key=keys, mask=st.lists(st.booleans(), max_size=40))
def test_choice_mask_property(key: rng.Key, mask: list[bool]) -> None:
    got = rng.choice_mask(key, mask)
    true_idx = [i for i, m in enumerate(mask) if m]
    if not true_idx:
        assert got == 0
    else:
        assert got == true_idx[rng.randint_scalar(key, 0, len(true_idx))]
        assert mask[got]


# ---------------------------------------------------------------- shuffle_order


def test_shuffle_order_known_answers() -> None:
    key = rng.key_from_seed(0)
    assert rng.shuffle_order(key, 8, 5) == [2, 3, 4, 0, 1, 5, 6, 7]
    assert rng.shuffle_order(key, 8, 8) == [5, 6, 2, 3, 4, 7, 0, 1]
    assert rng.shuffle_order(rng.key_from_seed(42), 10, 10) == [6, 4, 0, 3, 5, 2, 1, 8, 7, 9]
    assert rng.shuffle_order(key, 0, 0) == []
    assert rng.shuffle_order(key, 6, 0) == list(range(6))
    assert rng.shuffle_order(key, 6, 1) == list(range(6))


def test_shuffle_order_matches_definition_via_jax() -> None:
    for seed, capacity, count in [(1, 12, 12), (2, 12, 7), (3, 30, 29)]:
        key = rng.key_from_seed(seed)
        b = np.asarray(jax.random.bits(jax.random.PRNGKey(seed), (capacity,), jnp.uint32))
        head = sorted(range(count), key=lambda i: (int(b[i]), i))
        assert rng.shuffle_order(key, capacity, count) == head + list(range(count, capacity))


def test_shuffle_order_ties_are_stable(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = np.array([5, 1, 5, 1, 0, 9], dtype=np.uint32)
    monkeypatch.setattr(rng, "bits", lambda key, shape: fake[: shape[0]].copy())
    assert rng.shuffle_order((0, 0), 6, 6) == [4, 1, 3, 0, 2, 5]
    assert rng.shuffle_order((0, 0), 6, 3) == [1, 0, 2, 3, 4, 5]
    # Many ties in a long array (unstable sorts reorder these).
    fake = np.random.default_rng(0).integers(0, 3, size=200).astype(np.uint32)
    expected = sorted(range(150), key=lambda i: (int(fake[i]), i)) + list(range(150, 200))
    assert rng.shuffle_order((0, 0), 200, 150) == expected


def test_shuffle_order_rejects_bad_count() -> None:
    with pytest.raises(ValueError):
        rng.shuffle_order((0, 0), 3, 4)
    with pytest.raises(ValueError):
        rng.shuffle_order((0, 0), 3, -1)


@HYP
@given(key=keys, capacity=st.integers(0, 40), data=st.data())
def test_shuffle_order_property(key: rng.Key, capacity: int, data: st.DataObject) -> None:
    count = data.draw(st.integers(0, capacity))
    order = rng.shuffle_order(key, capacity, count)
    assert sorted(order) == list(range(capacity))
    assert order[count:] == list(range(count, capacity))
    assert sorted(order[:count]) == list(range(count))
    assert order == rng.shuffle_order(key, capacity, count)
    # bits are drawn for the full capacity: the head is the full-shuffle order
    # restricted to indices < count.
    full = rng.shuffle_order(key, capacity, capacity)
    assert order[:count] == [i for i in full if i < count]
    b = rng.bits(key, (capacity,))
    assert all((b[order[j]], order[j]) < (b[order[j + 1]], order[j + 1]) for j in range(count - 1))
