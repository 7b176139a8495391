"""Pure-Python/numpy threefry2x32 PRNG, bit-for-bit identical to ``jax.random``.

This module is the random generator of the envc reference interpreter; the Rust
and JAX backends reproduce it exactly, so every function below is specified
down to the bit.

Matched JAX configuration (checked against jax 0.10.2):

* ``jax_default_prng_impl = "threefry2x32"`` (keys are two uint32 words),
* ``jax_threefry_partitionable = True`` (the default since jax 0.5.0),
* ``jax_enable_x64 = False`` (the default: 32-bit seeds, int32/float32 samples).

Algorithms (``T(k, x0, x1)`` is the 20-round threefry2x32 block cipher, see
:func:`threefry2x32`; all arithmetic is modulo 2**32):

* ``key_from_seed(s) = (0, s mod 2**32)``; JAX (x32 mode) casts the seed to
  int64 then int32, and the logical shift ``seed >> 32`` of an int32 is 0.
  Seeds outside ``[-2**63, 2**63)`` raise ``OverflowError`` like JAX.
* ``split(k, n)[i] = T(k, 0, i)``, i.e. the pair of output words for the
  64-bit counter ``i`` split into (high word, low word).
* ``fold_in(k, d) = T(k, 0, d mod 2**32)``, hence
  ``fold_in(k, i) == split(k, n)[i]`` for ``i < n`` (partitionable mode).
* ``bits(k, shape)[flat index i] = y0 ^ y1`` where ``(y0, y1) = T(k, hi(i), lo(i))``
  and ``i`` is the row-major flat index as a 64-bit counter.
  In particular ``bits_scalar(k) = y0 ^ y1`` with ``(y0, y1) = T(k, 0, 0)``.
* ``uniform``: ``f = float32(bits >> 9) * 2**-23`` (the mantissa trick,
  exactly ``bitcast((bits >> 9) | 0x3F800000) - 1``), ``lo = f32(minval)``,
  ``span = f32(f32(maxval) - lo)`` (float32 subtraction), then
  ``max(lo, fma_f32(f, span, lo))`` where ``fma_f32`` is a float32 fused
  multiply-add (ONE rounding of the exact ``f * span + lo``). JAX writes
  ``floats * (maxval - minval) + minval`` but XLA (CPU, checked here) contracts
  it into an FMA, which changes the last bit for about half of the samples in
  e.g. ``[-0.05, 0.05)``. Rust: ``f.mul_add(span, lo)`` on f32.
* ``randint``: see :func:`randint` (two split keys, multiply/modulo trick).

The spec language's scalar draws (``uniform_scalar``, ``randint_scalar``,
``bernoulli_scalar``, ``choice_mask``) take the *site key* ``K = fold_in(k, s)``
of their draw site and read its two words as their random bits, with no further
threefry block: ``site_bits(K) = K[0] ^ K[1]``, which is
``jax.random.bits(k, (s + 1,), uint32)[s]``, so a scalar ``uniform`` at site
``s`` equals ``jax.random.uniform(k, (s + 1,), float32, lo, hi)[s]``;
``randint_scalar`` is ``randint``'s arithmetic with ``(hb, lb) = K``.
``choice_mask`` and ``shuffle_order`` are envc's own samplers; ``shuffle_order``
draws ``bits(K, (capacity,))``.
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "Key",
    "as_key",
    "bernoulli_scalar",
    "bits",
    "bits_scalar",
    "choice_mask",
    "fold_in",
    "key_from_seed",
    "randint",
    "randint_scalar",
    "shuffle_order",
    "site_bits",
    "split",
    "threefry2x32",
    "uniform",
    "uniform_scalar",
]

Key = tuple[int, int]
"""A threefry2x32 key: two uint32 words, equal to ``jax.random.key_data(key)``."""

U32Array = npt.NDArray[np.uint32]

_MASK32 = 0xFFFFFFFF
_KS_PARITY = 0x1BD11BDA
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1
_MANTISSA_SCALE = 2.0**-23
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_F64_BITS = struct.Struct("<Q")
_SMALL_SCALAR_MAX = 8  # sizes up to this use the pure-int threefry


def _threefry_scalar(k0: int, k1: int, x0: int, x1: int) -> tuple[int, int]:
    """Threefry2x32 (20 rounds) on one block of Python ints in [0, 2**32)."""
    m = _MASK32
    k2 = k0 ^ k1 ^ _KS_PARITY
    x0 = (x0 + k0) & m
    x1 = (x1 + k1) & m
    # Group 1: rotations 13, 15, 26, 6; then inject ks[1], ks[2] + 1.
    x0 = (x0 + x1) & m
    x1 = (((x1 << 13) | (x1 >> 19)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 15) | (x1 >> 17)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 26) | (x1 >> 6)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 6) | (x1 >> 26)) & m) ^ x0
    x0 = (x0 + k1) & m
    x1 = (x1 + k2 + 1) & m
    # Group 2: rotations 17, 29, 16, 24; then inject ks[2], ks[0] + 2.
    x0 = (x0 + x1) & m
    x1 = (((x1 << 17) | (x1 >> 15)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 29) | (x1 >> 3)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 16) | (x1 >> 16)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 24) | (x1 >> 8)) & m) ^ x0
    x0 = (x0 + k2) & m
    x1 = (x1 + k0 + 2) & m
    # Group 3: rotations 13, 15, 26, 6; then inject ks[0], ks[1] + 3.
    x0 = (x0 + x1) & m
    x1 = (((x1 << 13) | (x1 >> 19)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 15) | (x1 >> 17)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 26) | (x1 >> 6)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 6) | (x1 >> 26)) & m) ^ x0
    x0 = (x0 + k0) & m
    x1 = (x1 + k1 + 3) & m
    # Group 4: rotations 17, 29, 16, 24; then inject ks[1], ks[2] + 4.
    x0 = (x0 + x1) & m
    x1 = (((x1 << 17) | (x1 >> 15)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 29) | (x1 >> 3)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 16) | (x1 >> 16)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 24) | (x1 >> 8)) & m) ^ x0
    x0 = (x0 + k1) & m
    x1 = (x1 + k2 + 4) & m
    # Group 5: rotations 13, 15, 26, 6; then inject ks[2], ks[0] + 5.
    x0 = (x0 + x1) & m
    x1 = (((x1 << 13) | (x1 >> 19)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 15) | (x1 >> 17)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 26) | (x1 >> 6)) & m) ^ x0
    x0 = (x0 + x1) & m
    x1 = (((x1 << 6) | (x1 >> 26)) & m) ^ x0
    x0 = (x0 + k2) & m
    x1 = (x1 + k0 + 5) & m
    return x0, x1


def threefry2x32(key: Key, x0: npt.ArrayLike, x1: npt.ArrayLike) -> tuple[U32Array, U32Array]:
    """20-round threefry2x32 (jax's ``threefry2x32_p``) over broadcast uint32 arrays."""
    a = np.asarray(x0, dtype=np.uint32)
    b = np.asarray(x1, dtype=np.uint32)
    shape = np.broadcast_shapes(a.shape, b.shape)
    # Work on 1-d arrays so numpy wraps silently (scalar ops warn on overflow).
    v0 = np.broadcast_to(a, shape).reshape(-1).copy()
    v1 = np.broadcast_to(b, shape).reshape(-1).copy()
    ks = (np.uint32(key[0]), np.uint32(key[1]), np.uint32(key[0] ^ key[1] ^ _KS_PARITY))
    v0 += ks[0]
    v1 += ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            v0 += v1
            v1 = (v1 << np.uint32(r)) | (v1 >> np.uint32(32 - r))
            v1 ^= v0
        v0 += ks[(i + 1) % 3]
        v1 += ks[(i + 2) % 3]
        v1 += np.uint32(i + 1)
    return v0.reshape(shape), v1.reshape(shape)


def key_from_seed(seed: int) -> Key:
    """Key equal to ``jax.random.PRNGKey(seed)`` (x32 mode): ``(0, seed mod 2**32)``."""
    seed = int(seed)
    if not -(2**63) <= seed < 2**63:
        raise OverflowError(f"PRNG seed {seed} does not fit in int64")
    return (0, seed & _MASK32)


def _check_key(key: tuple[int, int]) -> Key:
    """Validate that both words of a key are ints in [0, 2**32)."""
    k0, k1 = int(key[0]), int(key[1])
    if not (0 <= k0 <= _MASK32 and 0 <= k1 <= _MASK32):
        raise ValueError(f"key words must be in [0, 2**32), got {key!r}")
    return (k0, k1)


def as_key(k: Any) -> Key:
    """Convert a Key tuple, a uint32[2] numpy/jax array or a typed jax key to a Key."""
    if isinstance(k, tuple) and len(k) == 2 and all(isinstance(w, int) for w in k):
        return _check_key(k)
    if "jax" in sys.modules:  # a jax array implies jax is already imported
        import jax
        import jax.numpy as jnp

        if isinstance(k, jax.Array) and jnp.issubdtype(k.dtype, jax.dtypes.prng_key):
            impl = jax.random.key_impl(k)
            if impl != "threefry2x32":
                raise ValueError(f"expected a threefry2x32 key, got impl {impl!r}")
            k = jax.random.key_data(k)
    arr = np.asarray(k)
    if arr.shape != (2,) or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"expected an integer key of shape (2,), got {arr!r}")
    return _check_key((int(arr[0]), int(arr[1])))


