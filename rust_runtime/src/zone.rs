//! Zones: fixed-capacity stacks stored as a row of `capacity` slots plus a count (docs section 12).
//! Slots `count..` are always zero. A spec bug (full push, empty pop, bad position) does nothing and yields 0;
//! a count outside `0..=capacity` (only possible in an injected state) is treated like an empty or full zone.

/// The live length of a zone row.
#[inline(always)]
fn live<T>(row: &[T], count: i32) -> usize {
    (count.max(0) as usize).min(row.len())
}

/// The `cap` slots of zone number `z` in a flat array of zones.
#[inline(always)]
pub fn row<T>(data: &[T], z: usize, cap: usize) -> &[T] {
    &data[z * cap..(z + 1) * cap]
}

/// `push(z, v)`: nothing when full.
#[inline]
pub fn push<T: Copy>(row: &mut [T], count: &mut i32, v: T) {
    let n = *count;
    if n >= 0 && (n as usize) < row.len() {
        row[n as usize] = v;
        *count = n + 1;
    }
}

/// `insert(z, i, v)` with `0 <= i <= count`: nothing when full or `i` is out of range.
#[inline]
pub fn insert<T: Copy>(row: &mut [T], count: &mut i32, i: i64, v: T) {
    let n = *count;
    if n < 0 || n as usize >= row.len() || i < 0 || i > n as i64 {
        return;
    }
    let (i, n) = (i as usize, n as usize);
    row.copy_within(i..n, i + 1);
    row[i] = v;
    *count += 1;
}

/// `pop(z)`: the top element (its slot zeroed), or 0 when empty.
#[inline]
pub fn pop<T: Copy + Default>(row: &mut [T], count: &mut i32) -> T {
    let n = *count;
    if n <= 0 || n as usize > row.len() {
        return T::default();
    }
    let top = n as usize - 1;
    let v = row[top];
    row[top] = T::default();
    *count = n - 1;
    v
}

/// `remove_at(z, i)` with `0 <= i < count`: the element (later ones shift down), or 0 for a bad `i`.
#[inline]
pub fn remove_at<T: Copy + Default>(row: &mut [T], count: &mut i32, i: i64) -> T {
    let n = *count;
    if i < 0 || i >= n as i64 || n as usize > row.len() {
        return T::default();
    }
    let (i, n) = (i as usize, n as usize);
    let v = row[i];
    row.copy_within(i + 1..n, i);
    row[n - 1] = T::default();
    *count -= 1;
    v
}

/// `clear(z)`.
#[inline]
pub fn clear<T: Copy + Default>(row: &mut [T], count: &mut i32) {
    row.fill(T::default());
    *count = 0;
}

/// `contains(z, v)` over the live elements.
#[inline]
pub fn contains<T: PartialEq>(row: &[T], count: i32, v: T) -> bool {
    row[..live(row, count)].contains(&v)
}

/// `index_of(z, v)`: the first live position holding `v`, -1 if none.
#[inline]
pub fn index_of<T: PartialEq>(row: &[T], count: i32, v: T) -> i32 {
    row[..live(row, count)]
        .iter()
        .position(|x| *x == v)
        .map_or(-1, |i| i as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example() {
        let (mut z, mut n) = ([0i16; 5], 0);
        for i in 0..4 {
            push(&mut z, &mut n, 10 + i);
        }
        assert_eq!((z, n), ([10, 11, 12, 13, 0], 4));
        assert_eq!(pop(&mut z, &mut n), 13);
        insert(&mut z, &mut n, 0, 99);
        assert_eq!((z, n), ([99, 10, 11, 12, 0], 4));
        assert_eq!(remove_at(&mut z, &mut n, 2), 11);
        assert_eq!((z, n), ([99, 10, 12, 0, 0], 3));
        assert_eq!(index_of(&z, n, 12), 2);
        assert!(!contains(&z, n, 0));
        assert_eq!(remove_at(&mut z, &mut n, 3), 0);
        push(&mut z, &mut n, 1);
        push(&mut z, &mut n, 2);
        push(&mut z, &mut n, 3);
        assert_eq!(n, 5);
        insert(&mut z, &mut n, 0, 7);
        assert_eq!((z, n), ([99, 10, 12, 1, 2], 5));
        clear(&mut z, &mut n);
        assert_eq!(pop(&mut z, &mut n), 0);
    }
}
