//! `calibrate --plot`: per log, measured against simulated time and bus bandwidth, and
//! the residuals ([`crate::plots::calibration`]).

use std::path::{Path, PathBuf};

use super::{Calibration, busbw_factor};
use crate::plots::calibration::{FitPoint, plot_fit};
use crate::plots::slug;

/// Draw every log's charts into `dir`; returns the files written, in log order.
pub fn plot(c: &Calibration, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for l in &c.logs {
        let pts: Vec<FitPoint> = l
            .points
            .iter()
            .map(|p| FitPoint { bytes: p.bytes, measured_s: p.measured_s, simulated_s: p.simulated_s })
            .collect();
        let title = format!("{} ({}, P = {}, {})", l.label, l.collective, l.ranks, l.set);
        files.extend(plot_fit(dir, &slug(&l.label), &title, busbw_factor(l.collective, l.ranks), &pts)?);
    }
    Ok(files)
}
