//! The report's charts: which ones a report has data for ([`all`]) and how a line
//! chart and the best-algorithm map are drawn.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::{Axis, Quantity, TickRange};
use super::style::{self, Chart, Key, de, text};
use super::{PlotData, PlotPoint};
use crate::collective::Collective;
use crate::scenario::units::fmt_bytes;

/// Canvas size of every report chart.
const SIZE: (u32, u32) = (1000, 600);

/// One line (or set of markers) of a chart, in data units.
#[derive(Clone, Debug)]
pub struct Series {
    /// Index of the algorithm in report order: its colour and marker.
    pub style: usize,
    /// Legend text.
    pub label: String,
    /// `(x, y)` in data units, in x order.
    pub points: Vec<(f64, f64)>,
}

/// A chart of series over two axes.
#[derive(Clone, Debug)]
pub struct LineChart {
    title: String,
    subtitle: String,
    x: Axis,
    y: Axis,
    series: Vec<Series>,
    /// Join the markers with lines.
    lines: bool,
    /// Draw `y = x` (the parity plot) with this legend label.
    diagonal: Option<String>,
    /// A dashed horizontal line at this y (data units) with its legend label.
    hline: Option<(f64, String)>,
}

/// Whether two series lie on each other: the same x, and y within a relative 1e-9
/// (a tie, like torus_2d and halving_doubling on a torus under the ideal model).
fn coincide(a: &Series, b: &Series) -> bool {
    a.points.len() == b.points.len()
        && !a.points.is_empty()
        && a.points
            .iter()
            .zip(&b.points)
            .all(|(p, q)| p.0 == q.0 && (p.1 - q.1).abs() <= 1e-9 * p.1.abs().max(q.1.abs()))
}

/// Which algorithm wins each (ranks, size) cell.
#[derive(Clone, Debug)]
pub struct MapChart {
    title: String,
    subtitle: String,
    sizes: Vec<u64>,
    ranks: Vec<usize>,
    /// `cells[r][s]`: the winner's series index, its lead over the runner-up
    /// (`time_2nd / time_best`, `None` when it ran alone) and the runner-up's index when
    /// the two tie (within a relative 1e-9); `None` when nothing ran.
    cells: Vec<Vec<Option<Cell>>>,
    algorithms: Vec<String>,
    /// The legend's title (`fastest`).
    legend: String,
}

/// A map cell: the winner's series index, its lead over the runner-up, and the
/// runner-up if it ties.
type Cell = (usize, Option<f64>, Option<usize>);

/// Times within this relative difference are a tie (summation order, not the algorithm).
const TIE: f64 = 1e-9;

/// Any chart of a report.
pub enum ReportChart {
    /// Series over two axes.
    Line(LineChart),
    /// The best-algorithm map.
    Map(MapChart),
    /// The spread over seeds ([`super::spread::BoxChart`]).
    Box(super::spread::BoxChart),
}

impl Chart for ReportChart {
    fn size(&self) -> (u32, u32) {
        match self {
            ReportChart::Line(_) | ReportChart::Box(_) => SIZE,
            // As tall as the grid (capped), and the legend, need.
            ReportChart::Map(m) => {
                let grid = m.ranks.len() as u32 * MAX_CELL.1 + 16 + 56 + 20;
                let legend = 30 + 22 * (m.algorithms.len() as u32 + 1) + 30;
                (SIZE.0, (style::HEADER + grid.max(legend)).clamp(300, SIZE.1))
            }
        }
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        match self {
            ReportChart::Line(c) => c.draw(root),
            ReportChart::Map(c) => c.draw(root),
            ReportChart::Box(c) => c.draw(root),
        }
    }
}

/// Algorithms in report order (each one's colour and marker index).
fn algorithms(d: &PlotData) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in &d.points {
        if !out.contains(&p.algorithm) {
            out.push(p.algorithm.clone());
        }
    }
    out
}

