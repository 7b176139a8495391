"""Write tests/vectors.txt: known answers of jax.random (and of envc.rng for envc's own samplers).

Run from the repository root with jax installed: `python rust_runtime/tests/make_vectors.py`. Each line is
`op inputs... = outputs...`, all integers (f32 values as their bit patterns); `cargo test` checks the runtime
against every line and tests/test_rust_runtime.py checks the file against jax itself.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from envc import rng

OUT = Path(__file__).resolve().parent / "vectors.txt"


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", float(np.float32(x))))[0]


def keys() -> list[tuple[int, int]]:
    out = [(0, 0), (0, 42), (0xFFFFFFFF, 0xFFFFFFFF), (0x13198A2E, 0x03707344)]
    k = jax.random.PRNGKey(7)
    for _ in range(6):
        k, sub = jax.random.split(k)
        out.append(tuple(int(w) for w in jax.random.key_data(sub)))
    return out


def lines() -> list[str]:
    out: list[str] = []
    for seed in (0, 1, 42, -1, 2**31, 2**32 + 5, -(2**40)):
        k = jax.random.key_data(jax.random.PRNGKey(seed))
        out.append(f"seed {seed} = {int(k[0])} {int(k[1])}")
    for key in keys():
        kj = jnp.array(key, jnp.uint32)
        for n in (2, 5):
            ks = np.asarray(jax.random.split(kj, n)).reshape(-1)
            out.append(f"split {key[0]} {key[1]} {n} = {' '.join(str(int(w)) for w in ks)}")
        for d in (0, 1, 17, 2**31, 2**32 - 1):
            k2 = np.asarray(jax.random.fold_in(kj, np.uint32(d)))
            out.append(f"fold_in {key[0]} {key[1]} {d} = {int(k2[0])} {int(k2[1])}")
        for n in (1, 3, 10):
            b = np.asarray(jax.random.bits(kj, (n,), jnp.uint32))
            out.append(f"bits {key[0]} {key[1]} {n} = {' '.join(str(int(x)) for x in b)}")
        # The scalar samplers take a site key `fold_in(k, s)`: a uniform at site s is element s of JAX's vector
        # draw from the scope key k (docs/spec-language.md 13.4); randint has no JAX form (envc.rng's).
        for s, (lo, hi) in enumerate(((0.0, 1.0), (-0.05, 0.05), (-3.0, 10.5), (2.0, 2.0), (1e-3, 1e30))):
            site = tuple(int(w) for w in np.asarray(jax.random.fold_in(kj, np.uint32(s))))
            u = float(jax.random.uniform(kj, (s + 1,), jnp.float32, lo, hi)[s])
            out.append(f"uniform {site[0]} {site[1]} {f32_bits(lo)} {f32_bits(hi)} = {f32_bits(u)}")
        for lo, hi in ((0, 2), (0, 7), (-5, 5), (3, 3), (10, 2), (0, 100_000), (-(2**31), 2**31 - 1), (7, 2**20)):
            out.append(f"randint {key[0]} {key[1]} {lo} {hi} = {rng.randint_scalar(key, lo, hi)}")
        for s, p in enumerate((0.0, 0.25, 0.5, 0.999, 1.0)):
            site = tuple(int(w) for w in np.asarray(jax.random.fold_in(kj, np.uint32(s))))
            b = bool(jax.random.bernoulli(kj, p, (s + 1,))[s])
            out.append(f"bernoulli {site[0]} {site[1]} {f32_bits(p)} = {int(b)}")
        for mask in ("1", "0110", "10101", "0000", "1111111"):
            i = rng.choice_mask(key, [c == "1" for c in mask])
            out.append(f"choice {key[0]} {key[1]} {mask} = {i}")
        for cap, count in ((1, 1), (5, 5), (7, 4), (20, 20)):
            order = rng.shuffle_order(key, cap, count)
            out.append(f"shuffle {key[0]} {key[1]} {cap} {count} = {' '.join(map(str, order))}")
    return out


if __name__ == "__main__":
    text = "\n".join(lines()) + "\n"
    if "--check" in sys.argv:
        sys.exit(0 if OUT.read_text() == text else 1)
    OUT.write_text(text)
    print(f"wrote {OUT} ({text.count(chr(10))} vectors)")