def split(key: Key, num: int = 2) -> list[Key]:
    """Keys equal to ``jax.random.split(key, num)``: key i is ``T(key, 0, i)``."""
    if num < 0:
        raise ValueError(f"split num must be non-negative, got {num}")
    k0, k1 = key
    if num <= _SMALL_SCALAR_MAX:
        return [_threefry_scalar(k0, k1, 0, i) for i in range(num)]
    y0, y1 = threefry2x32(key, np.uint32(0), np.arange(num, dtype=np.uint32))
    return list(zip(y0.tolist(), y1.tolist(), strict=True))


def fold_in(key: Key, data: int) -> Key:
    """Key equal to ``jax.random.fold_in(key, data)``: ``T(key, 0, data mod 2**32)``."""
    return _threefry_scalar(key[0], key[1], 0, int(data) & _MASK32)


def bits(key: Key, shape: tuple[int, ...] = ()) -> U32Array:
    """uint32 array equal to ``jax.random.bits(key, shape, dtype=jnp.uint32)``."""
    n = math.prod(shape)
    if n <= _SMALL_SCALAR_MAX:  # avoid numpy overhead for tiny draws
        k0, k1 = key
        pairs = [_threefry_scalar(k0, k1, 0, i) for i in range(n)]
        return np.array([y0 ^ y1 for y0, y1 in pairs], dtype=np.uint32).reshape(shape)
    counter = np.arange(n, dtype=np.uint64)
    hi = (counter >> np.uint64(32)).astype(np.uint32)
    lo = (counter & np.uint64(_MASK32)).astype(np.uint32)
    y0, y1 = threefry2x32(key, hi, lo)
    out: U32Array = (y0 ^ y1).reshape(shape)
    return out