/// The (ranks, size) plane of `ompi_fixed`'s rows of collective `c`: each cell in the
/// colour of the algorithm Open MPI's fixed rules run there, with its time over the
/// fastest's.
fn ompi_loss_map(d: &PlotData, c: Collective, ranks: &[usize], sizes: &[u64]) -> Option<MapChart> {
    let rows: Vec<&PlotPoint> =
        d.points.iter().filter(|q| q.collective == c && q.selection.is_some() && q.time().is_some()).collect();
    // Rows of other collectives carry the collective in their name (`PlotData::by_collective`).
    let rows: Vec<&PlotPoint> =
        rows.into_iter().filter(|q| q.algorithm.rsplit(' ').next() == Some("ompi_fixed")).collect();
    if rows.len() < 2 {
        return None;
    }
    let mut picks: Vec<String> = Vec::new();
    let mut cells = vec![vec![None; sizes.len()]; ranks.len()];
    let mut worst: f64 = 0.0;
    for q in rows {
        let Some(sel) = &q.selection else { continue };
        let (Some(ri), Some(si)) = (ranks.iter().position(|&p| p == q.ranks), sizes.iter().position(|&b| b == q.bytes))
        else {
            continue;
        };
        let i = picks.iter().position(|a| *a == sel.selected).unwrap_or_else(|| {
            picks.push(sel.selected.clone());
            picks.len() - 1
        });
        // No ratio (the fastest took 0 s and the pick did not): the cell shows no number.
        let lead = sel.vs_best.map(|v| 1.0 + v);
        worst = worst.max(sel.vs_best.unwrap_or(0.0));
        cells[ri][si] = Some((i, lead, None));
    }
    Some(MapChart {
        title: match c {
            Collective::Allreduce => {
                format!("Open MPI {}'s fixed choice against the fastest", crate::select::ompi::VERSION)
            }
            _ => format!("Open MPI {}'s fixed {c} choice against the fastest", crate::select::ompi::VERSION),
        },
        subtitle: format!(
            "{}  ·  number in a cell: its time / the fastest time (1.00x: it picks the fastest); worst {:.2}x",
            d.name,
            1.0 + worst
        ),
        sizes: sizes.to_vec(),
        ranks: ranks.to_vec(),
        cells,
        algorithms: picks,
        legend: "Open MPI runs".to_string(),
    })
}

fn sorted<T: Ord + Copy>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = it.collect();
    v.sort();
    v.dedup();
    v
}

/// Series of `y(point)` against `x(point)` for every algorithm, over the points `keep` selects.
fn series_of(
    d: &PlotData,
    algos: &[String],
    keep: impl Fn(&PlotPoint) -> bool,
    x: impl Fn(&PlotPoint) -> Option<f64>,
    y: impl Fn(&PlotPoint) -> Option<f64>,
) -> Vec<Series> {
    let mut out = Vec::new();
    for (i, a) in algos.iter().enumerate() {
        let mut pts: Vec<(f64, f64)> = d
            .points
            .iter()
            .filter(|p| &p.algorithm == a && p.time().is_some() && keep(p))
            .filter_map(|p| Some((x(p)?, y(p)?)))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        if !pts.is_empty() {
            out.push(Series { style: i, label: a.clone(), points: pts });
        }
    }
    out
}

fn xs(series: &[Series]) -> Vec<f64> {
    series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect()
}
fn ys(series: &[Series]) -> Vec<f64> {
    series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect()
}

/// Distinct x values over all series.
fn distinct_x(series: &[Series]) -> usize {
    let mut v = xs(series);
    v.sort_by(f64::total_cmp);
    v.dedup();
    v.len()
}

/// A line chart of `series`, or `None` when there is nothing to draw.
pub(super) fn line(
    title: String,
    subtitle: String,
    (xq, xt): (Quantity, &str),
    (yq, yt): (Quantity, &str),
    series: Vec<Series>,
) -> Option<LineChart> {
    if series.is_empty() {
        return None;
    }
    let x = Axis::fit(xq, xt, &xs(&series))?;
    let y = Axis::fit(yq, yt, &ys(&series))?;
    Some(LineChart { title, subtitle, x, y, series, lines: true, diagonal: None, hline: None })
}

/// `c` with a dashed horizontal line at `y` (data units), labelled `label`.
pub(super) fn with_hline(mut c: LineChart, y: f64, label: &str) -> LineChart {
    c.hline = Some((y, label.to_string()));
    c
}

/// Per rank count that has both: the simulated bus bandwidth against size beside the
/// measured points `measured` (labelled by their `algorithm`, one series per log), file
/// suffix `busbw_vs_size_P{p}_measured`.
pub fn against_measured(d: &PlotData, measured: &[PlotPoint]) -> Vec<(String, ReportChart)> {
    let mut both = d.clone();
    both.points.extend(measured.iter().cloned());
    let algos = algorithms(&both);
    let ran = sorted(d.points.iter().filter(|p| p.time().is_some()).map(|p| p.ranks));
    let mut out = Vec::new();
    for p in ran {
        if !measured.iter().any(|q| q.ranks == p && q.time().is_some()) {
            continue;
        }
        let busbw = series_of(&both, &algos, |q| q.ranks == p, |q| Some(q.bytes as f64), |q| q.busbw_bps);
        if let Some(c) = line(
            format!("Bus bandwidth vs message size, P = {p}, against measurements"),
            format!("{}  ·  busbw = S/time · the collective's factor (nccl-tests)", d.name),
            (Quantity::Bytes, "message size per rank, S (bytes)"),
            (Quantity::Bandwidth, "bus bandwidth (bytes/s)"),
            busbw,
        ) {
            out.push((format!("busbw_vs_size_P{p}_measured"), ReportChart::Line(c)));
        }
    }
    out
}

/// What every chart builder reads: the report's points and the axes they span.
struct Ctx<'a> {
    d: &'a PlotData,
    /// Algorithms in report order.
    algos: Vec<String>,
    /// The points that ran.
    ran: Vec<&'a PlotPoint>,
    ranks: Vec<usize>,
    sizes: Vec<u64>,
}

