//! `run --gantt FILE.png`: one point's timeline as a picture. Every rank gets a row per
//! send port, a row per receive port and a row for its compute unit; a bar is a message
//! holding that port, or a reduction running on that unit.
//!
//! The bars come from the same [`Timeline`] as `run --trace`, so the port a message
//! shows on is the track it has in the Chrome trace.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::{Quantity, TickRange, format_value, nice_step};
use super::style::{self, Chart, Key, de, text};
use crate::runner;
use crate::scenario::{DataMode, Scenario};
use crate::timeline::Timeline;
use crate::units::fmt_bytes;

/// The most ranks a Gantt chart draws.
pub const MAX_RANKS: usize = 64;

/// Every interval is drawn at least this many pixels wide, so that short ones (a few
/// bytes reduced) stay visible; the legend says so.
const MIN_BAR_PX: i32 = 2;

/// Whether `s` and `path` make a Gantt chart: one point of at most [`MAX_RANKS`] ranks,
/// a `.png` or `.svg` file. Call before running, to refuse early.
pub fn check_gantt(s: &Scenario, path: &Path) -> Result<(), String> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    if !matches!(ext.as_deref(), Some("png" | "svg")) {
        return Err(format!("--gantt {}: the file must end in .png or .svg", path.display()));
    }
    let points = runner::points(s);
    if points.len() != 1 {
        return Err(format!(
            "--gantt draws a single point, but this run is a sweep of {} points ({} algorithm(s) x {} rank count(s) x {} size(s)); choose one with --algorithms, --ranks and --sizes",
            points.len(),
            s.algorithms.len(),
            s.ranks.len(),
            s.sizes.len()
        ));
    }
    if points[0].ranks > MAX_RANKS {
        return Err(format!(
            "--gantt draws at most {MAX_RANKS} ranks, this point has {}; use --trace for a timeline of a large run, or --ranks to pick fewer",
            points[0].ranks
        ));
    }
    Ok(())
}

/// Simulate the single point of `s` (timing only) and draw its Gantt chart into exactly
/// `path` (PNG or SVG by extension): the caller passes a temporary file it renames over
/// the target once whole (`files::Output::write`); messages name `shown`, the target.
pub fn write_gantt(s: &Scenario, path: &Path, shown: &Path) -> Result<(), String> {
    check_gantt(s, shown)?;
    let point = &runner::points(s)[0];
    // The timeline does not depend on the values; skip moving them.
    let mut timing = s.clone();
    timing.data.mode = DataMode::Off;
    let (r, timeline) = runner::run_point_timeline(&timing, point, false);
    if let Some(why) = &r.not_applicable {
        return Err(format!("cannot draw a Gantt chart: {} does not run here: {why}", r.algorithm));
    }
    if let Some(f) = r.failures.iter().find(|f| f.starts_with("simulation failed") || f.starts_with("cannot build")) {
        return Err(format!("cannot draw a Gantt chart: {f}"));
    }
    let Some(timeline) = timeline else {
        return Err(format!(
            "cannot draw a Gantt chart: the run has more than {} operations; use --trace and Perfetto",
            crate::timeline::MAX_INTERVALS
        ));
    };
    let chart = GanttChart::new(
        format!("Timeline: {}, P = {}, S = {}", r.algorithm, r.ranks, fmt_bytes(r.bytes)),
        s.name.clone(),
        r.ranks,
        r.time_s,
        &timeline,
    );
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg")) {
        style::draw_svg(&chart, path, shown)
    } else {
        style::draw_png(&chart, path, shown)
    }
}

/// What occupies a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Send,
    Recv,
    Compute,
}

const SEND: RGBColor = RGBColor(0x00, 0x50, 0x8C);
const RECV: RGBColor = RGBColor(0x56, 0xB4, 0xE9);
const COMPUTE: RGBColor = RGBColor(0xE6, 0x9F, 0x00);

impl Kind {
    fn color(self) -> RGBColor {
        match self {
            Kind::Send => SEND,
            Kind::Recv => RECV,
            Kind::Compute => COMPUTE,
        }
    }
}

/// A Gantt chart, laid out.
pub struct GanttChart {
    title: String,
    subtitle: String,
    ranks: usize,
    time: f64,
    send_rows: usize,
    recv_rows: usize,
    bars: Vec<Bar>,
    messages: usize,
    reductions: usize,
    row_px: u32,
}

/// One bar: a message on a port row, or a reduction.
#[derive(Clone, Copy, Debug)]
struct Bar {
    rank: usize,
    kind: Kind,
    /// Row within its kind (the port).
    row: usize,
    start: f64,
    end: f64,
    /// The other end of a message.
    peer: Option<usize>,
    bytes: u64,
}

impl Bar {
    /// What the bar says when it is wide enough: the peer, or the bytes reduced.
    fn label(&self) -> String {
        match (self.kind, self.peer) {
            (Kind::Send, Some(p)) => format!("to {p}"),
            (Kind::Recv, Some(p)) => format!("from {p}"),
            _ => format!("+{}", fmt_bytes(self.bytes)),
        }
    }
}

