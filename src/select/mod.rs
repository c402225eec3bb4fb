//! Selectors: algorithm ids that choose an algorithm per point instead of being one.
//!
//! - `auto` simulates every algorithm of the collective at the point (each with its
//!   default parameters, plus the variants the scenario lists) and shows the fastest;
//! - `ompi_fixed` shows the algorithm Open MPI's fixed decision runs there ([`ompi`]);
//! - `nccl_model` shows the algorithm NCCL's tuning model picks, with NCCL's predicted
//!   time beside our simulation ([`nccl`]).
//!
//! A selector never simulates anything itself: the runner runs the candidates like any
//! other point, through the [`RunPoint`] it hands to [`fill`] and a selector's row is a copy of its choice's result, named
//! after the selector and carrying a [`Selection`]. Every row of a point, selector or
//! not, gets the point's `best_algorithm`, `runner_up` and `margin` ([`rank`]).
//!
//! Ties: times within a relative [`TIE`] are equal, and the algorithm `allreduce-sim
//! list` shows first wins, then the label in byte order (`ring` before
//! `ring(segments=4)`).

pub mod tune;

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::algos::{self, Params};
use crate::collective::Collective;
use crate::results::{CutOffReport, Point, PointResult};
use crate::scenario::{AlgoSpec, ParamValue, ProtocolChoice, Scenario};
use crate::sim::data::ReduceOp;
use crate::topology;

/// Times within this relative difference are a tie (as the table's `*`).
pub const TIE: f64 = 1e-9;

pub(crate) use crate::selectors::selector_params;
pub use crate::selectors::{SELECTORS, SelectorInfo, check, covers, is_selector, nccl, ompi};

pub use crate::results::Selection;

/// The key that orders tied algorithms of collective `c`: the position in `list`, then
/// the label.
fn order_key(c: Collective, label: &str) -> (usize, &str) {
    let id = label.split('(').next().unwrap_or(label);
    (algos::registry_of(c).iter().position(|a| a.id == id).unwrap_or(usize::MAX), label)
}

/// An algorithm's label and time, seconds.
pub type Timed<'a> = (&'a str, f64);

/// The fastest and the runner-up of `(label, time)` pairs of collective `c`, ties by
/// `list` order then label; pairs with a non-finite time are left out.
pub fn top_two(c: Collective, mut times: Vec<Timed<'_>>) -> (Option<Timed<'_>>, Option<Timed<'_>>) {
    times.retain(|(_, t)| t.is_finite());
    let pick = |times: &[Timed<'_>]| -> Option<usize> {
        let fastest = times.iter().map(|(_, t)| *t).fold(f64::INFINITY, f64::min);
        (0..times.len())
            .filter(|&i| times[i].1 <= fastest * (1.0 + TIE))
            .min_by(|&a, &b| order_key(c, times[a].0).cmp(&order_key(c, times[b].0)))
    };
    let Some(b) = pick(&times) else { return (None, None) };
    let best = times.remove(b);
    // A label listed twice (the same algorithm in the pool and the scenario) is one.
    times.retain(|(l, _)| *l != best.0);
    let second = pick(&times).map(|i| times[i]);
    (Some(best), second)
}

/// The runner-up's time over the best's, less 1: 0 where both took 0 s, and none where
/// only the best did (no ratio). Not 0 there: [`rank`] reads the runner-up's time back as
/// `best * (1 + margin)`, and `merge` would take a slower runner-up for a tie at 0 s and
/// rank it first.
fn margin(best: Option<f64>, second: Option<f64>) -> Option<f64> {
    match (best, second) {
        (Some(b), Some(s)) if b > 0.0 => Some(s / b - 1.0),
        (Some(_), Some(s)) if s <= 0.0 => Some(0.0),
        _ => None,
    }
}

/// A selector's pick's time over the fastest's, less 1: none where it did not run to the
/// end, and none where the fastest took 0 s and the pick did not (no ratio: not 0, which
/// would read as "the pick is the fastest" however slow it was).
fn vs_best(best: Option<f64>, time: f64) -> Option<f64> {
    margin(best, Some(time).filter(|t| !t.is_nan()))
}

