//! How much a second thread of the [`Gang`] buys on this machine, for two kinds of synthetic work: a latency-bound
//! chain (each step waits on the last) and throughput-bound independent lanes (what a batch step mostly is).
//! Where two "cores" are hyperthreads of one physical core, the first scales ~2x and the second far less.
//!
//!     cargo run --release --example gang_scaling [ITERS] [CALLS]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use envc_runtime::gang::Gang;

/// A dependent multiply-add chain: one operation in flight at a time.
fn chain(iters: u64, seed: u64) -> u64 {
    let mut x = seed;
    for i in 0..iters {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i);
        x ^= x >> 29;
    }
    x
}

/// Eight independent lanes of add/xor/rotate: as many operations in flight as the core can issue.
fn lanes(iters: u64, seed: u64) -> u64 {
    let mut x: [u64; 8] = std::array::from_fn(|l| seed + l as u64);
    for i in 0..iters / 4 {
        for v in x.iter_mut() {
            *v = v.wrapping_add(i) ^ (*v >> 7);
            *v = v.rotate_left(5).wrapping_add(0x9e37);
        }
    }
    x.iter().fold(0, |a, b| a ^ b)
}

/// Median microseconds a call of `total` iterations takes, split into `parts` parts on the gang.
fn median_call(
    gang: &Gang,
    work: fn(u64, u64) -> u64,
    total: u64,
    parts: usize,
    calls: usize,
) -> f64 {
    let sink = AtomicU64::new(0);
    let mut times: Vec<f64> = (0..calls)
        .map(|c| {
            let t = Instant::now();
            gang.run(parts, &|p| {
                sink.fetch_add(
                    work(total / parts as u64, (c + p) as u64),
                    Ordering::Relaxed,
                );
            });
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    black_box(sink.load(Ordering::Relaxed));
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (iters, calls) = (
        args.first().copied().unwrap_or(20_000),
        args.get(1).copied().unwrap_or(5_000),
    );
    let gang = Gang::new(2).expect("a gang of 2");
    for (name, work) in [
        ("latency-bound chain", chain as fn(u64, u64) -> u64),
        ("throughput-bound lanes", lanes),
    ] {
        let one = median_call(&gang, work, iters, 1, calls as usize);
        let two = median_call(&gang, work, iters, 2, calls as usize);
        println!(
            "{name:24} 1 thread {one:7.2} us, 2 threads {two:7.2} us: {:.2}x",
            one / two
        );
    }
}