/// The charts, one builder per kind, in a fixed order.
type Builder = fn(&Ctx, &mut Vec<(String, ReportChart)>);

/// Every chart `d` has data for, with its file-name suffix, in a fixed order.
pub fn all(d: &PlotData) -> Vec<(String, ReportChart)> {
    let algos = algorithms(d);
    let ran: Vec<&PlotPoint> = d.points.iter().filter(|p| p.time().is_some()).collect();
    let ranks = sorted(ran.iter().map(|p| p.ranks));
    let sizes = sorted(ran.iter().map(|p| p.bytes));
    let c = Ctx { d, algos, ran, ranks, sizes };
    let builders: [Builder; 9] = [
        size_charts,
        ranks_charts,
        parity_chart,
        best_map,
        ompi_maps,
        error_chart,
        spread_charts,
        slowdown_charts,
        level_charts,
    ];
    let mut out = Vec::new();
    for b in builders {
        b(&c, &mut out);
    }
    out
}

const SIZE_AXIS: (Quantity, &str) = (Quantity::Bytes, "message size per rank, S (bytes)");
const RANKS_AXIS: (Quantity, &str) = (Quantity::Ranks, "ranks, P");

/// Per rank count: time, busbw and efficiency against size.
fn size_charts(c: &Ctx, out: &mut Vec<(String, ReportChart)>) {
    let (d, algos, name) = (c.d, &c.algos, &c.d.name);
    // The collectives' names, for titles and the busbw factor.
    let only_allreduce = d.points.iter().all(|p| p.collective == crate::collective::Collective::Allreduce);
    let (what, factor) =
        if only_allreduce { ("Allreduce", "2(P-1)/P") } else { ("Collective", "the collective's factor") };
    for &p in &c.ranks {
        let at_p = |q: &PlotPoint| q.ranks == p;
        let size = |q: &PlotPoint| Some(q.bytes as f64);
        let time = series_of(d, algos, at_p, size, PlotPoint::time);
        if distinct_x(&time) < 2 {
            continue;
        }
        if let Some(c) = line(
            format!("{what} time vs message size, P = {p}"),
            name.clone(),
            SIZE_AXIS,
            (Quantity::Time, "simulated time"),
            time,
        ) {
            out.push((format!("time_vs_size_P{p}"), ReportChart::Line(c)));
        }
        let busbw = series_of(d, algos, at_p, size, |q| q.busbw_bps);
        if let Some(c) = line(
            format!("Bus bandwidth vs message size, P = {p}"),
            format!("{name}  ·  busbw = S/time · {factor} (nccl-tests)"),
            SIZE_AXIS,
            (Quantity::Bandwidth, "bus bandwidth (bytes/s)"),
            busbw,
        ) {
            out.push((format!("busbw_vs_size_P{p}"), ReportChart::Line(c)));
        }
        let eff = series_of(d, algos, at_p, size, |q| q.efficiency);
        if let Some(mut c) = line(
            format!("Efficiency against the lower bound, P = {p}"),
            format!("{name}  ·  efficiency = lower bound / simulated time"),
            SIZE_AXIS,
            (Quantity::Fraction, "efficiency (% of the lower bound)"),
            eff,
        ) {
            c.hline = Some((1.0, "lower bound".to_string()));
            out.push((format!("efficiency_vs_size_P{p}"), ReportChart::Line(c)));
        }
    }
}

/// Per size: time against ranks (up to four sizes: the smallest, the largest and two between).
fn ranks_charts(c: &Ctx, out: &mut Vec<(String, ReportChart)>) {
    let (d, algos, ranks, sizes, name) = (c.d, &c.algos, &c.ranks, &c.sizes, &c.d.name);
    if ranks.len() >= 2 {
        let mut picked: Vec<u64> = if sizes.len() <= 4 {
            sizes.clone()
        } else {
            let n = sizes.len() - 1;
            [0, n / 3, 2 * n / 3, n].iter().map(|&i| sizes[i]).collect()
        };
        picked.dedup();
        for &s in &picked {
            let series = series_of(d, algos, |q| q.bytes == s, |q| Some(q.ranks as f64), PlotPoint::time);
            if distinct_x(&series) < 2 {
                continue;
            }
            if let Some(c) = line(
                format!("Allreduce time vs ranks, S = {}", fmt_bytes(s)),
                name.clone(),
                RANKS_AXIS,
                (Quantity::Time, "simulated time"),
                series,
            ) {
                let short = crate::scenario::units::fmt_size_short(s).replace('.', "_");
                out.push((format!("time_vs_ranks_S{short}"), ReportChart::Line(c)));
            }
        }
    }
}