/// Set every row's `best_algorithm`, `best_time_s`, `runner_up` and `margin` from the
/// rows of its point (collective, ranks, bytes): the rows of algorithms, and what selector rows
/// recorded of the algorithms simulated only for them (their best and runner-up). Also
/// each selector row's `vs_best`. Idempotent; `merge` calls it on the joined shards.
pub fn rank(results: &mut [PointResult]) {
    let mut groups: BTreeMap<(Collective, usize, u64), Vec<usize>> = BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        groups.entry((r.collective, r.ranks, r.bytes)).or_default().push(i);
    }
    for (&(c, _, _), idx) in &groups {
        let mut times: Vec<(String, f64)> = Vec::new();
        for &i in idx {
            let r = &results[i];
            if let Some(sel) = &r.selection {
                // The pick ran too: `nccl_model`'s (an NCCL variant no candidate list holds)
                // can beat every candidate, and was then "faster than the fastest".
                if r.not_applicable.is_none() {
                    times.push((sel.selected.clone(), r.time_s));
                }
                if let (Some(b), Some(t)) = (&r.best_algorithm, r.best_time_s) {
                    times.push((b.clone(), t));
                    if let (Some(u), Some(m)) = (&r.runner_up, r.margin) {
                        times.push((u.clone(), t * (1.0 + m)));
                    }
                }
            } else if r.not_applicable.is_none() && !is_selector(&r.algorithm) {
                times.push((r.algorithm.clone(), r.time_s));
            }
        }
        let (best, second) = top_two(c, times.iter().map(|(l, t)| (l.as_str(), *t)).collect());
        let best = best.map(|(l, t)| (l.to_string(), t));
        let second = second.map(|(l, t)| (l.to_string(), t));
        for &i in idx {
            let r = &mut results[i];
            r.best_algorithm = best.as_ref().map(|(l, _)| l.clone());
            r.best_time_s = best.as_ref().map(|(_, t)| *t);
            r.runner_up = second.as_ref().map(|(l, _)| l.clone());
            r.margin = margin(best.as_ref().map(|(_, t)| *t), second.as_ref().map(|(_, t)| *t));
            if let Some(sel) = &mut r.selection {
                sel.vs_best = vs_best(best.as_ref().map(|(_, t)| *t), r.time_s);
            }
        }
    }
}

/// The algorithm ids `auto` tries for collective `c`: every one, in `list` order, but
/// NCCL's own ([`algos::NCCL_IDS`]): those are NCCL's implementations of the ring and
/// the tree, with their protocol's chunks and channels, run by naming them or through
/// `nccl_model`, and `auto` keeps weighing the textbook algorithms it always has.
pub fn candidates(c: Collective) -> Vec<&'static str> {
    algos::registry_of(c).iter().map(|a| a.id).filter(|id| !algos::NCCL_IDS.contains(id)).collect()
}

/// A label for an algorithm id and parameters, as its rows show it.
fn label_of(c: Collective, id: &str, params: &[(String, ParamValue)]) -> String {
    match algos::build_for(c, id, Params::new(params.to_vec())) {
        Ok(a) => a.label(),
        Err(_) => id.to_string(),
    }
}

/// The label the runner gives the row of `spec` (its entry's protocol included), by
/// which a selector finds the run it asked for.
fn row_label(c: Collective, spec: &AlgoSpec) -> String {
    ProtocolChoice::label(label_of(c, &spec.name, &spec.params), spec.protocol)
}

/// How one point is simulated: the runner hands its own (`run_point_observed`, without
/// the timeline: these rows are not shown). Selectors post-process results; taking the
/// runner as a function keeps them below it.
pub type RunPoint<'a> = &'a (dyn Fn(&Scenario, &Point) -> PointResult + Sync);

/// One point of `s` for algorithm `spec`, run by `run` as the runner runs a listed one.
pub fn run_spec(s: &Scenario, spec: &AlgoSpec, ranks: usize, bytes: u64, run: RunPoint<'_>) -> PointResult {
    let mut one = s.clone();
    one.algorithms = vec![spec.clone()];
    one.ranks = vec![ranks];
    one.sizes = vec![bytes];
    run(&one, &Point { algo: 0, ranks, bytes })
}

