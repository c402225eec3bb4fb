//! The spread of a point's time over the seeds of `repeat:` (docs/variability.md): mean,
//! percentiles, slowdown against the noise-free machine and sensitivity to skew.

/// A point's times over its seeds, and what they say.
#[derive(Clone, Debug, PartialEq)]
pub struct Spread {
    /// Mean time.
    pub mean: f64,
    /// Nearest-rank percentiles 50, 90 and 99, and the largest time.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest time.
    pub max: f64,
    /// Mean over the seeds of the latest rank's start (the run's skew).
    pub skew: f64,
    /// `mean / noise_free`.
    pub slowdown: Option<f64>,
    /// `(mean - noise_free) / skew`: extra time per second of skew; `None` without skew.
    pub sensitivity: Option<f64>,
}

/// The `q`-th percentile (`0 < q <= 100`) of `sorted` by the nearest-rank rule: the
/// smallest value with at least `q`% of the values at or below it.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The least skew, in float spacings of the times (`f64::EPSILON` times the time), whose
/// sensitivity is reported: below it the difference of two times is mostly their rounding
/// (an error of about 1 / RESOLVED in the sensitivity at the threshold).
const RESOLVED: f64 = 1e3;

impl Spread {
    /// The spread of `times` (one per seed, in seed order), whose runs had skews `skews`,
    /// against the same point without noise (`noise_free`, if it ran).
    pub fn of(times: &[f64], skews: &[f64], noise_free: Option<f64>) -> Spread {
        let mut sorted = times.to_vec();
        sorted.sort_by(f64::total_cmp);
        // Summed in seed order: the same on every machine and thread count.
        let n = times.len().max(1) as f64;
        let mean = times.iter().sum::<f64>() / n;
        let skew = skews.iter().sum::<f64>() / skews.len().max(1) as f64;
        let slowdown = noise_free.filter(|&t| t > 0.0).map(|t| mean / t);
        // A skew the times cannot resolve gives rounding over nearly nothing (a skew of
        // 5e-324 s read 1.5e304 s lost per s): none below RESOLVED float spacings of the time.
        let resolved = |t: f64| skew > RESOLVED * f64::EPSILON * t.max(mean);
        let sensitivity = noise_free.filter(|&t| skew > 0.0 && resolved(t)).map(|t| (mean - t) / skew);
        Spread {
            mean,
            p50: percentile(&sorted, 50.0),
            p90: percentile(&sorted, 90.0),
            p99: percentile(&sorted, 99.0),
            max: sorted.last().copied().unwrap_or(f64::NAN),
            skew,
            slowdown,
            sensitivity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 5.0);
        assert_eq!(percentile(&v, 90.0), 9.0);
        assert_eq!(percentile(&v, 99.0), 10.0);
        assert_eq!(percentile(&[3.0], 99.0), 3.0);
    }

    #[test]
    fn slowdown_and_sensitivity() {
        let s = Spread::of(&[12.0, 14.0], &[2.0, 4.0], Some(10.0));
        assert_eq!(s.mean, 13.0);
        assert_eq!(s.slowdown, Some(1.3));
        assert_eq!(s.sensitivity, Some(1.0));
        assert_eq!(Spread::of(&[1.0], &[0.0], Some(1.0)).sensitivity, None);
        // A skew far below the times' float spacing (the twenty-sixth trial: 5e-324 s
        // over a 1e-4 s run gave 1.5e304) has no sensitivity; one a thousand spacings up has.
        let t = 1e-4;
        let ulp = f64::EPSILON * t;
        assert_eq!(Spread::of(&[t + ulp], &[5e-324], Some(t)).sensitivity, None);
        assert_eq!(Spread::of(&[t + ulp], &[100.0 * ulp], Some(t)).sensitivity, None);
        assert!(
            Spread::of(&[t + 2e3 * ulp], &[2e3 * ulp], Some(t)).sensitivity.is_some_and(|k| (k - 1.0).abs() < 1e-3)
        );
    }
}