/// Simulated against closed form, every point.
fn parity_chart(c: &Ctx, out: &mut Vec<(String, ReportChart)>) {
    let (d, algos, ran, name) = (c.d, &c.algos, &c.ran, &c.d.name);
    let parity = series_of(d, algos, |_| true, |q| q.closed_form_s, PlotPoint::time);
    if let (Some(x), Some(y)) = (
        Axis::union(Quantity::Time, "closed-form time (cost model)", &xs(&parity), &ys(&parity)),
        Axis::union(Quantity::Time, "simulated time", &xs(&parity), &ys(&parity)),
    ) {
        let worst = d
            .points
            .iter()
            .filter(|p| p.time().is_some())
            .filter_map(|p| Some((p.time()? / p.closed_form_s? - 1.0).abs()))
            .filter(|e| e.is_finite())
            .fold(0.0, f64::max);
        // Algorithms that ran but have no closed form on this machine are named, not hidden.
        let without: Vec<&str> = algos
            .iter()
            .filter(|a| ran.iter().any(|p| &p.algorithm == *a) && !parity.iter().any(|s| &s.label == *a))
            .map(String::as_str)
            .collect();
        let missing = match without.len() {
            0 => String::new(),
            1..=3 => format!("  ·  no closed form: {}", without.join(", ")),
            n => format!("  ·  no closed form: {} and {} more", without[..2].join(", "), n - 2),
        };
        out.push((
            "sim_vs_closed_form".to_string(),
            ReportChart::Line(LineChart {
                title: format!(
                    "Simulated vs closed-form time ({} points)",
                    parity.iter().map(|s| s.points.len()).sum::<usize>()
                ),
                subtitle: format!("{name}  ·  worst relative difference {worst:.1e}{missing}"),
                x,
                y,
                series: parity,
                lines: false,
                diagonal: Some("y = x (exact agreement)".to_string()),
                hline: None,
            }),
        ));
    }
}

/// Best algorithm over the (ranks, size) plane.
fn best_map(c: &Ctx, out: &mut Vec<(String, ReportChart)>) {
    let (d, algos, ran, ranks, sizes, name) = (c.d, &c.algos, &c.ran, &c.ranks, &c.sizes, &c.d.name);
    let ran_algos = algos.iter().filter(|a| ran.iter().any(|p| &p.algorithm == *a)).count();
    if ranks.len() * sizes.len() >= 2 && ran_algos >= 2 {
        // A selector's row stands for the algorithm it picked, which may be one the
        // scenario does not list (`auto` tries every algorithm): the map names it too, as
        // the table's and the JSON's best algorithm do.
        let mut map_algos = algos.clone();
        for q in &d.points {
            if let Some(sel) = &q.selection
                && q.time().is_some()
                && !map_algos.contains(&sel.selected)
            {
                map_algos.push(sel.selected.clone());
            }
        }
        let mut cells = vec![vec![None; sizes.len()]; ranks.len()];
        let mut any = false;
        for (ri, &p) in ranks.iter().enumerate() {
            for (si, &s) in sizes.iter().enumerate() {
                let mut times: Vec<(f64, usize)> = d
                    .points
                    .iter()
                    .filter(|q| q.ranks == p && q.bytes == s && q.failures.is_empty())
                    .filter_map(|q| {
                        let name = match &q.selection {
                            Some(sel) => &sel.selected,
                            None if crate::select::is_selector(&q.algorithm) => return None,
                            None => &q.algorithm,
                        };
                        Some((q.time()?, map_algos.iter().position(|a| a == name)?))
                    })
                    .collect();
                // Fastest first; ties go to the algorithm listed first. A selector's pick
                // that is also listed appears twice with one time: once is enough.
                times.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                let mut seen = Vec::new();
                times.retain(|&(_, i)| {
                    let first = !seen.contains(&i);
                    seen.push(i);
                    first
                });
                if let Some(&(t, i)) = times.first() {
                    let lead = times.get(1).map(|&(t2, _)| t2 / t);
                    let tie = times.get(1).filter(|&&(t2, _)| t2 <= t * (1.0 + TIE)).map(|&(_, j)| j);
                    // A tie is shown in list order, whichever rounding put first.
                    cells[ri][si] = Some(match tie {
                        Some(j) => (i.min(j), lead, Some(i.max(j))),
                        None => (i, lead, None),
                    });
                    any = true;
                }
            }
        }
        if any {
            out.push((
                "best_algorithm".to_string(),
                ReportChart::Map(MapChart {
                    title: "Fastest algorithm by ranks and message size".to_string(),
                    subtitle: format!(
                        "{name}  ·  number in a cell: runner-up time / fastest time; a split cell: a tie"
                    ),
                    sizes: sizes.clone(),
                    ranks: ranks.clone(),
                    cells,
                    algorithms: map_algos,
                    legend: "fastest".to_string(),
                }),
            ));
        }
    }
}