/// What a selector asks to have simulated at a point: our algorithm (id, parameters),
/// and in words what the library chose.
struct Wanted {
    spec: AlgoSpec,
    library: Option<String>,
    choice: Option<String>,
    predicted_s: Option<f64>,
    /// Why the choice cannot run here (an algorithm this build does not have).
    missing: Option<String>,
}

/// The algorithm `selector` picks at (ranks, bytes) of `s`, before anything runs;
/// `None` for `auto`, which picks from what ran.
fn wanted(s: &Scenario, spec: &AlgoSpec, ranks: usize, bytes: u64) -> Result<Option<Wanted>, String> {
    let e = s.data.dtype.bytes() as u64;
    match spec.name.as_str() {
        "ompi_fixed" => {
            // Every reduction op we have (sum, max, min, prod) is commutative.
            let m = ompi::choose(spec.collective, ranks, bytes / e.max(1), e);
            let params: Vec<(String, ParamValue)> =
                m.params.iter().map(|(k, v)| (k.clone(), ParamValue::Int(*v))).collect();
            let missing = match &m.lacking {
                Some(why) => Some(format!("Open MPI {} runs {}: {why}", ompi::VERSION, m.steps)),
                None => algos::find_in(spec.collective, m.id).is_none().then(|| {
                    format!(
                        "Open MPI {} runs {}, which is our {}; this build has no {}",
                        ompi::VERSION,
                        m.steps,
                        m.id,
                        m.id
                    )
                }),
            };
            Ok(Some(Wanted {
                spec: AlgoSpec {
                    name: m.id.to_string(),
                    collective: spec.collective,
                    params,
                    location: String::new(),
                    protocol: None,
                },
                library: Some(format!("Open MPI {}", ompi::VERSION)),
                choice: Some(m.steps),
                predicted_s: None,
                missing,
            }))
        }
        "nccl_model" => {
            let np = selector_params(&spec.name, &spec.params).map_err(|e| e.message)?;
            let topo = topology::build(&s.topology, ranks)?;
            let c = spec.collective;
            let x = nccl::Inputs {
                avg: s.data.op == ReduceOp::Avg,
                ..nccl::Inputs::of(topo.as_ref(), np.channels, np.arch)
            };
            let x = nccl::Inputs { nvls: x.nvls && np.nvls, ..x }
                .with_tuning(np.tuning.unwrap_or_default())
                .searched(topo.as_ref());
            let Some((algo, proto, t)) = nccl::choice(&x, c, bytes) else {
                return Err(format!("NCCL's model has no algorithm for {ranks} rank(s)"));
            };
            // NCCL's ring broadcast and reduce pipeline in its chunks: our chain in as many segments.
            let params = match c {
                Collective::Broadcast | Collective::Reduce => {
                    let k = nccl::chain_segments(&x, proto, bytes, bytes / e.max(1));
                    if k > 1 { vec![("segments".to_string(), ParamValue::Int(k))] } else { Vec::new() }
                }
                // NVLS with its own channels (Simple only).
                _ if algo == nccl::Algo::Nvls => Vec::new(),
                // NVLS Tree on the channels and chunk NCCL gives the call (Simple only).
                _ if algo == nccl::Algo::NvlsTree => {
                    let (channels, chunk) = nccl::nvls_tree_call(&x, bytes);
                    vec![
                        ("channels".to_string(), ParamValue::Int(u64::from(channels))),
                        ("chunk".to_string(), ParamValue::Str(format!("{chunk}B"))),
                    ]
                }
                // NCCL's ring and tree as NCCL runs them: its protocol, and the channels and
                // chunk of `call_param_list` (calibrate's `what_ran` asks it too).
                Collective::Allreduce | Collective::ReduceScatter | Collective::Allgather
                    if algo != nccl::Algo::Pat =>
                {
                    let mut v = vec![("protocol".to_string(), ParamValue::Str(proto.name().to_string()))];
                    v.extend(nccl::call_param_list(&x, c, algo, proto, bytes));
                    v
                }
                _ if algo == nccl::Algo::Pat => {
                    vec![("channels".to_string(), ParamValue::Int(u64::from(np.channels)))]
                }
                _ => Vec::new(),
            };
            // The links cost what the picked protocol costs, as the chunk size follows it.
            let fixed = algo != nccl::Algo::Pat
                && matches!(c, Collective::Allreduce | Collective::ReduceScatter | Collective::Allgather);
            Ok(Some(Wanted {
                spec: AlgoSpec {
                    name: algo.ours(c).to_string(),
                    collective: c,
                    params,
                    location: String::new(),
                    protocol: fixed.then_some(crate::scenario::ProtocolChoice::Fixed(proto)),
                },
                // The release whose model picked: 2.8.4's for a `version` before 2.10.
                library: Some(format!("NCCL {}", x.tuning.release())),
                choice: Some(format!("{}/{}", algo.name(), proto.name())),
                predicted_s: Some(t),
                missing: None,
            }))
        }
        _ => Ok(None),
    }
}

