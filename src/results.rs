//! The results model: what a run produces, with no behaviour beyond reading and
//! writing itself. A sweep's [`Point`]s, each point's [`PointResult`] with its
//! [`CriticalPath`] and, on a selector's row, its [`Selection`]; the [`Shard`] a run
//! covers.
//!
//! Everything that fills results in (the runner, the timeline, the selectors) or reads
//! them (reports, plots, merge) depends on this module, and it depends on none of them:
//! only on the collective's name and the engine's rank number.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

use crate::collective::Collective;
use crate::sim::op::Rank;

/// One point of a sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// Index into `scenario.algorithms`.
    pub algo: usize,
    /// P.
    pub ranks: usize,
    /// S, bytes per rank.
    pub bytes: u64,
}

/// The result of one point of a run (docs/report.md).
///
/// It reads back from JSON (`merge`); a non-finite float, written as `null`, reads back
/// as NaN where the field is not optional and as `None` where it is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    /// The collective the algorithm ran (absent in reports written before there were
    /// others: allreduce).
    #[serde(default)]
    pub collective: Collective,
    /// Algorithm label, with its parameters when not default (`ring_segmented(segment=262144)`).
    pub algorithm: String,
    /// P.
    pub ranks: usize,
    /// S, bytes per rank.
    pub bytes: u64,
    /// NCCL's protocol the messages moved with, where the entry names one (`auto`: the
    /// one NCCL's model picked at this point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The topology's `launch` this point paid (included in `time_s`), where above 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_s: Option<f64>,
    /// The scenario's `host` floor (GPUs per host thread x `host.issue`) where it was
    /// above the simulated time and so became `time_s`: back-to-back calls that the host
    /// cannot issue faster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_bound_s: Option<f64>,
    /// Why the algorithm did not run here; every other field is empty/zero then.
    pub not_applicable: Option<String>,
    /// Simulated time, seconds.
    #[serde(deserialize_with = "nan_if_null")]
    pub time_s: f64,
    /// The cost model's time; `None` where it has none for this machine.
    pub closed_form_s: Option<f64>,
    /// `|time / closed - 1|`.
    pub closed_form_rel_err: Option<f64>,
    /// The tolerance `closed_form_rel_err` is held to.
    pub closed_form_tolerance: Option<f64>,
    /// `exact` where `closed_form_s` is the time, `bound` where the time depends on the
    /// order of events and `closed_form_bounds_s` brackets it; null where neither.
    #[serde(default)]
    pub closed_form_kind: Option<String>,
    /// `[lower, upper]` where `closed_form_kind` is `bound`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_form_bounds_s: Option<[f64; 2]>,
    /// The lower bound (docs/report.md, 'The checks').
    #[serde(deserialize_with = "nan_if_null")]
    pub lower_bound_s: f64,
    /// `lower_bound_s / time_s`.
    pub efficiency: Option<f64>,
    /// `S / time`, bytes per second (nccl-tests' algbw).
    #[serde(rename = "algbw_Bps")]
    pub algbw_bps: Option<f64>,
    /// `algbw` times nccl-tests' factor for the collective (`2(P-1)/P` for allreduce);
    /// `None` for a barrier.
    #[serde(rename = "busbw_Bps")]
    pub busbw_bps: Option<f64>,
    /// Messages in total.
    pub messages: u64,
    /// The most bytes any rank sent.
    pub bytes_sent_max: u64,
    /// The most extra buffer memory any rank held beyond its vector.
    pub peak_buffer_bytes: u64,
    /// Worst `|result - exact|` (null with `data.mode: off`).
    pub max_abs_error: Option<f64>,
    /// Normwise: `max |result - exact| / max |exact|` (null with `data.mode: off`).
    #[serde(default)]
    pub max_rel_error: Option<f64>,
    /// Worst error in units in the last place of the exact result (null with data off).
    #[serde(default)]
    pub max_ulp_error: Option<f64>,
    /// The most rounded operations any result element went through in sequence.
    #[serde(default)]
    pub reduction_depth: Option<u64>,
    /// The a-priori error bound for this algorithm's reduction depth, op and dtype
    /// (largest over elements).
    pub error_bound: Option<f64>,
    /// Every element of every rank within its bound (null with `data.mode: off`).
    pub verified: Option<bool>,
    /// All ranks ended bit-identical (null with `data.mode: off`).
    pub ranks_bitwise_equal: Option<bool>,
    /// Engine events processed.
    pub events: u64,
    /// Which data plane ran: `full` or `sample` (`data.mode: auto` decides per point);
    /// null with data off.
    #[serde(default)]
    pub data_mode: Option<String>,
    /// The simulator's own run time for this point, seconds (the only non-deterministic field).
    #[serde(deserialize_with = "nan_if_null")]
    pub wall_time_s: f64,
    /// Every check that failed at this point, in words (empty when all held).
    pub failures: Vec<String>,
    /// What is worth knowing about this point that is not a failure, in words (a flow
    /// model run that beat the ideal model by a scheduling anomaly).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Bytes each rank sent, rank by rank (only for P <= 64, to keep reports small).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_sent_per_rank: Option<Vec<u64>>,
    /// Bytes each rank received, rank by rank (only for P <= 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_received_per_rank: Option<Vec<u64>>,
    /// The most bytes that went over one link, a link being an ordered pair of ranks
    /// (in the ideal model a message holds a port at each end and nothing between).
    /// Recorded when the timeline is (see [`crate::timeline`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_bytes_max: Option<u64>,
    /// Ordered pairs of ranks that exchanged any message (recorded with `link_bytes_max`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links_used: Option<u64>,
    /// The chain of operations that set the finishing time ([`crate::timeline::critical`]
    /// states the rule); its steps only for a single-point run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_path: Option<CriticalPath>,
    /// Why `closed_form_s` is null where the algorithm has a closed form on this machine
    /// (the flow model shared a link; an envelope the formulas do not count).
    #[serde(default)]
    pub no_closed_form: Option<String>,
    /// Under the flow model: the same point's time under the ideal model on the same
    /// routes, which the flow model's time may never be below.
    #[serde(default)]
    pub ideal_time_s: Option<f64>,
    /// Under the flow model: whether sharing a link ever slowed a message (if not, the
    /// time is the ideal model's, bit for bit).
    #[serde(default)]
    pub links_shared: Option<bool>,
    /// Under the flow model: the physical links' traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_links: Option<LinkReport>,
    /// The fastest algorithm simulated at this point (ranks, bytes): the scenario's
    /// rows, and with a selector every algorithm of the collective
    /// ([`crate::select`]); ties by `list` order, then label. The same on every row of
    /// the point.
    #[serde(default)]
    pub best_algorithm: Option<String>,
    /// `best_algorithm`'s time, seconds.
    #[serde(default)]
    pub best_time_s: Option<f64>,
    /// The second fastest there.
    #[serde(default)]
    pub runner_up: Option<String>,
    /// `runner_up`'s time over `best_algorithm`'s, less 1 (0.05: 5% slower).
    #[serde(default)]
    pub margin: Option<f64>,
    /// On a selector's row (`auto`, `ompi_fixed`, `nccl_model`): what it chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<Selection>,
    /// With `repeat:`: the time of every seed, in seed order (the scenario's seed first,
    /// whose run is `time_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times_s: Option<Vec<f64>>,
    /// With `repeat:` and `noise:`: every seed's skew (its latest rank's start), in
    /// seed order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skews_s: Option<Vec<f64>>,
    /// With `repeat:`: the mean of `times_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_mean_s: Option<f64>,
    /// With `repeat:`: the median of `times_s` (nearest rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_p50_s: Option<f64>,
    /// With `repeat:`: the 90th percentile of `times_s` (nearest rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_p90_s: Option<f64>,
    /// With `repeat:`: the 99th percentile of `times_s` (nearest rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_p99_s: Option<f64>,
    /// With `repeat:`: the largest of `times_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_max_s: Option<f64>,
    /// With `noise:`: the same point on the machine without noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_free_time_s: Option<f64>,
    /// With `noise:`: the mean time over the seeds divided by `noise_free_time_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowdown: Option<f64>,
    /// With `noise:`: the latest rank's start, averaged over the seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew_s: Option<f64>,
    /// With skew: `(mean time - noise_free_time_s) / skew_s`, the time lost per second
    /// of skew (1: the skew lands on the critical path in full). None where the skew is
    /// under 1,000 float spacings of the time (the difference would be rounding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew_sensitivity: Option<f64>,
    /// With `noise.faults`: the run (of the scenario's seed, or the first seed that was)
    /// that link faults cut off, and who waits for whom.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_off: Option<CutOffReport>,
    /// With `noise.levels`: the point at each level, in the order listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_levels: Option<Vec<LevelResult>>,
}

