//! Relative least squares in log space, by Levenberg-Marquardt (the
//! `levenberg-marquardt` crate on `nalgebra`), with the statistics that say what the data
//! can tell: each parameter's uncertainty from the Jacobian's covariance scaled by the
//! residual variance, the correlation of every pair, and the condition number.
//!
//! The model is a black box: [`Model::eval`] maps parameter vectors (natural logs of
//! positive values) to residual vectors (simulated / measured - 1 per point). The
//! Jacobian is a forward difference in log space, its columns evaluated together so the
//! caller can run them in parallel. Each parameter stays within its bounds ([`Limits`]),
//! and a prior adds one residual per parameter, `weight * (theta - centre)`: the
//! optimiser minimises both (a maximum a posteriori fit), and the statistics count the
//! prior's rows in the uncertainties, not in what the data can tell.

use std::cell::{Cell, RefCell};

use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt};
use nalgebra::{DMatrix, DVector, Dyn, Owned};

/// What the fit calls to evaluate the model.
pub trait Model: Sync {
    /// Residuals at each parameter vector of `thetas`, in that order; an error stops the fit.
    fn eval(&self, thetas: &[Vec<f64>]) -> Vec<Result<Vec<f64>, String>>;
}

/// Forward-difference step in log space (0.1% of the value): the simulated times are
/// piecewise linear in alpha and 1/B, exact to rounding, so a small step is safe.
pub const STEP: f64 = 1e-3;

/// How far (as a factor, either way) a parameter may move from its start: beyond, the
/// machine is not the one the file describes and the fit has lost its way.
pub const MAX_FACTOR: f64 = 1e6;

/// Where each parameter may go, and what it is drawn toward.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Lowest log-value of each parameter.
    pub lo: Vec<f64>,
    /// Highest log-value of each parameter.
    pub hi: Vec<f64>,
    /// Per parameter, a prior as one more residual `weight * (theta - centre)`:
    /// `(centre, weight)`, weight 0 for none.
    pub prior: Vec<(f64, f64)>,
}

impl Limits {
    /// No prior, and [`MAX_FACTOR`] either way from `start`.
    pub fn around(start: &[f64]) -> Limits {
        let span = MAX_FACTOR.ln();
        Limits {
            lo: start.iter().map(|s| s - span).collect(),
            hi: start.iter().map(|s| s + span).collect(),
            prior: vec![(0.0, 0.0); start.len()],
        }
    }

    /// The prior's residuals at `theta` (one per parameter with a prior, in order).
    fn prior_residuals(&self, theta: &[f64]) -> Vec<f64> {
        self.prior.iter().zip(theta).filter(|((_, w), _)| *w > 0.0).map(|((c, w), t)| w * (t - c)).collect()
    }
}

/// The outcome of a fit.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Fitted log-parameters.
    pub theta: Vec<f64>,
    /// Residuals there (the logged points only).
    pub residuals: Vec<f64>,
    /// The Jacobian there (points x parameters, log space; the logged points only).
    pub jacobian: DMatrix<f64>,
    /// The prior's weight on each parameter (0: none), for the statistics.
    pub prior_weight: Vec<f64>,
    /// The prior's residuals there (parameters with a prior, in order).
    pub prior_residuals: Vec<f64>,
    /// Model evaluations (one per parameter vector).
    pub evaluations: usize,
    /// Why the optimiser stopped, in its words.
    pub termination: String,
    /// Whether it stopped because it converged.
    pub converged: bool,
}

struct Problem<'a, M: Model> {
    model: &'a M,
    limits: Limits,
    theta: DVector<f64>,
    r: Option<DVector<f64>>,
    error: RefCell<Option<String>>,
    evaluations: Cell<usize>,
    /// Parameters held where they are (nothing depends on them): their columns are
    /// zero, so the normal equations stay regular.
    frozen: Vec<bool>,
}

