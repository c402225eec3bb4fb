//! Reports: one [`PointResult`] per (algorithm, ranks, bytes), exported as a table,
//! JSON or CSV. Measuring never formats; each format is one [`Exporter`].

mod csv;
#[cfg(test)]
mod fixtures;
mod json;
mod table;

pub use self::csv::Csv;
pub use self::json::Json;
pub(crate) use self::json::blank_na_times;
pub use self::table::{Table, failure_lines};

use serde::{Deserialize, Serialize};

use crate::results::Shard;
/// The results model sits below every module that fills or reads results; these paths
/// still name its types.
pub use crate::results::{LinkReport, LinkUse, MAX_LISTED_LINKS, PointResult};
use crate::scenario::Scenario;

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