/// The most port rows a rank's chart shows that no message used.
const IDLE_ROWS: usize = 8;

impl GanttChart {
    fn new(title: String, subtitle: String, ranks: usize, time: f64, t: &Timeline) -> Self {
        // A row per port the topology gives (or, if unknown, per track used); of a
        // machine with more than IDLE_ROWS ports, only the rows that carry something
        // (`nics` may be 4294967295).
        let used_out = t.messages.iter().map(|m| m.out_port as usize + 1).max().unwrap_or(1);
        let used_in = t.messages.iter().map(|m| m.in_port as usize + 1).max().unwrap_or(1);
        let nics = t.nics.iter().map(|&n| n as usize).max().unwrap_or(0).min(IDLE_ROWS);
        let send_rows = used_out.max(nics).max(1);
        let recv_rows = used_in.max(nics).max(1);
        let mut bars = Vec::with_capacity(2 * t.messages.len() + t.computes.len());
        for m in &t.messages {
            let (start, end, bytes) = (m.start, m.end, m.bytes);
            bars.push(Bar {
                rank: m.src as usize,
                kind: Kind::Send,
                row: m.out_port as usize,
                start,
                end,
                peer: Some(m.dst as usize),
                bytes,
            });
            bars.push(Bar {
                rank: m.dst as usize,
                kind: Kind::Recv,
                row: m.in_port as usize,
                start,
                end,
                peer: Some(m.src as usize),
                bytes,
            });
        }
        bars.extend(t.computes.iter().map(|c| Bar {
            rank: c.rank as usize,
            kind: Kind::Compute,
            row: 0,
            start: c.start,
            end: c.end,
            peer: None,
            bytes: c.bytes,
        }));
        let rows = ranks * (send_rows + recv_rows + 1);
        let row_px = (840 / rows.max(1)).clamp(4, 22) as u32;
        GanttChart {
            title,
            subtitle,
            ranks,
            time,
            send_rows,
            recv_rows,
            bars,
            messages: t.messages.len(),
            reductions: t.computes.len(),
            row_px,
        }
    }

    fn per_rank(&self) -> usize {
        self.send_rows + self.recv_rows + 1
    }

    /// Plot-space height of one rank's group, rows plus a gap.
    fn group(&self) -> f64 {
        self.per_rank() as f64 + GAP
    }

    /// Plot-space y of the top of `row` of `kind` on `rank` (y grows upwards, rank 0 on top).
    fn row_top(&self, rank: usize, kind: Kind, row: usize) -> f64 {
        let within = match kind {
            Kind::Send => row,
            Kind::Recv => self.send_rows + row,
            Kind::Compute => self.send_rows + self.recv_rows,
        };
        self.ranks as f64 * self.group() - (rank as f64 * self.group() + GAP / 2.0 + within as f64)
    }

    fn row_label(&self, rank: usize, kind: Kind, row: usize) -> String {
        let what = match kind {
            Kind::Send if self.send_rows > 1 => format!("send {row}"),
            Kind::Send => "send".to_string(),
            Kind::Recv if self.recv_rows > 1 => format!("recv {row}"),
            Kind::Recv => "recv".to_string(),
            Kind::Compute => "compute".to_string(),
        };
        format!("rank {rank} {what}")
    }
}

const GAP: f64 = 0.6;
const WIDTH: u32 = 1200;

