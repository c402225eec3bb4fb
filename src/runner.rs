//! Running a scenario: every (ranks, size, algorithm) point simulated, checked against
//! its closed form and the exact result, and turned into a [`PointResult`].
//!
//! Points run in parallel (rayon) and come back in sweep order: ranks outermost, then
//! sizes, then algorithms in the order the scenario lists them, so every
//! (ranks, size) group is contiguous. The output is identical to a serial run.

use std::time::Instant;

use rayon::prelude::*;

use crate::algos::{self, Algorithm, Machine, Params, Problem};
use crate::cost_model;
use crate::report::{PointResult, Report};
use crate::scenario::{DataMode, Scenario};
use crate::sim::data::{Reference, initial_values};
use crate::sim::engine::NoObserver;
use crate::sim::simulate;
use crate::topology::{self, Topology};

/// One point of a sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// Index into `scenario.algorithms`.
    pub algo: usize,
    /// P.
    pub ranks: usize,
    /// S, bytes per rank.
    pub bytes: u64,
}

/// Every point of `s`, in sweep order.
pub fn points(s: &Scenario) -> Vec<Point> {
    let mut out = Vec::new();
    for &ranks in &s.ranks {
        for &bytes in &s.sizes {
            for algo in 0..s.algorithms.len() {
                out.push(Point { algo, ranks, bytes });
            }
        }
    }
    out
}

/// Run every point of `s`.
pub fn run(s: &Scenario) -> Report {
    let results = points(s).par_iter().map(|pt| run_point(s, pt)).collect();
    Report { scenario: s.clone(), results }
}

/// Relative error of `time` against `closed`, as SPEC section 6 defines it.
fn rel_err(time: f64, closed: f64) -> f64 {
    if closed == 0.0 { if time == 0.0 { 0.0 } else { f64::INFINITY } } else { (time / closed - 1.0).abs() }
}

/// Run one point.
pub fn run_point(s: &Scenario, pt: &Point) -> PointResult {
    let started = Instant::now();
    let spec = &s.algorithms[pt.algo];
    let e = s.data.dtype.bytes();
    let p = Problem { ranks: pt.ranks, elems: (pt.bytes / e as u64) as usize, elem_bytes: e };
    let mut res = PointResult {
        algorithm: spec.name.clone(),
        ranks: pt.ranks,
        bytes: pt.bytes,
        not_applicable: None,
        time_s: 0.0,
        closed_form_s: None,
        closed_form_rel_err: None,
        closed_form_tolerance: None,
        lower_bound_s: 0.0,
        efficiency: None,
        algbw_bps: None,
        busbw_bps: None,
        messages: 0,
        bytes_sent_max: 0,
        peak_buffer_bytes: 0,
        max_abs_error: None,
        error_bound: None,
        verified: None,
        ranks_bitwise_equal: None,
        events: 0,
        wall_time_s: 0.0,
        failures: Vec::new(),
    };
    // The scenario was validated, so these only fail on an internal error; report it
    // as a failed point rather than panic.
    let algo: Box<dyn Algorithm> = match algos::build(&spec.name, Params::new(spec.params.clone())) {
        Ok(a) => a,
        Err(err) => {
            res.failures.push(format!("cannot build {}: {err}", spec.name));
            return res;
        }
    };
    res.algorithm = algo.label();
    let topo: Box<dyn Topology> = match topology::build(&s.topology, pt.ranks) {
        Ok(t) => t,
        Err(why) => {
            res.not_applicable = Some(why);
            return res;
        }
    };
    let machine = Machine { topo: topo.as_ref(), cost_per_byte: s.cost_per_byte };
    if let Err(why) = algo.applicable(&p, &machine) {
        res.not_applicable = Some(why);
        return res;
    }

    let full = s.data.mode == DataMode::Full;
    let (inputs, reference) = if full {
        let v: Vec<Vec<f32>> = (0..p.ranks).map(|r| initial_values(s.data.init, s.seed, r, p.elems)).collect();
        let reference = Reference::new(&v, s.data.op);
        (Some((v, s.data.op)), Some(reference))
    } else {
        (None, None)
    };
    let (stats, vectors) = match simulate(algo.as_ref(), topo.as_ref(), p, s.cost_per_byte, inputs, &mut NoObserver) {
        Ok(out) => out,
        Err(err) => {
            res.failures.push(format!("simulation failed: {err}"));
            res.wall_time_s = started.elapsed().as_secs_f64();
            return res;
        }
    };

    res.time_s = stats.time;
    res.messages = stats.messages;
    res.bytes_sent_max = stats.bytes_sent.iter().copied().max().unwrap_or(0);
    res.peak_buffer_bytes = stats.peak_buffer_bytes;
    res.events = stats.events;
    res.lower_bound_s = cost_model::lower_bound(&p, topo.as_ref(), s.cost_per_byte);
    if stats.time > 0.0 {
        let algbw = pt.bytes as f64 / stats.time;
        res.algbw_bps = Some(algbw);
        res.busbw_bps = Some(algbw * 2.0 * (p.ranks as f64 - 1.0) / p.ranks as f64);
        let eff = res.lower_bound_s / stats.time;
        res.efficiency = Some(eff);
        if eff > 1.0 + 1e-9 {
            res.failures.push(format!(
                "efficiency {eff:.6} is above 1: the run beat the lower bound {:e} s (a bug, or a better algorithm)",
                res.lower_bound_s
            ));
        }
    } else if res.lower_bound_s > 0.0 {
        res.failures.push(format!("time 0 is below the lower bound {:e} s", res.lower_bound_s));
    }

    if let Some((closed, tol)) = algo.closed_form(&p, &machine) {
        let err = rel_err(stats.time, closed);
        res.closed_form_s = Some(closed);
        res.closed_form_rel_err = Some(err);
        res.closed_form_tolerance = Some(tol);
        if s.check.closed_form && (err.is_nan() || err > tol) {
            res.failures.push(format!(
                "simulated {:e} s but the closed form says {closed:e} s (relative error {err:.3e} > {tol:e})",
                stats.time
            ));
        }
    }

    if let (Some(vectors), Some(reference)) = (vectors, reference) {
        let v = reference.check(&vectors, algo.reduction_depth(&p));
        res.max_abs_error = Some(v.max_abs_error);
        res.error_bound = Some(v.error_bound);
        res.verified = Some(v.verified);
        res.ranks_bitwise_equal = Some(v.ranks_bitwise_equal);
        if let Some((rank, i, got, exact, bound)) = v.first_violation {
            res.failures.push(format!(
                "wrong result: rank {rank} element {i} is {got:e}, exact {exact:e}, allowed error {bound:e}"
            ));
        }
    }
    res.wall_time_s = started.elapsed().as_secs_f64();
    res
}