/// A point's (collective, ranks, bytes).
type PointKey = (Collective, usize, u64);

/// An algorithm a selector needs simulated at a point that has no row of its own.
struct Job {
    group: usize,
    spec: AlgoSpec,
    label: String,
    /// One of the scenario's own algorithms whose row is not in this run (another
    /// shard's): it counts as that row would, a candidate whose failures are its own.
    listed: bool,
}

/// What [`fill`] runs: the points (collective, ranks, bytes) with a selector and the
/// indices of their rows, each selector's wish, and the jobs.
struct Plan {
    groups: Vec<(PointKey, Vec<usize>)>,
    wishes: Vec<BTreeMap<usize, Result<Option<Wanted>, String>>>,
    jobs: Vec<Job>,
}

/// Plan the selector runs of `pts`: `present(i)` whether point i ran (a stopped run
/// leaves some out), `listed(i)` the label of the algorithm row i shows (`None` for a
/// selector's row).
fn plan(
    s: &Scenario,
    pts: &[Point],
    present: impl Fn(usize) -> bool,
    listed: impl Fn(usize) -> Option<String>,
) -> Plan {
    let mut groups: BTreeMap<PointKey, Vec<usize>> = BTreeMap::new();
    for (i, pt) in pts.iter().enumerate() {
        groups.entry((s.algorithms[pt.algo].collective, pt.ranks, pt.bytes)).or_default().push(i);
    }
    let groups: Vec<(PointKey, Vec<usize>)> = groups
        .into_iter()
        .filter(|(_, idx)| idx.iter().any(|&i| is_selector(&s.algorithms[pts[i].algo].name) && present(i)))
        .collect();

    // Per point: the selectors' wishes, then every algorithm to simulate that is not a
    // listed row already (by label).
    let mut wishes: Vec<BTreeMap<usize, Result<Option<Wanted>, String>>> = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    for (g, ((c, ranks, bytes), idx)) in groups.iter().enumerate() {
        // Jobs are pushed group by group: this group's are the ones from here on (a
        // search of every job was quadratic in a sweep's selector points).
        let first = jobs.len();
        let listed: Vec<String> = idx.iter().filter(|&&i| present(i)).filter_map(|&i| listed(i)).collect();
        let mut want: BTreeMap<usize, Result<Option<Wanted>, String>> = BTreeMap::new();
        let mut specs = candidate_defaults(*c);
        for &i in idx {
            let spec = &s.algorithms[pts[i].algo];
            if is_selector(&spec.name) {
                let w = wanted(s, spec, *ranks, *bytes);
                if let Ok(Some(w)) = &w
                    && w.missing.is_none()
                {
                    specs.push(w.spec.clone());
                }
                want.insert(i, w);
            }
        }
        // A shard holds only some rows of the point: the scenario's other algorithms run
        // in other shards. They are simulated here too, so that the selectors weigh the
        // same rows as in the whole run and the merged shards give back its report.
        let own: Vec<AlgoSpec> =
            s.algorithms.iter().filter(|a| a.collective == *c && !is_selector(&a.name)).cloned().collect();
        let own_labels: Vec<String> = own.iter().map(|a| row_label(*c, a)).collect();
        for spec in own.into_iter().chain(specs) {
            let label = row_label(*c, &spec);
            if !listed.contains(&label) && !jobs[first..].iter().any(|j| j.label == label) {
                let listed = own_labels.contains(&label);
                jobs.push(Job { group: g, spec, label, listed });
            }
        }
        wishes.push(want);
    }
    Plan { groups, wishes, jobs }
}