impl<M: Model> Problem<'_, M> {
    /// The Jacobian at the current point: the free columns, or with `all` every one
    /// (the frozen ones too, for the statistics and to find what nothing depends on).
    /// The rows are the logged points', then with `prior` the prior's (its weights on
    /// the diagonal), as the optimiser sees them.
    fn jac(&self, all: bool, prior: bool) -> Option<DMatrix<f64>> {
        let r = self.r.as_ref()?;
        let n = self.theta.len();
        let m = r.len() - self.limits.prior_residuals(self.theta.as_slice()).len();
        let live: Vec<usize> = (0..n).filter(|&k| all || !self.frozen[k]).collect();
        // A value at its upper bound steps down: past it the machine may not even be
        // valid (an efficiency above 1).
        let step = |k: usize| if self.theta[k] + STEP > self.limits.hi[k] { -STEP } else { STEP };
        let thetas: Vec<Vec<f64>> = live
            .iter()
            .map(|&k| {
                let mut t: Vec<f64> = self.theta.iter().copied().collect();
                t[k] += step(k);
                t
            })
            .collect();
        self.evaluations.set(self.evaluations.get() + thetas.len());
        let cols = self.model.eval(&thetas);
        let rows = if prior { r.len() } else { m };
        let mut j = DMatrix::zeros(rows, n);
        if prior {
            let mut row = m;
            for (k, (_, w)) in self.limits.prior.iter().enumerate() {
                if *w > 0.0 {
                    if live.contains(&k) {
                        j[(row, k)] = *w;
                    }
                    row += 1;
                }
            }
        }
        for (c, k) in cols.into_iter().zip(live) {
            match c {
                Ok(c) => {
                    for i in 0..m {
                        j[(i, k)] = (c[i] - r[i]) / step(k);
                    }
                }
                Err(e) => {
                    *self.error.borrow_mut() = Some(e);
                    return None;
                }
            }
        }
        Some(j)
    }
}

impl<M: Model> LeastSquaresProblem<f64, Dyn, Dyn> for Problem<'_, M> {
    type ResidualStorage = Owned<f64, Dyn>;
    type JacobianStorage = Owned<f64, Dyn, Dyn>;
    type ParameterStorage = Owned<f64, Dyn>;

    fn set_params(&mut self, x: &DVector<f64>) {
        let t = DVector::from_iterator(
            x.len(),
            x.iter().enumerate().map(|(k, v)| {
                if self.frozen[k] { self.theta[k] } else { v.clamp(self.limits.lo[k], self.limits.hi[k]) }
            }),
        );
        self.theta = t;
        self.evaluations.set(self.evaluations.get() + 1);
        let v: Vec<f64> = self.theta.iter().copied().collect();
        let prior = self.limits.prior_residuals(&v);
        self.r = match self.model.eval(&[v]).pop() {
            Some(Ok(mut r)) => {
                r.extend(prior);
                Some(DVector::from_vec(r))
            }
            Some(Err(e)) => {
                *self.error.borrow_mut() = Some(e);
                None
            }
            None => None,
        };
    }
    fn params(&self) -> DVector<f64> {
        self.theta.clone()
    }
    fn residuals(&self) -> Option<DVector<f64>> {
        self.r.clone()
    }
    fn jacobian(&self) -> Option<DMatrix<f64>> {
        self.jac(false, true)
    }
}

/// Fit `model` from `start` (log-parameters) within `limits` (its bounds and prior).
/// `frozen[k]` keeps parameter k where it is. `patience` bounds the optimiser's
/// evaluations (times the parameters plus one).
pub fn fit<M: Model>(
    model: &M,
    start: &[f64],
    frozen: &[bool],
    patience: usize,
    limits: &Limits,
) -> Result<Outcome, String> {
    let start: Vec<f64> =
        start.iter().enumerate().map(|(k, s)| s.clamp(limits.lo[k], limits.hi[k].max(limits.lo[k]))).collect();
    let start = start.as_slice();
    let mut p = Problem {
        model,
        limits: limits.clone(),
        theta: DVector::from_column_slice(start),
        r: None,
        error: RefCell::new(None),
        evaluations: Cell::new(0),
        frozen: frozen.to_vec(),
    };
    p.set_params(&DVector::from_column_slice(start));
    if let Some(e) = p.error.take() {
        return Err(e);
    }
    let (mut p, report) = if frozen.iter().all(|f| *f) {
        (p, None)
    } else {
        let (p, r) = LevenbergMarquardt::new().with_patience(patience).minimize(p);
        (p, Some(r))
    };
    if let Some(e) = p.error.take() {
        return Err(e);
    }
    // The statistics need the residuals and Jacobian at the final point.
    let theta: Vec<f64> = p.theta.iter().copied().collect();
    p.set_params(&DVector::from_vec(theta.clone()));
    let prior_residuals = p.limits.prior_residuals(&theta);
    let residuals: Vec<f64> = match &p.r {
        Some(r) => r.iter().take(r.len() - prior_residuals.len()).copied().collect(),
        None => return Err(p.error.take().unwrap_or_else(|| "the model failed at the fitted values".into())),
    };
    let Some(jacobian) = p.jac(true, false) else {
        return Err(p.error.take().unwrap_or_else(|| "the Jacobian failed".into()));
    };
    let (termination, converged) = match &report {
        Some(r) => (format!("{:?}", r.termination), r.termination.was_successful()),
        None => ("nothing to fit".to_string(), true),
    };
    let prior_weight = p.limits.prior.iter().map(|(_, w)| *w).collect();
    Ok(Outcome {
        theta,
        residuals,
        jacobian,
        prior_weight,
        prior_residuals,
        evaluations: p.evaluations.get(),
        termination,
        converged,
    })
}

