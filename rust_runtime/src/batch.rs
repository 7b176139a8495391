//! A batch of independent environments stepped by a [`Gang`] of threads, writing every output in place.
//!
//! Keys: a sub-environment seeded with `s` has the base key `key_from_seed(s)`; its episode `j` uses
//! `ek = fold_in(base, j)`, resets with `fold_in(ek, 0)` and steps with `fold_in(fold_in(ek, 1), t)` for its
//! `t`-th step (t = 1, 2, ...). A spec whose effects and rules never draw derives no step key at all.
//! `reset(seed)` seeds sub-environment `i` with `seed + i`, as gymnasium's vector envs do.

use std::sync::Mutex;

use crate::env::{admit, conclude, finish, step, Action, Env, ObsRows, LANES};
use crate::gang::Gang;
use crate::rng::{fold_in, key_from_seed, Key, Wyrand};

/// Actions for the whole batch: one id per env, or `ACTION_SIZE` floats per env.
#[derive(Clone, Copy, Debug)]
pub enum Actions<'a> {
    Discrete(&'a [i64]),
    Box(&'a [f32]),
}

/// The batch outputs, written in place; every slice holds `n` rows.
pub struct Out<'a, R> {
    pub obs: R,
    /// The reward of the player who acted (of player 0 after a reset).
    pub reward: &'a mut [f32],
    /// Every player's reward, `n * NUM_PLAYERS`.
    pub rewards: &'a mut [f32],
    pub terminated: &'a mut [bool],
    pub truncated: &'a mut [bool],
    /// `n * NUM_ACTIONS`.
    pub mask: &'a mut [bool],
    pub current_player: &'a mut [i32],
}

impl<'a, R: ObsRows> Out<'a, R> {
    fn split_rows<E: Env>(self, n: usize) -> (Self, Self) {
        let (o1, o2) = self.obs.split_at(n);
        let (a1, a2) = self.reward.split_at_mut(n);
        let (r1, r2) = self.rewards.split_at_mut(n * E::NUM_PLAYERS);
        let (t1, t2) = self.terminated.split_at_mut(n);
        let (u1, u2) = self.truncated.split_at_mut(n);
        let (m1, m2) = self.mask.split_at_mut(n * E::NUM_ACTIONS);
        let (c1, c2) = self.current_player.split_at_mut(n);
        (
            Out {
                obs: o1,
                reward: a1,
                rewards: r1,
                terminated: t1,
                truncated: u1,
                mask: m1,
                current_player: c1,
            },
            Out {
                obs: o2,
                reward: a2,
                rewards: r2,
                terminated: t2,
                truncated: u2,
                mask: m2,
                current_player: c2,
            },
        )
    }
}

/// One sub-environment: its state and where it is in its key stream.
pub struct Slot<E: Env> {
    pub st: E::State,
    id: usize,
    base: Key,
    episode: u32,
    stream: Key,
    t: u32,
    done: bool,
}

impl<E: Env> Slot<E> {
    fn new(id: usize) -> Self {
        Slot {
            st: E::fresh(),
            id,
            base: key_from_seed(id as i64),
            episode: 0,
            stream: [0, 0],
            t: 0,
            done: false,
        }
    }

    /// Start the next episode of this sub-environment.
    fn restart(&mut self, prm: &E::Params) {
        let ek = fold_in(self.base, self.episode);
        self.episode = self.episode.wrapping_add(1);
        if E::STEP_DRAWS {
            self.stream = fold_in(ek, 1);
        }
        self.t = 0;
        self.done = false;
        self.st = E::fresh();
        E::reset(&mut self.st, prm, fold_in(ek, 0));
    }

    /// Reseed: the next restart is episode 0 of `seed`.
    fn seed(&mut self, seed: i64) {
        self.base = key_from_seed(seed);
        self.episode = 0;
    }

    #[inline]
    fn step_key(&mut self) -> Key {
        self.t = self.t.wrapping_add(1);
        if E::STEP_DRAWS {
            fold_in(self.stream, self.t)
        } else {
            [0, 0]
        }
    }
}

/// Totals of a [`Batch::rollout`].
#[derive(Clone, Debug, Default)]
pub struct RolloutStats {
    pub steps: u64,
    pub episodes: u64,
    pub terminated: u64,
    pub truncated: u64,
    /// Sum of every player's rewards.
    pub return_sum: Vec<f64>,
}

