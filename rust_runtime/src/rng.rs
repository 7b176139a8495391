//! threefry2x32 and the samplers of envc, bit for bit equal to `envc.rng` and `jax.random`
//! (threefry2x32 keys, `jax_threefry_partitionable = True`, x32 mode).
//!
//! `T(k, x0, x1)` is the 20-round threefry2x32 block; all arithmetic is modulo 2**32.
//! `split(k, n)[i] = T(k, 0, i)`, `fold_in(k, d) = T(k, 0, d)`, `bits(k, n)[i] = y0 ^ y1` of
//! `T(k, hi32(i), lo32(i))`. The samplers are defined in docs/spec-language.md section 13: the scalar ones take
//! a draw's site key `fold_in(k, s)` and read its two words as their bits.

/// A threefry2x32 key: two u32 words, equal to `jax.random.key_data(key)`.
pub type Key = [u32; 2];

const KS_PARITY: u32 = 0x1BD1_1BDA;

#[inline(always)]
fn round(x0: &mut u32, x1: &mut u32, r: u32) {
    *x0 = x0.wrapping_add(*x1);
    *x1 = x1.rotate_left(r) ^ *x0;
}

/// The 20-round threefry2x32 block function (jax's `threefry2x32_p` on one block).
#[inline]
pub fn threefry2x32(key: Key, x0: u32, x1: u32) -> (u32, u32) {
    let ks = [key[0], key[1], key[0] ^ key[1] ^ KS_PARITY];
    let (mut x0, mut x1) = (x0.wrapping_add(ks[0]), x1.wrapping_add(ks[1]));
    const ROT: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];
    for i in 0..5usize {
        for &r in &ROT[i % 2] {
            round(&mut x0, &mut x1, r);
        }
        x0 = x0.wrapping_add(ks[(i + 1) % 3]);
        x1 = x1.wrapping_add(ks[(i + 2) % 3]).wrapping_add(i as u32 + 1);
    }
    (x0, x1)
}

/// `jax.random.PRNGKey(seed)` in x32 mode: `(0, seed mod 2**32)`.
#[inline]
pub fn key_from_seed(seed: i64) -> Key {
    [0, seed as u32]
}

/// `jax.random.fold_in(key, data)`.
#[inline]
pub fn fold_in(key: Key, data: u32) -> Key {
    let (a, b) = threefry2x32(key, 0, data);
    [a, b]
}

/// `jax.random.split(key, out.len())`.
pub fn split(key: Key, out: &mut [Key]) {
    for (i, k) in out.iter_mut().enumerate() {
        *k = fold_in(key, i as u32);
    }
}

/// Element `i` of `jax.random.bits(key, shape, uint32)` (row-major flat index `i`).
#[inline]
pub fn bits_at(key: Key, i: u64) -> u32 {
    let (y0, y1) = threefry2x32(key, (i >> 32) as u32, i as u32);
    y0 ^ y1
}

/// `jax.random.bits(key, (out.len(),), uint32)`.
pub fn bits(key: Key, out: &mut [u32]) {
    for (i, b) in out.iter_mut().enumerate() {
        *b = bits_at(key, i as u64);
    }
}

/// A float in [0, 1) from the top 23 bits: `(bits >> 9) * 2**-23`, exact in f32.
#[inline]
fn unit(bits: u32) -> f32 {
    (bits >> 9) as f32 * (1.0 / 8_388_608.0)
}

/// The 32 bits of a scalar draw whose site key is `key` (`fold_in(k, s)` for site `s`): `key[0] ^ key[1]`,
/// which is `jax.random.bits(k, (s + 1,), uint32)[s]` (no second threefry block).
#[inline]
pub fn site_bits(key: Key) -> u32 {
    key[0] ^ key[1]
}

/// The spec's `uniform(lo, hi)` drawn with site key `key`: the float32 arithmetic of `jax.random.uniform` as XLA
/// compiles it on CPU (a fused multiply-add), `max(lo, fma(f, hi - lo, lo))`, NaN results give `lo`, on
/// `site_bits(key)`.
#[inline]
pub fn uniform(key: Key, lo: f32, hi: f32) -> f32 {
    uniform_from(site_bits(key), lo, hi)
}

/// [`uniform`] of the site key whose `site_bits` are `bits`.
#[inline]
pub fn uniform_from(bits: u32, lo: f32, hi: f32) -> f32 {
    let f = unit(bits);
    let span = hi - lo;
    let v = f.mul_add(span, lo);
    if v > lo {
        v
    } else {
        lo
    }
}

#[inline]
fn urem(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        a % b
    }
}

