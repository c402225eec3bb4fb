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

impl Limits {
    /// The log-value of parameter `k` at optimiser coordinate `u`, clamped to its bounds,
    /// and `d theta / d u` (1: the optimiser works on the log-values themselves).
    ///
    /// A logistic between the bounds (`theta = lo + (hi - lo) / (1 + e^-u)`), which lets
    /// the optimiser see a bound as a smooth flattening rather than a wall, was built and
    /// measured with `validation/hardware/run.sh`: it found a deeper minimum on ABCI (a
    /// sum of squares 0.56 times this one's) but fitted six of the nine worse, four of
    /// them (the H100 and A100 logs) 81% to 220% off after about 40 trials where the
    /// clamp is 5% to 10% off (docs/calibrate.md, "Bounds and the prior"), so the clamp
    /// stays.
    fn theta_of(&self, k: usize, u: f64) -> (f64, f64) {
        (u.clamp(self.lo[k], self.hi[k].max(self.lo[k])), 1.0)
    }

    /// The optimiser coordinate of log-value `theta`.
    fn u_of(&self, k: usize, theta: f64) -> f64 {
        theta.clamp(self.lo[k], self.hi[k].max(self.lo[k]))
    }

    /// Whether log-value `theta` of parameter `k` sits at its upper bound (`Some(true)`),
    /// its lower one (`Some(false)`) or neither: within 10^-6 of it (the clamp puts a
    /// value the logs push past a bound exactly on it).
    pub fn at_bound(&self, k: usize, theta: f64) -> Option<bool> {
        if (self.hi[k] - theta).abs() <= 1e-6 {
            Some(true)
        } else if (theta - self.lo[k]).abs() <= 1e-6 {
            Some(false)
        } else {
            None
        }
    }
}

struct Problem<'a, M: Model> {
    model: &'a M,
    limits: Limits,
    /// The optimiser's coordinates ([`Limits::theta_of`]).
    u: DVector<f64>,
    /// The log-values they stand for.
    theta: DVector<f64>,
    r: Option<DVector<f64>>,
    error: RefCell<Option<String>>,
    evaluations: Cell<usize>,
    /// Parameters held where they are (nothing depends on them): their columns are
    /// zero, so the normal equations stay regular.
    frozen: Vec<bool>,
}

impl<M: Model> Problem<'_, M> {
    /// The Jacobian in log-values at the current point: the free columns, or with `all`
    /// every one (the frozen ones too, for the statistics and to find what nothing
    /// depends on). The rows are the logged points', then with `prior` the prior's (its
    /// weights on the diagonal).
    fn jac(&self, all: bool, prior: bool) -> Option<DMatrix<f64>> {
        let r = self.r.as_ref()?;
        let n = self.theta.len();
        let m = r.len() - self.limits.prior_residuals(self.theta.as_slice()).len();
        let live: Vec<usize> = (0..n).filter(|&k| all || !self.frozen[k]).collect();
        // A value near its upper bound steps down: past it the machine may not even be
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
        let (u, theta): (Vec<f64>, Vec<f64>) = x
            .iter()
            .enumerate()
            .map(|(k, &v)| {
                if self.frozen[k] {
                    (self.u[k], self.theta[k])
                } else {
                    // The optimiser goes on from the clamped value, not from past the bound.
                    let t = self.limits.theta_of(k, v).0;
                    (self.limits.u_of(k, t), t)
                }
            })
            .unzip();
        self.u = DVector::from_vec(u);
        self.theta = DVector::from_vec(theta);
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
        self.u.clone()
    }
    fn residuals(&self) -> Option<DVector<f64>> {
        self.r.clone()
    }
    fn jacobian(&self) -> Option<DMatrix<f64>> {
        // The chain rule: each column times d theta / d u (1 while the clamp is the map).
        let mut j = self.jac(false, true)?;
        for k in 0..self.u.len() {
            let d = self.limits.theta_of(k, self.u[k]).1;
            j.column_mut(k).scale_mut(d);
        }
        Some(j)
    }
}

