//! A batch of independent environments stepped by a [`Gang`] of threads, writing every output in place.
//!
//! Keys: a sub-environment seeded with `s` has the base key `key_from_seed(s)`; its episode `j` uses
//! `ek = fold_in(base, j)`, resets with `fold_in(ek, 0)` and steps with `fold_in(fold_in(ek, 1), t)` for its
//! `t`-th step (t = 1, 2, ...). A spec whose effects and rules never draw derives no step key at all.
//! `reset(seed)` seeds sub-environment `i` with `seed + i`, as gymnasium's vector envs do.

use std::sync::Mutex;

use crate::env::{admit, conclude, finish, step, Action, Env, LaneRows, ObsRows, LANES};
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

/// Where a sub-environment is in its key stream (its state lives apart: see [`Part`]).
struct Slot {
    id: usize,
    base: Key,
    episode: u32,
    stream: Key,
    t: u32,
    done: bool,
}

impl Slot {
    fn new(id: usize) -> Self {
        Slot {
            id,
            base: key_from_seed(id as i64),
            episode: 0,
            stream: [0, 0],
            t: 0,
            done: false,
        }
    }

    /// Start the next episode of this sub-environment, its first state into `st`.
    fn restart<E: Env>(&mut self, prm: &E::Params, st: &mut E::State) {
        let ek = fold_in(self.base, self.episode);
        self.episode = self.episode.wrapping_add(1);
        if E::STEP_DRAWS {
            self.stream = fold_in(ek, 1);
        }
        self.t = 0;
        self.done = false;
        *st = E::fresh();
        E::reset(st, prm, fold_in(ek, 0));
    }

    /// Reseed: the next restart is episode 0 of `seed`.
    fn seed(&mut self, seed: i64) {
        self.base = key_from_seed(seed);
        self.episode = 0;
    }

    /// The key of the next step (none, and no count kept, for a spec whose steps never draw).
    #[inline]
    fn step_key<E: Env>(&mut self) -> Key {
        if !E::STEP_DRAWS {
            return [0, 0];
        }
        self.t = self.t.wrapping_add(1);
        fold_in(self.stream, self.t)
    }
}

/// A contiguous run of sub-environments: their slots and their states, one per env or, for an [`Env::PACKED`]
/// spec, packed: env `i` is lane `i % LANES` of `packs[i / LANES]` (the last pack may have unused lanes).
struct Part<'a, E: Env> {
    slots: &'a mut [Slot],
    states: &'a mut [E::State],
    packs: &'a mut [E::Lanes],
}

impl<'a, E: Env> Part<'a, E> {
    /// Envs `..n` and envs `n..` (`n` a multiple of `LANES` when packed).
    fn split_at(self, n: usize) -> (Self, Self) {
        let (s1, s2) = self.slots.split_at_mut(n);
        let (t1, t2) = self.states.split_at_mut(if E::PACKED { 0 } else { n });
        let (p1, p2) = self
            .packs
            .split_at_mut(if E::PACKED { n / LANES } else { 0 });
        (
            Part {
                slots: s1,
                states: t1,
                packs: p1,
            },
            Part {
                slots: s2,
                states: t2,
                packs: p2,
            },
        )
    }

    /// Restart env `i`; a packed env's new state goes through `tmp`. Returns the new state.
    fn restart<'s>(&'s mut self, prm: &E::Params, i: usize, tmp: &'s mut E::State) -> &'s E::State {
        if E::PACKED {
            self.slots[i].restart::<E>(prm, tmp);
            E::load_lane(&mut self.packs[i / LANES], i % LANES, tmp);
            tmp
        } else {
            self.slots[i].restart::<E>(prm, &mut self.states[i]);
            &self.states[i]
        }
    }