/// Where Open MPI's fixed rules lose to the fastest: its pick and its time over the best.
fn ompi_maps(c: &Ctx, out: &mut Vec<(String, ReportChart)>) {
    let (d, ranks, sizes) = (c.d, &c.ranks, &c.sizes);
    for c in Collective::ALL {
        if let Some(map) = ompi_loss_map(d, c, ranks, sizes) {
            let file = match c {
                Collective::Allreduce => "ompi_fixed_vs_best".to_string(),
                _ => format!("{c}_ompi_fixed_vs_best"),
            };
            out.push((file, ReportChart::Map(map)));
        }
    }
}

/// Numerical error against ranks, at the largest size that has errors.
fn error_chart(c: &Ctx, out: &mut Vec<(String, ReportChart)>) {
    let (d, algos, ranks, sizes, name) = (c.d, &c.algos, &c.ranks, &c.sizes, &c.d.name);
    if ranks.len() >= 2 {
        let with_err = |s: u64| {
            series_of(d, algos, |q| q.bytes == s, |q| Some(q.ranks as f64), |q| q.max_abs_error.filter(|&e| e > 0.0))
        };
        if let Some((s, series)) =
            sizes.iter().rev().map(|&s| (s, with_err(s))).find(|(_, series)| distinct_x(series) >= 2)
        {
            let zeros = d.points.iter().any(|q| q.bytes == s && q.time().is_some() && q.max_abs_error == Some(0.0));
            let note = if zeros { "  ·  exact results (error 0) not shown" } else { "" };
            if let Some(c) = line(
                format!("Numerical error vs ranks, S = {}", fmt_bytes(s)),
                format!("{name}  ·  worst |result - exact| over all ranks and elements{note}"),
                RANKS_AXIS,
                (Quantity::Number, "max absolute error"),
                series,
            ) {
                let short = crate::scenario::units::fmt_size_short(s).replace('.', "_");
                out.push((format!("error_vs_ranks_S{short}"), ReportChart::Line(c)));
            }
        }
    }
}

/// With `repeat:`: the spread of every algorithm's time over the seeds, against size
/// (one chart per rank count; [`super::spread::BoxChart`]).
fn spread_charts(c: &Ctx, out: &mut Vec<(String, ReportChart)>) {
    for &p in &c.ranks {
        if let Some(b) = super::spread::BoxChart::of(c.d, &c.algos, p) {
            out.push((format!("spread_vs_size_P{p}"), ReportChart::Box(b)));
        }
    }
}

/// The largest size that ran at `p` ranks: where the noise charts are drawn.
fn largest_size(c: &Ctx, p: usize) -> Option<u64> {
    c.sizes.iter().rev().copied().find(|&s| c.ran.iter().any(|q| q.ranks == p && q.bytes == s))
}

/// With `noise:` and `repeat:`: every seed's slowdown against its skew, at the largest
/// size of each rank count.
fn slowdown_charts(c: &Ctx, out: &mut Vec<(String, ReportChart)>) {
    for &p in &c.ranks {
        let Some(s) = largest_size(c, p) else { continue };
        let mut series = Vec::new();
        for (i, a) in c.algos.iter().enumerate() {
            let Some(q) = c.ran.iter().find(|q| &q.algorithm == a && q.ranks == p && q.bytes == s) else { continue };
            let (Some(times), Some(skews), Some(free)) = (&q.times_s, &q.skews_s, q.noise_free_time_s) else {
                continue;
            };
            let mut points: Vec<(f64, f64)> = skews
                .iter()
                .zip(times)
                .map(|(&k, &t)| (k, t / free))
                .filter(|(k, y)| *k > 0.0 && y.is_finite())
                .collect();
            points.sort_by(|x, y| x.0.total_cmp(&y.0));
            if !points.is_empty() {
                series.push(Series { style: i, label: a.clone(), points });
            }
        }
        if let Some(mut chart) = line(
            format!("Slowdown vs skew, P = {p}, S = {}", fmt_bytes(s)),
            format!("{}  ·  one marker per seed: time / time without noise, against the latest rank's start", c.d.name),
            (Quantity::Time, "skew: the latest rank's start"),
            (Quantity::Number, "slowdown (time / noise-free time)"),
            series,
        ) {
            chart.lines = false;
            out.push((format!("slowdown_vs_skew_P{p}"), ReportChart::Line(chart)));
        }
    }
}

/// With `noise.levels`: every algorithm's mean slowdown against the noise level, at the
/// largest size of each rank count.
fn level_charts(c: &Ctx, out: &mut Vec<(String, ReportChart)>) {
    for &p in &c.ranks {
        let Some(s) = largest_size(c, p) else { continue };
        let mut series = Vec::new();
        for (i, a) in c.algos.iter().enumerate() {
            let Some(q) = c.ran.iter().find(|q| &q.algorithm == a && q.ranks == p && q.bytes == s) else { continue };
            let Some(levels) = &q.noise_levels else { continue };
            let mut points: Vec<(f64, f64)> =
                levels.iter().filter_map(|l| Some((l.level, l.slowdown?))).filter(|(_, y)| y.is_finite()).collect();
            points.sort_by(|x, y| x.0.total_cmp(&y.0));
            if !points.is_empty() {
                series.push(Series { style: i, label: a.clone(), points });
            }
        }
        if let Some(chart) = line(
            format!("Slowdown vs noise level, P = {p}, S = {}", fmt_bytes(s)),
            format!(
                "{}  ·  mean time over the seeds / time without noise; level multiplies skew and OS detours",
                c.d.name
            ),
            (Quantity::Number, "noise level (multiplier of the skew and of the OS detours' duration)"),
            (Quantity::Number, "slowdown (mean time / noise-free time)"),
            series,
        ) {
            out.push((format!("slowdown_vs_noise_P{p}"), ReportChart::Line(with_hline(chart, 1.0, "no noise"))));
        }
    }
}