impl RolloutStats {
    fn merge(mut self, other: RolloutStats) -> RolloutStats {
        self.steps += other.steps;
        self.episodes += other.episodes;
        self.terminated += other.terminated;
        self.truncated += other.truncated;
        if self.return_sum.is_empty() {
            self.return_sum = other.return_sum;
        } else {
            for (a, b) in self.return_sum.iter_mut().zip(other.return_sum) {
                *a += b;
            }
        }
        self
    }
}

/// Below this many envs per thread a batch is stepped on fewer threads (the hand-off would cost more).
const MIN_ENVS_PER_THREAD: usize = 32;

/// `num_envs` sub-environments and the threads that step them (see [`Gang`]).
pub struct Batch<E: Env> {
    pub prm: E::Params,
    slots: Vec<Slot<E>>,
    gang: Gang,
}

impl<E: Env> Batch<E> {
    /// A batch of `num_envs` sub-environments (not reset yet) stepped by `threads` threads (default: all cores).
    pub fn new(prm: E::Params, num_envs: usize, threads: Option<usize>) -> Result<Self, String> {
        if num_envs == 0 {
            return Err("num_envs must be at least 1".into());
        }
        let threads =
            threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let slots = (0..num_envs).map(Slot::new).collect();
        Ok(Batch {
            prm,
            slots,
            gang: Gang::new(threads)?,
        })
    }

    pub fn num_envs(&self) -> usize {
        self.slots.len()
    }

    pub fn threads(&self) -> usize {
        self.gang.threads()
    }

    /// The state of sub-environment `i`.
    pub fn state(&self, i: usize) -> &E::State {
        &self.slots[i].st
    }

    /// Run `leaf` over the slots split into one contiguous part per thread (`split(out, n)` cuts `out` after
    /// `n` rows), merging the parts' results in order. Results never depend on the split (a rollout's return
    /// sums only up to the order of f64 additions).
    fn run<O: Send, R: Send + Default>(
        &mut self,
        out: O,
        split: impl Fn(O, usize) -> (O, O),
        leaf: impl Fn(&E::Params, &mut [Slot<E>], O) -> R + Sync,
        merge: impl Fn(R, R) -> R,
    ) -> R {
        let n = self.slots.len();
        let parts = self.gang.threads().min(n / MIN_ENVS_PER_THREAD).max(1);
        if parts == 1 {
            return leaf(&self.prm, &mut self.slots, out);
        }
        let mut pieces = Vec::with_capacity(parts);
        let (mut slots, mut out, mut start) = (&mut self.slots[..], out, 0);
        for p in 1..parts {
            let end = n * p / parts;
            let (head, tail) = slots.split_at_mut(end - start);
            let (o_head, o_tail) = split(out, end - start);
            pieces.push(Mutex::new(Some((head, o_head))));
            (slots, out, start) = (tail, o_tail, end);
        }
        pieces.push(Mutex::new(Some((slots, out))));
        let results: Vec<Mutex<R>> = (0..parts).map(|_| Mutex::new(R::default())).collect();
        let prm = &self.prm;
        self.gang.run(parts, &|p| {
            let piece = pieces[p].lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some((slots, out)) = piece {
                *results[p].lock().unwrap_or_else(|e| e.into_inner()) = leaf(prm, slots, out);
            }
        });
        results
            .into_iter()
            .map(|r| r.into_inner().unwrap_or_else(|e| e.into_inner()))
            .reduce(merge)
            .unwrap_or_default()
    }

    /// Reset every sub-environment: `seed` reseeds them (`seed + i`), `None` starts their next episodes.
    pub fn reset<R: ObsRows<Obs = E::Obs>>(&mut self, seed: Option<i64>, out: Out<'_, R>) {
        if let Some(s) = seed {
            for (i, slot) in self.slots.iter_mut().enumerate() {
                slot.seed(s.wrapping_add(i as i64));
            }
        }
        self.run(
            out,
            |o, n| o.split_rows::<E>(n),
            |prm, slots, mut out| {
                let mut obs = E::Obs::default();
                for (i, slot) in slots.iter_mut().enumerate() {
                    slot.restart(prm);
                    write_row::<E, R>(prm, slot, &mut out, i, None, &mut obs);
                }
            },
            |_, _| (),
        );
    }

