//! Plots of a report (SVG and PNG, plotters): time and bus bandwidth against size,
//! time against ranks, simulated against closed-form time, efficiency against the lower
//! bound, the best algorithm over the (ranks, size) plane and numerical error; and a
//! Gantt chart of one point's ports and compute units ([`gantt`]).
//!
//! Text is drawn with DejaVu Sans, bundled in the binary (`assets/fonts/`), so PNGs
//! render the same on a machine without any fonts installed.
//!
//! Charts work on [`PlotData`], the few report fields they need, so a JSON report
//! written by any version of `run --format json` (or by `merge`) can be plotted
//! without reading its scenario back.

mod axis;
pub mod calibration;
mod charts;
pub mod gantt;
mod spread;
mod style;
mod text;

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::collective::Collective;
use crate::report::Report;
use style::Chart;

pub use gantt::{check_gantt, write_gantt};

/// What the charts need of a report: the scenario's name and every point.
#[derive(Clone, Debug, Deserialize)]
pub struct PlotData {
    /// The scenario's name (chart subtitles and file names).
    pub name: String,
    /// Every point, in report order.
    pub points: Vec<PlotPoint>,
}

/// What the charts need of one [`crate::report::PointResult`]. Missing or `null` fields
/// read as `None`, so a point that did not run simply drops out of every chart.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct PlotPoint {
    /// The collective it ran (absent in older reports: allreduce).
    #[serde(default)]
    pub collective: Collective,
    /// Algorithm label.
    pub algorithm: String,
    /// P.
    pub ranks: usize,
    /// S, bytes per rank.
    pub bytes: u64,
    /// Why the algorithm did not run here.
    #[serde(default)]
    pub not_applicable: Option<String>,
    /// Simulated time, seconds.
    #[serde(default)]
    pub time_s: Option<f64>,
    /// Closed-form time, seconds.
    #[serde(default)]
    pub closed_form_s: Option<f64>,
    /// `lower_bound_s / time_s`.
    #[serde(default)]
    pub efficiency: Option<f64>,
    /// nccl-tests' bus bandwidth, bytes per second.
    #[serde(default, rename = "busbw_Bps")]
    pub busbw_bps: Option<f64>,
    /// Worst absolute error against the exact result.
    #[serde(default)]
    pub max_abs_error: Option<f64>,
    /// Checks that failed at this point.
    #[serde(default)]
    pub failures: Vec<String>,
    /// On a selector's row: what it chose.
    #[serde(default)]
    pub selection: Option<crate::select::Selection>,
    /// With `repeat:`: every seed's time.
    #[serde(default)]
    pub times_s: Option<Vec<f64>>,
    /// With `repeat:` and `noise:`: every seed's skew.
    #[serde(default)]
    pub skews_s: Option<Vec<f64>>,
    /// With `noise:`: the time without noise.
    #[serde(default)]
    pub noise_free_time_s: Option<f64>,
    /// With `noise.levels`: the point at each level.
    #[serde(default)]
    pub noise_levels: Option<Vec<crate::results::LevelResult>>,
}

impl PlotPoint {
    /// The simulated time when the point ran (applicable, finite, positive): the
    /// points charts draw. A point that ran but failed a check is still drawn (a missed
    /// closed form is exactly what the parity plot shows); it never wins the best-algorithm map.
    pub fn time(&self) -> Option<f64> {
        match (self.not_applicable.as_ref(), self.time_s) {
            (None, Some(t)) if t.is_finite() && t > 0.0 => Some(t),
            _ => None,
        }
    }
}

impl From<&Report> for PlotData {
    fn from(r: &Report) -> Self {
        PlotData {
            name: r.scenario.name.clone(),
            points: r
                .results
                .iter()
                .map(|p| PlotPoint {
                    collective: p.collective,
                    algorithm: p.algorithm.clone(),
                    ranks: p.ranks,
                    bytes: p.bytes,
                    not_applicable: p.not_applicable.clone(),
                    time_s: Some(p.time_s),
                    closed_form_s: p.closed_form_s,
                    efficiency: p.efficiency,
                    busbw_bps: p.busbw_bps,
                    max_abs_error: p.max_abs_error,
                    failures: p.failures.clone(),
                    selection: p.selection.clone(),
                    times_s: p.times_s.clone(),
                    skews_s: p.skews_s.clone(),
                    noise_free_time_s: p.noise_free_time_s,
                    noise_levels: p.noise_levels.clone(),
                })
                .collect(),
        }
        .by_collective()
    }
}

impl PlotData {
    /// Read a JSON report (`run --format json`, `merge`) from `text`; `what` names it
    /// in the error.
    pub fn from_json(text: &str, what: &str) -> Result<Self, String> {
        #[derive(Deserialize)]
        struct Name {
            name: String,
        }
        #[derive(Deserialize)]
        struct Raw {
            scenario: Name,
            results: Vec<PlotPoint>,
        }
        crate::files::check_json(text).map_err(|e| {
            format!(
                "{what} is not a JSON report of allreduce-sim (write one with `run --format json --output FILE`): {e}"
            )
        })?;
        let raw: Raw = serde_json::from_str(text).map_err(|e| {
            format!(
                "{what} is not a JSON report of allreduce-sim (write one with `run --format json --output FILE`): {e}"
            )
        })?;
        Ok(PlotData { name: raw.scenario.name, points: raw.results }.by_collective())
    }