/// The spec's `randint(lo, hi)` drawn with site key `key`: the arithmetic of `jax.random.randint(.., int32)` with
/// the site key's words as its high and low bits; bounds outside i32 are clipped, `hi <= lo` gives `lo`.
#[inline]
pub fn randint(key: Key, minval: i64, maxval: i64) -> i32 {
    let lo = minval.clamp(i32::MIN as i64, i32::MAX as i64);
    let hi = maxval.clamp(i32::MIN as i64, i32::MAX as i64);
    let mut span = (hi - lo) as u32;
    if hi <= lo {
        span = 1;
    } else if maxval > i32::MAX as i64 {
        span = span.wrapping_add(1);
    }
    let m = urem(1 << 16, span);
    let m = urem(m.wrapping_mul(m), span);
    let [hb, lb] = key;
    let off = urem(
        urem(hb, span).wrapping_mul(m).wrapping_add(urem(lb, span)),
        span,
    );
    (lo as u32).wrapping_add(off) as i32
}

/// The spec's `bernoulli(p)` drawn with site key `key`: `uniform(key) < p`.
#[inline]
pub fn bernoulli(key: Key, p: f32) -> bool {
    unit(site_bits(key)) < p
}

/// envc's `choice`: the position of the `(r + 1)`-th true entry of `mask` where
/// `r = randint(key, 0, number of true entries)`; 0 when no entry is true.
#[inline]
pub fn choice_mask<I: IntoIterator<Item = bool> + Clone>(key: Key, mask: I) -> usize {
    let n = mask.clone().into_iter().filter(|&m| m).count();
    if n == 0 {
        return 0;
    }
    let mut r = randint(key, 0, n as i64);
    for (i, m) in mask.into_iter().enumerate() {
        if m {
            if r == 0 {
                return i;
            }
            r -= 1;
        }
    }
    unreachable!("randint(0, n) < n")
}

/// envc's `shuffle` of a zone's `count` live slots: slot j receives old slot `order[j]`, where `order`
/// sorts `0..count` by `(bits(key, (CAP,))[i], i)`; slots from `count` on stay in place.
pub fn shuffle<T: Copy, const CAP: usize>(key: Key, row: &mut [T], count: i32) {
    let n = (count.max(0) as usize).min(CAP).min(row.len());
    if n < 2 {
        return;
    }
    let mut order = [(0u32, 0u32); CAP];
    for (i, o) in order[..n].iter_mut().enumerate() {
        *o = (bits_at(key, i as u64), i as u32);
    }
    order[..n].sort_unstable();
    let mut old = [row[0]; CAP];
    old[..n].copy_from_slice(&row[..n]);
    for (slot, &(_, i)) in row[..n].iter_mut().zip(&order[..n]) {
        *slot = old[i as usize];
    }
}

/// The permutation `shuffle` applies (for tests and tools): `order[j]` is the old slot of new slot `j`.
pub fn shuffle_order(key: Key, capacity: usize, count: usize, order: &mut Vec<usize>) {
    let n = count.min(capacity);
    let mut pairs: Vec<(u32, usize)> = (0..n).map(|i| (bits_at(key, i as u64), i)).collect();
    pairs.sort_unstable();
    order.clear();
    order.extend(pairs.into_iter().map(|(_, i)| i));
    order.extend(n..capacity);
}

/// A small, fast generator for policies and benchmarks (not part of the env semantics): wyrand.
#[derive(Clone, Debug)]
pub struct Wyrand(pub u64);

impl Wyrand {
    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = (self.0 as u128).wrapping_mul((self.0 ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) as u64) ^ (t as u64)
    }

    /// A uniform integer in `0..n` (n > 0), by the multiply-shift method.
    #[inline]
    pub fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * n as u64) >> 32) as u32
    }

    /// A uniform float in [0, 1).
    #[inline]
    pub fn unit_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / 16_777_216.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threefry_known_answer_from_the_paper() {
        // Random123's kat_vectors for threefry2x32_20.
        assert_eq!(threefry2x32([0, 0], 0, 0), (0x6b20_0159, 0x99ba_4efe));
        assert_eq!(
            threefry2x32([0xffff_ffff, 0xffff_ffff], 0xffff_ffff, 0xffff_ffff),
            (0x1cb9_96fc, 0xbb00_2be7)
        );
        assert_eq!(
            threefry2x32([0x1319_8a2e, 0x0370_7344], 0x243f_6a88, 0x85a3_08d3),
            (0xc492_3a9c, 0x483d_f7a0)
        );
    }

    #[test]
    fn shuffle_matches_its_order() {
        let key = fold_in(key_from_seed(7), 3);
        let mut row = [10i16, 11, 12, 13, 14, 0, 0];
        shuffle::<i16, 7>(key, &mut row, 5);
        let mut order = Vec::new();
        shuffle_order(key, 7, 5, &mut order);
        let old = [10i16, 11, 12, 13, 14, 0, 0];
        let want: Vec<i16> = order.iter().map(|&i| old[i]).collect();
        assert_eq!(row.to_vec(), want);
        let mut sorted = row[..5].to_vec();
        sorted.sort();
        assert_eq!(sorted, vec![10, 11, 12, 13, 14]);
    }
}