def bits_scalar(key: Key) -> int:
    """Int equal to ``jax.random.bits(key, (), jnp.uint32)``."""
    y0, y1 = _threefry_scalar(key[0], key[1], 0, 0)
    return y0 ^ y1


def _f32(x: float) -> float:
    """Round a Python float to the nearest float32 (ties to even, overflow to inf)."""
    try:
        value: float = _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)
    return value


def _fma_f32(a: float, b: float, c: float) -> float:
    """Float32 fused ``a * b + c`` (one rounding); ``a * b`` must be exact in double."""
    p = a * b
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)  # TwoSum: s + err == p + c exactly
    if err != 0.0 and not _F64_BITS.unpack(_F64.pack(s))[0] & 1:
        s = math.nextafter(s, math.copysign(math.inf, err))  # round to odd
    return _f32(s)


def _fma_f32_array(a: npt.NDArray[np.float32], b: np.float32, c: np.float32) -> npt.NDArray[np.float32]:
    """Vectorized :func:`_fma_f32`: float32 ``a * b + c`` with one rounding."""
    # Exact product in float64, one float64 rounding of the sum made
    # round-to-odd (TwoSum error term), so the final float32 cast is exact.
    p = np.asarray(a, dtype=np.float64) * np.float64(b)
    c64 = np.float64(c)
    s = p + c64
    bb = s - p
    err = (p - (s - bb)) + (c64 - bb)
    fix = (err != 0.0) & ((s.view(np.uint64) & np.uint64(1)) == 0)
    s = np.where(fix, np.nextafter(s, np.copysign(np.inf, err)), s)
    return s.astype(np.float32)