    /// One step of every sub-environment with gymnasium's next-step auto-reset: a sub-environment that
    /// finished on the previous call ignores its action and restarts (reward 0, not terminated).
    pub fn step<R: ObsRows<Obs = E::Obs>>(&mut self, actions: Actions<'_>, out: Out<'_, R>) {
        let width = match actions {
            Actions::Discrete(_) => 1,
            Actions::Box(_) => E::ACTION_SIZE,
        };
        self.run(
            (actions, out),
            |(a, o), n| {
                let (a1, a2) = match a {
                    Actions::Discrete(v) => {
                        let (x, y) = v.split_at(n);
                        (Actions::Discrete(x), Actions::Discrete(y))
                    }
                    Actions::Box(v) => {
                        let (x, y) = v.split_at(n * E::ACTION_SIZE);
                        (Actions::Box(x), Actions::Box(y))
                    }
                };
                let (o1, o2) = o.split_rows::<E>(n);
                ((a1, o1), (a2, o2))
            },
            |prm, slots, (actions, mut out)| {
                let mut obs = E::Obs::default();
                let mut start = 0;
                if let (true, Actions::Discrete(ids)) = (kernel_steps::<E>(), actions) {
                    start = slots.len() / LANES * LANES;
                    let chunks = slots.chunks_exact_mut(LANES).zip(ids.chunks_exact(LANES));
                    for (c, (chunk, ids)) in chunks.enumerate() {
                        let ids = ids.try_into().expect("a chunk of LANES");
                        step_lanes::<E, R>(
                            prm,
                            lanes_of(chunk),
                            ids,
                            &mut out,
                            c * LANES,
                            &mut obs,
                        );
                    }
                }
                for (i, slot) in slots.iter_mut().enumerate().skip(start) {
                    if slot.done {
                        slot.restart(prm);
                        write_row::<E, R>(prm, slot, &mut out, i, None, &mut obs);
                        continue;
                    }
                    let action = match actions {
                        Actions::Discrete(v) => Action::Discrete(v[i]),
                        Actions::Box(v) => Action::Box(&v[i * width..(i + 1) * width]),
                    };
                    let acting = E::current_player(&slot.st);
                    let key = slot.step_key();
                    let rewards = &mut out.rewards[i * E::NUM_PLAYERS..(i + 1) * E::NUM_PLAYERS];
                    let (term, trunc) = step::<E>(&mut slot.st, prm, action, key, rewards);
                    slot.done = term || trunc;
                    out.terminated[i] = term;
                    out.truncated[i] = trunc;
                    write_row::<E, R>(prm, slot, &mut out, i, Some(acting), &mut obs);
                }
            },
            |_, _| (),
        );
    }