/// Fit `model` from `start` (log-parameters) within `limits` (its bounds and prior).
/// `frozen[k]` keeps parameter k where it is. `patience` bounds the optimiser's
/// evaluations (times the parameters plus one).
///
/// A value the optimiser moves past a bound is clamped to it.
pub fn fit<M: Model>(
    model: &M,
    start: &[f64],
    frozen: &[bool],
    patience: usize,
    limits: &Limits,
) -> Result<Outcome, String> {
    // Frozen values stay exactly where they start; free ones start at their coordinate.
    let u: Vec<f64> = (0..start.len()).map(|k| limits.u_of(k, start[k])).collect();
    let theta: Vec<f64> =
        (0..start.len()).map(|k| if frozen[k] { start[k] } else { limits.theta_of(k, u[k]).0 }).collect();
    let mut p = Problem {
        model,
        limits: limits.clone(),
        u: DVector::from_vec(u),
        theta: DVector::from_vec(theta),
        r: None,
        error: RefCell::new(None),
        evaluations: Cell::new(0),
        frozen: frozen.to_vec(),
    };
    p.set_params(&p.u.clone());
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
    p.set_params(&p.u.clone());
    let prior_residuals = p.limits.prior_residuals(&theta);
    let residuals: Vec<f64> = match &p.r {
        Some(r) => r.iter().take(r.len() - prior_residuals.len()).copied().collect(),
        None => return Err(p.error.take().unwrap_or_else(|| "the model failed at the fitted values".into())),
    };
    let Some(jacobian) = p.jac(true, false) else {
        return Err(p.error.take().unwrap_or_else(|| "the Jacobian failed".into()));
    };
    let (termination, converged) = match &report {
        Some(r) => (termination_words(&r.termination), r.termination.was_successful()),
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
    /// Correlation of each pair, from the logs alone, in [-1, 1]: between two values the
    /// logs do not determine, how they move together along what the logs cannot see (-1
    /// for two whose sum alone is seen); 0 between such a value and a determined one; NaN
    /// for a column not taking part.
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

/// Why the optimiser stopped, in words (the crate's own names are for programmers:
/// `Converged { ftol: true, xtol: false }`).
fn termination_words(t: &levenberg_marquardt::TerminationReason) -> String {
    use levenberg_marquardt::TerminationReason as T;
    match t {
        T::Converged { ftol: true, xtol: true } => {
            "converged: neither the residuals nor the values changed any more".into()
        }
        T::Converged { ftol: true, .. } => "converged: the residuals stopped improving".into(),
        T::Converged { .. } => "converged: the values stopped changing".into(),
        T::ResidualsZero => "converged: every point matched exactly".into(),
        T::Orthogonal => "converged: no direction improves the residuals (gradient zero)".into(),
        T::LostPatience => "stopped: the limit on evaluations was reached".into(),
        T::NoImprovementPossible(what) => format!("stopped: no step improves the fit any more ({what} at rounding)"),
        T::Numerical(what) => format!("stopped: a non-finite number appeared ({what})"),
        T::User(what) => format!("stopped: the simulation failed ({what})"),
        T::NoParameters => "nothing to fit".into(),
        T::NoResiduals => "no points to fit".into(),
        T::WrongDimensions(what) => format!("stopped: inconsistent sizes ({what})"),
    }
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
        let aug_cov = Covariance::of(&svd_aug);
        for a in 0..q {
            let c = aug_cov.variance(a);
            sigma[idx[a]] = (variance * c).sqrt();
            prior_share[idx[a]] = if c.is_finite() { (w[a] * w[a] * c).clamp(0.0, 1.0) } else { 0.0 };
        }
        // What the logs alone say.
        let cov = Covariance::of(&svd);
        for a in 0..q {
            sigma_logs[idx[a]] = (variance * cov.variance(a)).sqrt();
            for b in 0..q {
                correlation[(idx[a], idx[b])] = cov.correlation(a, b);
            }
        }
    }
    Stats { sigma, sigma_logs, correlation, condition, variance, weakest, prior_share }
}

/// Singular values below this share of the largest are taken as zero: the Jacobian is
/// a difference quotient of simulated times exact to rounding, so a combination it sees
/// 10^12 times less than the best seen one it does not see.
const NULL: f64 = 1e-12;

/// `(J^T J)^-1` from J's SVD, split where J is singular: `V diag(1/s^2) V^T` over the
/// directions J sees (the pseudo-inverse), and the projector `N N^T` onto those it does
/// not. The inverse of `J^T J + e I` is the first plus the second over `e`: as `e` goes
/// to 0, a parameter with a share in an unseen direction has infinite variance, and its
/// correlations are the projector's, which the pseudo-inverse's finite part no longer
/// affects. Both parts are positive semi-definite, so every correlation is in [-1, 1]
/// (up to rounding, clamped), where inverting a nearly singular `J^T J` outright gave
/// -185 and +1122.
struct Covariance {
    /// The pseudo-inverse's part.
    seen: DMatrix<f64>,
    /// The projector onto what J does not see.
    unseen: DMatrix<f64>,
    /// Whether each parameter has a share in an unseen direction (infinite variance).
    undetermined: Vec<bool>,
}

impl Covariance {
    fn of(svd: &nalgebra::SVD<f64, Dyn, Dyn>) -> Covariance {
        let sv = &svd.singular_values;
        let Some(vt) = &svd.v_t else {
            return Covariance { seen: DMatrix::zeros(0, 0), unseen: DMatrix::zeros(0, 0), undetermined: Vec::new() };
        };
        let q = vt.ncols();
        let tiny = sv.max() * NULL;
        let mut seen = DMatrix::zeros(q, q);
        let mut basis = Vec::new();
        for (k, s) in sv.iter().enumerate() {
            let v = vt.row(k).transpose();
            if *s > tiny {
                seen += &v * v.transpose() / (s * s);
            } else {
                basis.push(v);
            }
        }
        // Fewer rows than columns: V leaves out directions, every one of them unseen.
        // The projector onto them is I minus that onto V's rows.
        let kept = DMatrix::from_fn(vt.nrows(), q, |r, c| vt[(r, c)]);
        let mut unseen = DMatrix::identity(q, q) - kept.transpose() * &kept;
        for v in &basis {
            unseen += v * v.transpose();
        }
        // Rounding leaves ~1e-16 where a parameter has no share in the unseen directions.
        let undetermined: Vec<bool> = (0..q).map(|c| unseen[(c, c)] > 1e-12).collect();
        Covariance { seen, unseen, undetermined }
    }

    /// The variance of parameter `a` (infinite when it is undetermined).
    fn variance(&self, a: usize) -> f64 {
        if self.undetermined[a] { f64::INFINITY } else { self.seen[(a, a)] }
    }

    /// The correlation of `a` and `b`: the projector's between two undetermined ones, 0
    /// between one undetermined and one determined (its variance outgrows any
    /// covariance), the pseudo-inverse's between two determined ones.
    fn correlation(&self, a: usize, b: usize) -> f64 {
        let r = match (self.undetermined[a], self.undetermined[b]) {
            (true, true) => self.unseen[(a, b)] / (self.unseen[(a, a)] * self.unseen[(b, b)]).sqrt(),
            (false, false) => {
                let d = (self.seen[(a, a)] * self.seen[(b, b)]).sqrt();
                if d > 0.0 { self.seen[(a, b)] / d } else { 0.0 }
            }
            _ => 0.0,
        };
        if a == b { 1.0 } else { r.clamp(-1.0, 1.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The optimiser's reason for stopping is printed in words, not as the crate's
    /// Debug text (`Converged { ftol: true, xtol: false }`).
    #[test]
    fn termination_is_told_in_words() {
        use levenberg_marquardt::TerminationReason as T;
        let all = [
            T::Converged { ftol: true, xtol: false },
            T::Converged { ftol: false, xtol: true },
            T::Converged { ftol: true, xtol: true },
            T::ResidualsZero,
            T::Orthogonal,
            T::LostPatience,
            T::NoImprovementPossible("ftol"),
            T::Numerical("residuals"),
            T::User("x"),
            T::NoParameters,
            T::NoResiduals,
            T::WrongDimensions("jacobian"),
        ];
        for t in &all {
            let w = termination_words(t);
            assert!(!w.contains('{') && !w.contains("Converged") && !w.is_empty(), "{t:?}: {w}");
        }
        assert_eq!(termination_words(&all[0]), "converged: the residuals stopped improving");
    }

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
    /// An outcome whose Jacobian is `cols` (one closure per column, of the row index),
    /// residuals 0.1 at 12 points.
    fn outcome(cols: &[&dyn Fn(usize) -> f64]) -> Outcome {
        let m = 12;
        Outcome {
            theta: vec![0.0; cols.len()],
            residuals: vec![0.1; m],
            jacobian: DMatrix::from_fn(m, cols.len(), |i, c| cols[c](i)),
            prior_weight: vec![0.0; cols.len()],
            prior_residuals: Vec::new(),
            evaluations: 0,
            termination: String::new(),
            converged: true,
        }
    }

    /// Two values only whose sum is seen, one the points do not depend on, one seen
    /// alone, and one whose column is 10^-15 of the others (what a value that moves
    /// nothing any more leaves of a difference quotient): every correlation is in [-1,
    /// 1], the unused ones and the pair are undetermined, the pair moves exactly against
    /// each other, and the value seen alone keeps a finite uncertainty.
    #[test]
    fn correlations_stay_in_range_when_the_jacobian_is_singular() {
        let x = |i: usize| 1.0 + i as f64;
        let y = |i: usize| ((i * 7) % 5) as f64 - 2.0;
        let none = |_: usize| 0.0;
        let faint = |i: usize| 1e-15 * (((i * 3) % 4) as f64 + 0.5);
        let o = outcome(&[&x, &x, &none, &y, &faint]);
        let s = stats(&o, &[true; 5]);
        assert!(s.condition.is_infinite() || s.condition > 1e12, "{}", s.condition);
        for a in 0..5 {
            for b in 0..5 {
                let r = s.correlation[(a, b)];
                assert!((-1.0..=1.0).contains(&r), "correlation ({a}, {b}) = {r}\n{}", s.correlation);
            }
        }
        assert!((s.correlation[(0, 1)] + 1.0).abs() < 1e-9, "{}", s.correlation);
        for k in [0, 1, 2, 4] {
            assert!(s.sigma_logs[k].is_infinite(), "{k}: {:?}", s.sigma_logs);
            assert!(s.sigma[k].is_infinite(), "{k}: {:?}", s.sigma);
        }
        assert!(s.sigma_logs[3].is_finite(), "{:?}", s.sigma_logs);
        // Undetermined values say nothing about the determined one.
        assert_eq!(s.correlation[(0, 3)], 0.0);
        assert_eq!(s.correlation[(2, 3)], 0.0);
    }

    /// A nearly singular Jacobian, the case that printed -185 and +1122: two columns
    /// equal to 10^-9 of their size (inverting J^T J outright is rounding at 10^-18) and
    /// a third seen a billion times less than the rest. Every correlation is in [-1, 1],
    /// and the near pair is a pair (beyond 0.95 either way).
    #[test]
    fn nearly_singular_correlations_stay_in_range() {
        let x = |i: usize| 1.0 + i as f64;
        let x2 = |i: usize| (1.0 + i as f64) * (1.0 + 1e-9 * ((i % 3) as f64));
        let y = |i: usize| ((i * 7) % 5) as f64 - 2.0;
        let small = |i: usize| 1e-9 * (((i * 5) % 7) as f64 - 3.0);
        let o = outcome(&[&x, &x2, &y, &small]);
        let s = stats(&o, &[true; 4]);
        for r in s.correlation.iter() {
            assert!((-1.0..=1.0).contains(r), "{}", s.correlation);
        }
        assert!(s.correlation[(0, 1)].abs() > 0.95, "{}", s.correlation);
    }

    /// The coordinate keeps every value within its bounds, and says which it sits at.
    #[test]
    fn the_coordinate_keeps_values_within_bounds() {
        let l = Limits { lo: vec![-3.0], hi: vec![2.0], prior: vec![(0.0, 0.0)] };
        for u in [-800.0, -3.0, 0.0, 0.7, 800.0] {
            let (t, d) = l.theta_of(0, u);
            assert!((-3.0..=2.0).contains(&t), "{u}: {t}");
            assert_eq!(d, 1.0);
        }
        assert_eq!(l.at_bound(0, l.theta_of(0, 5.0).0), Some(true));
        assert_eq!(l.at_bound(0, l.theta_of(0, -5.0).0), Some(false));
        assert_eq!(l.at_bound(0, 1.9), None);
    }

    /// A line whose intercept is bounded below its true value: the fit ends on the bound,
    /// and the slope makes up what it can.
    #[test]
    fn a_value_pushed_past_its_bound_ends_on_it() {
        let sizes = vec![1.0, 10.0, 100.0, 1000.0];
        let measured: Vec<f64> = sizes.iter().map(|s| 2.0 + s / 10.0).collect();
        let m = Line { sizes, measured };
        // The intercept may go to 1 at most (log 0); it starts at 0.5.
        let l = Limits { lo: vec![-5.0, -5.0], hi: vec![0.0, 10.0], prior: vec![(0.0, 0.0); 2] };
        let o = fit(&m, &[0.5f64.ln(), 0.0], &[false, false], 200, &l).unwrap();
        assert_eq!(l.at_bound(0, o.theta[0]), Some(true), "{:?}", o.theta);
        assert!(o.theta[0] > -1e-3, "{:?}", o.theta);
        assert!(o.theta[0] <= 0.0, "{:?}", o.theta);
        assert_eq!(l.at_bound(1, o.theta[1]), None);
    }
}