def uniform(key: Key, shape: tuple[int, ...] = (), minval: float = 0.0, maxval: float = 1.0) -> npt.NDArray[np.float32]:
    """float32 array == ``jax.random.uniform(key, shape, float32, minval, maxval)``."""
    b = bits(key, shape)
    mantissa = (b >> np.uint32(9)) | np.uint32(0x3F800000)
    floats = mantissa.view(np.float32) - np.float32(1.0)
    lo = np.float32(minval)
    with np.errstate(over="ignore", invalid="ignore"):
        span = np.float32(maxval) - lo
        out = np.maximum(lo, _fma_f32_array(floats, span, lo))
    return np.asarray(out, dtype=np.float32).reshape(shape)


def site_bits(key: Key) -> int:
    """The 32 bits of a scalar draw whose site key is ``key`` (``fold_in(k, s)`` for site ``s``): ``key[0] ^ key[1]``,
    equal to ``jax.random.bits(k, (s + 1,), jnp.uint32)[s]``."""
    return (key[0] ^ key[1]) & _MASK32


def uniform_scalar(key: Key, minval: float = 0.0, maxval: float = 1.0) -> float:
    """The spec's ``uniform(minval, maxval)`` drawn with site key ``key``: ``uniform``'s float32 arithmetic on
    ``site_bits(key)``, so at site ``s`` of scope key ``k`` it equals ``jax.random.uniform(k, (s + 1,), ...)[s]``."""
    floats = (site_bits(key) >> 9) * _MANTISSA_SCALE
    lo = _f32(minval)
    # Double rounding (f64 then f32) of a sum is innocuous since 53 >= 2 * 24 + 2.
    span = _f32(_f32(maxval) - lo)
    return max(lo, _fma_f32(floats, span, lo))


def _clip_int32(v: int) -> int:
    """Clip an int to the int32 range."""
    return min(max(v, _INT32_MIN), _INT32_MAX)


def _randint_params(minval: int, maxval: int) -> tuple[int, int, int]:
    """(clipped minval, span, multiplier) exactly as jax's ``_randint`` for int32."""
    lo = _clip_int32(int(minval))
    maxval = int(maxval)
    hi = _clip_int32(maxval)
    span = (hi - lo) & _MASK32
    if hi <= lo:
        span = 1
    elif maxval > _INT32_MAX:
        span = (span + 1) & _MASK32  # may wrap to 0: then the remainders are no-ops
    multiplier = _urem(1 << 16, span)
    multiplier = _urem((multiplier * multiplier) & _MASK32, span)
    return lo, span, multiplier


def _urem(a: int, b: int) -> int:
    """Unsigned remainder with XLA semantics: ``a % 0 == a``."""
    return a % b if b else a


def _to_int32(v: int) -> int:
    """Reinterpret the low 32 bits of an int as a signed int32."""
    v &= _MASK32
    return v - (1 << 32) if v > _INT32_MAX else v


