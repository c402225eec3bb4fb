//! The spread of a point's time over the seeds of `repeat:`: a box per algorithm and
//! size, of every seed's time over the point's time without noise (or, without noise,
//! over its fastest seed).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::{Axis, Quantity};
use super::style::{self, Key, de};
use super::{PlotData, PlotPoint};
use crate::spread::percentile;

/// One box: an algorithm's seeds at one size, as ratios to its reference time.
#[derive(Clone, Debug)]
struct Whisker {
    style: usize,
    bytes: u64,
    /// min, 25th percentile, median, 75th percentile, max (nearest rank).
    five: [f64; 5],
}

/// Boxes of the slowdown over seeds against size, one per algorithm at each size.
#[derive(Clone, Debug)]
pub struct BoxChart {
    title: String,
    subtitle: String,
    x: Axis,
    y: Axis,
    sizes: Vec<u64>,
    boxes: Vec<Whisker>,
    labels: Vec<(usize, String)>,
}

/// A point's seeds as ratios to its time without noise (or its fastest seed).
fn ratios(q: &PlotPoint) -> Option<Vec<f64>> {
    let times = q.times_s.as_ref().filter(|t| !t.is_empty())?;
    let base = q.noise_free_time_s.unwrap_or_else(|| times.iter().copied().fold(f64::INFINITY, f64::min));
    let mut v: Vec<f64> = times.iter().map(|&t| t / base).filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then_some(v)
}

impl BoxChart {
    /// The chart of `d`'s points of `ranks` ranks that have seeds, if any.
    pub fn of(d: &PlotData, algos: &[String], ranks: usize) -> Option<BoxChart> {
        let mut boxes = Vec::new();
        let mut labels = Vec::new();
        for (i, a) in algos.iter().enumerate() {
            let mut any = false;
            for q in d.points.iter().filter(|q| &q.algorithm == a && q.ranks == ranks && q.time().is_some()) {
                let Some(v) = ratios(q) else { continue };
                let five = [v[0], percentile(&v, 25.0), percentile(&v, 50.0), percentile(&v, 75.0), v[v.len() - 1]];
                boxes.push(Whisker { style: i, bytes: q.bytes, five });
                any = true;
            }
            if any {
                labels.push((i, a.clone()));
            }
        }
        if boxes.is_empty() {
            return None;
        }
        let mut sizes: Vec<u64> = boxes.iter().map(|b| b.bytes).collect();
        sizes.sort_unstable();
        sizes.dedup();
        // Half a doubling of room either side, so the outer boxes fit.
        let xs: Vec<f64> = sizes
            .iter()
            .flat_map(|&s| [s as f64 / std::f64::consts::SQRT_2, s as f64 * std::f64::consts::SQRT_2])
            .collect();
        let mut ys: Vec<f64> = boxes.iter().flat_map(|b| [b.five[0], b.five[4]]).collect();
        ys.push(1.0);
        let x = Axis::fit(Quantity::Bytes, "message size per rank, S (bytes)", &xs)?;
        let y = Axis::fit(Quantity::Number, "slowdown: time / time without noise", &ys)?;
        let seeds = d.points.iter().filter_map(|q| q.times_s.as_ref().map(Vec::len)).max().unwrap_or(0);
        Some(BoxChart {
            title: format!("Spread over {seeds} seeds vs message size, P = {ranks}"),
            subtitle: format!("{}  ·  box: 25th to 75th percentile, bar: median, whiskers: min and max", d.name),
            x,
            y,
            sizes,
            boxes,
            labels,
        })
    }

    /// Draw it on `root`.
    pub fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let body = style::header(root, &self.title, &self.subtitle)?;
        let keys: Vec<(Key, String)> = self.labels.iter().map(|(i, l)| (Key::Series(*i, false), l.clone())).collect();
        let names: Vec<String> = keys.iter().map(|k| k.1.clone()).collect();
        let (w, _) = body.dim_in_pixel();
        let lw = style::legend_width("algorithm", &names).min(w / 3);
        let (plot, panel) = body.split_horizontally(w - lw);
        let (x, y) = (&self.x, &self.y);
        let chart = super::charts::framed(&plot, x, y)?;
        let px = |bytes: f64, v: f64| -> Option<(i32, i32)> {
            Some(chart.backend_coord(&(x.to_plot(bytes)?, y.to_plot(v)?)))
        };
        // The boxes of one size share the space of a doubling, centred on the size.
        let n = self.labels.len().max(1) as i32;
        let slot = |bytes: u64| -> Option<(i32, i32)> {
            let lo = px(bytes as f64 / 1.6, 1.0)?.0;
            let hi = px(bytes as f64 * 1.6, 1.0)?.0;
            Some((lo, ((hi - lo) / n).max(3)))
        };
        for b in &self.boxes {
            let Some((lo, width)) = slot(b.bytes) else { continue };
            let k = self.labels.iter().position(|(i, _)| *i == b.style).unwrap_or(0) as i32;
            let (left, right) = (lo + k * width + 1, lo + (k + 1) * width - 1);
            let mid = (left + right) / 2;
            let ys: Vec<i32> = b.five.iter().filter_map(|&v| px(b.bytes as f64, v).map(|p| p.1)).collect();
            let [y0, y25, y50, y75, y100] = ys[..] else { continue };
            let colour = style::color(b.style);
            root.draw(&PathElement::new(vec![(mid, y0), (mid, y100)], colour.stroke_width(1))).map_err(de)?;
            root.draw(&Rectangle::new([(left, y75), (right, y25)], colour.mix(0.35).filled())).map_err(de)?;
            root.draw(&Rectangle::new([(left, y75), (right, y25)], colour.stroke_width(1))).map_err(de)?;
            root.draw(&PathElement::new(vec![(left, y50), (right, y50)], colour.stroke_width(3))).map_err(de)?;
        }
        if let Some(t) = y.to_plot(1.0) {
            let l = chart.backend_coord(&(x.lo, t));
            let r = chart.backend_coord(&(x.hi, t));
            style::dashed_hline(root, l.0, r.0, l.1)?;
        }
        let _ = &self.sizes;
        let (_, ys_px) = chart.plotting_area().get_pixel_range();
        style::legend(&panel, root, "algorithm", &keys, ys_px.start)?;
        Ok(())
    }
}
