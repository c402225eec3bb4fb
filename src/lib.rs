//! allreduce-sim: a deterministic discrete-event simulator of allreduce and the
//! collectives it is built from.
//!
//! A [`scenario::Scenario`] names a machine, algorithms and sizes; [`runner::run`]
//! simulates every point with the engine in [`sim`], moving and reducing real numbers,
//! and checks each against its closed form in [`cost_model`]; [`report`] renders it.
#![warn(missing_docs)]

/// `eprintln!` that cannot panic: a line to standard error, where a failed write (stderr
/// closed, or on a full device) is dropped. A message that cannot be shown must not turn
/// the exit status the run earned into a panic's 101; the report on standard output or
/// in `--output` is what carries the results.
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// [`diag!`] without the line feed (`eprint!`).
#[macro_export]
macro_rules! diag_text {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

pub mod algos;
pub mod baseline;
pub mod calibrate;
pub mod causality;
pub mod collective;
pub mod cost_model;
pub mod estimate;
pub mod explain;
pub mod files;
pub mod plots;
pub mod process;
#[cfg(feature = "python")]
mod python;
pub mod report;
pub mod results;
pub mod runner;
pub mod scenario;
pub mod select;
pub mod selectors;
pub mod shard;
pub mod sim;
pub mod spread;
pub mod timeline;
pub mod topology;
pub mod units;
