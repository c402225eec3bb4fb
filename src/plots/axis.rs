//! Axes: what a value is (bytes, ranks, time, ...), whether it is drawn on a log scale,
//! the plotted range and human tick labels (`4 KiB`, `1 MiB`, `10 us`, `12.5 GB/s`).
//!
//! Charts plot transformed values (`log2` of bytes and ranks, `log10` of times that span
//! decades) on a linear plotters axis with explicit tick positions, so every label is
//! one we chose.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

use crate::units::{fmt_bandwidth, fmt_bytes, fmt_time};

/// A linear plotters axis over `lo..hi` whose grid lines are exactly the ticks we give:
/// `bold` (labelled) and `light` (grid only).
#[derive(Clone, Debug)]
pub struct TickRange {
    /// Start of the range.
    pub lo: f64,
    /// End of the range.
    pub hi: f64,
    /// Labelled ticks.
    pub bold: Vec<f64>,
    /// Unlabelled grid lines.
    pub light: Vec<f64>,
}

impl TickRange {
    /// A range with labelled ticks and no light lines.
    pub fn new(lo: f64, hi: f64, bold: Vec<f64>) -> Self {
        TickRange { lo, hi, bold, light: Vec::new() }
    }
}

impl Ranged for TickRange {
    // Labels always come from our formatter; the default is never used.
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        if self.hi == self.lo {
            return (limit.0 + limit.1) / 2;
        }
        let f = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (f64::from(limit.1 - limit.0) * f).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() { self.light.clone() } else { self.bold.clone() }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// What an axis measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// Bytes per rank (always log2).
    Bytes,
    /// Rank counts (always log2).
    Ranks,
    /// Seconds.
    Time,
    /// Bytes per second.
    Bandwidth,
    /// A fraction shown as a percentage (efficiency), linear from 0.
    Fraction,
    /// A plain number (numerical error).
    Number,
}

/// How values map onto the axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// `log2 v`.
    Log2,
    /// `log10 v`.
    Log10,
    /// `v`.
    Linear,
}

/// One axis of a chart, in transformed coordinates.
#[derive(Clone, Debug)]
pub struct Axis {
    /// Axis title with its unit.
    pub title: String,
    /// What it measures.
    pub q: Quantity,
    /// How values map.
    pub scale: Scale,
    /// Plotted range, transformed.
    pub lo: f64,
    /// Plotted range, transformed.
    pub hi: f64,
    /// Labelled ticks, transformed.
    pub ticks: Vec<f64>,
    /// Unlabelled grid lines, transformed.
    pub minor: Vec<f64>,
}

const MAX_TICKS: usize = 8;