    /// `steps` steps of every sub-environment with uniformly random legal actions (uniform in `[low, high]`
    /// for a continuous action) and same-step auto-reset, for benchmarks: nothing leaves Rust. Env `i` draws
    /// from its own generator (of `seed` and `i`), so the totals do not depend on the thread count.
    pub fn rollout(&mut self, steps: usize, seed: u64, low: f32, high: f32) -> RolloutStats {
        let a = E::NUM_ACTIONS;
        self.run(
            (),
            |_, _| ((), ()),
            |prm, slots, ()| {
                let n = slots.len();
                let mut masks = vec![false; n * a];
                let mut obs = vec![E::Obs::default(); n];
                let mut rewards = vec![0.0f32; E::NUM_PLAYERS];
                let mut action = vec![0.0f32; E::ACTION_SIZE];
                let mut ids = Vec::with_capacity(a);
                let mut stats = RolloutStats {
                    return_sum: vec![0.0; E::NUM_PLAYERS],
                    ..Default::default()
                };
                let mut rngs: Vec<Wyrand> = slots
                    .iter()
                    .map(|s| Wyrand(seed ^ (s.id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)))
                    .collect();
                for (i, slot) in slots.iter_mut().enumerate() {
                    slot.restart(prm);
                    finish::<E>(
                        &slot.st,
                        prm,
                        false,
                        &mut masks[i * a..(i + 1) * a],
                        &mut obs[i],
                    );
                }
                let lanes = kernel_steps::<E>() && a > 0;
                let p = E::NUM_PLAYERS;
                let mut lane_rewards = vec![0.0f32; LANES * p];
                for _ in 0..steps {
                    let mut start = 0;
                    if lanes {
                        start = n / LANES * LANES;
                        let chunks = slots
                            .chunks_exact_mut(LANES)
                            .zip(masks.chunks_exact_mut(LANES * a))
                            .zip(rngs.chunks_exact_mut(LANES));
                        for (((chunk, masks), rngs), obs) in chunks.zip(obs.chunks_exact_mut(LANES))
                        {
                            let chunk = lanes_of(chunk);
                            let (mut legal, mut id) = ([false; LANES], [0usize; LANES]);
                            let rows = chunk.iter_mut().zip(masks.chunks_exact(a)).zip(rngs);
                            for (l, (((slot, mask), rng), rewards)) in
                                rows.zip(lane_rewards.chunks_exact_mut(p)).enumerate()
                            {
                                let act = random_legal(rng, mask, &mut ids) as i64;
                                slot.step_key();
                                if let Some(x) = admit::<E>(&mut slot.st, prm, act, rewards) {
                                    (legal[l], id[l]) = (true, x);
                                }
                            }
                            run_lanes::<E>(prm, chunk, &id, &legal);
                            let rows = chunk.iter_mut().zip(masks.chunks_exact_mut(a)).zip(obs);
                            for (l, (((slot, mask), obs), rewards)) in
                                rows.zip(lane_rewards.chunks_exact_mut(p)).enumerate()
                            {
                                let ends = if legal[l] {
                                    conclude::<E>(&slot.st, prm, rewards)
                                } else {
                                    (true, false)
                                };
                                settle::<E>(prm, slot, rewards, ends, &mut stats, mask, obs);
                            }
                        }
                    }
                    for (i, slot) in slots.iter_mut().enumerate().skip(start) {
                        let mask = &mut masks[i * a..(i + 1) * a];
                        let rng = &mut rngs[i];
                        let act = if a > 0 {
                            Action::Discrete(random_legal(rng, mask, &mut ids) as i64)
                        } else {
                            for x in action.iter_mut() {
                                *x = low + (high - low) * rng.unit_f32();
                            }
                            Action::Box(&action)
                        };
                        let key = slot.step_key();
                        let ends = step::<E>(&mut slot.st, prm, act, key, &mut rewards);
                        settle::<E>(prm, slot, &rewards, ends, &mut stats, mask, &mut obs[i]);
                    }
                }
                stats.steps = (steps * n) as u64;
                stats
            },
            RolloutStats::merge,
        )
    }
}

/// [`Batch::step`] for the `LANES` slots of `chunk` (rows `first..`) with the spec's lane kernel: slots that
/// restart or act illegally go the scalar way, the others through one [`Env::apply_lanes`] call.
#[inline]
fn step_lanes<E: Env, R: ObsRows<Obs = E::Obs>>(
    prm: &E::Params,
    chunk: &mut [Slot<E>; LANES],
    ids: &[i64; LANES],
    out: &mut Out<'_, R>,
    first: usize,
    obs: &mut E::Obs,
) {
    let p = E::NUM_PLAYERS;
    let mut legal = [false; LANES];
    let mut id = [0usize; LANES];
    let mut acting = [0i32; LANES];
    for l in 0..LANES {
        let (slot, i) = (&mut chunk[l], first + l);
        if slot.done {
            slot.restart(prm);
            write_row::<E, R>(prm, slot, out, i, None, obs);
            continue;
        }
        acting[l] = E::current_player(&slot.st);
        slot.step_key();
        let rewards = &mut out.rewards[i * p..(i + 1) * p];
        match admit::<E>(&mut slot.st, prm, ids[l], rewards) {
            Some(a) => (legal[l], id[l]) = (true, a),
            None => {
                slot.done = true;
                out.terminated[i] = true;
                out.truncated[i] = false;
                write_row::<E, R>(prm, slot, out, i, Some(acting[l]), obs);
            }
        }
    }
    run_lanes::<E>(prm, chunk, &id, &legal);
    for l in 0..LANES {
        if !legal[l] {
            continue;
        }
        let (slot, i) = (&mut chunk[l], first + l);
        let (term, trunc) = conclude::<E>(&slot.st, prm, &mut out.rewards[i * p..(i + 1) * p]);
        slot.done = term || trunc;
        out.terminated[i] = term;
        out.truncated[i] = trunc;
        write_row::<E, R>(prm, slot, out, i, Some(acting[l]), obs);
    }
}