def randint(key: Key, minval: int, maxval: int, shape: tuple[int, ...] = ()) -> npt.NDArray[np.int32]:
    """int32 array == ``jax.random.randint(key, shape, minval, maxval, jnp.int32)``.

    Algorithm (all in uint32 with wrap-around, ``rem(a, 0) == a``):
    ``lo, hi = clip(minval), clip(maxval)`` to the int32 range;
    ``span = (hi - lo) mod 2**32``; ``span = 1`` if ``hi <= lo``, else
    ``span += 1`` if the unclipped ``maxval > 2**31 - 1``;
    ``k1, k2 = split(key)``; ``hb, lb = bits(k1, shape), bits(k2, shape)``;
    ``m = rem(2**16, span)``; ``m = rem(m * m, span)``;
    ``off = rem(rem(hb, span) * m + rem(lb, span), span)``;
    result ``= int32(lo + off)``.
    Note ``m * m`` wraps to 0 when ``span > 2**16``, so then ``off = rem(lb, span)``.
    Python-int bounds outside int32 are clipped (jax raises OverflowError for
    those in x32 mode; the clipping matches jax's x64 mode with dtype=int32).
    """
    lo, span, multiplier = _randint_params(minval, maxval)
    k1, k2 = split(key)
    hb = bits(k1, shape).astype(np.uint64)
    lb = bits(k2, shape).astype(np.uint64)
    mask = np.uint64(_MASK32)
    if span:
        s = np.uint64(span)
        hb %= s
        lb %= s
    off = ((hb * np.uint64(multiplier)) & mask) + lb
    off &= mask
    if span:
        off %= np.uint64(span)
    out = np.asarray((off + np.uint64(lo & _MASK32)) & mask).astype(np.uint32)
    return out.view(np.int32)


def randint_scalar(key: Key, lo: int, hi: int) -> int:
    """The spec's ``randint(lo, hi)`` drawn with site key ``key``: ``randint``'s arithmetic (bounds, span,
    multiplier) with the site key's own words as ``(hb, lb)`` instead of the bits of ``split(key)``."""
    minval, span, multiplier = _randint_params(lo, hi)
    hb, lb = key
    off = (_urem(hb, span) * multiplier + _urem(lb, span)) & _MASK32
    off = _urem(off, span)
    return _to_int32(minval + off)


def bernoulli_scalar(key: Key, p: float) -> bool:
    """The spec's ``bernoulli(p)`` drawn with site key ``key``: ``uniform_scalar(key) < f32(p)``."""
    return (site_bits(key) >> 9) * _MANTISSA_SCALE < _f32(p)


def choice_mask(key: Key, mask: Sequence[bool]) -> int:
    """Uniformly pick the index of a True entry of ``mask`` (envc's own sampler).

    Definition: ``n`` = number of True entries; if ``n == 0`` return 0;
    otherwise ``r = randint_scalar(key, 0, n)`` and the result is the index of
    the ``(r + 1)``-th True entry (counting from index 0 upwards).
    """
    n = sum(1 for m in mask if m)
    if n == 0:
        return 0
    r = randint_scalar(key, 0, n)
    for i, m in enumerate(mask):
        if m:
            if r == 0:
                return i
            r -= 1
    raise AssertionError("unreachable")


def shuffle_order(key: Key, capacity: int, count: int) -> list[int]:
    """Permutation of ``range(capacity)`` shuffling only the first ``count`` positions.

    envc's own sampler. Definition: ``b = bits(key, (capacity,))``; positions
    ``0..count-1`` hold the indices ``0..count-1`` sorted ascending by the pair
    ``(b[i], i)`` (ties keep index order); positions ``count..capacity-1`` hold
    themselves. The bits are drawn for the full ``capacity``, so ``b[i]`` does
    not depend on ``count``.
    Shuffling a zone means ``new[j] = old[order[j]]``.
    """
    if not 0 <= count <= capacity:
        raise ValueError(f"need 0 <= count <= capacity, got {count=}, {capacity=}")
    b = bits(key, (capacity,))[:count]
    head: list[int] = np.argsort(b, kind="stable").tolist()
    return head + list(range(count, capacity))