/// One point at one noise level (`noise.levels`, docs/variability.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelResult {
    /// The multiplier of the skew's delays and the OS detours' duration.
    pub level: f64,
    /// The mean time over the seeds at this level (null if no seed finished).
    pub time_mean_s: Option<f64>,
    /// `time_mean_s / noise_free_time_s`.
    pub slowdown: Option<f64>,
}

impl PointResult {
    /// Whether the point failed only because link faults cut a run off (exit status 3).
    /// A selector's row counts too when only the algorithms it simulated were cut off
    /// (each failure says who waits for whom) and its choice ran: it has no `cut_off`
    /// of its own, and no other check failed.
    pub fn only_cut_off(&self) -> bool {
        (self.cut_off.is_some() || self.selection.is_some())
            && !self.failures.is_empty()
            && self.failures.iter().all(|f| f.contains(CUT_OFF))
    }
}

/// The words every failure of a run cut off by link faults carries.
pub use crate::sim::flow::CUT_OFF;

/// A run that link faults left with messages and no route for them (docs/variability.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CutOffReport {
    /// The seed of the run.
    pub seed: u64,
    /// When it stopped: its last event, seconds.
    pub time_s: f64,
    /// The messages with no route left: each receiver waits for its sender.
    pub messages: Vec<CutMessage>,
    /// The ranks still waiting when nothing else could happen, and what each waits for.
    pub waiting: String,
}