/// The effect and rules of the slots of `chunk` whose action is `legal` (id `ids[l]`), through one
/// [`Env::apply_lanes`] call (the other lanes compute on their slots' states too, and are dropped).
#[inline]
fn run_lanes<E: Env>(
    prm: &E::Params,
    chunk: &mut [Slot<E>; LANES],
    ids: &[usize; LANES],
    legal: &[bool; LANES],
) {
    let mut ln = E::Lanes::default();
    for (l, slot) in chunk.iter().enumerate() {
        E::load_lane(&mut ln, l, &slot.st);
    }
    E::apply_lanes(&mut ln, prm, ids);
    for (l, slot) in chunk.iter_mut().enumerate() {
        if legal[l] {
            E::store_lane(&ln, l, &mut slot.st);
        }
    }
}

/// The end of a rollout step of `slot`: its rewards and ends into `stats`, a restart if it ended, and its next
/// legal mask and observation.
#[inline]
fn settle<E: Env>(
    prm: &E::Params,
    slot: &mut Slot<E>,
    rewards: &[f32],
    (term, trunc): (bool, bool),
    stats: &mut RolloutStats,
    mask: &mut [bool],
    obs: &mut E::Obs,
) {
    for (s, r) in stats.return_sum.iter_mut().zip(rewards) {
        *s += *r as f64;
    }
    if term || trunc {
        stats.episodes += 1;
        stats.terminated += term as u64;
        stats.truncated += trunc as u64;
        slot.restart(prm);
    }
    finish::<E>(&slot.st, prm, false, mask, obs);
}

/// A `chunks_exact(LANES)` chunk as an array.
#[inline]
fn lanes_of<T>(chunk: &mut [T]) -> &mut [T; LANES] {
    chunk.try_into().expect("a chunk of LANES")
}

/// Does `E` step discrete actions through its lane kernel? (A kernel never draws, so no lane needs a step key.)
fn kernel_steps<E: Env>() -> bool {
    E::LANE_KERNEL && !E::STEP_DRAWS
}

/// A uniformly random legal action: a few uniform draws over all ids (accepted when legal), then an exact
/// draw among the legal ids (collected into `ids`); either way every legal id is equally likely.
#[inline]
fn random_legal(rng: &mut Wyrand, mask: &[bool], ids: &mut Vec<u32>) -> usize {
    let a = mask.len() as u32;
    for _ in 0..4 {
        let i = rng.below(a) as usize;
        if mask[i] {
            return i;
        }
    }
    ids.clear();
    ids.extend(
        mask.iter()
            .enumerate()
            .filter(|(_, &m)| m)
            .map(|(i, _)| i as u32),
    );
    if ids.is_empty() {
        return 0;
    }
    ids[rng.below(ids.len() as u32) as usize] as usize
}

#[inline]
fn write_row<E: Env, R: ObsRows<Obs = E::Obs>>(
    prm: &E::Params,
    slot: &Slot<E>,
    out: &mut Out<'_, R>,
    i: usize,
    acting: Option<i32>,
    obs: &mut E::Obs,
) {
    let p = E::NUM_PLAYERS;
    let rewards = &mut out.rewards[i * p..(i + 1) * p];
    match acting {
        None => {
            rewards.fill(0.0);
            out.reward[i] = 0.0;
            out.terminated[i] = false;
            out.truncated[i] = false;
        }
        Some(q) => {
            out.reward[i] = if q >= 0 && (q as usize) < p {
                rewards[q as usize]
            } else {
                0.0
            }
        }
    }
    let a = E::NUM_ACTIONS;
    finish::<E>(
        &slot.st,
        prm,
        slot.done,
        &mut out.mask[i * a..(i + 1) * a],
        obs,
    );
    out.obs.put(i, obs);
    out.current_player[i] = E::current_player(&slot.st);
}