/// Width of the y tick labels of `ax`.
fn y_label_width(ax: &Axis) -> u32 {
    ax.ticks.iter().map(|&t| style::text_width(&ax.label(t), TICK_FONT)).max().unwrap_or(30)
}

/// The plotting area of a chart on axes `x` and `y`: margins, tick labels, axis titles
/// and the grid drawn, ready for the data (line charts and the spread's boxes alike).
pub(super) fn framed<'a, DB: DrawingBackend>(
    plot: &'a DrawingArea<DB, Shift>,
    x: &Axis,
    y: &Axis,
) -> Result<ChartContext<'a, DB, Cartesian2d<TickRange, TickRange>>, String> {
    let mut chart = ChartBuilder::on(plot)
        .margin_top(10)
        .margin_right(20)
        .margin_left(10)
        .margin_bottom(6)
        .x_label_area_size(56)
        .y_label_area_size(y_label_width(y) + 44)
        .build_cartesian_2d(x.range(), y.range())
        .map_err(de)?;
    let xf = |v: &f64| x.label(*v);
    let yf = |v: &f64| y.label(*v);
    chart
        .configure_mesh()
        .x_desc(x.display_title())
        .y_desc(y.display_title())
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .label_style(text(TICK_FONT, &BLACK))
        .axis_desc_style(text(DESC_FONT, &BLACK))
        .bold_line_style(RGBColor(215, 215, 215).stroke_width(1))
        .light_line_style(RGBColor(240, 240, 240).stroke_width(1))
        .axis_style(RGBColor(90, 90, 90).stroke_width(1))
        .draw()
        .map_err(de)?;
    Ok(chart)
}

/// Largest cell of the best-algorithm map, pixels.
const MAX_CELL: (u32, u32) = (190, 110);
const TICK_FONT: f64 = 14.0;
const DESC_FONT: f64 = 16.0;

impl LineChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let body = style::header(root, &self.title, &self.subtitle)?;
        // A series on top of an earlier one hides it: say so in the legend.
        let mut keys: Vec<(Key, String)> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let label = match self.series[..i].iter().find(|t| coincide(t, s)) {
                    Some(t) => format!("{} (= {})", s.label, t.label),
                    None => s.label.clone(),
                };
                (Key::Series(s.style, self.lines), label)
            })
            .collect();
        if let Some(d) = &self.diagonal {
            keys.push((Key::Reference, d.clone()));
        }
        if let Some((_, l)) = &self.hline {
            keys.push((Key::Reference, l.clone()));
        }
        let labels: Vec<String> = keys.iter().map(|k| k.1.clone()).collect();
        let (w, _) = body.dim_in_pixel();
        let lw = style::legend_width("algorithm", &labels).min(w / 3);
        let (plot, panel) = body.split_horizontally(w - lw);

        let x = &self.x;
        let y = &self.y;
        let chart = framed(&plot, x, y)?;

        let to_px = |(vx, vy): (f64, f64)| -> Option<(i32, i32)> {
            Some(chart.backend_coord(&(x.to_plot(vx)?, y.to_plot(vy)?)))
        };
        // Reference lines under the data.
        if self.diagonal.is_some() {
            let a = x.lo.max(y.lo);
            let b = x.hi.min(y.hi);
            if a < b {
                style::dashed(root, chart.backend_coord(&(a, a)), chart.backend_coord(&(b, b)))?;
            }
        }
        if let Some((v, _)) = &self.hline
            && let Some(t) = y.to_plot(*v)
            && t >= y.lo
            && t <= y.hi
        {
            let l = chart.backend_coord(&(x.lo, t));
            let r = chart.backend_coord(&(x.hi, t));
            style::dashed_hline(root, l.0, r.0, l.1)?;
        }
        if self.lines {
            for (i, s) in self.series.iter().enumerate() {
                let pts: Vec<(i32, i32)> = s.points.iter().filter_map(|&p| to_px(p)).collect();
                // A line that a later series covers is drawn wider, as a halo around it.
                let hidden = self.series[i + 1..].iter().any(|t| coincide(s, t));
                let width = if hidden { 6 } else { 2 };
                if pts.len() >= 2 {
                    root.draw(&PathElement::new(pts, style::color(s.style).stroke_width(width))).map_err(de)?;
                }
            }
        }
        for s in &self.series {
            for &p in &s.points {
                if let Some(px) = to_px(p) {
                    style::draw_marker(root, px, s.style, 5.0)?;
                }
            }
        }
        let (_, ys_px) = chart.plotting_area().get_pixel_range();
        style::legend(&panel, root, "algorithm", &keys, ys_px.start)?;
        Ok(())
    }
}

