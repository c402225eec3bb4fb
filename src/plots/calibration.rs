//! The charts of `calibrate`: per log, measured against simulated time and bus
//! bandwidth over the sizes, and the ratio simulated / measured (the residuals).

use std::path::{Path, PathBuf};

use super::axis::Quantity;
use super::charts::{ReportChart, Series, line, with_hline};
use super::style::{self, Chart};

/// One logged point: S (bytes), measured and simulated time (seconds).
#[derive(Clone, Copy, Debug)]
pub struct FitPoint {
    /// S, bytes.
    pub bytes: u64,
    /// Measured time, seconds.
    pub measured_s: f64,
    /// Simulated time, seconds.
    pub simulated_s: f64,
}

/// Draw one log's three charts into `out_dir` (SVG and PNG each) as
/// `<stem>_time`, `<stem>_busbw`, `<stem>_residuals`; `title` names the log, `busbw`
/// is nccl-tests' factor of its collective at its P. Returns the files written.
pub fn plot_fit(
    out_dir: &Path,
    stem: &str,
    title: &str,
    busbw: f64,
    points: &[FitPoint],
) -> Result<Vec<PathBuf>, String> {
    style::ensure_fonts();
    std::fs::create_dir_all(out_dir).map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let series = |label: &str, style: usize, y: &dyn Fn(&FitPoint) -> f64| Series {
        style,
        label: label.to_string(),
        points: points.iter().map(|p| (p.bytes as f64, y(p))).collect(),
    };
    let size = (Quantity::Bytes, "message size, S (bytes)");
    let mut charts: Vec<(&str, ReportChart)> = Vec::new();
    if let Some(c) = line(
        format!("Measured and simulated time, {title}"),
        "calibrated machine".to_string(),
        size,
        (Quantity::Time, "time"),
        vec![series("measured", 0, &|p| p.measured_s), series("simulated", 1, &|p| p.simulated_s)],
    ) {
        charts.push(("time", ReportChart::Line(c)));
    }
    if let Some(c) = line(
        format!("Bus bandwidth, {title}"),
        format!("busbw = S/time x {busbw:.3} (nccl-tests)"),
        size,
        (Quantity::Bandwidth, "bus bandwidth (bytes/s)"),
        vec![
            series("measured", 0, &|p| p.bytes as f64 / p.measured_s * busbw),
            series("simulated", 1, &|p| p.bytes as f64 / p.simulated_s * busbw),
        ],
    ) {
        charts.push(("busbw", ReportChart::Line(c)));
    }
    if let Some(c) = line(
        format!("Residuals, {title}"),
        "simulated / measured time; 1 is a perfect fit".to_string(),
        size,
        (Quantity::Number, "simulated / measured"),
        vec![series("simulated / measured", 1, &|p| p.simulated_s / p.measured_s)],
    ) {
        charts.push(("residuals", ReportChart::Line(with_hline(c, 1.0, "measured"))));
    }
    let mut written = Vec::new();
    for (name, chart) in charts {
        written.extend(chart.save(&out_dir.join(format!("{stem}_{name}")))?);
    }
    Ok(written)
}