/// What the data says about the fitted parameters.
#[derive(Clone, Debug)]
pub struct Stats {
    /// Standard deviation of each log-parameter (about the relative uncertainty of the
    /// value), the prior's information included; infinite where neither the data nor a
    /// prior determines it.
    pub sigma: Vec<f64>,
    /// The same from the logs alone: infinite where they do not determine it.
    pub sigma_logs: Vec<f64>,
    /// Correlation of each pair (NaN where a sigma is infinite).
    pub correlation: DMatrix<f64>,
    /// Ratio of the largest to the smallest singular value of the Jacobian, columns
    /// of the parameters that move anything only.
    pub condition: f64,
    /// Residual variance (sum of squares over points minus parameters).
    pub variance: f64,
    /// For the smallest singular value: the combination of parameters (weights, unit
    /// length) the data cannot see.
    pub weakest: Vec<f64>,
    /// The prior's share of what is known of each parameter, 0 (the logs alone) to 1
    /// (the prior alone): `w^2 (J^T J + W^2)^-1` on the diagonal, one minus the
    /// resolution of the parameter; 0 without a prior.
    pub prior_share: Vec<f64>,
}

/// Statistics of an outcome. `active[k]` says which columns take part (fitted and
/// moving some residual).
///
/// The condition number, the weakest combination and the correlations are the logs'
/// alone: they say what the logs cannot tell, whatever the prior makes of it. The
/// uncertainties are the fit's: the covariance of the logged points' Jacobian with the
/// prior's rows below it, scaled by the points' residual variance, so a value the logs
/// do not determine gets the prior's width rather than none.
pub fn stats(o: &Outcome, active: &[bool]) -> Stats {
    let n = o.theta.len();
    let idx: Vec<usize> = (0..n).filter(|&k| active[k]).collect();
    let m = o.residuals.len();
    let rss: f64 = o.residuals.iter().map(|r| r * r).sum();
    let dof = m.saturating_sub(idx.len()).max(1);
    let variance = rss / dof as f64;
    let mut sigma = vec![f64::INFINITY; n];
    let mut correlation = DMatrix::from_element(n, n, f64::NAN);
    let mut weakest = vec![0.0; n];
    let mut condition = 1.0;
    let mut prior_share = vec![0.0; n];
    let mut sigma_logs = vec![f64::INFINITY; n];
    if !idx.is_empty() {
        let j = DMatrix::from_fn(m, idx.len(), |i, c| o.jacobian[(i, idx[c])]);
        let w: Vec<f64> = idx.iter().map(|&k| o.prior_weight.get(k).copied().unwrap_or(0.0)).collect();
        // The Jacobian the optimiser saw: the points', and the prior's diagonal below.
        let q = idx.len();
        let aug = DMatrix::from_fn(m + q, q, |i, c| {
            if i < m {
                j[(i, c)]
            } else if i - m == c {
                w[c]
            } else {
                0.0
            }
        });
        let svd_aug = aug.svd(false, true);
        let svd = j.clone().svd(false, true);
        let sv = &svd.singular_values;
        let (mut smax, mut smin, mut kmin) = (0.0f64, f64::INFINITY, 0);
        for (k, s) in sv.iter().enumerate() {
            smax = smax.max(*s);
            if *s < smin {
                smin = *s;
                kmin = k;
            }
        }
        condition = if smin > 0.0 { smax / smin } else { f64::INFINITY };
        if let Some(vt) = &svd.v_t {
            for (c, &k) in idx.iter().enumerate() {
                weakest[k] = vt[(kmin, c)];
            }
        }
        // The fit's uncertainties: with the prior's rows, which it weighed too.
        let (cov, _) = covariance_diag(&svd_aug);
        for a in 0..q {
            sigma[idx[a]] = (variance * cov[a]).sqrt();
            prior_share[idx[a]] = if cov[a].is_finite() { (w[a] * w[a] * cov[a]).clamp(0.0, 1.0) } else { 0.0 };
        }
        // What the logs alone say.
        let (cov_logs, infinite) = covariance_diag(&svd);
        for a in 0..q {
            sigma_logs[idx[a]] = (variance * cov_logs[a]).sqrt();
        }
        if svd.v_t.is_some() {
            // Correlations from (J^T J) itself where singular, so a degenerate pair shows as +-1.
            let jtj = j.transpose() * &j;
            let inv = jtj.clone().try_inverse();
            for a in 0..q {
                for b in 0..q {
                    let r = match &inv {
                        Some(inv) if !infinite[a] && !infinite[b] => inv[(a, b)] / (inv[(a, a)] * inv[(b, b)]).sqrt(),
                        // Singular: how alike the two columns are.
                        _ => jtj[(a, b)] / (jtj[(a, a)] * jtj[(b, b)]).sqrt(),
                    };
                    correlation[(idx[a], idx[b])] = r;
                }
            }
        }
    }
    Stats { sigma, sigma_logs, correlation, condition, variance, weakest, prior_share }
}

