//! Variability (`noise:` in a scenario, docs/variability.md): ranks that start late,
//! operating-system detours, slow ranks and slow links.
//!
//! [`NoiseSpec`] is what the scenario says; [`Noise::draw`] turns it into one run's
//! noise for a seed and a rank count. Every random quantity is a pure function of
//! `(seed, what is drawn, rank, index)` through a counter-based hash ([`uniform`]), never
//! a stream of a shared generator: a draw cannot depend on the order in which the engine
//! asks for it, so two runs of one seed agree bit for bit whatever else changes.
//!
//! The engine asks four questions, and only when a run has noise (without it the engine
//! holds no [`Noise`] and takes none of these branches):
//!
//! - [`Noise::start_delay`]: when rank `r` starts its program (arrival skew);
//! - [`Noise::compute_end`]: when a reduction of `work` seconds that starts at `t` on
//!   rank `r`'s compute unit ends (slowed by the rank's factor, stretched across its
//!   detours);
//! - [`Noise::issue_at`]: when a message rank `r` issues at `t` may start (a detour in
//!   progress holds it until its end);
//! - [`Noise::link`]: a pair's cost with the sender's injection and the pair's bandwidth
//!   slowed (under the flow model the physical links carry the slow-link factors, see
//!   [`Noise::link_factor`]).
//!
//! The OS noise follows Hoefler, Schneider and Lumsdaine ("Characterizing the influence
//! of system noise on large-scale applications by simulation", SC 2010): a detour takes
//! the rank's CPU away for `duration` once every `interval`; work in progress waits and
//! resumes after it.

use serde::{Deserialize, Serialize};

use super::op::Rank;
use crate::topology::{Fabric, Link};

/// `noise:` as the scenario gives it, units resolved.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseSpec {
    /// Arrival skew: when each rank starts the collective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew: Option<SkewSpec>,
    /// Operating-system detours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<OsSpec>,
    /// Ranks whose compute and injection are slower.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow_ranks: Vec<SlowRank>,
    /// Links (or pairs of ranks) with less bandwidth.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow_links: Vec<SlowLink>,
    /// Physical links that fail (flow model only), in the order listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultSpec>,
    /// Links drawn by the seed to fail (flow model only): `noise.faults` entries
    /// `{ random: k, ... }`, in the order listed ([`Noise::faults_on`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub random_faults: Vec<RandomFaults>,
    /// Noise levels to sweep (`noise.levels`): each point also runs with the skew's
    /// delays and the OS detours' duration multiplied by each ([`NoiseSpec::scaled`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<f64>,
}

/// `noise.faults` entry: the physical link between nodes `a` and `b` (by the names the
/// report gives links) fails at `at_s`, both ways, for the rest of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultSpec {
    /// One end, a node name (`leaf0`, `h3`, `r5`).
    pub a: String,
    /// The other end.
    pub b: String,
    /// Seconds from the start of the collective.
    pub at_s: f64,
}

/// `noise.faults` entry `{ random: k, between: [t0, t1], among: all | fabric }`: `count`
/// links of the machine, drawn by the seed without replacement, each failing at a time
/// drawn uniformly in `[from_s, to_s]` (docs/variability.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RandomFaults {
    /// How many links fail (fewer when the machine has fewer).
    pub count: usize,
    /// The window's start, seconds from the start of the collective.
    pub from_s: f64,
    /// The window's end (equal to `from_s`: every drawn link fails at that time).
    pub to_s: f64,
    /// Which links may be drawn.
    pub among: FaultPool,
}

/// The links a random fault is drawn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultPool {
    /// Every link of the machine's graph.
    All,
    /// Only links between network nodes (switches, NICs): none that ends at a rank's
    /// own node, whose failure would only cut that rank off.
    Fabric,
}

/// A `random` fault entry that asked for more links than its pool holds: all of the
/// pool failed, which may be none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortDraw {
    /// The links asked for (`random: k`).
    pub asked: usize,
    /// The links the pool held, all drawn.
    pub pool: usize,
    /// The pool.
    pub among: FaultPool,
}