impl Axis {
    /// Fit an axis to `values` (non-positive values are ignored on log scales).
    /// `None` when there is nothing to show.
    pub fn fit(q: Quantity, title: &str, values: &[f64]) -> Option<Axis> {
        let vals: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let pos: Vec<f64> = vals.iter().copied().filter(|&v| v > 0.0).collect();
        let (min, max) = min_max(&pos)?;
        let scale = match q {
            Quantity::Bytes | Quantity::Ranks => Scale::Log2,
            Quantity::Fraction => Scale::Linear,
            Quantity::Time | Quantity::Bandwidth | Quantity::Number => {
                if max / min >= 10.0 {
                    Scale::Log10
                } else {
                    Scale::Linear
                }
            }
        };
        let mut ax =
            Axis { title: title.to_string(), q, scale, lo: 0.0, hi: 0.0, ticks: Vec::new(), minor: Vec::new() };
        match scale {
            Scale::Log2 => {
                let (a, b) = (min.log2(), max.log2());
                let pad = if b - a < 1e-9 { 1.0 } else { 0.06 * (b - a) };
                ax.lo = a - pad;
                ax.hi = b + pad;
                let mut distinct: Vec<f64> = pos.clone();
                distinct.sort_by(f64::total_cmp);
                distinct.dedup();
                if q == Quantity::Ranks && distinct.len() <= 12 {
                    ax.ticks = distinct.iter().map(|v| v.log2()).collect();
                } else {
                    let (lo, hi) = (ax.lo.ceil() as i64, ax.hi.floor() as i64);
                    let step = [1, 2, 4, 10, 20].into_iter().find(|s| (hi - lo) / s < MAX_TICKS as i64).unwrap_or(40);
                    ax.ticks = (lo..=hi).filter(|k| k.rem_euclid(step) == 0).map(|k| k as f64).collect();
                    if ax.ticks.len() < 2 {
                        ax.ticks = distinct.iter().map(|v| v.log2()).collect();
                    }
                    ax.minor = (lo..=hi).map(|k| k as f64).filter(|k| !ax.ticks.contains(k)).collect();
                }
            }
            Scale::Log10 => {
                let (a, b) = (min.log10(), max.log10());
                let pad = 0.05 * (b - a);
                ax.lo = a - pad;
                ax.hi = b + pad;
                let (d0, d1) = (ax.lo.floor() as i32, ax.hi.ceil() as i32);
                let in_range = |v: &f64| *v >= ax.lo && *v <= ax.hi;
                let at = |mantissas: &[f64], step: i32| -> Vec<f64> {
                    (d0..=d1)
                        .filter(|d| d.rem_euclid(step) == 0)
                        .flat_map(|d| mantissas.iter().map(move |m| (m * 10f64.powi(d)).log10()))
                        .filter(in_range)
                        .collect()
                };
                let mut ticks = Vec::new();
                for (mantissas, step) in
                    [(&[1.0, 2.0, 5.0][..], 1), (&[1.0][..], 1), (&[1.0][..], 2), (&[1.0][..], 3), (&[1.0][..], 5)]
                {
                    ticks = at(mantissas, step);
                    if ticks.len() <= MAX_TICKS {
                        break;
                    }
                }
                if ticks.len() < 3 {
                    let fine = at(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 1);
                    if fine.len() <= 10 {
                        ticks = fine;
                    }
                }
                let all = at(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 1);
                ax.minor = all.into_iter().filter(|v| !ticks.iter().any(|t| (t - v).abs() < 1e-9)).collect();
                ax.ticks = ticks;
            }
            Scale::Linear => {
                let (vmin, vmax) = min_max(&vals)?;
                let (a, mut b) = if q == Quantity::Fraction { (0.0, vmax.max(1.0)) } else { (vmin.min(0.0), vmax) };
                if b - a <= 0.0 {
                    b = a + 1.0;
                }
                let mut step = nice_step((b - a) / 6.0);
                if q == Quantity::Fraction {
                    b = (b / step).ceil() * step;
                }
                let pad = 0.04 * (b - a);
                ax.lo = a - if q == Quantity::Fraction { 0.0 } else { pad };
                ax.hi = b + pad;
                if !(ax.hi - ax.lo).is_finite() {
                    // Values near the largest float (a bus bandwidth of 1.75e308 B/s):
                    // the padding, or the span itself, passes it, and a tick range up to
                    // infinity was collected (a capacity overflow). Drawn unpadded, with
                    // the step taken from half the span, or not at all.
                    (ax.lo, ax.hi) = (a, b);
                    step = nice_step(b / 6.0 - a / 6.0);
                    if !(b - a).is_finite() {
                        return None;
                    }
                }
                let k0 = (ax.lo / step).ceil();
                let k1 = (ax.hi / step).floor();
                ax.ticks = if k1 - k0 <= 1000.0 {
                    (k0 as i64..=k1 as i64).map(|k| k as f64 * step).collect()
                } else {
                    Vec::new()
                };
            }
        }
        Some(ax)
    }

    /// The axis title as drawn: the given one, marked when the scale is logarithmic.
    pub fn display_title(&self) -> String {
        if self.scale == Scale::Linear {
            self.title.clone()
        } else if let Some(open) = self.title.strip_suffix(')') {
            format!("{open}, log scale)")
        } else {
            format!("{} (log scale)", self.title)
        }
    }

    /// The plotters range of this axis.
    pub fn range(&self) -> TickRange {
        TickRange { lo: self.lo, hi: self.hi, bold: self.ticks.clone(), light: self.minor.clone() }
    }

    /// A value in plot coordinates (`None` where the scale cannot show it).
    pub fn to_plot(&self, v: f64) -> Option<f64> {
        if !v.is_finite() {
            return None;
        }
        match self.scale {
            Scale::Log2 => (v > 0.0).then(|| v.log2()),
            Scale::Log10 => (v > 0.0).then(|| v.log10()),
            Scale::Linear => Some(v),
        }
    }

    /// The label of a tick at plot coordinate `t`.
    pub fn label(&self, t: f64) -> String {
        let v = match self.scale {
            Scale::Log2 => t.exp2(),
            Scale::Log10 => 10f64.powf(t),
            Scale::Linear => t,
        };
        format_value(self.q, v)
    }

    /// The same axis spanning both its own and `other`'s range (the parity plot).
    pub fn union(q: Quantity, title: &str, a: &[f64], b: &[f64]) -> Option<Axis> {
        let all: Vec<f64> = a.iter().chain(b).copied().collect();
        Axis::fit(q, title, &all)
    }
}

