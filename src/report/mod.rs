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

use serde::Serialize;

use crate::scenario::Scenario;

/// The result of one point of a run (SPEC section 6).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointResult {
    /// Algorithm label, with its parameters when not default (`ring_segmented(segment=262144)`).
    pub algorithm: String,
    /// P.
    pub ranks: usize,
    /// S, bytes per rank.
    pub bytes: u64,
    /// Why the algorithm did not run here; every other field is empty/zero then.
    pub not_applicable: Option<String>,
    /// Simulated time, seconds.
    pub time_s: f64,
    /// The cost model's time; `None` where it has none for this machine.
    pub closed_form_s: Option<f64>,
    /// `|time / closed - 1|`.
    pub closed_form_rel_err: Option<f64>,
    /// The tolerance `closed_form_rel_err` is held to.
    pub closed_form_tolerance: Option<f64>,
    /// SPEC section 3's lower bound.
    pub lower_bound_s: f64,
    /// `lower_bound_s / time_s`.
    pub efficiency: Option<f64>,
    /// `S / time`, bytes per second (nccl-tests' algbw).
    #[serde(rename = "algbw_Bps")]
    pub algbw_bps: Option<f64>,
    /// `algbw * 2(P-1)/P` (nccl-tests' busbw).
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
    /// The error bound for this algorithm's reduction order (largest over elements).
    pub error_bound: Option<f64>,
    /// Every element of every rank within its bound (null with `data.mode: off`).
    pub verified: Option<bool>,
    /// All ranks ended bit-identical (null with `data.mode: off`).
    pub ranks_bitwise_equal: Option<bool>,
    /// Engine events processed.
    pub events: u64,
    /// The simulator's own run time for this point, seconds (the only non-deterministic field).
    pub wall_time_s: f64,
    /// Every check that failed at this point, in words (empty when all held).
    pub failures: Vec<String>,
}

impl PointResult {
    /// Whether every check at this point held (a point that is not applicable passes).
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// A whole run: the scenario as understood and its results, in sweep order.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The validated scenario.
    pub scenario: Scenario,
    /// One entry per (algorithm, ranks, bytes).
    pub results: Vec<PointResult>,
}

/// One output format.
pub trait Exporter {
    /// The report rendered in this format.
    fn render(&self, report: &Report) -> String;
}