/// The diagonal of `(J^T J)^-1` from J's SVD, `V diag(1/s^2) V^T`, and which entries
/// are infinite: a singular direction is left infinite rather than dropped.
fn covariance_diag(svd: &nalgebra::SVD<f64, Dyn, Dyn>) -> (Vec<f64>, Vec<bool>) {
    let sv = &svd.singular_values;
    let Some(vt) = &svd.v_t else { return (Vec::new(), Vec::new()) };
    let q = vt.ncols();
    let tiny = sv.max() * 1e-12;
    let mut diag = vec![0.0; q];
    // Fewer rows than columns: the directions V leaves out are singular too.
    let mut infinite: Vec<bool> =
        (0..q).map(|c| (0..vt.nrows()).map(|k| vt[(k, c)] * vt[(k, c)]).sum::<f64>() < 1.0 - 1e-9).collect();
    for (k, s) in sv.iter().enumerate() {
        for c in 0..q {
            if *s <= tiny {
                if vt[(k, c)].abs() > 1e-6 {
                    infinite[c] = true;
                }
            } else {
                diag[c] += vt[(k, c)] * vt[(k, c)] / (s * s);
            }
        }
    }
    for (d, inf) in diag.iter_mut().zip(&infinite) {
        if *inf {
            *d = f64::INFINITY;
        }
    }
    (diag, infinite)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// t = a + s / b at a few sizes, measured from a = 2, b = 10: the fit finds them,
    /// with tiny uncertainty, from a start far away.
    struct Line {
        sizes: Vec<f64>,
        measured: Vec<f64>,
    }
    impl Model for Line {
        fn eval(&self, thetas: &[Vec<f64>]) -> Vec<Result<Vec<f64>, String>> {
            thetas
                .iter()
                .map(|t| {
                    let (a, b) = (t[0].exp(), t[1].exp());
                    Ok(self.sizes.iter().zip(&self.measured).map(|(s, m)| (a + s / b) / m - 1.0).collect())
                })
                .collect()
        }
    }

    #[test]
    fn finds_a_line_and_its_uncertainty() {
        let sizes = vec![1.0, 10.0, 100.0, 1000.0];
        let measured: Vec<f64> = sizes.iter().map(|s| 2.0 + s / 10.0).collect();
        let m = Line { sizes, measured };
        let o = fit(&m, &[0.0, 0.0], &[false, false], 200, &Limits::around(&[0.0, 0.0])).unwrap();
        assert!((o.theta[0].exp() - 2.0).abs() < 1e-6, "{:?}", o.theta);
        assert!((o.theta[1].exp() - 10.0).abs() < 1e-6);
        let s = stats(&o, &[true, true]);
        assert!(s.sigma.iter().all(|x| *x < 1e-6), "{:?}", s.sigma);
        assert!(s.condition.is_finite());
    }

    /// t = (a + b) s: only the sum is seen; the two are perfectly correlated and the
    /// condition number says so.
    struct Sum;
    impl Model for Sum {
        fn eval(&self, thetas: &[Vec<f64>]) -> Vec<Result<Vec<f64>, String>> {
            thetas
                .iter()
                .map(|t| Ok([1.0, 2.0, 3.0].iter().map(|s| (t[0].exp() + t[1].exp()) * s / (3.0 * s) - 1.0).collect()))
                .collect()
        }
    }

    #[test]
    fn a_degenerate_pair_shows() {
        let o = fit(&Sum, &[0.0, 0.5], &[false, false], 100, &Limits::around(&[0.0, 0.5])).unwrap();
        let s = stats(&o, &[true, true]);
        assert!(s.condition > 1e6, "{}", s.condition);
        assert!(s.correlation[(0, 1)].abs() > 0.99, "{}", s.correlation);
        assert!(s.sigma.iter().any(|x| x.is_infinite()) || s.condition > 1e6);
    }
}