/// One message a link fault cut off.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CutMessage {
    /// Sender.
    pub src: Rank,
    /// Receiver, which waits for it.
    pub dst: Rank,
    /// Bytes on the wire.
    pub bytes: u64,
    /// Bytes that had arrived.
    pub moved_bytes: f64,
    /// When it was cut off, seconds.
    pub at_s: f64,
    /// The failed link it was on, or that its usual route needed.
    pub link: String,
}

impl CutOffReport {
    /// `cut` of the run with `seed`, its times shifted by the launch.
    pub fn of(cut: &crate::sim::flow::CutOff, seed: u64, launch: f64) -> Self {
        let messages = cut
            .flows
            .iter()
            .map(|c| CutMessage {
                src: c.src,
                dst: c.dst,
                bytes: c.bytes,
                moved_bytes: c.moved,
                at_s: c.at + launch,
                link: c.link.clone(),
            })
            .collect();
        CutOffReport { seed, time_s: cut.time + launch, messages, waiting: cut.waiting.clone() }
    }
}

/// The physical links' traffic under the flow model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkReport {
    /// Directed links in the machine.
    pub machine_links: u64,
    /// Directed links some message crossed.
    pub used: u64,
    /// The five links that carried the most bytes, busiest first (ties: first crossed).
    pub busiest: Vec<LinkUse>,
    /// Every link used, in the order first crossed: for points of at most 64 ranks, as the
    /// per-rank counters, and up to [`MAX_LISTED_LINKS`] links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<Vec<LinkUse>>,
}

/// Reports list every used link only up to this many.
pub const MAX_LISTED_LINKS: usize = 4096;

/// One directed link's traffic.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkUse {
    /// `from->to` by node names.
    pub name: String,
    /// Bytes it carried, envelopes included.
    pub bytes: u64,
    /// `bytes / (bandwidth * time_s)`: the share of the run it was busy, on average.
    pub mean_utilisation: f64,
    /// The largest share of its bandwidth in use at once.
    pub peak_utilisation: f64,
    /// The most messages moving data on it at once.
    pub peak_flows: u32,
}