impl MapChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let body = style::header(root, &self.title, &self.subtitle)?;
        let mut winners: Vec<usize> =
            self.cells.iter().flatten().flatten().flat_map(|c| std::iter::once(c.0).chain(c.2)).collect();
        winners.sort();
        winners.dedup();
        let mut keys: Vec<(Key, String)> =
            winners.iter().map(|&i| (Key::Swatch(i), self.algorithms[i].clone())).collect();
        if self.cells.iter().flatten().any(Option::is_none) {
            keys.push((Key::Box(RGBColor(235, 235, 235)), "nothing ran".to_string()));
        }
        let labels: Vec<String> = keys.iter().map(|k| k.1.clone()).collect();
        let (w, _) = body.dim_in_pixel();
        let lw = style::legend_width(&self.legend, &labels).min(w / 3);
        let (plot, panel) = body.split_horizontally(w - lw);

        let (ns, nr) = (self.sizes.len(), self.ranks.len());
        let xt: Vec<f64> = (0..ns).map(|i| i as f64 + 0.5).collect();
        let yt: Vec<f64> = (0..nr).map(|i| i as f64 + 0.5).collect();
        let size_label = |v: &f64| self.sizes.get(v.floor() as usize).map(|&s| fmt_bytes(s)).unwrap_or_default();
        let rank_label = |v: &f64| self.ranks.get(v.floor() as usize).map(|r| r.to_string()).unwrap_or_default();
        let widest = self.ranks.iter().map(|r| style::text_width(&r.to_string(), TICK_FONT)).max().unwrap_or(20);
        // Cells no larger than MAX_CELL: a short sweep is a compact grid, centred.
        let (pw, ph) = plot.dim_in_pixel();
        let (y_area, x_area) = (widest + 44, 56);
        let inner_w = pw.saturating_sub(30 + y_area);
        let inner_h = ph.saturating_sub(16 + x_area);
        let spare_w = inner_w.saturating_sub(MAX_CELL.0 * ns as u32);
        let spare_h = inner_h.saturating_sub(MAX_CELL.1 * nr as u32);
        let mut chart = ChartBuilder::on(&plot)
            .margin_top(10 + spare_h / 2)
            .margin_right(20 + spare_w / 2)
            .margin_left(10 + spare_w / 2)
            .margin_bottom(6 + spare_h / 2)
            .x_label_area_size(x_area)
            .y_label_area_size(y_area)
            .build_cartesian_2d(TickRange::new(0.0, ns as f64, xt), TickRange::new(0.0, nr as f64, yt))
            .map_err(de)?;
        // Too many sizes for every label: show every k-th.
        let every = ns.div_ceil(10).max(1);
        let size_label_sparse = |v: &f64| {
            let i = v.floor() as usize;
            if i.is_multiple_of(every) { size_label(v) } else { String::new() }
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("message size per rank, S (bytes)")
            .y_desc("ranks, P")
            .x_label_formatter(&size_label_sparse)
            .y_label_formatter(&rank_label)
            .label_style(text(TICK_FONT, &BLACK))
            .axis_desc_style(text(DESC_FONT, &BLACK))
            .axis_style(RGBColor(90, 90, 90).stroke_width(1))
            .draw()
            .map_err(de)?;
        for (ri, row) in self.cells.iter().enumerate() {
            for (si, cell) in row.iter().enumerate() {
                let a = chart.backend_coord(&(si as f64, ri as f64 + 1.0));
                let b = chart.backend_coord(&(si as f64 + 1.0, ri as f64));
                let fill = match cell {
                    Some((i, _, _)) => style::color(*i),
                    None => RGBColor(235, 235, 235),
                };
                root.draw(&Rectangle::new([a, b], fill.filled())).map_err(de)?;
                // A tie: the right half in the other winner's colour.
                if let Some((_, _, Some(j))) = cell {
                    let mid = ((a.0 + b.0) / 2, a.1);
                    root.draw(&Rectangle::new([mid, b], style::color(*j).filled())).map_err(de)?;
                }
                root.draw(&Rectangle::new([a, b], WHITE.stroke_width(2))).map_err(de)?;
                let Some((i, lead, tie)) = cell else { continue };
                let (cw, ch) = (b.0 - a.0, b.1 - a.1);
                let c = ((a.0 + b.0) / 2, (a.1 + b.1) / 2);
                let ink = if style::luminance(fill) > 0.55 { BLACK } else { WHITE };
                let lead = match (tie, lead) {
                    (Some(_), _) => "tie".to_string(),
                    (None, Some(l)) => format!("{l:.2}x"),
                    (None, None) => String::new(),
                };
                let name = &self.algorithms[*i];
                let fs = 13.0;
                if ch >= 56 && cw >= 8 + style::text_width(name, fs) as i32 {
                    style::draw_marker_on_fill(root, (c.0, c.1 - 18), *i, 6.0)?;
                    let st = text(fs, &ink).pos(Pos::new(HPos::Center, VPos::Center));
                    root.draw_text(name, &st, (c.0, c.1 + 2)).map_err(de)?;
                    root.draw_text(&lead, &st, (c.0, c.1 + 19)).map_err(de)?;
                } else if ch >= 36 && cw >= 8 + style::text_width(&lead, fs) as i32 {
                    style::draw_marker_on_fill(root, (c.0, c.1 - 9), *i, 6.0)?;
                    let st = text(fs, &ink).pos(Pos::new(HPos::Center, VPos::Center));
                    root.draw_text(&lead, &st, (c.0, c.1 + 10)).map_err(de)?;
                } else if ch >= 10 && cw >= 10 {
                    style::draw_marker_on_fill(root, c, *i, (ch.min(cw) as f64 / 3.0).min(6.0))?;
                }
            }
        }
        let (_, ys_px) = chart.plotting_area().get_pixel_range();
        style::legend(&panel, root, &self.legend, &keys, ys_px.start)?;
        Ok(())
    }
}

