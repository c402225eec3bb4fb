//! Reports: one [`PointResult`] per (algorithm, ranks, bytes), exported as a table,
//! JSON or CSV. Measuring never formats; each format is one [`Exporter`].

mod csv;
#[cfg(test)]
mod fixtures;
mod json;
mod table;

pub use self::csv::Csv;
pub use self::json::Json;
pub use self::table::Table;

use serde::{Deserialize, Deserializer, Serialize};

use crate::collective::Collective;
use crate::scenario::Scenario;
use crate::shard::Shard;
use crate::timeline::CriticalPath;

/// The fields every result has, in the order docs/report.md lists them: the JSON names,
/// and the first CSV columns.
pub const CORE_FIELDS: [&str; 20] = [
    "collective",
    "algorithm",
    "ranks",
    "bytes",
    "time_s",
    "closed_form_s",
    "closed_form_rel_err",
    "lower_bound_s",
    "efficiency",
    "algbw_Bps",
    "busbw_Bps",
    "messages",
    "bytes_sent_max",
    "peak_buffer_bytes",
    "max_abs_error",
    "error_bound",
    "verified",
    "ranks_bitwise_equal",
    "events",
    "wall_time_s",
];

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
    pub selection: Option<crate::select::Selection>,
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
    /// of skew (1: the skew lands on the critical path in full).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew_sensitivity: Option<f64>,
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

/// A whole run: the scenario as understood and its results, in sweep order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// The validated scenario.
    pub scenario: Scenario,
    /// One entry per (algorithm, ranks, bytes).
    pub results: Vec<PointResult>,
    /// Which shard of the sweep this is (`run --shard I/N`); absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The run was stopped (Ctrl-C) and `results` holds only the points that finished;
    /// absent (false) for a whole run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// One output format.
pub trait Exporter {
    /// The report rendered in this format.
    fn render(&self, report: &Report) -> String;
}