/// `auto`'s candidates for collective `c` ([`candidates`]), each with its default
/// parameters, as the selectors simulate them.
fn candidate_defaults(c: Collective) -> Vec<AlgoSpec> {
    candidates(c)
        .into_iter()
        .map(|id| AlgoSpec {
            name: id.to_string(),
            collective: c,
            params: Vec::new(),
            location: String::new(),
            protocol: None,
        })
        .collect()
}

/// How many algorithms [`fill`] will simulate for the selectors of `pts` (all of them
/// run), beyond the points themselves: what the progress counts.
pub fn planned_runs(s: &Scenario, pts: &[Point]) -> usize {
    every_job(s, pts).len()
}

/// The jobs [`fill`] runs for the selectors of `pts` where every point ran.
fn every_job(s: &Scenario, pts: &[Point]) -> Vec<Job> {
    let listed = |i: usize| {
        let spec = &s.algorithms[pts[i].algo];
        (!is_selector(&spec.name)).then(|| row_label(spec.collective, spec))
    };
    plan(s, pts, |_| true, listed).jobs
}

/// The algorithms each selector point of `s` may simulate (each with default
/// parameters unless the selector picks some), for the estimates: `auto`'s every
/// algorithm of the collective, the other selectors' pick.
pub fn candidate_specs(s: &Scenario, pt: &Point) -> Vec<AlgoSpec> {
    let spec = &s.algorithms[pt.algo];
    match wanted(s, spec, pt.ranks, pt.bytes) {
        Ok(Some(w)) if w.missing.is_none() => vec![w.spec],
        Ok(Some(_)) | Err(_) => Vec::new(),
        Ok(None) => candidate_defaults(spec.collective),
    }
}

/// Every algorithm selector point `pt` of `s` simulates, as [`fill`] runs them, for the
/// estimates of its work and memory: every candidate of the collective, whose best every
/// selector's row is set against (its pick's distance from it), and the pick where it is
/// none of them (NCCL's own variant for `nccl_model`). Estimated as their pick alone,
/// `ompi_fixed` and `nccl_model` at 1,024 ranks passed `--max-memory 8MiB` and then held
/// 113 MB, and at 2,048 ranks under a 400 MB address-space limit aborted where `auto` at
/// the point was refused.
pub fn simulated_specs(s: &Scenario, pt: &Point) -> Vec<AlgoSpec> {
    let spec = &s.algorithms[pt.algo];
    let mut specs = candidate_defaults(spec.collective);
    if let Ok(Some(w)) = wanted(s, spec, pt.ranks, pt.bytes)
        && w.missing.is_none()
    {
        let label = row_label(spec.collective, &w.spec);
        if !specs.iter().any(|c| row_label(spec.collective, c) == label) {
            specs.push(w.spec);
        }
    }
    specs
}

/// How [`fill_with`] runs the selectors' algorithms.
#[derive(Default)]
pub struct FillOptions<'a> {
    /// One at a time (the memory limit forced the run serial).
    pub serial: bool,
    /// Called once per algorithm simulated (the progress).
    pub tick: Option<&'a (dyn Fn() + Sync)>,
}

/// The selector rows of a run: run what they need and fill them in, then rank every
/// point ([`rank`]). `results[i]` is point `pts[i]`'s result, `None` where the run
/// stopped before it; a selector's slot holds a placeholder until now.
pub fn fill(s: &Scenario, pts: &[Point], results: &mut [Option<PointResult>], run: RunPoint<'_>) {
    fill_with(s, pts, results, run, &FillOptions::default());
}