/// `null` (how a non-finite float is written) reads back as NaN.
pub(crate) fn nan_if_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl PointResult {
    /// Whether every check at this point held (a point that is not applicable passes).
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// What a selector chose at one point: carried by its row (docs/report.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    /// Our algorithm whose simulation the row shows, with its parameters
    /// (`halving_doubling`, `ring_segmented(segment=4096)`).
    pub selected: String,
    /// The library the choice follows, with its version (`Open MPI 4.1.4`); none for `auto`.
    #[serde(default)]
    pub library: Option<String>,
    /// The library's choice in its own words (`6 rabenseifner`, `tree/ll128`), with
    /// Open MPI's fallbacks (`5 segmented_ring -> ... -> 4 ring`).
    #[serde(default)]
    pub library_choice: Option<String>,
    /// `time_s / best_time_s - 1`: how much slower than the fastest algorithm
    /// simulated at this point (0 where the pick is the fastest). None where there is no
    /// ratio: the pick did not run to the end, or the fastest took 0 s and the pick did not.
    #[serde(default)]
    pub vs_best: Option<f64>,
    /// `nccl_model`: NCCL's predicted time for its choice, seconds.
    #[serde(default)]
    pub predicted_s: Option<f64>,
    /// Algorithms simulated at this point to choose from (not applicable ones left out).
    pub candidates: usize,
}

/// Chains longer than this are summarised without their steps.
pub const MAX_STEPS: usize = 512;

/// What a step of the critical path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A message (`rank` -> `peer`).
    Message,
    /// A reduction on `rank`'s compute unit.
    Reduce,
}

/// Why a step of the critical path started when it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitedFor {
    /// Nothing: the first link of the chain.
    Start,
    /// The previous step's data (a delivered message, a finished reduction).
    Data,
    /// The compute unit, busy with the previous reduction.
    ComputeUnit,
    /// The sender's outgoing port, busy with the previous message.
    OutPort,
    /// The receiver's incoming port, busy with the previous message.
    InPort,
    /// The sender's send window: one of its earlier messages had to land first.
    FlowControl,
}

/// One link of the critical path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathStep {
    /// Message or reduction.
    pub kind: StepKind,
    /// The sender, or the reducing rank.
    pub rank: Rank,
    /// The receiver of a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<Rank>,
    /// The message's tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<u32>,
    /// Bytes moved or reduced.
    pub bytes: u64,
    /// Start, seconds.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
    /// What it waited for (see the module docs).
    pub waited_for: WaitedFor,
}

/// The chain of operations that set the finishing time (see the module docs for the rule).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CriticalPath {
    /// Messages on the chain.
    pub messages: u64,
    /// Reductions on the chain.
    pub reductions: u64,
    /// Time the chain spends in messages, seconds.
    pub transfer_s: f64,
    /// Time the chain spends in reductions, seconds.
    pub compute_s: f64,
    /// Time before the chain's first link starts, seconds.
    pub idle_s: f64,
    /// The chain, first to last; left out when longer than [`MAX_STEPS`] or not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<PathStep>>,
}

impl CriticalPath {
    /// `transfer_s` as a fraction of the whole time (0 for an empty run).
    pub fn transfer_fraction(&self) -> f64 {
        let total = self.transfer_s + self.compute_s + self.idle_s;
        if total > 0.0 { self.transfer_s / total } else { 0.0 }
    }

    /// `14 messages, 7 reductions, 86% transfer`.
    pub fn summary(&self) -> String {
        let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        format!(
            "{}, {}, {:.0}% transfer",
            plural(self.messages, "message", "messages"),
            plural(self.reductions, "reduction", "reductions"),
            self.transfer_fraction() * 100.0
        )
    }
}

/// Which part of a sweep a run covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// I, 0-based, below `count`.
    pub index: usize,
    /// N, at least 1.
    pub count: usize,
}

impl Shard {
    /// Whether the point at `index` in sweep order belongs to this shard.
    pub fn contains(&self, index: usize) -> bool {
        index % self.count == self.index
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `I/N`, `0 <= I < N`.
    fn from_str(s: &str) -> Result<Self, String> {
        let form = "write it I/N: shard I (0-based) of N, with 0 <= I < N, e.g. 0/4";
        let (i, n) = s.split_once('/').ok_or_else(|| format!("'{s}' is not I/N; {form}"))?;
        let num = |t: &str, what: &str| {
            t.trim().parse::<usize>().map_err(|_| format!("{what} '{}' is not a whole number; {form}", t.trim()))
        };
        let (index, count) = (num(i, "shard index")?, num(n, "shard count")?);
        if count == 0 {
            return Err(format!("the shard count must be at least 1; {form}"));
        }
        if index >= count {
            return Err(format!("shard index {index} is not below the count {count} (indices are 0-based); {form}"));
        }
        Ok(Shard { index, count })
    }
}