impl Chart for GanttChart {
    fn size(&self) -> (u32, u32) {
        let plot = (self.ranks as f64 * self.group() * self.row_px as f64).ceil() as u32;
        (WIDTH, style::HEADER + plot + 90)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let body = style::header(root, &self.title, &self.subtitle)?;
        let keys = vec![
            (Key::Box(SEND), "send port busy".to_string()),
            (Key::Box(RECV), "receive port busy".to_string()),
            (Key::Box(COMPUTE), "compute unit (reduce)".to_string()),
        ];
        let labels: Vec<String> = keys.iter().map(|k| k.1.clone()).collect();
        let lw = style::legend_width("rows of each rank", &labels).max(190);
        let (plot, panel) = body.split_horizontally(WIDTH - lw);

        // Y labels: every row when few ranks, else a rank number per group (thinned to stay legible).
        let detailed = self.ranks <= 8;
        let mut yticks: Vec<f64> = Vec::new();
        let mut ylabels: Vec<(f64, String)> = Vec::new();
        if detailed {
            for r in 0..self.ranks {
                let rows = (0..self.send_rows)
                    .map(|i| (Kind::Send, i))
                    .chain((0..self.recv_rows).map(|i| (Kind::Recv, i)))
                    .chain(std::iter::once((Kind::Compute, 0)));
                for (k, i) in rows {
                    let y = self.row_top(r, k, i) - 0.5;
                    yticks.push(y);
                    ylabels.push((y, self.row_label(r, k, i)));
                }
            }
        } else {
            let group_px = self.group() * self.row_px as f64;
            let every = (18.0 / group_px).ceil().max(1.0) as usize;
            for r in (0..self.ranks).step_by(every) {
                let y = self.row_top(r, Kind::Send, 0) - self.per_rank() as f64 / 2.0;
                yticks.push(y);
                ylabels.push((y, format!("rank {r}")));
            }
        }
        yticks.sort_by(f64::total_cmp);
        let ylabel =
            |v: &f64| ylabels.iter().find(|(y, _)| (y - v).abs() < 1e-6).map(|(_, l)| l.clone()).unwrap_or_default();
        let widest = ylabels.iter().map(|(_, l)| style::text_width(l, 13.0)).max().unwrap_or(40);

        let t_end = if self.time > 0.0 { self.time * 1.02 } else { 1e-9 };
        // A run of 0 s spans 1 ns: its ticks divide that, not 1 fs (a million ticks, each
        // drawn and labelled, which took minutes).
        let step = nice_step(if self.time > 0.0 { self.time.max(1e-15) } else { t_end } / 8.0);
        let xticks: Vec<f64> = (0..).map(|k| k as f64 * step).take_while(|&t| t <= t_end).collect();
        let xlabel = |v: &f64| format_value(Quantity::Time, *v);
        let top = self.ranks as f64 * self.group();
        let mut chart = ChartBuilder::on(&plot)
            .margin_top(8)
            .margin_right(20)
            .margin_left(10)
            .margin_bottom(4)
            .x_label_area_size(56)
            .y_label_area_size(widest + 16)
            .build_cartesian_2d(TickRange::new(0.0, t_end, xticks), TickRange::new(0.0, top, yticks))
            .map_err(de)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("simulated time")
            .x_label_formatter(&xlabel)
            .y_label_formatter(&ylabel)
            .x_label_style(text(14.0, &BLACK))
            .y_label_style(text(13.0, &BLACK))
            .axis_desc_style(text(16.0, &BLACK))
            .bold_line_style(RGBColor(225, 225, 225).stroke_width(1))
            .axis_style(RGBColor(90, 90, 90).stroke_width(1))
            .draw()
            .map_err(de)?;

        // Rank separators.
        for r in 1..self.ranks {
            let y = top - r as f64 * self.group();
            let a = chart.backend_coord(&(0.0, y));
            let b = chart.backend_coord(&(t_end, y));
            root.draw(&PathElement::new(vec![a, b], RGBColor(200, 200, 200).stroke_width(1))).map_err(de)?;
        }
        // Bars, in pixels; a bar hidden inside the last one drawn on its row is skipped.
        let mut last: std::collections::HashMap<(usize, u8, usize), (i32, i32)> = Default::default();
        let mut bars = self.bars.clone();
        bars.sort_by(|a, b| a.start.total_cmp(&b.start));
        let label_font = (f64::from(self.row_px) - 5.0).min(12.0);
        for bar in &bars {
            let (rank, kind, row) = (bar.rank, bar.kind, bar.row);
            let y0 = self.row_top(rank, kind, row);
            let p0 = chart.backend_coord(&(bar.start, y0));
            let p1 = chart.backend_coord(&(bar.end, y0 - 1.0));
            let (x0, mut x1) = (p0.0, p1.0.max(p0.0));
            if x1 - x0 >= 3 {
                x1 -= 1; // a hairline gap between back-to-back bars
            }
            // A reduction of a few bytes lasts a fraction of a pixel; it still happened.
            x1 = x1.max(x0 + MIN_BAR_PX);
            let key = (rank, kind as u8, row);
            if let Some(&(a, b)) = last.get(&key)
                && x0 >= a
                && x1 <= b
            {
                continue;
            }
            last.insert(key, (x0, x1));
            let pad = if self.row_px >= 8 { 1 } else { 0 };
            root.draw(&Rectangle::new([(x0, p0.1 + pad), (x1, p1.1 - pad)], kind.color().filled())).map_err(de)?;
            if label_font >= 9.0 {
                let label = bar.label();
                if style::text_width(&label, label_font) as i32 + 6 <= x1 - x0 {
                    let ink = if style::luminance(kind.color()) > 0.55 { BLACK } else { WHITE };
                    let st = text(label_font, &ink).pos(Pos::new(HPos::Center, VPos::Center));
                    root.draw_text(&label, &st, ((x0 + x1) / 2, (p0.1 + p1.1) / 2)).map_err(de)?;
                }
            }
        }

        let (_, ys_px) = chart.plotting_area().get_pixel_range();
        style::legend(&panel, root, "rows of each rank", &keys, ys_px.start)?;
        let (xs, _) = panel.get_pixel_range();
        let info = [
            format!("finishes at {}", format_value(Quantity::Time, self.time)),
            format!("{} messages", self.messages),
            format!("{} reductions", self.reductions),
            format!("{} send, {} receive port(s)", self.send_rows, self.recv_rows),
            format!("every interval at least {MIN_BAR_PX} px wide"),
        ];
        for (k, line) in info.iter().enumerate() {
            root.draw_text(line, &text(13.0, &style::GREY_TEXT), (xs.start + 8, ys_px.start + 120 + 20 * k as i32))
                .map_err(de)?;
        }
        Ok(())
    }
}