    /// `f` on env `i`'s slot and state (a packed env's state unpacked into `tmp` and packed again after).
    #[inline]
    fn with<T>(
        &mut self,
        i: usize,
        tmp: &mut E::State,
        f: impl FnOnce(&mut Slot, &mut E::State) -> T,
    ) -> T {
        if !E::PACKED {
            return f(&mut self.slots[i], &mut self.states[i]);
        }
        let (pack, l) = (&mut self.packs[i / LANES], i % LANES);
        E::unpack_lane(pack, l, tmp);
        let got = f(&mut self.slots[i], tmp);
        E::load_lane(pack, l, tmp);
        got
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
    slots: Vec<Slot>,
    /// One state per env, unless the spec is packed.
    states: Vec<E::State>,
    /// `LANES` states per pack when the spec is packed.
    packs: Vec<E::Lanes>,
    gang: Gang,
}

impl<E: Env> Batch<E> {
    /// A batch of `num_envs` sub-environments (not reset yet) stepped by `threads` threads (default: all cores).
    pub fn new(prm: E::Params, num_envs: usize, threads: Option<usize>) -> Result<Self, String> {
        if num_envs == 0 {
            return Err("num_envs must be at least 1".into());
        }
        crate::simd::init();
        let threads =
            threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let (states, packs) = if E::PACKED {
            let packs = num_envs.div_ceil(LANES);
            (
                Vec::new(),
                (0..packs).map(|_| E::Lanes::default()).collect(),
            )
        } else {
            ((0..num_envs).map(|_| E::fresh()).collect(), Vec::new())
        };
        Ok(Batch {
            prm,
            slots: (0..num_envs).map(Slot::new).collect(),
            states,
            packs,
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
    pub fn state(&self, i: usize) -> E::State {
        if E::PACKED {
            let mut st = E::fresh();
            E::unpack_lane(&self.packs[i / LANES], i % LANES, &mut st);
            st
        } else {
            self.states[i].clone()
        }
    }

    /// Run `leaf` over the envs split into one contiguous part per thread (`split(out, n)` cuts `out` after
    /// `n` rows; a packed spec's parts hold whole packs), merging the parts' results in order. Results never
    /// depend on the split (a rollout's return sums only up to the order of f64 additions).
    fn run<O: Send, R: Send + Default>(
        &mut self,
        out: O,
        split: impl Fn(O, usize) -> (O, O),
        leaf: impl Fn(&E::Params, Part<'_, E>, O) -> R + Sync,
        merge: impl Fn(R, R) -> R,
    ) -> R {
        let n = self.slots.len();
        let parts = self.gang.threads().min(n / MIN_ENVS_PER_THREAD).max(1);
        let whole = Part {
            slots: &mut self.slots[..],
            states: &mut self.states[..],
            packs: &mut self.packs[..],
        };
        if parts == 1 {
            return leaf(&self.prm, whole, out);
        }
        let mut pieces = Vec::with_capacity(parts);
        let (mut rest, mut out, mut start) = (whole, out, 0);
        for p in 1..parts {
            let mut end = n * p / parts;
            if E::PACKED {
                end -= end % LANES;
            }
            let (head, tail) = rest.split_at(end - start);
            let (o_head, o_tail) = split(out, end - start);
            pieces.push(Mutex::new(Some((head, o_head))));
            (rest, out, start) = (tail, o_tail, end);
        }
        pieces.push(Mutex::new(Some((rest, out))));
        let results: Vec<Mutex<R>> = (0..parts).map(|_| Mutex::new(R::default())).collect();
        let prm = &self.prm;
        self.gang.run(parts, &|p| {
            let piece = pieces[p].lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some((part, out)) = piece {
                *results[p].lock().unwrap_or_else(|e| e.into_inner()) = leaf(prm, part, out);
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
            |prm, mut part, mut out| {
                let (mut obs, mut tmp) = (E::Obs::default(), E::fresh());
                for i in 0..part.slots.len() {
                    let st = part.restart(prm, i, &mut tmp);
                    write_row::<E, R>(prm, st, false, &mut out, i, None, Action::NONE, &mut obs);
                }
            },
            |_, _| (),
        );
    }

    /// Reseed sub-environment `i` with `seeds[i]` (`None`: left as it is): its next restart is episode 0 of that seed.
    pub fn seed_each(&mut self, seeds: &[Option<i64>]) {
        for (slot, s) in self.slots.iter_mut().zip(seeds) {
            if let Some(s) = *s {
                slot.seed(s);
            }
        }
    }

    /// Restart the sub-environments with `only[i]` set (their next episodes), writing only their rows of `out`.
    pub fn reset_some<R: ObsRows<Obs = E::Obs>>(&mut self, only: &[bool], out: Out<'_, R>) {
        self.run(
            (only, out),
            |(m, o), n| {
                let (m1, m2) = m.split_at(n);
                let (o1, o2) = o.split_rows::<E>(n);
                ((m1, o1), (m2, o2))
            },
            |prm, mut part, (only, mut out)| {
                let (mut obs, mut tmp) = (E::Obs::default(), E::fresh());
                for i in 0..part.slots.len() {
                    if only[i] {
                        let st = part.restart(prm, i, &mut tmp);
                        write_row::<E, R>(prm, st, false, &mut out, i, None, Action::NONE, &mut obs);
                    }
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
            |prm, mut part, (actions, mut out)| {
                let (mut obs, mut tmp) = (E::Obs::default(), E::fresh());
                let n = part.slots.len();
                let mut start = 0;
                if let (true, Actions::Discrete(ids)) = (kernel_steps::<E>(), actions) {
                    start = n / LANES * LANES;
                    let chunks = part
                        .slots
                        .chunks_exact_mut(LANES)
                        .zip(ids.chunks_exact(LANES));
                    if E::PACKED {
                        let mut rows = LaneRows::default();
                        for (c, ((slots, ids), pack)) in
                            chunks.zip(part.packs.iter_mut()).enumerate()
                        {
                            let ids = ids.try_into().expect("a chunk of LANES");
                            let (slots, first) = (lanes_of(slots), c * LANES);
                            step_packed::<E, R>(
                                prm, slots, pack, ids, &mut out, first, &mut rows, &mut tmp,
                            );
                        }
                    } else {
                        let states = part.states.chunks_exact_mut(LANES);
                        for (c, ((slots, ids), states)) in chunks.zip(states).enumerate() {
                            let ids = ids.try_into().expect("a chunk of LANES");
                            let (slots, states) = (lanes_of(slots), lanes_of(states));
                            step_lanes::<E, R>(
                                prm,
                                slots,
                                states,
                                ids,
                                &mut out,
                                c * LANES,
                                &mut obs,
                            );
                        }
                    }
                }
                for i in start..n {
                    let action = match actions {
                        Actions::Discrete(v) => Action::Discrete(v[i]),
                        Actions::Box(v) => Action::Box(&v[i * width..(i + 1) * width]),
                    };
                    part.with(i, &mut tmp, |slot, st| {
                        step_one::<E, R>(prm, slot, st, action, &mut out, i, &mut obs)
                    });
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
            |prm, mut part, ()| {
                let n = part.slots.len();
                let p = E::NUM_PLAYERS;
                let mut masks = vec![false; n * a];
                let mut obs = vec![E::Obs::default(); n];
                let mut rewards = vec![0.0f32; LANES * p];
                let mut action = vec![0.0f32; E::ACTION_SIZE];
                let mut ids = Vec::with_capacity(a);
                let mut tmp = E::fresh();
                let mut rows = LaneRows::default();
                let mut stats = RolloutStats {
                    return_sum: vec![0.0; p],
                    ..Default::default()
                };
                let mut rngs: Vec<Wyrand> = part
                    .slots
                    .iter()
                    .map(|s| Wyrand(seed ^ (s.id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)))
                    .collect();
                for i in 0..n {
                    let st = part.restart(prm, i, &mut tmp);
                    finish::<E>(st, prm, false, Action::NONE, &mut masks[i * a..(i + 1) * a], &mut obs[i]);
                }
                let start = if kernel_steps::<E>() && a > 0 {
                    n / LANES * LANES
                } else {
                    0
                };
                for _ in 0..steps {
                    for c in 0..start / LANES {
                        let span = c * LANES..(c + 1) * LANES;
                        let mut act = [0i64; LANES];
                        for (l, i) in span.clone().enumerate() {
                            act[l] = if E::ALWAYS_LEGAL {
                                rngs[i].below(a as u32) as i64 // what `random_legal` draws from an all-true mask
                            } else {
                                random_legal(&mut rngs[i], &masks[i * a..(i + 1) * a], &mut ids)
                                    as i64
                            };
                        }
                        let slots = lanes_of(&mut part.slots[span.clone()]);
                        let ends = if E::PACKED {
                            let pack = &mut part.packs[c];
                            roll_packed::<E>(
                                prm,
                                slots,
                                pack,
                                &act,
                                &mut rows,
                                &mut rewards,
                                &mut tmp,
                            )
                        } else {
                            let states = lanes_of(&mut part.states[span.clone()]);
                            roll_lanes::<E>(prm, slots, states, &act, &mut rewards)
                        };
                        for (l, i) in span.enumerate() {
                            let mask = &mut masks[i * a..(i + 1) * a];
                            if settle(&rewards[l * p..(l + 1) * p], ends[l], &mut stats) {
                                let st = part.restart(prm, i, &mut tmp);
                                finish::<E>(st, prm, false, Action::NONE, mask, &mut obs[i]);
                            } else if !E::PACKED {
                                // Not ended: the action was legal (an illegal one terminates).
                                let applied = Action::Discrete(act[l]);
                                finish::<E>(&part.states[i], prm, false, applied, mask, &mut obs[i]);
                            } else {
                                // An always-legal spec's masks stay all true.
                                obs[i] = rows.obs[l].clone();
                                if !E::ALWAYS_LEGAL {
                                    mask.fill(false);
                                    E::unpack_lane(&part.packs[c], l, &mut tmp);
                                    E::legal_mask(&tmp, prm, mask);
                                }
                            }
                        }
                    }
                    for i in start..n {
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
                        let r = &mut rewards[..p];
                        let (term, trunc, applied) = part.with(i, &mut tmp, |slot, st| {
                            step::<E>(st, prm, act, slot.step_key::<E>(), r)
                        });
                        if settle(r, (term, trunc), &mut stats) {
                            let st = part.restart(prm, i, &mut tmp);
                            finish::<E>(st, prm, false, Action::NONE, mask, &mut obs[i]);
                        } else {
                            let o = &mut obs[i];
                            part.with(i, &mut tmp, |_, st| {
                                finish::<E>(st, prm, false, applied, mask, o)
                            });
                        }
                    }
                }
                stats.steps = (steps * n) as u64;
                stats
            },
            RolloutStats::merge,
        )
    }
}

/// One step of env `i` on the scalar path (see [`Batch::step`]).
#[inline]
fn step_one<E: Env, R: ObsRows<Obs = E::Obs>>(
    prm: &E::Params,
    slot: &mut Slot,
    st: &mut E::State,
    action: Action<'_>,
    out: &mut Out<'_, R>,
    i: usize,
    obs: &mut E::Obs,
) {
    if slot.done {
        slot.restart::<E>(prm, st);
        write_row::<E, R>(prm, st, false, out, i, None, Action::NONE, obs);
        return;
    }
    let acting = E::current_player(st);
    let key = slot.step_key::<E>();
    let rewards = &mut out.rewards[i * E::NUM_PLAYERS..(i + 1) * E::NUM_PLAYERS];
    let (term, trunc, applied) = step::<E>(st, prm, action, key, rewards);
    slot.done = term || trunc;
    out.terminated[i] = term;
    out.truncated[i] = trunc;
    write_row::<E, R>(prm, st, slot.done, out, i, Some(acting), applied, obs);
}

/// [`Batch::step`] for the `LANES` envs of a chunk (rows `first..`) with the spec's lane kernel: envs that
/// restart or act illegally go the scalar way, the others through one [`Env::apply_lanes`] call.
#[inline]
fn step_lanes<E: Env, R: ObsRows<Obs = E::Obs>>(
    prm: &E::Params,
    slots: &mut [Slot; LANES],
    states: &mut [E::State; LANES],
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
        let (slot, st, i) = (&mut slots[l], &mut states[l], first + l);
        if slot.done {
            slot.restart::<E>(prm, st);
            write_row::<E, R>(prm, st, false, out, i, None, Action::NONE, obs);
            continue;
        }
        acting[l] = E::current_player(st);
        slot.step_key::<E>();
        let rewards = &mut out.rewards[i * p..(i + 1) * p];
        match admit::<E>(st, prm, ids[l], rewards) {
            Some(a) => (legal[l], id[l]) = (true, a),
            None => {
                slot.done = true;
                out.terminated[i] = true;
                out.truncated[i] = false;
                write_row::<E, R>(prm, st, true, out, i, Some(acting[l]), Action::NONE, obs);
            }
        }
    }
    run_lanes::<E>(prm, states, &id, &legal);
    for l in 0..LANES {
        if !legal[l] {
            continue;
        }
        let (slot, st, i) = (&mut slots[l], &states[l], first + l);
        let applied = Action::Discrete(ids[l]);
        let (term, trunc) = conclude::<E>(st, prm, applied, &mut out.rewards[i * p..(i + 1) * p]);
        slot.done = term || trunc;
        out.terminated[i] = term;
        out.truncated[i] = trunc;
        write_row::<E, R>(prm, st, slot.done, out, i, Some(acting[l]), applied, obs);
    }
}

/// The effect and rules of the `states` whose action is `legal` (id `ids[l]`), through one
/// [`Env::apply_lanes`] call (the other lanes compute on their states too, and are dropped).
#[inline]
fn run_lanes<E: Env>(
    prm: &E::Params,
    states: &mut [E::State; LANES],
    ids: &[usize; LANES],
    legal: &[bool; LANES],
) {
    let mut ln = E::Lanes::default();
    for (l, st) in states.iter().enumerate() {
        E::load_lane(&mut ln, l, st);
    }
    E::apply_lanes(&mut ln, prm, ids);
    for (l, st) in states.iter_mut().enumerate() {
        if legal[l] {
            E::store_lane(&ln, l, st);
        }
    }
}

/// [`Batch::step`] for a pack (rows `first..`): [`step_pack_rows`], then the rows go out.
#[inline]
#[allow(clippy::too_many_arguments)]
fn step_packed<E: Env, R: ObsRows<Obs = E::Obs>>(
    prm: &E::Params,
    slots: &mut [Slot; LANES],
    pack: &mut E::Lanes,
    ids: &[i64; LANES],
    out: &mut Out<'_, R>,
    first: usize,
    rows: &mut LaneRows<E::Obs>,
    tmp: &mut E::State,
) {
    step_pack_rows::<E>(prm, slots, pack, ids, rows, tmp);
    let cp = penalty::<E>().0;
    let span = first..first + LANES;
    out.rewards[span.clone()].copy_from_slice(&rows.reward);
    if cp == 0 {
        out.reward[span.clone()].copy_from_slice(&rows.reward);
    } else {
        out.reward[span.clone()].fill(0.0);
    }
    out.terminated[span.clone()].copy_from_slice(&rows.terminated);
    out.truncated[span.clone()].copy_from_slice(&rows.truncated);
    out.current_player[span].fill(cp);
    for (l, slot) in slots.iter_mut().enumerate() {
        slot.done = rows.terminated[l] | rows.truncated[l];
    }
    let a = E::NUM_ACTIONS;
    let masks = &mut out.mask[first * a..(first + LANES) * a];
    if E::ALWAYS_LEGAL {
        masks.fill(true);
    } else {
        for (l, (mask, slot)) in masks.chunks_exact_mut(a).zip(slots.iter()).enumerate() {
            mask.fill(slot.done);
            if !slot.done {
                E::unpack_lane(pack, l, tmp);
                E::legal_mask(tmp, prm, mask);
            }
        }
    }
    out.obs.put_lanes(first, &rows.obs);
}

/// One step of a pack's envs with actions `ids`, up to their rows. An env that is done restarts (its row: reward
/// 0, not ended); the others count the step and check their action one at a time, then [`Env::step_pack`] steps
/// every lane and [`Env::pack_rows`] computes every row. In between, a lane that acted illegally gets its state
/// back with the step counted (its row: the penalty, terminated, as [`admit`] has it), and a restarting lane its
/// fresh state.
#[inline]
fn step_pack_rows<E: Env>(
    prm: &E::Params,
    slots: &mut [Slot; LANES],
    pack: &mut E::Lanes,
    ids: &[i64; LANES],
    rows: &mut LaneRows<E::Obs>,
    tmp: &mut E::State,
) {
    let (mut restart, mut legal, mut id) = ([false; LANES], [false; LANES], [0usize; LANES]);
    for (l, slot) in slots.iter_mut().enumerate() {
        restart[l] = slot.done;
        if !slot.done {
            slot.step_key::<E>();
            (legal[l], id[l]) = check::<E>(prm, pack, l, ids[l], tmp);
        }
    }
    if legal == [true; LANES] {
        E::step_pack(pack, prm, &id);
        E::pack_rows(pack, prm, rows);
        return;
    }
    // Only an illegal action's lane needs its old state back (a restart's gets a fresh one).
    let before = (0..LANES)
        .any(|l| !legal[l] && !restart[l])
        .then(|| pack.clone());
    E::step_pack(pack, prm, &id);
    for l in 0..LANES {
        if restart[l] {
            slots[l].restart::<E>(prm, tmp);
            E::load_lane(pack, l, tmp);
        } else if let (false, Some(before)) = (legal[l], &before) {
            E::unpack_lane(before, l, tmp);
            let count = E::step_count(tmp);
            *count = count.wrapping_add(1);
            E::load_lane(pack, l, tmp);
        }
    }
    E::pack_rows(pack, prm, rows);
    let pen = penalty::<E>().1;
    for l in (0..LANES).filter(|&l| !legal[l]) {
        rows.reward[l] = if restart[l] { 0.0 } else { pen };
        rows.terminated[l] = !restart[l];
        rows.truncated[l] = false;
    }
}

/// A rollout step of a pack (no env is done): returns each env's ends, with its reward in `rewards[l]`.
#[inline]
fn roll_packed<E: Env>(
    prm: &E::Params,
    slots: &mut [Slot; LANES],
    pack: &mut E::Lanes,
    act: &[i64; LANES],
    rows: &mut LaneRows<E::Obs>,
    rewards: &mut [f32],
    tmp: &mut E::State,
) -> [(bool, bool); LANES] {
    step_pack_rows::<E>(prm, slots, pack, act, rows, tmp);
    rewards[..LANES].copy_from_slice(&rows.reward);
    std::array::from_fn(|l| (rows.terminated[l], rows.truncated[l]))
}

/// A rollout step of a chunk through the lane kernel: returns each env's ends, its rewards in row `l` of
/// `rewards`.
#[inline]
fn roll_lanes<E: Env>(
    prm: &E::Params,
    slots: &mut [Slot; LANES],
    states: &mut [E::State; LANES],
    act: &[i64; LANES],
    rewards: &mut [f32],
) -> [(bool, bool); LANES] {
    let p = E::NUM_PLAYERS;
    let (mut legal, mut id) = ([false; LANES], [0usize; LANES]);
    for l in 0..LANES {
        slots[l].step_key::<E>();
        if let Some(x) = admit::<E>(
            &mut states[l],
            prm,
            act[l],
            &mut rewards[l * p..(l + 1) * p],
        ) {
            (legal[l], id[l]) = (true, x);
        }
    }
    run_lanes::<E>(prm, states, &id, &legal);
    let mut ends = [(true, false); LANES];
    for l in 0..LANES {
        if legal[l] {
            let applied = Action::Discrete(act[l]);
            ends[l] = conclude::<E>(&states[l], prm, applied, &mut rewards[l * p..(l + 1) * p]);
        }
    }
    ends
}

/// Whether env `l` of `pack` may take action id `a` (in range, and legal once the step is counted, as in
/// [`admit`]), with the id to apply (0 when it may not).
#[inline]
fn check<E: Env>(
    prm: &E::Params,
    pack: &E::Lanes,
    l: usize,
    a: i64,
    tmp: &mut E::State,
) -> (bool, usize) {
    if a < 0 || a >= E::NUM_ACTIONS as i64 {
        return (false, 0);
    }
    if !E::ALWAYS_LEGAL {
        E::unpack_lane(pack, l, tmp);
        let count = E::step_count(tmp);
        *count = count.wrapping_add(1);
        if !E::is_legal(tmp, prm, a as usize) {
            return (false, 0);
        }
    }
    (true, a as usize)
}

/// A packed (single-player) spec's current player, which never changes, and its reward for an illegal action
/// (as [`admit`] gives it).
#[inline]
fn penalty<E: Env>() -> (i32, f32) {
    let cp = E::current_player(&E::fresh());
    let pen = E::ILLEGAL_ACTION_PENALTY;
    (
        cp,
        if cp == 0 {
            pen
        } else {
            -pen * (E::NUM_PLAYERS as f32 - 1.0)
        },
    )
}

/// A rollout step's rewards and ends into `stats`; returns whether the episode ended.
#[inline]
fn settle(rewards: &[f32], (term, trunc): (bool, bool), stats: &mut RolloutStats) -> bool {
    for (s, r) in stats.return_sum.iter_mut().zip(rewards) {
        *s += *r as f64;
    }
    if term || trunc {
        stats.episodes += 1;
        stats.terminated += term as u64;
        stats.truncated += trunc as u64;
    }
    term || trunc
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

/// Row `i` of the outputs for state `st` (`done`: it ended), after a step of player `acting` that applied
/// `action` or a restart ([`Action::NONE`]).
#[inline]
#[allow(clippy::too_many_arguments)]
fn write_row<E: Env, R: ObsRows<Obs = E::Obs>>(
    prm: &E::Params,
    st: &E::State,
    done: bool,
    out: &mut Out<'_, R>,
    i: usize,
    acting: Option<i32>,
    action: Action<'_>,
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
    finish::<E>(st, prm, done, action, &mut out.mask[i * a..(i + 1) * a], obs);
    out.obs.put(i, obs);
    out.current_player[i] = E::current_player(st);
}