/// [`fill`], running the selectors' algorithms as `opts` says.
pub fn fill_with(
    s: &Scenario,
    pts: &[Point],
    results: &mut [Option<PointResult>],
    run_point: RunPoint<'_>,
    opts: &FillOptions<'_>,
) {
    let listed = |i: usize| results[i].as_ref().filter(|r| !is_selector(&r.algorithm)).map(|r| r.algorithm.clone());
    let Plan { groups: selector_groups, wishes, jobs } = plan(s, pts, |i| results[i].is_some(), listed);
    if selector_groups.is_empty() {
        rank_some(results);
        return;
    }
    let run = |j: &Job| {
        let (_, ranks, bytes) = selector_groups[j.group].0;
        let r = run_spec(s, &j.spec, ranks, bytes, run_point);
        if let Some(tick) = opts.tick {
            tick();
        }
        r
    };
    // A batch of whole points at a time, its results dropped once their rows are filled:
    // every candidate's result of a whole sweep was held at once (under the flow model
    // each lists its links: about 1 MB a point of `nccl_model` at 64 ranks, 300 MB for a
    // 300-point sweep whose reservation counted its rows).
    let (mut at, mut g0) = (0, 0);
    while g0 < selector_groups.len() {
        let (mut end, mut g1) = (at, g0);
        while g1 < selector_groups.len() && (g1 == g0 || end - at < batch_jobs()) {
            while end < jobs.len() && jobs[end].group == g1 {
                end += 1;
            }
            g1 += 1;
        }
        let batch = &jobs[at..end];
        let ran: Vec<PointResult> =
            if opts.serial { batch.iter().map(run).collect() } else { batch.par_iter().map(run).collect() };
        let mut mine = batch.iter().zip(&ran).peekable();
        for (g, ((c, _, _), idx)) in selector_groups.iter().enumerate().take(g1).skip(g0) {
            let mut group: Vec<(&Job, &PointResult)> = Vec::new();
            while let Some(job) = mine.next_if(|(j, _)| j.group == g) {
                group.push(job);
            }
            let pool = Pool::of(*c, idx.iter().filter_map(|&i| results[i].as_ref()), &group);
            let mut filled: Vec<(usize, PointResult)> = Vec::new();
            for &i in idx {
                let spec = &s.algorithms[pts[i].algo];
                if let (true, Some(placeholder)) = (is_selector(&spec.name), &results[i]) {
                    filled.push((i, pool.row(*c, spec, wishes[g].get(&i), placeholder)));
                }
            }
            for (i, row) in filled {
                results[i] = Some(row);
            }
        }
        (at, g0) = (end, g1);
    }
    rank_some(results);
}

/// How many of the selectors' algorithms [`fill_with`] runs before it fills their rows
/// and drops their results (whole points at a time, so one point's may be more): eight
/// a thread, enough that a slow one does not leave the others idle for long.
pub fn batch_jobs() -> usize {
    8 * rayon::current_num_threads().max(1)
}

/// The most of the selectors' algorithms [`fill_with`] holds the results of at once
/// for the selector points of `pts`: a batch ([`batch_jobs`]) and the largest point's,
/// what the run reserves room for beside the rows.
pub fn jobs_held_at_once(s: &Scenario, pts: &[Point]) -> usize {
    let jobs = every_job(s, pts);
    let mut largest = 0;
    let mut at = 0;
    while at < jobs.len() {
        let end = at + jobs[at..].iter().take_while(|j| j.group == jobs[at].group).count();
        largest = largest.max(end - at);
        at = end;
    }
    jobs.len().min(batch_jobs() + largest)
}

/// Everything simulated at one selector point: the listed rows, then the selectors' own
/// runs, and what the selectors choose from.
struct Pool<'r> {
    /// Every result at the point, NCCL's own runs included.
    every: Vec<&'r PointResult>,
    /// How many algorithms the choice was among (those the scenario lists and those
    /// `auto` weighs).
    weighed: usize,
    /// Of those, the ones that ran.
    ran_ok: usize,
    best: Option<Timed<'r>>,
    second: Option<Timed<'r>>,
    /// Failed checks of the candidates `auto` weighs that no row shows, which its row carries.
    hidden_failures: Vec<String>,
    /// Of the weighed algorithms that link faults cut off, the first by label: the one
    /// whose `cut_off` a pick-less `auto` row shows. By label, not by the order the shard
    /// ran them in, so that merged shards give back the whole run's row.
    cut_off: Option<&'r CutOffReport>,
}