/// A value as a label on an axis of quantity `q`.
pub fn format_value(q: Quantity, v: f64) -> String {
    match q {
        Quantity::Bytes => fmt_bytes(v.round().max(0.0) as u64),
        Quantity::Ranks => format!("{}", v.round() as i64),
        Quantity::Time => {
            if v.abs() < 1e-15 {
                "0".to_string()
            } else {
                fmt_time(v)
            }
        }
        Quantity::Bandwidth => {
            if v.abs() < 1e-3 {
                "0".to_string()
            } else {
                fmt_bandwidth(v)
            }
        }
        Quantity::Fraction => format!("{}%", (v * 100.0).round() as i64),
        Quantity::Number => {
            if v == 0.0 {
                "0".to_string()
            } else {
                let s = format!("{v:.0e}");
                // `1e-7` reads better than `1e-7`'s alternatives; keep mantissas short.
                if (v - s.parse::<f64>().unwrap_or(v)).abs() <= 1e-9 * v.abs() { s } else { format!("{v:.1e}") }
            }
        }
    }
}

fn min_max(v: &[f64]) -> Option<(f64, f64)> {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min.is_finite() && max.is_finite()).then_some((min, max))
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw * (1.0 - 1e-9) {
            return m * p;
        }
    }
    10.0 * p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The twenty-seventh trial: a bus bandwidth of 1.75e308 B/s (a legal run at
    /// 1.79e308 B/s) padded the linear axis past the largest float, and the ticks were
    /// collected up to i64's largest: a capacity overflow panic. The axis is drawn, with
    /// a few ticks and a finite span; a span no float holds gives no axis.
    #[test]
    fn a_linear_axis_near_the_largest_float_is_finite() {
        for vals in [[1.72e308, 1.75e308], [1.0e308, f64::MAX], [f64::MAX, f64::MAX]] {
            let ax = Axis::fit(Quantity::Bandwidth, "busbw", &vals).expect("an axis");
            assert_eq!(ax.scale, Scale::Linear);
            assert!((ax.hi - ax.lo).is_finite() && ax.lo <= vals[0] && ax.hi >= vals[1], "{} {}", ax.lo, ax.hi);
            assert!(!ax.ticks.is_empty() && ax.ticks.len() <= 20, "{:?}", ax.ticks);
        }
    }

    fn labels(ax: &Axis) -> Vec<String> {
        ax.ticks.iter().map(|&t| ax.label(t)).collect()
    }

    #[test]
    fn byte_ticks_are_binary() {
        let ax = Axis::fit(Quantity::Bytes, "size", &[4096.0, 1048576.0, 16777216.0]).unwrap();
        assert_eq!(ax.scale, Scale::Log2);
        assert_eq!(labels(&ax), ["4 KiB", "16 KiB", "64 KiB", "256 KiB", "1 MiB", "4 MiB", "16 MiB"]);
    }

    #[test]
    fn rank_ticks_are_the_rank_counts() {
        let ax = Axis::fit(Quantity::Ranks, "P", &[4.0, 8.0, 16.0, 64.0]).unwrap();
        assert_eq!(labels(&ax), ["4", "8", "16", "64"]);
    }

    #[test]
    fn time_ticks_are_decades_when_spanning_decades() {
        let ax = Axis::fit(Quantity::Time, "time", &[3e-6, 2e-2]).unwrap();
        assert_eq!(ax.scale, Scale::Log10);
        assert_eq!(labels(&ax), ["10 us", "100 us", "1 ms", "10 ms"]);
        let ax = Axis::fit(Quantity::Time, "time", &[3e-6, 2e-4]).unwrap();
        assert_eq!(labels(&ax), ["5 us", "10 us", "20 us", "50 us", "100 us", "200 us"]);
    }

    #[test]
    fn narrow_ranges_are_linear() {
        let ax = Axis::fit(Quantity::Time, "time", &[3e-6, 5e-6]).unwrap();
        assert_eq!(ax.scale, Scale::Linear);
        assert!(ax.ticks.len() >= 3 && ax.ticks.len() <= 9, "{:?}", labels(&ax));
        let ax = Axis::fit(Quantity::Fraction, "eff", &[0.2, 0.9]).unwrap();
        assert_eq!(labels(&ax), ["0%", "20%", "40%", "60%", "80%", "100%"]);
    }

    #[test]
    fn nothing_to_fit() {
        assert!(Axis::fit(Quantity::Time, "t", &[]).is_none());
        assert!(Axis::fit(Quantity::Time, "t", &[0.0, f64::NAN]).is_none());
    }
}
