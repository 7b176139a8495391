//! The contract between a generated environment and the runtime, and the step protocol every spec shares
//! (docs/spec-language.md section 14): finished states stay put, `step_count` counts, an illegal action ends
//! the episode with the penalty, then effect, rules, rewards, termination, legal mask and observation.

use crate::rng::Key;

/// States a lane kernel ([`Env::apply_lanes`]) steps at once: eight f32 lanes fill an AVX register.
pub const LANES: usize = 8;

/// Element type of a storage array, as numpy names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    Bool,
    I8,
    I16,
    I32,
    U32,
    F32,
    F64,
}

impl DType {
    /// The numpy dtype name.
    pub fn numpy(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::U32 => "uint32",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }
}

/// A named array of the state or of the observation: its `state_to_dict` key, element type and shape.
#[derive(Clone, Copy, Debug)]
pub struct ArraySpec {
    pub name: &'static str,
    pub dtype: DType,
    pub shape: &'static [usize],
}

impl ArraySpec {
    /// Number of elements.
    pub fn size(&self) -> usize {
        self.shape.iter().product()
    }
}

/// A borrowed storage array (flat, row-major).
#[derive(Debug)]
pub enum ArrayRef<'a> {
    Bool(&'a [bool]),
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    U32(&'a [u32]),
    F32(&'a [f32]),
    F64(&'a [f64]),
}

/// A mutably borrowed storage array (flat, row-major).
#[derive(Debug)]
pub enum ArrayMut<'a> {
    Bool(&'a mut [bool]),
    I8(&'a mut [i8]),
    I16(&'a mut [i16]),
    I32(&'a mut [i32]),
    U32(&'a mut [u32]),
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
}

/// A discrete action id or a continuous action.
#[derive(Clone, Copy, Debug)]
pub enum Action<'a> {
    Discrete(i64),
    Box(&'a [f32]),
}

impl<'a> Action<'a> {
    /// No action: what `reward`, `terminated`, `truncated` and the observation read as `action` when no action
    /// was applied (after `init` or a reset, for an injected state, in `observe`, after an illegal action).
    pub const NONE: Action<'static> = Action::Discrete(-1);

    /// The discrete action id as a spec reads it: `-1` for no action.
    #[inline]
    pub fn id(self) -> i32 {
        match self {
            Action::Discrete(a) if (0..=i32::MAX as i64).contains(&a) => a as i32,
            _ => -1,
        }
    }

    /// The continuous action's values as a spec reads them: `zeros` for no action.
    #[inline]
    pub fn values<'b>(self, zeros: &'b [f32]) -> &'b [f32]
    where
        'a: 'b,
    {
        match self {
            Action::Box(v) => v,
            Action::Discrete(_) => zeros,
        }
    }
}

/// Observation rows of a batch, written in place (row `i` belongs to env `i`).
pub trait ObsRows: Send + Sized {
    /// One player's observation.
    type Obs;
    /// Rows `..n` and rows `n..`.
    fn split_at(self, n: usize) -> (Self, Self);
    /// Copy `obs` into row `i`.
    fn put(&mut self, i: usize, obs: &Self::Obs);
    /// Copy `obs[l]` into row `first + l`, for every lane `l`.
    #[inline]
    fn put_lanes(&mut self, first: usize, obs: &[Self::Obs; LANES]) {
        for (l, o) in obs.iter().enumerate() {
            self.put(first + l, o);
        }
    }
}

/// What [`Env::pack_rows`] computes for each of its `LANES` states: player 0's reward, the ends and the
/// observation.
pub struct LaneRows<O> {
    pub reward: [f32; LANES],
    pub terminated: [bool; LANES],
    pub truncated: [bool; LANES],
    pub obs: [O; LANES],
}

impl<O: Default> Default for LaneRows<O> {
    fn default() -> Self {
        LaneRows {
            reward: [0.0; LANES],
            terminated: [false; LANES],
            truncated: [false; LANES],
            obs: std::array::from_fn(|_| O::default()),
        }
    }
}

/// A compiled spec. Everything is a plain function of the state and the runtime parameters; the step
/// protocol around them lives in [`step`] and [`finish`].
pub trait Env: Send + Sync + 'static {
    /// The storage arrays of a state.
    type State: Clone + Send + Sync + 'static;
    /// Runtime parameters (gymnax-style).
    type Params: Clone + Send + Sync + Default + 'static;
    /// One player's observation.
    type Obs: Clone + Default + Send + Sync + 'static;

    /// The spec's name.
    const NAME: &'static str;
    const NUM_PLAYERS: usize;
    /// Discrete action ids (0 when the spec has a continuous action).
    const NUM_ACTIONS: usize;
    /// Elements of the continuous action (0 when actions are discrete).
    const ACTION_SIZE: usize;
    const ILLEGAL_ACTION_PENALTY: f32;
    /// Whether an action effect or a rule can draw randomness (if not, no step key is derived).
    const STEP_DRAWS: bool;
    /// Storage arrays in `state_to_dict` order.
    const FIELDS: &'static [ArraySpec];
    /// Observation parts (one unnamed part is the whole observation).
    const OBS: &'static [ArraySpec];
    /// Names of the declared invariants.
    const INVARIANTS: &'static [&'static str];

    /// Every field at its `init` value.
    fn fresh() -> Self::State;
    /// The `reset` body.
    fn reset(st: &mut Self::State, prm: &Self::Params, key: Key);
    /// Is action id `id` (in range) legal?
    fn is_legal(st: &Self::State, prm: &Self::Params, id: usize) -> bool;
    /// Run the effect of action id `id` (in range and legal).
    fn apply(st: &mut Self::State, prm: &Self::Params, key: Key, id: usize);
    /// Run the continuous action's effect.
    fn apply_box(_st: &mut Self::State, _prm: &Self::Params, _key: Key, _action: &[f32]) {}
    /// The state fields a lane kernel reads or writes (every field when packed), one array per field with an
    /// element per lane (`()` for a spec without a kernel).
    type Lanes: Clone + Default + Send;
    /// Whether the spec has a lane kernel ([`Env::apply_lanes`]: its effects and rules lowered to run `LANES`
    /// states in SIMD lanes); only for specs whose effects and rules never draw. The lane methods below are
    /// called only when it is set.
    const LANE_KERNEL: bool = false;
    /// Copy the fields in `Lanes` of `st` into lane `l`.
    fn load_lane(_ln: &mut Self::Lanes, _l: usize, _st: &Self::State) {}
    /// Copy the fields the kernel writes from lane `l` into `st`.
    fn store_lane(_ln: &Self::Lanes, _l: usize, _st: &mut Self::State) {}
    /// Effect of the (in range, legal) ids `ids` then the rules on every lane: each lane ends as `apply` then
    /// `rules` leave the state loaded into it.
    fn apply_lanes(_ln: &mut Self::Lanes, _prm: &Self::Params, _ids: &[usize; LANES]) {}
    /// Whether the batch keeps this spec's states packed, `LANES` to a `Lanes` (which then holds every field),
    /// and steps whole packs with [`Env::step_pack`] and [`Env::pack_rows`]: a single-player spec with a lane
    /// kernel, scalar fields only, a reward, ends and observation of fields and params, and a current player
    /// that never changes.
    const PACKED: bool = false;
    /// Whether every in-range action id is legal in every state (the legal mask is all true).
    const ALWAYS_LEGAL: bool = false;
    /// Copy lane `l` into `st` (every field: only for a packed spec).
    fn unpack_lane(_ln: &Self::Lanes, _l: usize, _st: &mut Self::State) {}
    /// Count a step on every lane of a pack, then [`Env::apply_lanes`].
    fn step_pack(_ln: &mut Self::Lanes, _prm: &Self::Params, _ids: &[usize; LANES]) {}
    /// Every lane's reward (of player 0), ends and observation.
    fn pack_rows(_ln: &Self::Lanes, _prm: &Self::Params, _rows: &mut LaneRows<Self::Obs>) {}
    /// The automatic rules, in order.
    fn rules(st: &mut Self::State, prm: &Self::Params, key: Key);
    /// Reward of player `p` for the last transition, whose action (applied, or [`Action::NONE`]) is `action`.
    fn reward(st: &Self::State, prm: &Self::Params, p: i32, action: Action<'_>) -> f32;
    fn terminated(st: &Self::State, prm: &Self::Params, action: Action<'_>) -> bool;
    fn truncated(st: &Self::State, prm: &Self::Params, action: Action<'_>) -> bool;
    /// Set `mask[id]` for every legal id (`mask` arrives all false).
    fn legal_mask(st: &Self::State, prm: &Self::Params, mask: &mut [bool]);
    /// Write player `p`'s observation into `obs` (which arrives zeroed); `action` as for [`Env::reward`].
    fn observe(st: &Self::State, prm: &Self::Params, p: i32, action: Action<'_>, obs: &mut Self::Obs);
    /// Each invariant's truth value, in `INVARIANTS` order.
    fn invariants(st: &Self::State, prm: &Self::Params, out: &mut [bool]);
    fn current_player(st: &Self::State) -> i32;
    fn step_count(st: &mut Self::State) -> &mut i32;
    /// Storage arrays in `FIELDS` order.
    fn fields(st: &Self::State) -> Vec<ArrayRef<'_>>;
    fn fields_mut(st: &mut Self::State) -> Vec<ArrayMut<'_>>;
    /// Observation parts in `OBS` order.
    fn obs_parts(obs: &Self::Obs) -> Vec<ArrayRef<'_>>;
}

/// One transition of a state that is not finished: returns `(terminated, truncated, applied)` and fills
/// `rewards`; `applied` is what the observation reads as the action ([`Action::NONE`] after an illegal one).
#[inline]
pub fn step<'a, E: Env>(
    st: &mut E::State,
    prm: &E::Params,
    action: Action<'a>,
    key: Key,
    rewards: &mut [f32],
) -> (bool, bool, Action<'a>) {
    match action {
        Action::Discrete(a) => {
            let Some(id) = admit::<E>(st, prm, a, rewards) else {
                return (true, false, Action::NONE);
            };
            E::apply(st, prm, key, id);
        }
        Action::Box(v) => {
            let count = E::step_count(st);
            *count = count.wrapping_add(1);
            E::apply_box(st, prm, key, v);
        }
    }
    E::rules(st, prm, key);
    let (terminated, truncated) = conclude::<E>(st, prm, action, rewards);
    (terminated, truncated, action)
}

/// The start of [`step`] for action id `a`: counts the step and returns the id if it is in range and legal;
/// otherwise fills `rewards` with the illegal-action penalty (the episode then ends, terminated).
#[inline]
pub fn admit<E: Env>(
    st: &mut E::State,
    prm: &E::Params,
    a: i64,
    rewards: &mut [f32],
) -> Option<usize> {
    let count = E::step_count(st);
    *count = count.wrapping_add(1);
    if a >= 0 && a < E::NUM_ACTIONS as i64 && E::is_legal(st, prm, a as usize) {
        return Some(a as usize);
    }
    let pen = E::ILLEGAL_ACTION_PENALTY;
    rewards.fill(-pen * (E::NUM_PLAYERS as f32 - 1.0));
    let cp = E::current_player(st);
    if cp >= 0 && (cp as usize) < E::NUM_PLAYERS {
        rewards[cp as usize] = pen;
    }
    None
}

/// The end of [`step`], after the effect and the rules of the (legal) `action`: fills `rewards`, returns
/// `(terminated, truncated)`.
#[inline]
pub fn conclude<E: Env>(
    st: &E::State,
    prm: &E::Params,
    action: Action<'_>,
    rewards: &mut [f32],
) -> (bool, bool) {
    for (p, r) in rewards.iter_mut().enumerate() {
        *r = E::reward(st, prm, p as i32, action);
    }
    (E::terminated(st, prm, action), E::truncated(st, prm, action))
}

/// The derived outputs of a state: the legal mask (all true once finished) and the current player's observation,
/// which reads `action` (the action applied, or [`Action::NONE`]).
#[inline]
pub fn finish<E: Env>(
    st: &E::State,
    prm: &E::Params,
    done: bool,
    action: Action<'_>,
    mask: &mut [bool],
    obs: &mut E::Obs,
) {
    if done {
        mask.fill(true);
    } else {
        mask.fill(false);
        E::legal_mask(st, prm, mask);
    }
    *obs = E::Obs::default();
    E::observe(st, prm, E::current_player(st), action, obs);
}

/// A state with its step outputs: what `init` and `step` return in the single-state API.
pub struct Full<E: Env> {
    pub st: E::State,
    pub rewards: Vec<f32>,
    pub terminated: bool,
    pub truncated: bool,
    pub mask: Vec<bool>,
    pub obs: E::Obs,
}

impl<E: Env> Clone for Full<E> {
    fn clone(&self) -> Self {
        Full {
            st: self.st.clone(),
            rewards: self.rewards.clone(),
            terminated: self.terminated,
            truncated: self.truncated,
            mask: self.mask.clone(),
            obs: self.obs.clone(),
        }
    }
}

impl<E: Env> Full<E> {
    /// A state with the given outputs; the legal mask and the observation (which reads `action`) are computed.
    pub fn new(
        st: E::State,
        prm: &E::Params,
        rewards: Vec<f32>,
        terminated: bool,
        truncated: bool,
        action: Action<'_>,
    ) -> Self {
        let mut full = Full {
            st,
            rewards,
            terminated,
            truncated,
            mask: vec![false; E::NUM_ACTIONS],
            obs: E::Obs::default(),
        };
        finish::<E>(
            &full.st,
            prm,
            terminated || truncated,
            action,
            &mut full.mask,
            &mut full.obs,
        );
        full
    }

    /// `init(key)`: field inits, then the reset body.
    pub fn init(prm: &E::Params, key: Key) -> Self {
        let mut st = E::fresh();
        E::reset(&mut st, prm, key);
        Self::new(st, prm, vec![0.0; E::NUM_PLAYERS], false, false, Action::NONE)
    }

    /// `step(state, action, key)`: a finished state comes back unchanged with zero rewards.
    pub fn step(&self, prm: &E::Params, action: Action<'_>, key: Key) -> Self {
        if self.terminated || self.truncated {
            let mut same = self.clone();
            same.rewards.fill(0.0);
            return same;
        }
        let mut st = self.st.clone();
        let mut rewards = vec![0.0; E::NUM_PLAYERS];
        let (terminated, truncated, applied) = step::<E>(&mut st, prm, action, key, &mut rewards);
        Self::new(st, prm, rewards, terminated, truncated, applied)
    }

    /// Names of the violated invariants.
    pub fn violated(&self, prm: &E::Params) -> Vec<&'static str> {
        let mut ok = vec![true; E::INVARIANTS.len()];
        E::invariants(&self.st, prm, &mut ok);
        E::INVARIANTS
            .iter()
            .zip(ok)
            .filter(|(_, ok)| !ok)
            .map(|(n, _)| *n)
            .collect()
    }

    /// Player `p`'s observation of the state alone: it reads no action ([`Action::NONE`]).
    pub fn observe(&self, prm: &E::Params, p: i32) -> E::Obs {
        let mut obs = E::Obs::default();
        E::observe(&self.st, prm, p, Action::NONE, &mut obs);
        obs
    }
}