impl<'r> Pool<'r> {
    /// The pool of a point of collective `c` from its `listed` rows and the selectors'
    /// runs there (`mine`).
    fn of(c: Collective, listed: impl Iterator<Item = &'r PointResult>, mine: &[(&Job, &'r PointResult)]) -> Self {
        let mut pool: Vec<&PointResult> = listed.filter(|r| !is_selector(&r.algorithm)).collect();
        // The scenario's own rows run in another shard count as the listed rows do.
        pool.extend(mine.iter().filter(|(j, _)| j.listed).map(|(_, r)| *r));
        let hidden: Vec<&PointResult> = mine.iter().filter(|(j, _)| !j.listed).map(|(_, r)| *r).collect();
        // NCCL's own algorithms, run only for nccl_model, are its pick's simulation, not
        // candidates: the best stays the best of the algorithms auto weighs (and of
        // those the scenario lists), so nccl_model's `vs_best` may be below 0.
        let mut every = pool.clone();
        every.extend(hidden.iter().copied());
        pool.extend(
            mine.iter().filter(|(j, _)| !j.listed && !algos::NCCL_IDS.contains(&j.spec.name.as_str())).map(|(_, r)| *r),
        );
        let ran_ok: Vec<&PointResult> = pool.iter().copied().filter(|r| r.not_applicable.is_none()).collect();
        let (best, second) = top_two(c, ran_ok.iter().map(|r| (r.algorithm.as_str(), r.time_s)).collect());
        // Only `auto` weighs the hidden candidates, so only its row carries their failures.
        // NCCL's runs and the other selectors' picks are their selectors' rows already
        // (failures and all); carried by every selector row, they made a row depend on
        // which selectors share its shard, and a selector whose own pick ran gave exit 1
        // for another's candidates that link faults cut off.
        let hidden_failures = mine
            .iter()
            .filter(|(j, _)| !j.listed && !algos::NCCL_IDS.contains(&j.spec.name.as_str()))
            .flat_map(|(_, r)| {
                r.failures.iter().map(move |f| format!("{} (simulated for a selector): {f}", r.algorithm))
            })
            .collect();
        let cut_off = pool
            .iter()
            .filter_map(|r| r.cut_off.as_ref().map(|c| (r.algorithm.as_str(), c)))
            .min_by(|a, b| a.0.cmp(b.0))
            .map(|(_, c)| c);
        Pool { every, weighed: pool.len(), ran_ok: ran_ok.len(), best, second, hidden_failures, cut_off }
    }

    fn find(&self, label: &str) -> Option<&'r PointResult> {
        self.every.iter().copied().find(|r| r.algorithm == label)
    }

    /// The row of selector `spec` at this point: a copy of its choice's result (or why
    /// there is none) under the selector's name, with the point's best and runner-up.
    fn row(
        &self,
        c: Collective,
        spec: &AlgoSpec,
        wish: Option<&Result<Option<Wanted>, String>>,
        placeholder: &PointResult,
    ) -> PointResult {
        let not_applicable = |why: String| PointResult { not_applicable: Some(why), ..placeholder.clone() };
        let mut row = match wish {
            None | Some(Ok(None)) => match self.best.and_then(|(l, _)| self.find(l)) {
                Some(r) => {
                    let mut row = r.clone();
                    row.selection = Some(Selection {
                        selected: r.algorithm.clone(),
                        candidates: self.ran_ok,
                        ..Selection::default()
                    });
                    row
                }
                None if self.ran_ok == 0 => {
                    not_applicable(format!("none of the {} algorithms runs here", self.weighed))
                }
                // Every one that applies failed (link faults cut it off): no pick, and why.
                None => {
                    let mut row = not_applicable(format!(
                        "none of the {} algorithms that apply here ran to the end (see their failures)",
                        self.ran_ok
                    ));
                    row.cut_off = self.cut_off.cloned();
                    row
                }
            },
            Some(Err(why)) => not_applicable(why.clone()),
            Some(Ok(Some(w))) => self.picked(c, spec, w, placeholder),
        };
        row.algorithm = placeholder.algorithm.clone();
        // The chosen algorithm's own row (if listed) shows its path and link counters; no
        // second copy. They are recorded only where the choice ran as a listed point, so a
        // copy would make the selector's row depend on which algorithms the scenario, or a
        // `--shard`, happens to list (shards merged back would differ from the whole run).
        row.critical_path = None;
        row.link_bytes_max = None;
        row.links_used = None;
        if matches!(wish, None | Some(Ok(None))) {
            row.failures.extend(self.hidden_failures.iter().cloned());
        }
        row.best_algorithm = self.best.map(|(l, _)| l.to_string());
        row.best_time_s = self.best.map(|(_, t)| t);
        row.runner_up = self.second.map(|(l, _)| l.to_string());
        row.margin = margin(self.best.map(|(_, t)| t), self.second.map(|(_, t)| t));
        row
    }

    /// The row of a selector that picked `w` before anything ran (`ompi_fixed`,
    /// `nccl_model`): its pick's result with what the library chose.
    fn picked(&self, c: Collective, spec: &AlgoSpec, w: &Wanted, placeholder: &PointResult) -> PointResult {
        let label = row_label(c, &w.spec);
        let not_applicable = |why: String| PointResult { not_applicable: Some(why), ..placeholder.clone() };
        match (&w.missing, self.find(&label)) {
            (Some(why), _) => not_applicable(why.clone()),
            (None, None) => not_applicable(format!("{label} did not run")),
            (None, Some(r)) => {
                let mut row = r.clone();
                if let Some(why) = &r.not_applicable {
                    row.not_applicable = Some(format!(
                        "{} picks {label}, which does not run here: {why}",
                        w.library.as_deref().unwrap_or(&spec.name)
                    ));
                }
                row.selection = Some(Selection {
                    selected: label.clone(),
                    library: w.library.clone(),
                    library_choice: w.choice.clone(),
                    vs_best: Some(0.0),
                    predicted_s: w.predicted_s,
                    candidates: self.ran_ok,
                });
                row
            }
        }
    }
}