    /// The points as the charts draw them: an algorithm of another collective than
    /// allreduce is its own series (`broadcast chain` beside the allreduce `chain`), and
    /// barriers, which have no size to plot against, are left out.
    fn by_collective(mut self) -> Self {
        self.points.retain(|p| p.collective.has_data());
        for p in &mut self.points {
            if p.collective != Collective::Allreduce {
                p.algorithm = format!("{} {}", p.collective, p.algorithm);
            }
        }
        self
    }

    /// Read a JSON report file.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = crate::files::read_input(path)?;
        Self::from_json(&text, &path.display().to_string())
    }
}

/// Draw every chart the report has data for into `out_dir` (created if needed), each as
/// SVG and PNG; returns the files written, in a fixed order. Charts without data (one
/// rank count: no time-vs-ranks chart) are skipped, not errors.
pub fn plot_report(report: &Report, out_dir: &Path) -> Result<Vec<PathBuf>, String> {
    plot_data(&PlotData::from(report), out_dir)
}

/// [`plot_report`] for a report read with [`PlotData::load`].
///
/// A `run` stopped by Ctrl-C ([`crate::runner::STOP`]) stops between charts: every file
/// is whole, and the list says which were written.
pub fn plot_data(data: &PlotData, out_dir: &Path) -> Result<Vec<PathBuf>, String> {
    save_charts(&data.name, charts::all(data), out_dir)
}

/// Draw, per rank count of `report` that `measured` has points at, the simulated bus
/// bandwidth against size beside the measured points (`run --measured`), as SVG and PNG
/// into `out_dir`; returns the files written.
pub fn plot_measured(report: &Report, measured: &[PlotPoint], out_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let data = PlotData::from(report);
    save_charts(&data.name, charts::against_measured(&data, measured), out_dir)
}

/// What drawing takes beside the report's data, reserved before the first chart
/// ([`check_room`]): a chart's bitmap (1,600 x 900 pixels of 3 bytes, 4.3 MB), its SVG
/// text and the fonts, with room to spare.
pub const DRAWING_BYTES: u64 = 16 << 20;

/// Refuse to draw where this process cannot reserve [`DRAWING_BYTES`]. Under a `ulimit -v`
/// a few MB above what `plot` had used by then, whether its bitmap could still be had
/// depended on the order its threads had allocated in: the same limit gave a plot or an
/// out-of-memory error from one try to the next. Asked first, the refusal comes at one
/// limit, and a plot that passes it has room for its bitmap.
pub fn check_room() -> Result<(), String> {
    if crate::process::reservable(DRAWING_BYTES) {
        return Ok(());
    }
    Err(format!(
        "drawing the charts needs about {} of memory beside the report, {}",
        crate::units::fmt_bytes(DRAWING_BYTES),
        crate::process::CANNOT_RESERVE
    ))
}

/// Save each of `charts` as `<slug of name>_<chart>.svg` and `.png` in `out_dir` (created
/// if needed); returns the files written. A `run` stopped by Ctrl-C
/// ([`crate::runner::STOP`]) stops between charts.
fn save_charts(name: &str, charts: Vec<(String, charts::ReportChart)>, out_dir: &Path) -> Result<Vec<PathBuf>, String> {
    style::ensure_fonts();
    std::fs::create_dir_all(out_dir).map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let slug = slug(name);
    let mut written = Vec::new();
    for (chart_name, chart) in charts {
        if crate::runner::STOP.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let stem = out_dir.join(format!("{slug}_{chart_name}"));
        written.extend(chart.save(&stem)?);
    }
    Ok(written)
}

/// A file-name-safe form of a scenario name: lowercase letters, digits and `-`.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let mut s: String = out.trim_matches('-').chars().take(48).collect();
    while s.ends_with('-') {
        s.pop();
    }
    if s.is_empty() { "report".to_string() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slug("quickstart, 16 ranks on 100 Gb/s"), "quickstart-16-ranks-on-100-gb-s");
        assert_eq!(slug("  "), "report");
        assert_eq!(slug("2D torus"), "2d-torus");
    }

    #[test]
    fn not_a_report_is_one_message() {
        let e = PlotData::from_json("{\"x\": 1}", "r.json").unwrap_err();
        assert!(e.starts_with("r.json is not a JSON report"), "{e}");
        let e = PlotData::from_json("name: x", "r.yaml").unwrap_err();
        assert!(e.contains("not a JSON report"), "{e}");
    }

    #[test]
    fn null_fields_drop_a_point() {
        let d = PlotData::from_json(
            r#"{"scenario": {"name": "n"}, "results": [
                {"algorithm": "ring", "ranks": 4, "bytes": 1024, "time_s": null},
                {"algorithm": "ring", "ranks": 4, "bytes": 2048, "time_s": 1e-6, "not_applicable": "no"},
                {"algorithm": "ring", "ranks": 4, "bytes": 4096, "time_s": 2e-6}]}"#,
            "r",
        )
        .unwrap();
        let t: Vec<_> = d.points.iter().map(PlotPoint::time).collect();
        assert_eq!(t, [None, None, Some(2e-6)]);
    }
}