impl std::fmt::Display for ShortDraw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let among = match self.among {
            FaultPool::All => "all",
            FaultPool::Fabric => "fabric",
        };
        write!(f, "fault {{ random: {}, among: {among} }}: ", self.asked)?;
        match (self.pool, self.among) {
            (0, FaultPool::Fabric) => write!(
                f,
                "no link of this machine joins two network nodes (every link ends at a rank's node), so there \
                 was none to draw; nothing failed (`among: all` draws from every link)"
            ),
            (0, FaultPool::All) => {
                write!(f, "this machine names no link to draw (a `hierarchical` machine lists none); nothing failed")
            }
            (n, _) => write!(f, "the pool holds {n} link(s), all of which were drawn, not {}", self.asked),
        }
    }
}

/// `noise.skew`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkewSpec {
    /// Each late rank's delay drawn from `dist` with `scale`; a share `fraction` of the
    /// ranks is late (chosen by the seed), the others start at 0.
    Drawn {
        /// The distribution.
        dist: SkewDist,
        /// Seconds: the delay (`fixed`), the upper end (`uniform`), the standard
        /// deviation before folding (`normal`), the mean (`exponential`).
        scale_s: f64,
        /// Share of the ranks that are late, `0..=1`.
        fraction: f64,
    },
    /// Rank `r` starts `per_rank_s[r]` late (ranks past the list's end on time).
    PerRank(Vec<f64>),
}

/// The distribution of a late rank's delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkewDist {
    /// Exactly `scale`.
    Fixed,
    /// Uniform on `[0, scale)`.
    Uniform,
    /// `|N(0, scale)|` (a delay is never negative, so the normal is folded).
    Normal,
    /// Exponential of mean `scale`.
    Exponential,
}

/// `noise.os`: one detour of `duration_s` every `interval_s` on every rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OsSpec {
    /// Seconds between detours (periodic), or the window holding one detour (random).
    pub interval_s: f64,
    /// Seconds a detour takes the CPU away.
    pub duration_s: f64,
    /// Where the detours fall.
    pub pattern: OsPattern,
    /// The periodic pattern's offset, the same on every rank (detours in lockstep);
    /// `None`: each rank's drawn uniformly in `[0, interval)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_s: Option<f64>,
}

/// Where OS detours fall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OsPattern {
    /// At `phase + k * interval`.
    Periodic,
    /// One per window `[k * interval, (k + 1) * interval)`, at a point of it drawn per
    /// rank and window.
    Random,
}

/// `noise.slow_ranks` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowRank {
    /// The rank (ignored at points with fewer ranks).
    pub rank: usize,
    /// Its reductions take `factor` times as long, and it injects at `1 / factor` of the
    /// bandwidth; at least 1.
    pub factor: f64,
}

/// `noise.slow_links` entry: a pair of ranks (ideal model) or a physical link by its
/// nodes' names (flow model), both directions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowLink {
    /// One end: a rank number (ideal) or a node name (flow).
    pub a: String,
    /// The other end.
    pub b: String,
    /// Bandwidth multiplier, in `(0, 1]`.
    pub factor: f64,
}

impl NoiseSpec {
    /// This noise at `level`: every skew delay (its scale, or each per-rank delay) and the
    /// OS detours' duration times `level`; slow ranks, slow links and faults as they are
    /// (a factor has no natural "twice as much"). No levels of its own.
    pub fn scaled(&self, level: f64) -> NoiseSpec {
        let skew = self.skew.as_ref().map(|s| match s {
            SkewSpec::PerRank(v) => SkewSpec::PerRank(v.iter().map(|d| d * level).collect()),
            SkewSpec::Drawn { dist, scale_s, fraction } => {
                SkewSpec::Drawn { dist: *dist, scale_s: scale_s * level, fraction: *fraction }
            }
        });
        let os = self.os.as_ref().map(|o| OsSpec { duration_s: o.duration_s * level, ..o.clone() });
        NoiseSpec { skew, os, levels: Vec::new(), ..self.clone() }
    }