/// Whether an axis is logarithmic (for tests).
#[cfg(test)]
fn is_log(ax: &Axis) -> bool {
    ax.scale != super::axis::Scale::Linear
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(a: &str, ranks: usize, bytes: u64, t: f64) -> PlotPoint {
        PlotPoint {
            algorithm: a.to_string(),
            ranks,
            bytes,
            time_s: Some(t),
            closed_form_s: Some(t),
            efficiency: Some(0.5),
            busbw_bps: Some(bytes as f64 / t),
            max_abs_error: Some(1e-6 * ranks as f64),
            ..Default::default()
        }
    }

    fn names(d: &PlotData) -> Vec<String> {
        all(d).into_iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn a_sweep_has_every_chart() {
        let mut points = Vec::new();
        for p in [4, 8] {
            for s in [1024, 1 << 20] {
                for a in ["ring", "star"] {
                    points.push(pt(a, p, s, 1e-6 * s as f64 / 1024.0 * if a == "ring" { 1.0 } else { 2.0 }));
                }
            }
        }
        let d = PlotData { name: "t".into(), points };
        assert_eq!(
            names(&d),
            [
                "time_vs_size_P4",
                "busbw_vs_size_P4",
                "efficiency_vs_size_P4",
                "time_vs_size_P8",
                "busbw_vs_size_P8",
                "efficiency_vs_size_P8",
                "time_vs_ranks_S1KiB",
                "time_vs_ranks_S1MiB",
                "sim_vs_closed_form",
                "best_algorithm",
                "error_vs_ranks_S1MiB",
            ]
        );
        let Some((_, ReportChart::Line(c))) = all(&d).into_iter().next() else { panic!() };
        assert!(is_log(&c.x) && is_log(&c.y));
    }

    /// `auto` picked `direct`, which the scenario does not list: the map shows it where
    /// it is fastest, as the table does, rather than the fastest listed algorithm.
    #[test]
    fn the_map_shows_a_selectors_pick() {
        let mut points = Vec::new();
        for s in [1024, 1 << 20] {
            points.push(pt("halving_doubling", 16, s, 2e-6));
            points.push(pt("ring", 16, s, 3e-6));
            let mut auto = pt("auto", 16, s, if s == 1024 { 1e-6 } else { 2e-6 });
            let selected = if s == 1024 { "direct" } else { "halving_doubling" };
            auto.selection = Some(crate::select::Selection { selected: selected.into(), ..Default::default() });
            points.push(auto);
        }
        let d = PlotData { name: "t".into(), points };
        let map = all(&d).into_iter().find_map(|(n, c)| match c {
            ReportChart::Map(m) if n == "best_algorithm" => Some(m),
            _ => None,
        });
        let map = map.expect("a best-algorithm map");
        let shown = |si: usize| map.cells[0][si].map(|(i, _, tie)| (map.algorithms[i].clone(), tie));
        assert_eq!(shown(0), Some(("direct".to_string(), None)));
        // The pick that is also listed is one contender, not a tie with itself.
        assert_eq!(shown(1), Some(("halving_doubling".to_string(), None)));
    }

    #[test]
    fn one_point_has_only_the_parity_plot_and_not_applicable_points_drop_out() {
        let mut na = pt("mesh_2d", 4, 1024, 1.0);
        na.not_applicable = Some("needs 2 NICs".into());
        let d = PlotData { name: "t".into(), points: vec![pt("ring", 4, 1024, 1e-6), na] };
        assert_eq!(names(&d), ["sim_vs_closed_form"]);
    }
}
