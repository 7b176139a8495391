//! Every line of tests/vectors.txt (written from jax.random and envc.rng by tests/make_vectors.py).

use envc_runtime::rng;

fn nums(s: &str) -> Vec<i64> {
    s.split_whitespace()
        .map(|w| {
            w.parse::<i64>()
                .unwrap_or_else(|_| panic!("not a number: {w}"))
        })
        .collect()
}

#[test]
fn runtime_matches_every_known_answer() {
    let text = include_str!("vectors.txt");
    let mut checked = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (lhs, rhs) = line.split_once(" = ").expect("op inputs = outputs");
        let (op, args) = lhs.split_once(' ').expect("op and inputs");
        let (op, a) = (op, if op == "choice" { vec![] } else { nums(args) });
        let want = nums(rhs);
        let key = |i: usize| [a[i] as u32, a[i + 1] as u32];
        let got: Vec<i64> = match op {
            "seed" => rng::key_from_seed(a[0]).iter().map(|&w| w as i64).collect(),
            "split" => {
                let mut out = vec![[0u32; 2]; a[2] as usize];
                rng::split(key(0), &mut out);
                out.iter().flatten().map(|&w| w as i64).collect()
            }
            "fold_in" => rng::fold_in(key(0), a[2] as u32)
                .iter()
                .map(|&w| w as i64)
                .collect(),
            "bits" => {
                let mut out = vec![0u32; a[2] as usize];
                rng::bits(key(0), &mut out);
                out.iter().map(|&w| w as i64).collect()
            }
            "uniform" => {
                let (lo, hi) = (f32::from_bits(a[2] as u32), f32::from_bits(a[3] as u32));
                vec![rng::uniform(key(0), lo, hi).to_bits() as i64]
            }
            "randint" => vec![rng::randint(key(0), a[2], a[3]) as i64],
            "bernoulli" => vec![rng::bernoulli(key(0), f32::from_bits(a[2] as u32)) as i64],
            "choice" => {
                let parts: Vec<&str> = args.split_whitespace().collect();
                let k = [
                    parts[0].parse::<u32>().unwrap(),
                    parts[1].parse::<u32>().unwrap(),
                ];
                let mask: Vec<bool> = parts[2].chars().map(|c| c == '1').collect();
                vec![rng::choice_mask(k, mask.iter().copied()) as i64]
            }
            "shuffle" => {
                let mut order = Vec::new();
                rng::shuffle_order(key(0), a[2] as usize, a[3] as usize, &mut order);
                order.iter().map(|&i| i as i64).collect()
            }
            other => panic!("unknown op {other}"),
        };
        assert_eq!(got, want, "{line}");
        checked += 1;
    }
    assert!(checked > 300, "only {checked} vectors");
}

#[test]
fn shuffling_a_zone_applies_the_order() {
    let key = rng::fold_in(rng::key_from_seed(3), 9);
    let mut row: Vec<i16> = (1..=20).collect();
    let old = row.clone();
    rng::shuffle::<i16, 20>(key, &mut row, 20);
    let mut order = Vec::new();
    rng::shuffle_order(key, 20, 20, &mut order);
    assert_eq!(row, order.iter().map(|&i| old[i]).collect::<Vec<_>>());
}