/// [`rank`] over the results that ran.
fn rank_some(results: &mut [Option<PointResult>]) {
    let at: Vec<usize> = (0..results.len()).filter(|&i| results[i].is_some()).collect();
    let mut present: Vec<PointResult> = results.iter_mut().filter_map(Option::take).collect();
    rank(&mut present);
    for (i, r) in at.into_iter().zip(present) {
        results[i] = Some(r);
    }
}

/// For `run --trace` and `--gantt`, which record one algorithm: when the single point
/// of `s` is a selector's, the algorithm it picks there (`auto` simulates every
/// algorithm of the collective, timing only, to find it) as the scenario to record, with
/// a line for standard error that says so; `None` when the point is an algorithm's.
pub fn pick_single(s: &Scenario, run: RunPoint<'_>) -> Result<Option<(Scenario, String)>, String> {
    let pts = s.points();
    let [pt] = &pts[..] else { return Ok(None) };
    let spec = &s.algorithms[pt.algo];
    if !is_selector(&spec.name) {
        return Ok(None);
    }
    let chosen = match wanted(s, spec, pt.ranks, pt.bytes)? {
        Some(w) => match w.missing {
            Some(why) => return Err(why),
            None => w.spec,
        },
        None => {
            let mut timing = s.clone();
            timing.data.mode = crate::scenario::DataMode::Off;
            let specs = candidate_specs(s, pt);
            let runs: Vec<PointResult> =
                specs.par_iter().map(|c| run_spec(&timing, c, pt.ranks, pt.bytes, run)).collect();
            let ok: Vec<Timed<'_>> = runs
                .iter()
                .filter(|r| r.not_applicable.is_none() && r.failures.is_empty())
                .map(|r| (r.algorithm.as_str(), r.time_s))
                .collect();
            let (best, _) = top_two(spec.collective, ok);
            let Some((label, _)) = best else {
                return Err(format!("'{}' finds no algorithm that runs here", spec.name));
            };
            let at = runs.iter().position(|r| r.algorithm == label).unwrap_or(0);
            specs[at].clone()
        }
    };
    // As the recorded row is labelled (its protocol included).
    let label = row_label(spec.collective, &chosen);
    let mut one = s.clone();
    one.algorithms = vec![AlgoSpec { location: spec.location.clone(), ..chosen }];
    let note = format!(
        "{} picks {label} at P = {}, S = {}: recording {label} (name it in --algorithms to record it directly)",
        spec.name,
        pt.ranks,
        crate::units::fmt_bytes(pt.bytes)
    );
    Ok(Some((one, note)))
}