    /// Whether a run under it could differ from a run without noise (every part empty or
    /// of no effect: no noise).
    pub fn is_quiet(&self) -> bool {
        let skew = match &self.skew {
            None => false,
            Some(SkewSpec::PerRank(v)) => v.iter().any(|&d| d > 0.0),
            Some(SkewSpec::Drawn { scale_s, fraction, .. }) => *scale_s > 0.0 && *fraction > 0.0,
        };
        let os = self.os.as_ref().is_some_and(|o| o.duration_s > 0.0);
        let ranks = self.slow_ranks.iter().any(|s| s.factor != 1.0);
        let links = self.slow_links.iter().any(|s| s.factor != 1.0);
        let random = self.random_faults.iter().any(|f| f.count > 0);
        !(skew || os || ranks || links || !self.faults.is_empty() || random)
    }
}

/// What is drawn, as the hash's second word: a new kind of draw takes a new number, so
/// adding one never moves the others.
mod what {
    pub const LATE: u64 = 1;
    pub const DELAY: u64 = 2;
    pub const DELAY2: u64 = 3;
    pub const PHASE: u64 = 4;
    pub const DETOUR: u64 = 5;
    pub const FAULT_LINK: u64 = 6;
    pub const FAULT_AT: u64 = 7;
}

/// SplitMix64's finaliser: a bijection of `u64` whose every output bit depends on every
/// input bit.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A uniform draw in `[0, 1)`, a pure function of its arguments (53 bits of the hash of
/// the four words chained through SplitMix64's finaliser).
pub fn uniform(seed: u64, what: u64, rank: u64, k: u64) -> f64 {
    const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = mix(seed ^ GOLDEN);
    for w in [what, rank, k] {
        h = mix(h ^ w.wrapping_mul(GOLDEN));
    }
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// One run's OS detours.
#[derive(Clone, Debug)]
struct Os {
    interval: f64,
    duration: f64,
    random: bool,
    phase: Option<f64>,
    seed: u64,
}

impl Os {
    /// The start of rank `r`'s detour in window `k` (window `k` starts at
    /// `offset + k * interval`).
    fn detour(&self, r: Rank, offset: f64, k: i64) -> f64 {
        let start = offset + k as f64 * self.interval;
        if self.random {
            let u = uniform(self.seed, what::DETOUR, u64::from(r), k as u64);
            start + u * (self.interval - self.duration)
        } else {
            start
        }
    }

    fn offset(&self, r: Rank) -> f64 {
        match (self.random, self.phase) {
            (true, _) => 0.0,
            (false, Some(p)) => p,
            (false, None) => uniform(self.seed, what::PHASE, u64::from(r), 0) * self.interval,
        }
    }

    /// The detour of rank `r` in progress at `t` or the next one after it, as
    /// `(start, end)`.
    fn around(&self, r: Rank, t: f64) -> (f64, f64) {
        let (s, e, _) = self.around_k(r, t);
        (s, e)
    }

    /// [`Os::around`] with the window the detour falls in.
    fn around_k(&self, r: Rank, t: f64) -> (f64, f64, i64) {
        let offset = self.offset(r);
        let k = ((t - offset) / self.interval).floor() as i64;
        for k in [k, k + 1, k + 2] {
            let s = self.detour(r, offset, k);
            if s + self.duration > t {
                return (s, s + self.duration, k);
            }
        }
        // Unreachable while duration < interval (validated), but never loop or panic.
        (f64::INFINITY, f64::INFINITY, k)
    }

    /// When rank `r` is out of any detour at or after `t`.
    fn free_at(&self, r: Rank, t: f64) -> f64 {
        let (s, e) = self.around(r, t);
        if s <= t { e } else { t }
    }

    /// When `work` seconds of CPU from `t` on rank `r` are done. The first detours are
    /// walked one by one; past [`WALKED_DETOURS`], the windows the work spans whole are
    /// skipped at once: every window holds one detour, so each gives exactly `interval -
    /// duration` of CPU. Walking them all made a reduction of 2 s under detours every
    /// 1 ns take 2e9 steps inside one event, minutes that Ctrl-C could not stop.
    fn work_end(&self, r: Rank, t: f64, work: f64) -> f64 {
        self.work_end_steps(r, t, work).0
    }

    /// [`Os::work_end`], and how many detours it looked at on the way.
    fn work_end_steps(&self, r: Rank, mut t: f64, mut work: f64) -> (f64, usize) {
        let free = self.interval - self.duration;
        let (mut walked, mut steps) = (0usize, 0usize);
        loop {
            t = self.free_at(r, t);
            let (s, e, k) = self.around_k(r, t);
            steps += 1;
            if t + work <= s {
                return (t + work, steps);
            }
            if e <= t {
                // Windows finer than the float spacing at t: no detour can be told apart
                // from the next, so the work is stretched by their mean share.
                return (t + work * (self.interval / free), steps);
            }
            work -= s - t;
            t = e;
            walked += 1;
            if walked > WALKED_DETOURS {
                // The rest of window k after its detour is free, then whole windows.
                let offset = self.offset(r);
                let next = offset + (k + 1) as f64 * self.interval;
                let rest = (next - t).max(0.0);
                // One whole window short, so that the walk ends the work inside a window.
                let whole = ((work - rest) / free).floor() - 1.0;
                if whole >= (1u64 << 53) as f64 {
                    return (t + work * (self.interval / free), steps);
                }
                if whole >= 1.0 {
                    let whole = whole as i64;
                    work -= rest + whole as f64 * free;
                    t = offset + k.saturating_add(1).saturating_add(whole) as f64 * self.interval;
                    walked = 0;
                }
            }
        }
    }
}

/// Detours [`Os::work_end`] walks one by one before it skips whole windows: enough that a
/// reduction meeting a few detours gives the same bits it always did. It was 1,024, and a
/// double binary tree of 64 ranks under detours every nanosecond, each of its chunks'
/// reductions meeting thousands, walked 1,024 a reduction: 11.5 s against 0.73 s without
/// detours. Past this a reduction's end is the skip's sum, which differs from the walk's
/// by a rounding (1e-11 of the time at most in tests).
const WALKED_DETOURS: usize = 8;

/// One run's noise: [`NoiseSpec`] drawn for a seed and a rank count. Memory is linear in
/// the rank count (a start time and a factor per rank), never in pairs.
#[derive(Clone, Debug)]
pub struct Noise {
    start: Vec<f64>,
    slow: Vec<f64>,
    os: Option<Os>,
    /// `(a, b, factor)` with `a < b`, sorted: the ideal model's slow pairs.
    pairs: Vec<(u32, u32, f64)>,
    /// The flow model's slow physical links, by their nodes' names.
    links: Vec<(String, String, f64)>,
    /// The flow model's link faults, by time (ties in the order listed).
    faults: Vec<FaultSpec>,
    /// Links the seed picks to fail, drawn on the machine ([`Noise::faults_on`]).
    random_faults: Vec<RandomFaults>,
    seed: u64,
    ranks: usize,
}

impl Noise {
    /// `spec` drawn for `seed` on `ranks` ranks; `flow` says whether slow links name
    /// physical links (flow model) or pairs of ranks (ideal model).
    pub fn draw(spec: &NoiseSpec, seed: u64, ranks: usize, flow: bool) -> Noise {
        let start = match &spec.skew {
            None => Vec::new(),
            Some(SkewSpec::PerRank(v)) => (0..ranks).map(|r| v.get(r).copied().unwrap_or(0.0)).collect(),
            Some(SkewSpec::Drawn { dist, scale_s, fraction }) => draw_skew(*dist, *scale_s, *fraction, seed, ranks),
        };
        let mut slow = Vec::new();
        for s in spec.slow_ranks.iter().filter(|s| s.rank < ranks) {
            if slow.is_empty() {
                slow = vec![1.0; ranks];
            }
            slow[s.rank] = s.factor;
        }
        let os = spec.os.as_ref().filter(|o| o.duration_s > 0.0).map(|o| Os {
            interval: o.interval_s,
            duration: o.duration_s,
            random: o.pattern == OsPattern::Random,
            phase: o.phase_s,
            seed,
        });
        let (mut pairs, mut links) = (Vec::new(), Vec::new());
        for l in &spec.slow_links {
            if flow {
                links.push((l.a.clone(), l.b.clone(), l.factor));
            } else if let (Ok(a), Ok(b)) = (l.a.parse::<u32>(), l.b.parse::<u32>())
                && (a as usize) < ranks
                && (b as usize) < ranks
            {
                pairs.push((a.min(b), a.max(b), l.factor));
            }
        }
        pairs.sort_by_key(|x| (x.0, x.1));
        let mut faults = spec.faults.clone();
        faults.sort_by(|x, y| x.at_s.total_cmp(&y.at_s));
        let random_faults = spec.random_faults.clone();
        Noise { start, slow, os, pairs, links, faults, random_faults, seed, ranks }
    }

    /// When rank `r` starts its program.
    #[inline]
    pub fn start_delay(&self, r: Rank) -> f64 {
        self.start.get(r as usize).copied().unwrap_or(0.0)
    }

    /// The latest start of any rank: this run's skew.
    pub fn max_skew(&self) -> f64 {
        self.start.iter().copied().fold(0.0, f64::max)
    }

    /// When a reduction of `work` seconds that rank `r`'s compute unit starts at `t` ends.
    pub fn compute_end(&self, r: Rank, t: f64, work: f64) -> f64 {
        let work = work * self.slow.get(r as usize).copied().unwrap_or(1.0);
        match &self.os {
            Some(os) if work > 0.0 => os.work_end(r, t, work),
            Some(os) => os.free_at(r, t),
            None => t + work,
        }
    }

    /// When a message rank `r` issues at `t` may start.
    pub fn issue_at(&self, r: Rank, t: f64) -> f64 {
        match &self.os {
            Some(os) => os.free_at(r, t),
            None => t,
        }
    }

    /// The cost of a message from `src` to `dst` whose pair cost is `link`: the sender
    /// injects at `1 / factor` of the bandwidth if it is slow, and a slow pair (ideal
    /// model) has its factor.
    pub fn link(&self, src: Rank, dst: Rank, mut link: Link) -> Link {
        if let Some(&f) = self.slow.get(src as usize) {
            link.bandwidth /= f;
        }
        if !self.pairs.is_empty() {
            let key = (src.min(dst), src.max(dst));
            if let Ok(i) = self.pairs.binary_search_by(|p| (p.0, p.1).cmp(&key)) {
                link.bandwidth *= self.pairs[i].2;
            }
        }
        link
    }

    /// Under the flow model: the bandwidth factor of the physical link named `name`
    /// (`from->to`), 1 unless a slow link names its two ends (in either order).
    pub fn link_factor(&self, name: &str) -> f64 {
        let Some((from, to)) = link_ends(name) else { return 1.0 };
        self.links.iter().find(|(a, b, _)| (a == from && b == to) || (a == to && b == from)).map_or(1.0, |l| l.2)
    }

    /// Under the flow model: the link faults, by time.
    pub fn faults(&self) -> &[FaultSpec] {
        &self.faults
    }

    /// Under the flow model: every link fault on `fabric`, by time (ties: the listed
    /// ones first, in their order, then the drawn ones in draw order). A `random` entry
    /// `e` draws its links from the machine's undirected links, in the order a walk of
    /// the nodes by index meets them through [`Fabric::out_links`] (each pair of nodes
    /// once): the `i`-th pick is a partial Fisher-Yates step with
    /// `uniform(seed, FAULT_LINK, e, i)`, its time `from + uniform(seed, FAULT_AT, e, i) *
    /// (to - from)`. Every draw is a pure function of the seed, the entry and the pick.
    /// A fabric that does not describe its graph has no links to draw from.
    pub fn faults_on(&self, fabric: &dyn Fabric) -> Vec<FaultSpec> {
        self.draw_faults(fabric).0
    }

    /// [`Noise::faults_on`], and every `random` entry whose pool held fewer links than
    /// it asks for (none at all: `among: fabric` on a machine whose every link ends at a
    /// rank), for the report to say so as it says a named fault matches no link.
    pub fn draw_faults(&self, fabric: &dyn Fabric) -> (Vec<FaultSpec>, Vec<ShortDraw>) {
        let mut out = self.faults.clone();
        let mut short = Vec::new();
        if self.random_faults.is_empty() {
            return (out, short);
        }
        let hosts: std::collections::BTreeSet<usize> = (0..self.ranks).map(|r| fabric.rank_node(r)).collect();
        let mut all: Vec<(usize, usize)> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let mut edges = Vec::new();
        for u in 0..fabric.nodes() {
            edges.clear();
            fabric.out_links(u, &mut edges);
            for &(_, v) in &edges {
                let pair = (u.min(v), u.max(v));
                // A link inside one named node (a PCIe switch's in and out sides) is part
                // of the switch, not a link of the machine to fail.
                if u != v && seen.insert(pair) && fabric.node_name(u) != fabric.node_name(v) {
                    all.push(pair);
                }
            }
        }
        let mut drawn = Vec::new();
        for (e, r) in self.random_faults.iter().enumerate() {
            let mut pool: Vec<(usize, usize)> = match r.among {
                FaultPool::All => all.clone(),
                FaultPool::Fabric => {
                    all.iter().copied().filter(|(u, v)| !hosts.contains(u) && !hosts.contains(v)).collect()
                }
            };
            if pool.len() < r.count {
                short.push(ShortDraw { asked: r.count, pool: pool.len(), among: r.among });
            }
            for i in 0..r.count.min(pool.len()) {
                let u = uniform(self.seed, what::FAULT_LINK, e as u64, i as u64);
                let j = i + ((u * (pool.len() - i) as f64) as usize).min(pool.len() - i - 1);
                pool.swap(i, j);
                let at = r.from_s + uniform(self.seed, what::FAULT_AT, e as u64, i as u64) * (r.to_s - r.from_s);
                let (a, b) = pool[i];
                drawn.push(FaultSpec { a: fabric.node_name(a), b: fabric.node_name(b), at_s: at });
            }
        }
        out.extend(drawn);
        out.sort_by(|x, y| x.at_s.total_cmp(&y.at_s));
        (out, short)
    }

    /// Whether the flow model must look at its links' names ([`Noise::link_factor`]).
    pub fn has_slow_links(&self) -> bool {
        !self.links.is_empty()
    }

    /// Whether some rank injects slower than its links ([`Noise::link`]).
    pub fn has_slow_ranks(&self) -> bool {
        !self.slow.is_empty()
    }
}

/// The two node names of a link named `from->to` (a torus's ` (wrap)` mark dropped).
pub fn link_ends(name: &str) -> Option<(&str, &str)> {
    let (from, to) = name.split_once("->")?;
    Some((from, to.strip_suffix(" (wrap)").unwrap_or(to)))
}

/// The start delays of `ranks` ranks: a share `fraction` of them (exactly
/// `round(fraction * ranks)`, those whose hash is smallest) late by a draw of `dist`.
fn draw_skew(dist: SkewDist, scale: f64, fraction: f64, seed: u64, ranks: usize) -> Vec<f64> {
    let late = (fraction * ranks as f64).round() as usize;
    let mut late_set = vec![fraction >= 1.0; ranks];
    if late > 0 && late < ranks {
        let mut order: Vec<(u64, usize)> =
            (0..ranks).map(|r| (uniform(seed, what::LATE, r as u64, 0).to_bits(), r)).collect();
        order.sort_unstable();
        for &(_, r) in &order[..late] {
            late_set[r] = true;
        }
    } else if late >= ranks {
        late_set.iter_mut().for_each(|x| *x = true);
    }
    (0..ranks)
        .map(|r| {
            if !late_set[r] {
                return 0.0;
            }
            let u = uniform(seed, what::DELAY, r as u64, 0);
            match dist {
                SkewDist::Fixed => scale,
                SkewDist::Uniform => u * scale,
                SkewDist::Exponential => -scale * (1.0 - u).ln(),
                SkewDist::Normal => {
                    // Box-Muller; 1 - u is in (0, 1], so the logarithm is finite.
                    let v = uniform(seed, what::DELAY2, r as u64, 0);
                    scale * (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos().abs()
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(random: bool) -> Os {
        Os { interval: 10.0, duration: 2.0, random, phase: Some(1.0), seed: 7 }
    }

    #[test]
    fn periodic_detours_stall_and_stretch_work() {
        let o = os(false);
        // Detours at [1, 3), [11, 13), ...
        assert_eq!(o.free_at(0, 0.5), 0.5);
        assert_eq!(o.free_at(0, 1.0), 3.0);
        assert_eq!(o.free_at(0, 2.5), 3.0);
        assert_eq!(o.free_at(0, 3.0), 3.0);
        // 4 s of work from 0: 1 s, then the detour, then 3 s more.
        assert_eq!(o.work_end(0, 0.0, 4.0), 6.0);
        // 20 s of work from 3 crosses the detours at 11 and 21.
        assert_eq!(o.work_end(0, 3.0, 20.0), 27.0);
    }

    /// The walk `work_end` did before it skipped windows: one detour at a time.
    fn walked(o: &Os, r: Rank, mut t: f64, mut work: f64) -> f64 {
        loop {
            t = o.free_at(r, t);
            let (s, e) = o.around(r, t);
            if t + work <= s {
                return t + work;
            }
            work -= s - t;
            t = e;
        }
    }

    #[test]
    fn long_work_skips_whole_windows_and_ends_where_the_walk_does() {
        for (random, phase) in [(false, Some(0.25)), (false, None), (true, None)] {
            let o = Os { interval: 1.0, duration: 0.3, random, phase, seed: 11 };
            for (t, work) in [(0.0, 5000.0), (0.5, 12345.678), (3.7, 1100.05), (2.0, 700.0)] {
                let (fast, slow) = (o.work_end(1, t, work), walked(&o, 1, t, work));
                assert!((fast - slow).abs() <= 1e-9 * slow, "{random} {phase:?} {t} {work}: {fast} vs {slow}");
            }
        }
        // 2 s of work under detours every 1 ns: 2e9 windows, done at once.
        let o = Os { interval: 1e-9, duration: 0.5e-9, random: true, phase: None, seed: 3 };
        let end = o.work_end(0, 0.0, 2.0);
        assert!((end - 4.0).abs() < 1e-6, "{end}");
    }

    /// However many detours a reduction meets, it looks at a few: the first
    /// [`WALKED_DETOURS`], then the windows it spans whole at once, then the last few.
    #[test]
    fn a_reduction_looks_at_a_few_detours_however_many_it_meets() {
        for (random, phase) in [(false, Some(0.25)), (true, None)] {
            let o = Os { interval: 1.0, duration: 0.3, random, phase, seed: 5 };
            for work in [50.0, 700.0, 1e6] {
                let (end, steps) = o.work_end_steps(2, 0.4, work);
                assert!(steps <= WALKED_DETOURS + 6, "{steps} detours looked at for {work} s of work");
                let slow = walked(&o, 2, 0.4, work);
                assert!((end - slow).abs() <= 1e-9 * slow, "{end} vs {slow}");
            }
        }
    }

    #[test]
    fn random_detours_fall_one_per_window() {
        let o = os(true);
        for k in 0..200 {
            let (s, e) = o.around(3, k as f64 * 10.0);
            assert!(s >= k as f64 * 10.0 && e <= (k + 1) as f64 * 10.0, "window {k}: {s}..{e}");
        }
    }

    #[test]
    fn draws_are_pure_and_spread() {
        assert_eq!(uniform(1, 2, 3, 4), uniform(1, 2, 3, 4));
        assert_ne!(uniform(1, 2, 3, 4), uniform(1, 2, 3, 5));
        let n = 10_000;
        let mean: f64 = (0..n).map(|k| uniform(9, 1, 0, k)).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
    }

    #[test]
    fn a_fraction_of_ranks_is_late() {
        let d = draw_skew(SkewDist::Fixed, 5.0, 0.01, 3, 1000);
        assert_eq!(d.iter().filter(|&&x| x == 5.0).count(), 10);
        assert_eq!(d.iter().filter(|&&x| x == 0.0).count(), 990);
        let e = draw_skew(SkewDist::Exponential, 2.0, 1.0, 3, 20_000);
        let mean = e.iter().sum::<f64>() / e.len() as f64;
        assert!((mean - 2.0).abs() < 0.1, "{mean}");
    }
}
