//! Running a scenario: every (ranks, size, algorithm) point simulated, checked against
//! its closed form and the exact result, and turned into a [`PointResult`].
//!
//! Points run in parallel (rayon) and come back in sweep order: ranks outermost, then
//! sizes, then algorithms in the order the scenario lists them, so every
//! (ranks, size) group is contiguous. The output is identical to a serial run.
//!
//! [`run_with`] can run one shard of the sweep ([`crate::shard`]) and show a progress
//! bar. Points of at most [`DETAIL_MAX_RANKS`] ranks, and a run of a single point, also
//! get the per-link counters and the critical path, found as the point runs
//! ([`crate::timeline::PathTracker`]; no timeline is recorded), except where a recorded
//! timeline is certain to outgrow what a recording keeps
//! ([`Planned::timeline_overflows`]), as before the tracker existed.
//!
//! Each point's algorithm is built once ([`crate::estimate::plan`]): the estimates that
//! decide how it runs (its data plane, whether it logs, whether it records) and the run
//! read the same [`Planned`] point, and the algorithm prepares its programs once
//! ([`Algorithm::prepare`]) for the run and its reruns.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use rayon::prelude::*;

use crate::algos::{Algorithm, Machine, Problem};
use crate::causality::Causality;
use crate::cost_model;
use crate::estimate::Planned;
use crate::report::{LinkReport, LinkUse, MAX_LISTED_LINKS, PointResult, Report};
use crate::results::Shard;
use crate::scenario::{DataMode, Scenario};
use crate::sim::data::{DataConfig, DataPlane, OpLog, Verification, generate, sample_positions, verify_log};
use crate::sim::engine::{MessageInfo, NoObserver, Observer, SimStats};
use crate::sim::noise::Noise;
use crate::sim::{Network, Programs, log_plane, simulate_noisy, simulate_on};
use crate::spread::Spread;
use crate::timeline::{self, DETAIL_MAX_RANKS, PathTracker, Recorder, Timeline};
use crate::topology::{self, Proto, Topology};

// The engine keeps per-rank received bytes exactly where the report lists them.
const _: () = assert!(crate::sim::engine::PER_RANK_MAX == DETAIL_MAX_RANKS);

pub use crate::results::Point;

/// Every point of `s`, in sweep order ([`Scenario::points`]).
pub fn points(s: &Scenario) -> Vec<Point> {
    s.points()
}

/// Run every point of `s`.
pub fn run(s: &Scenario) -> Report {
    run_with(s, &RunOptions::default())
}

/// How [`run_with`] runs a scenario.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// Run only this shard's points (every N-th, see [`crate::shard`]).
    pub shard: Option<Shard>,
    /// Allow a progress bar on stderr. It shows only when stderr is a terminal and the
    /// run is long: at once for more than [`PROGRESS_MIN_POINTS`] points, else from the
    /// first point that finishes after [`PROGRESS_DELAY`].
    pub progress: bool,
    /// Bytes the run may use: points run one at a time when the largest that would run
    /// at once together could need more (each alone fits: `run` checked that).
    pub memory_limit: Option<u64>,
}

/// Runs of more points than this show their progress bar at once.
pub const PROGRESS_MIN_POINTS: usize = 8;
/// Shorter runs show it once they have taken this long.
pub const PROGRESS_DELAY: Duration = Duration::from_secs(1);

/// Run the points of `s` that `opts` selects, in sweep order.
///
/// When the whole scenario is a single point, its result also carries the steps of its
/// critical path, whatever its rank count.
pub fn run_with(s: &Scenario, opts: &RunOptions) -> Report {
    run_planned(s, crate::estimate::plan(s, opts.shard), opts)
}

/// [`run_with`] on points already planned ([`crate::estimate::plan`] of `s` for
/// `opts.shard`; `run` checks their memory first).
pub fn run_planned(s: &Scenario, plans: Vec<Planned<'_>>, opts: &RunOptions) -> Report {
    let pts: Vec<Point> = plans.iter().map(|pl| pl.pt.clone()).collect();
    // The estimates feed the progress lines and the memory limit; neither, no estimates.
    let estimates: Vec<crate::estimate::Estimate> = if opts.progress || opts.memory_limit.is_some() {
        plans.iter().map(Planned::estimate).collect()
    } else {
        Vec::new()
    };
    let work = progress_work(&estimates);
    // The algorithms simulated only for selectors count as points too.
    let hidden = if opts.progress { crate::select::planned_runs(s, &pts) } else { 0 };
    let progress = Progress::new(pts.len() + hidden, work, opts.progress);
    let one = |pl: Planned<'_>| {
        if STOP.load(Ordering::Relaxed) {
            return None;
        }
        let pt = &pl.pt;
        let spec = &s.algorithms[pt.algo];
        // A selector's row is filled in once its candidates ran (crate::select::fill).
        let r = if crate::select::is_selector(&spec.name) {
            let bytes = if spec.collective.has_data() { pt.bytes } else { 0 };
            PointResult {
                collective: spec.collective,
                algorithm: spec.name.clone(),
                ranks: pt.ranks,
                bytes,
                ..PointResult::default()
            }
        } else if pl.records() {
            // The only point of a run shows its critical path's steps too.
            let steps = pl.single;
            tracked(pl, steps)
        } else {
            run_planned_point(pl, &mut NoObserver)
        };
        progress.tick(r.events);
        Some(r)
    };
    // Points run in parallel, one per thread, unless the largest that could run together
    // would not fit in memory together (a selector's point counts as its largest
    // algorithm, [`crate::estimate::estimate`]).
    let serial = opts.memory_limit.is_some_and(|limit| {
        let mut need: Vec<u64> = estimates.iter().map(crate::estimate::Estimate::memory_bytes).collect();
        need.sort_unstable_by(|a, b| b.cmp(a));
        need.iter().take(rayon::current_num_threads()).fold(0u64, |a, &b| a.saturating_add(b)) > limit
    });
    let mut results: Vec<Option<PointResult>> =
        if serial { plans.into_iter().map(one).collect() } else { plans.into_par_iter().map(one).collect() };
    // The selectors' algorithms run as the points did: one at a time when they had to.
    let tick = || progress.tick(0);
    let unobserved = |s: &Scenario, pt: &Point| run_point_observed(s, pt, &mut NoObserver);
    crate::select::fill_with(
        s,
        &pts,
        &mut results,
        &unobserved,
        &crate::select::FillOptions { serial, tick: Some(&tick) },
    );
    progress.finish();
    // Stopped: the points that finished, in sweep order.
    let interrupted = results.iter().any(Option::is_none);
    let results = results.into_iter().flatten().collect();
    Report { scenario: s.clone(), results, shard: opts.shard, interrupted }
}

/// Set (by `run`'s Ctrl-C handler) to stop a sweep: points not started by then are
/// skipped, and [`run_with`] returns those that finished. A point under way runs to its
/// end.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// The stack of a thread that prints progress lines: it formats a line and sleeps. The
/// default (2 MiB, or what RUST_MIN_STACK asks) took address space a run under a tight
/// `ulimit -v` needed: `calibrate` ran at 33,000 KB and was refused at 33,500.
pub const PROGRESS_STACK: usize = 256 << 10;

/// How often a run whose stderr is not a terminal reports its progress there.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// The progress of [`run_with`]: a bar when stderr is a terminal, hidden until the run
/// proves long; otherwise a line every [`PROGRESS_EVERY`] (points done, events per
/// second, time left), from a thread of its own so that one long point is reported too.
struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    shown: AtomicBool,
    done: Arc<AtomicUsize>,
    /// Events of finished points below the engine's whole blocks ([`crate::sim::engine::EVENTS_DONE`]
    /// counts only those): a sweep of many small points (full data, a few thousand
    /// events each) would otherwise read 0 events per second.
    tails: Arc<AtomicU64>,
    lines: Option<(mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
}

impl Progress {
    fn new(len: usize, work: u64, allowed: bool) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let bar = (allowed && terminal).then(|| {
            let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} points  {elapsed} elapsed, eta {eta}")
            {
                bar.set_style(style);
            }
            bar
        });
        let done = Arc::new(AtomicUsize::new(0));
        let tails = Arc::new(AtomicU64::new(0));
        // Progress lines come from a thread of their own; where it cannot start (under a
        // tight `ulimit -v`: `std::thread::spawn` panicked, exit 101) the run goes on
        // without them.
        let lines = (allowed && !terminal)
            .then(|| {
                let (tx, rx) = mpsc::channel::<()>();
                let (done, tails) = (Arc::clone(&done), Arc::clone(&tails));
                let handle = crate::process::spawn("progress", PROGRESS_STACK, move || {
                    progress_lines(&rx, &done, &tails, len, work)
                })
                .ok()?;
                Some((tx, handle))
            })
            .flatten();
        let p = Progress { bar, started: Instant::now(), shown: AtomicBool::new(false), done, tails, lines };
        if len > PROGRESS_MIN_POINTS {
            p.show();
        }
        p
    }

    fn show(&self) {
        if let Some(bar) = &self.bar
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(250));
        }
    }

    /// A point finished after `events` engine events.
    fn tick(&self, events: u64) {
        self.tails.fetch_add(events % crate::sim::engine::EVENT_BLOCK, Ordering::Relaxed);
        self.done.fetch_add(1, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.inc(1);
            if self.started.elapsed() >= PROGRESS_DELAY {
                self.show();
            }
        }
    }

    fn finish(self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if let Some((tx, handle)) = self.lines {
            drop(tx);
            let _ = handle.join();
        }
    }
}

/// The events the progress lines count the time left by before a point finishes: the
/// estimates' sum where every point's message count is exact, else 0 (unknown). A bound
/// is no forecast: `halving_doubling` on 65,536 ranks has none of its own past the
/// walk's rank limit, and its bound of 4 P (P - 1) messages promised a 6-second run
/// "about 22 h left".
fn progress_work(estimates: &[crate::estimate::Estimate]) -> u64 {
    if estimates.iter().all(|e| e.messages_exact) {
        estimates.iter().map(|e| e.events).fold(0, u64::saturating_add)
    } else {
        0
    }
}

/// The line-by-line progress of a run whose stderr is not a terminal, until `stop`'s
/// sender is dropped. The time left is from the points done, or before the first one
/// finishes from the estimated events `work` ([`crate::estimate`]) and the rate so far.
fn progress_lines(stop: &mpsc::Receiver<()>, done: &AtomicUsize, tails: &AtomicU64, len: usize, work: u64) {
    use crate::sim::engine::EVENTS_DONE;
    let started = Instant::now();
    let events0 = EVENTS_DONE.load(Ordering::Relaxed);
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(PROGRESS_EVERY) {
        let elapsed = started.elapsed().as_secs_f64();
        let events =
            EVENTS_DONE.load(Ordering::Relaxed).saturating_sub(events0).saturating_add(tails.load(Ordering::Relaxed));
        let d = done.load(Ordering::Relaxed);
        let rate = events as f64 / elapsed.max(1e-9);
        let left = if d > 0 && d < len {
            let secs = elapsed * (len - d) as f64 / d as f64;
            format!("about {} left", crate::scenario::units::fmt_time(secs))
        } else if work > events && events > 0 {
            let secs = (work - events) as f64 / rate;
            format!("about {} left by the estimated {work:.3e} events", crate::scenario::units::fmt_time(secs))
        } else {
            "time left unknown until a point finishes".to_string()
        };
        // Before a point finishes or a block of events is counted the rate is unknown, not 0.
        let speed = if events > 0 { format!("{rate:.3e} events/s") } else { "events/s not counted yet".to_string() };
        crate::diag!("progress: {d}/{len} points, {:.0}s elapsed, {speed}, {left}", elapsed);
    }
}

/// The flow model's link counters as the report gives them; every link only with
/// `detail` (points of at most [`DETAIL_MAX_RANKS`] ranks, as the per-rank counters).
fn link_report(flow: &crate::sim::flow::FlowStats, time: f64, detail: bool) -> LinkReport {
    let uses: Vec<LinkUse> = flow
        .links
        .iter()
        .map(|l| LinkUse {
            name: l.name.clone(),
            bytes: l.bytes,
            mean_utilisation: if time > 0.0 { l.bytes as f64 / (l.capacity * time) } else { 0.0 },
            peak_utilisation: l.peak_utilisation,
            peak_flows: l.peak_flows,
        })
        .collect();
    let busiest = crate::sim::flow::busiest(&flow.links, 5).into_iter().map(|i| uses[i].clone()).collect();
    LinkReport {
        machine_links: flow.machine_links,
        used: uses.len() as u64,
        busiest,
        all: (detail && uses.len() <= MAX_LISTED_LINKS).then_some(uses),
    }
}

/// Under the flow model: the same point under the ideal model, on the same routes.
///
/// Sharing only ever slows a message: one delivered sooner than it could have been alone
/// is a failed check. A run in which no link was shared must take the ideal model's time
/// exactly. A run with shared links usually takes longer than the ideal one, but may
/// finish sooner: a message slowed by sharing can change which message a busy port
/// serves first, and that order can suit the schedule better (a scheduling anomaly, as
/// in Graham's list scheduling). That is possible wherever a port is contended, also where
/// the ideal model has a closed form: the model serves a step's messages greedily (a
/// message whose receiver is busy lets a later one go first), and the closed forms count
/// exactly that order, which sharing may change. So it is a note, not a failed check.
#[allow(clippy::too_many_arguments)]
fn check_against_ideal(
    res: &mut PointResult,
    algo: &dyn Programs,
    topo: &dyn Topology,
    p: Problem,
    cost_per_byte: f64,
    net: Network,
    time: f64,
    flow: &crate::sim::flow::FlowStats,
) {
    if flow.faster_than_alone > 0 {
        res.failures.push(format!(
            "{} messages were delivered sooner than they could have been alone on their route",
            flow.faster_than_alone
        ));
    }
    let ideal = Network { model: crate::sim::Model::Ideal, ..net };
    let none = None::<fn(&[usize]) -> DataPlane>;
    let Ok((ideal_stats, _)) = simulate_on(algo, topo, p, cost_per_byte, ideal, none, &mut NoObserver) else {
        res.failures.push("the same point failed under the ideal model".to_string());
        return;
    };
    let ideal_time = ideal_stats.time;
    res.ideal_time_s = Some(ideal_time);
    if !flow.shared() && rel_err(time, ideal_time) > 1e-9 {
        res.failures.push(format!(
            "no link was shared, yet the flow model's time {time:e} s is not the ideal model's {ideal_time:e} s"
        ));
    }
    if time < ideal_time * (1.0 - 1e-9) {
        let sooner = 100.0 * (1.0 - time / ideal_time);
        res.notes.push(format!(
            "{sooner:.3}% sooner than the ideal model: a scheduling anomaly (a message slowed by sharing \
             changed which message a busy port served first); no message beat its time alone"
        ));
    }
}

/// Lines of one kind a point lists one by one (a fault's note, a failing seed's failure);
/// past them one line counts the rest. A scenario of 5,000 faults naming no link of the
/// machine, or of 100,000 seeds half of which a fault cut off, kept 28 to 31 MB of such
/// lines a point, and ran out of memory writing a report of 50 points.
pub const LISTED_LINES: usize = 16;

/// Under `noise.faults`: a note per fault saying what it did, the first [`LISTED_LINES`]
/// of them, then one counting what the rest did.
fn fault_notes(res: &mut PointResult, flow: &crate::sim::flow::FlowStats, launch: f64) {
    // Said as a named fault that matches no link is: the run is not the faulty one asked for.
    res.notes.extend(flow.short_draws.iter().take(LISTED_LINES).map(ToString::to_string));
    if flow.short_draws.len() > LISTED_LINES {
        res.notes.push(format!(
            "{} more `random` fault entries drew fewer links than they asked",
            flow.short_draws.len() - LISTED_LINES
        ));
    }
    for f in flow.faults.iter().take(LISTED_LINES) {
        let at = crate::units::fmt_time_fine(f.at + launch);
        res.notes.push(if f.after_end {
            let what = if f.matched { "" } else { " (and no link of this machine joins these two nodes)" };
            format!("fault {} at {at}: due after the run ended; nothing failed{what}", f.link)
        } else if f.matched {
            format!("fault {} at {at}: {} message(s) in flight rerouted, {} cut off", f.link, f.rerouted, f.cut)
        } else {
            format!("fault {} at {at}: no link of this machine joins these two nodes; nothing failed", f.link)
        });
    }
    if flow.faults.len() > LISTED_LINES {
        let rest = &flow.faults[LISTED_LINES..];
        // Each of the rest as its own note would say: due late, matching no link, or
        // failing one (with what it rerouted and cut off).
        let (mut late, mut unmatched, mut failing, mut rerouted, mut cut) = (0, 0, 0, 0u64, 0u64);
        for f in rest {
            if f.after_end {
                late += 1;
            } else if f.matched {
                failing += 1;
                rerouted += f.rerouted;
                cut += f.cut;
            } else {
                unmatched += 1;
            }
        }
        res.notes.push(format!(
            "{} more fault(s) after these: {late} due after the run ended, {unmatched} joining no two nodes of this \
             machine, {failing} failing a link ({rerouted} message(s) in flight rerouted, {cut} cut off)",
            rest.len(),
        ));
    }
    if flow.detoured > 0 {
        res.notes.push(format!("{} message(s) started on a detour around failed links", flow.detoured));
    }
}

/// An observer that sees every time `dt` later: the run as it happens after `launch`.
struct Launched<'o, O: Observer> {
    inner: &'o mut O,
    dt: f64,
}

impl<O: Observer> Observer for Launched<'_, O> {
    fn message(&mut self, m: &MessageInfo, start: f64, end: f64) {
        let m = MessageInfo { issued: m.issued + self.dt, ..*m };
        self.inner.message(&m, start + self.dt, end + self.dt);
    }
    fn message_end(&mut self, m: &MessageInfo, end: f64) {
        let m = MessageInfo { issued: m.issued + self.dt, ..*m };
        self.inner.message_end(&m, end + self.dt);
    }
    fn compute(&mut self, rank: crate::sim::Rank, bytes: u64, start: f64, end: f64) {
        self.inner.compute(rank, bytes, start + self.dt, end + self.dt);
    }
    fn wants_link_loads(&self) -> bool {
        self.inner.wants_link_loads()
    }
    fn link_loads(&mut self, links: &[crate::sim::flow::LinkStat], loads: Vec<(u32, f64, f64)>) {
        let dt = self.dt;
        self.inner.link_loads(links, loads.into_iter().map(|(i, t, share)| (i, t + dt, share)).collect());
    }
}

/// Relative error of `time` against `closed`, as docs/report.md defines it.
fn rel_err(time: f64, closed: f64) -> f64 {
    if closed == 0.0 { if time == 0.0 { 0.0 } else { f64::INFINITY } } else { (time / closed - 1.0).abs() }
}

/// Run one point. With at most [`DETAIL_MAX_RANKS`] ranks it also finds the link
/// counters and the critical path (without its steps), unless a timeline would be certain
/// to outgrow [`timeline::MAX_INTERVALS`] ([`Planned::records`]): then the report does
/// not have them.
pub fn run_point(s: &Scenario, pt: &Point) -> PointResult {
    let pl = Planned::new(s, pt, false);
    if pl.records() { tracked(pl, false) } else { run_planned_point(pl, &mut NoObserver) }
}

/// Run one point with the link counters and the critical path (its steps too with
/// `steps`) found as it runs ([`PathTracker`]): what a recorded timeline would give them,
/// without recording it.
pub fn run_point_tracked(s: &Scenario, pt: &Point, steps: bool) -> PointResult {
    tracked(Planned::new(s, pt, false), steps)
}

/// [`run_point_tracked`] of a planned point.
fn tracked(pl: Planned<'_>, steps: bool) -> PointResult {
    let s = pl.scenario();
    let mut tracker = PathTracker::new(pl.pt.ranks, steps);
    let mut res = run_planned_point(pl, &mut tracker);
    if res.not_applicable.is_none() && res.events > 0 {
        tracker.annotate(&mut res);
        drop_loggp_path(s, &mut res);
    }
    res
}

/// Under LogGP no critical path is given: its rules chain messages and reductions, and
/// LogGP's overheads, which sit between them on the compute units, are neither, so the
/// chain would stop at the first one (docs/loggp.md).
fn drop_loggp_path(s: &Scenario, res: &mut PointResult) {
    if s.network.loggp().is_some() {
        res.critical_path = None;
    }
}

/// Run one point recording its [`Timeline`] (`run --trace`), with the link counters and
/// the critical path (its steps too with `steps`) filled in from it.
///
/// The timeline is `None` where the point did not run (not applicable) or outgrew
/// [`timeline::MAX_INTERVALS`]; after a failed simulation it holds what ran.
pub fn run_point_timeline(s: &Scenario, pt: &Point, steps: bool) -> (PointResult, Option<Timeline>) {
    run_point_recorded(s, pt, Recorder::new(pt.ranks), steps)
}

/// [`run_point_timeline`] with its steps, and under the flow model every link's load
/// over time too (`run --trace`).
pub fn run_point_traced(s: &Scenario, pt: &Point) -> (PointResult, Option<Timeline>) {
    run_point_recorded(s, pt, Recorder::new(pt.ranks).with_link_loads(), true)
}

fn run_point_recorded(s: &Scenario, pt: &Point, mut rec: Recorder, steps: bool) -> (PointResult, Option<Timeline>) {
    let mut res = run_point_observed(s, pt, &mut rec);
    if res.not_applicable.is_some() {
        return (res, None);
    }
    let mut tl = rec.finish();
    if let Some(t) = &mut tl {
        if let Ok(topo) = topology::build(&s.topology, pt.ranks) {
            t.nics = (0..pt.ranks).map(|r| topo.nics(r)).collect();
        }
        if res.events > 0 {
            timeline::annotate(&mut res, t, steps);
            drop_loggp_path(s, &mut res);
        }
    }
    (res, tl)
}

/// What a point runs on, once its algorithm, protocol and machine are built.
struct Setup {
    algo: Box<dyn Algorithm>,
    topo: Box<dyn Topology>,
    p: Problem,
    launch: f64,
    /// The data plane it runs with, and whether a full run logs ([`Planned`]).
    mode: DataMode,
    logged: bool,
    /// Bytes its data plane needs ([`Planned::data_bytes`]).
    data_bytes: u64,
}

/// The least time the run of `pt` can take after its launch, by its algorithm's bounds
/// ([`Algorithm::bounds`]: for most, the busiest side of any interface, each message on
/// it held `alpha + m/B` of its hop, shared by the side's ports), without running it;
/// `None` where the algorithm has no bounds or cannot run there, or where the engine
/// does not charge a message so: anything but the ideal model holding ports with no
/// envelope and no noise (as the report claims the bounds). `calibrate` holds counted
/// loops to it.
pub fn lower_bound(s: &Scenario, pt: &Point) -> Option<f64> {
    // Before the run, a flow model's links may be shared; a noisy run has no bound to
    // hold it to (`check_closed_forms` reports its bounds as a baseline only).
    if !bounds_hold(&s.network, s.network.is_flow(), false) || s.noise.is_some() {
        return None;
    }
    let spec = &s.algorithms[pt.algo];
    let algo = Planned::new(s, pt, false).into_algo().ok()?;
    let e = s.data.dtype.bytes();
    let bytes = if spec.collective.has_data() { pt.bytes } else { 0 };
    let p = Problem { ranks: pt.ranks, elems: (bytes / e as u64) as usize, elem_bytes: e };
    let (_, topo) = crate::estimate::point_machine(s, spec, pt.ranks, bytes).ok()?;
    // A channel's own rate voids the bounds, as `check_closed_forms` says of a run.
    if !bounds_hold(&s.network, false, topo.channel_rated()) {
        return None;
    }
    let machine = Machine { topo: topo.as_ref(), cost_per_byte: s.cost_per_byte };
    algo.applicable(&p, &machine).ok()?;
    algo.bounds(&p, &machine).map(|(lo, _)| lo)
}

/// Whether the algorithms' bounds ([`Algorithm::bounds`]) describe how the engine
/// charged (or will charge) a message on `net`: each message holding its ports for
/// `alpha + m/B` of its hop, so no envelope, no LogGP, no `latency: pipelined`, no
/// flow-model link shared (`shared`: some was, or may be), and no channel rate of a
/// cluster's `channel_bandwidth` (`channel_rate`), through which a channel's messages
/// pass one after another. The one rule of [`lower_bound`] and `check_closed_forms`, so
/// that they cannot drift apart.
fn bounds_hold(net: &Network, shared: bool, channel_rate: bool) -> bool {
    !shared && !channel_rate && net.envelope == 0 && net.loggp().is_none() && !net.is_pipelined()
}

/// Run one point with `obs` watching every message and reduction the engine schedules
/// (timelines, Gantt charts). Not-applicable points never reach the engine.
///
/// The steps: `build_point`, the data plane (`data_plane`), the run, then the counters
/// (`fill_counts`), the bound (`check_lower_bound`), the closed forms
/// (`check_closed_forms`), the result's values (`fill_verification`), and with `noise:`
/// or `repeat:` the other seeds (`fill_spread`).
pub fn run_point_observed<O: Observer>(s: &Scenario, pt: &Point, obs: &mut O) -> PointResult {
    run_planned_point(Planned::new(s, pt, false), obs)
}

/// [`run_point_observed`] of a point already planned: its algorithm built, its data
/// plane chosen.
pub fn run_planned_point<O: Observer>(pl: Planned<'_>, obs: &mut O) -> PointResult {
    let started = Instant::now();
    let s = pl.scenario();
    let (mut res, setup) = match build_point(pl) {
        Ok(built) => built,
        Err(res) => return *res,
    };
    let Setup { algo, topo, p, launch, mode, logged, data_bytes: need } = setup;
    let collective = res.collective;
    let obs = &mut Launched { inner: obs, dt: launch };

    // The elements checked: all, or a sample (then the vectors and the reference hold
    // those only, in this order). `auto` decides by the data plane's memory budget.
    if need > s.data.memory_budget {
        res.failures.push(format!(
            "not run: the data plane would need about {}, more than data.memory_budget {}",
            crate::scenario::units::fmt_bytes(need),
            crate::scenario::units::fmt_bytes(s.data.memory_budget)
        ));
        return res;
    }
    // A collective that reduces nothing leaves every input as it was, whatever the op: an
    // `avg`'s premultiplication by 1/P (or integer division) would fail its bit-for-bit check.
    let op = if collective.reduces() { s.data.op } else { crate::sim::data::ReduceOp::Sum };
    let cfg = DataConfig { dtype: s.data.dtype, op, init: s.data.init, seed: s.seed };
    // Every element: the run logs what it does to the data, which is then generated, moved,
    // reduced and checked tile by tile in cache (crate::sim::data::verify_log), unless the
    // log would be large beside the data (many small messages): `logged`.
    let (plane, reference) = if logged { (None, None) } else { data_plane(cfg, p, mode, collective) };
    res.data_mode =
        (mode != DataMode::Off).then(|| if mode == DataMode::Sample { "sample" } else { "full" }.to_string());
    let net = s.network;
    let noise = draw_noise(s, s.seed, p.ranks);
    // A barrier has no data to check; its messages show whether it kept causality.
    let barrier = !collective.has_data() && p.ranks <= crate::causality::MAX_RANKS;
    let mut obs = crate::causality::Both { first: obs, causality: barrier.then(|| Causality::new(p.ranks)) };
    let (a, t, c) = (algo.as_ref(), topo.as_ref(), s.cost_per_byte);
    // The programs of every run of this point (the checks and `repeat:` run it again).
    let prepared = a.prepare(&p, t);
    let programs = prepared.as_ref();
    // A cluster's network proxy (inter.proxy) prices each message across nodes by its
    // sender's connections: the run, its closed form and its bounds all see that machine.
    // Not with switch agents, which simulate_noisy runs on the machine as it is.
    let view = if t.proxy() > 0.0 && !programs.switch_agents() {
        crate::sim::proxy::ProxyView::of(programs, p, t)
    } else {
        None
    };
    let t: &dyn Topology = match &view {
        Some(v) => v,
        None => t,
    };
    let run = if logged {
        simulate_noisy(programs, t, p, c, net, noise.as_ref(), Some(log_plane(p)), &mut obs)
            .map(|(st, log)| (st, None, log.and_then(DataPlane::into_log)))
    } else {
        simulate_noisy(programs, t, p, c, net, noise.as_ref(), plane, &mut obs)
            .map(|(st, v)| (st, v.and_then(DataPlane::into_finals), None))
    };
    let (stats, vectors, log) = match run {
        Ok(out) => out,
        Err(err) => {
            if let crate::sim::engine::SimError::CutOff(cut) = &err {
                res.cut_off = Some(crate::results::CutOffReport::of(cut, s.seed, launch));
            }
            res.failures.push(format!("simulation failed: {err}"));
            // No time: a run that never finished is not the fastest (it had 0 and won).
            res.time_s = f64::NAN;
            res.wall_time_s = started.elapsed().as_secs_f64();
            return res;
        }
    };

    fill_counts(&mut res, &stats, launch, p.ranks);
    let bound = s.network.loggp().is_none() && !s.network.is_pipelined();
    check_lower_bound(&mut res, collective, &p, t, c, bound);
    check_closed_forms(&mut res, s, (a, programs), t, &p, &stats, launch);
    apply_host_floor(&mut res, s, p.ranks);
    let depth = algo.reduction_depth(&p, t);
    let expect = collective.expectations(p.ranks, p.elems);
    let verification = match (vectors, reference, log) {
        (_, _, Some(log)) => verify_logged(cfg, &log, depth, &expect),
        (Some(finals), Some(reference), None) => Some(reference.check(&finals, depth, &expect)),
        _ => None,
    };
    if let Some(v) = verification {
        fill_verification(&mut res, s, &v, depth);
    }
    if let Some(c) = &obs.causality {
        let held = c.check();
        res.verified = Some(held.is_ok());
        if let Err(e) = held {
            res.failures.push(format!(
                "barrier broken: rank {} left at {:e} s before hearing, directly or not, from rank {}",
                e.rank, e.left, e.unheard
            ));
        }
    }
    if s.noise.is_some() || s.repeat.is_some() {
        let skew = noise.as_ref().map_or(0.0, Noise::max_skew);
        fill_spread(&mut res, s, programs, t, p, launch, skew);
    }
    res.wall_time_s = started.elapsed().as_secs_f64();
    res
}

/// The label of entry `spec`'s rows: its name for a selector or an entry that cannot be
/// built, else the algorithm's label with its parameters and protocol
/// (`ring_segmented(segment=262144, protocol=ll)`). `merge` checks shards' rows by it.
pub fn row_label(spec: &crate::scenario::AlgoSpec) -> String {
    if crate::select::is_selector(&spec.name) {
        return spec.name.clone();
    }
    match crate::algos::build_for(spec.collective, &spec.name, crate::algos::Params::new(spec.params.clone())) {
        Ok(algo) => label_of(algo.as_ref(), spec),
        Err(_) => spec.name.clone(),
    }
}

fn label_of(algo: &dyn Algorithm, spec: &crate::scenario::AlgoSpec) -> String {
    crate::scenario::ProtocolChoice::label(algo.label(), spec.protocol)
}

/// Build the point's algorithm, protocol and machine; the result so far, or (boxed, as
/// it is large) the finished result of a point that cannot run.
fn build_point(pl: Planned<'_>) -> Result<(PointResult, Setup), Box<PointResult>> {
    let (s, pt) = (pl.scenario(), pl.pt.clone());
    let spec = &s.algorithms[pt.algo];
    let collective = spec.collective;
    let e = s.data.dtype.bytes();
    // A barrier moves nothing, whatever the sweep's size.
    let bytes = if collective.has_data() { pt.bytes } else { 0 };
    let p = Problem { ranks: pt.ranks, elems: (bytes / e as u64) as usize, elem_bytes: e };
    let mut res =
        PointResult { collective, algorithm: spec.name.clone(), ranks: pt.ranks, bytes, ..PointResult::default() };
    // The policy, decided once from the estimates (crate::estimate::Planned).
    let mode = pl.data_mode();
    let (logged, data_bytes) = (pl.logs(mode), pl.data_bytes(mode));
    // The scenario was validated, so this only fails on an internal error; report it
    // as a failed point rather than panic.
    let algo: Box<dyn Algorithm> = match pl.into_algo() {
        Ok(a) => a,
        Err(err) => {
            res.failures.push(err);
            return Err(Box::new(res));
        }
    };
    res.algorithm = label_of(algo.as_ref(), spec);
    let (proto, topo): (Proto, Box<dyn Topology>) = match crate::estimate::point_machine(s, spec, pt.ranks, bytes) {
        Ok(t) => t,
        Err(why) => {
            res.not_applicable = Some(why);
            return Err(Box::new(res));
        }
    };
    res.protocol = spec.protocol.map(|_| proto.name().to_string());
    // Every rank starts the collective together after `launch` and, for NCCL's ring and
    // tree, the step latency of each of their steps inside a node (added once the point
    // is known to run): the whole run shifts.
    let mut launch = topology::launch(&s.topology, proto);
    res.launch_s = (launch > 0.0).then_some(launch);
    let machine = Machine { topo: topo.as_ref(), cost_per_byte: s.cost_per_byte };
    if let Err(why) = algo.applicable(&p, &machine) {
        res.not_applicable = Some(why);
        return Err(Box::new(res));
    }
    let steps = algo.start_steps(&p, topo.as_ref());
    if steps > 0 {
        launch += steps as f64 * topology::step_latency(&s.topology, proto);
        res.launch_s = (launch > 0.0).then_some(launch);
    }
    // Switch agents (NVLS) hold no vector and draw no noise.
    if algo.switch_agents() && (s.data.mode != DataMode::Off || s.noise.is_some()) {
        res.not_applicable = Some(format!(
            "{} has the NVSwitch add and copy, which holds no data and no noise here: run it with \
             data: {{ mode: off }} and without noise",
            algo.id()
        ));
        return Err(Box::new(res));
    }
    Ok((res, Setup { algo, topo, p, launch, mode, logged, data_bytes }))
}

/// The data plane of a point that moves real values (none with data off, for a barrier,
/// or where the run logs instead), and the exact result to check it against.
fn data_plane(
    cfg: DataConfig,
    p: Problem,
    mode: DataMode,
    collective: crate::collective::Collective,
) -> (Option<impl FnOnce(&[usize]) -> DataPlane>, Option<crate::sim::data::Reference>) {
    if mode == DataMode::Off || !collective.has_data() {
        return (None, None);
    }
    let positions = (mode == DataMode::Sample).then(|| sample_positions(p.elems));
    let (values, reference) = generate(cfg, p.ranks, p.elems, positions.clone());
    let (op, n) = (cfg.op, p.elems);
    let plane = move |scratch: &[usize]| match positions {
        Some(at) => DataPlane::sampled(n, at, values, scratch, op),
        None => DataPlane::new(values, scratch, op),
    };
    (Some(plane), Some(reference))
}

/// Count one more failed seed run of `res`, and list it among the first [`LISTED_LINES`].
fn list_failed(res: &mut PointResult, failed: &mut usize, line: impl FnOnce() -> String) {
    *failed += 1;
    if *failed <= LISTED_LINES {
        res.failures.push(line());
    }
}

/// The scenario's noise drawn for `seed` on `ranks` ranks; `None` without `noise:`.
fn draw_noise(s: &Scenario, seed: u64, ranks: usize) -> Option<Noise> {
    let flow = s.network.is_flow();
    s.noise.as_ref().map(|spec| Noise::draw(spec, seed, ranks, flow))
}

/// Back-to-back calls come no faster than the host threads issue them
/// ([`crate::scenario::HostSpec`]): where that floor is above the simulated time it is
/// the point's time, and the bandwidths and efficiency follow it. The closed forms and
/// bounds were checked against the machine's own time before, as they describe the GPUs.
fn apply_host_floor(res: &mut PointResult, s: &Scenario, ranks: usize) {
    let Some(floor) = s.host.map(|h| h.floor(ranks)) else { return };
    if floor <= res.time_s {
        return;
    }
    res.notes.push(format!(
        "host-bound: the GPUs finish in {:e} s, but back-to-back calls come one per {floor:e} s (host.issue x GPUs \
         per thread)",
        res.time_s
    ));
    res.time_s = floor;
    res.host_bound_s = Some(floor);
    if let Some(factor) = res.collective.busbw_factor(ranks) {
        let algbw = res.bytes as f64 / floor;
        res.algbw_bps = Some(algbw);
        res.busbw_bps = Some(algbw * factor);
    }
    if res.efficiency.is_some() {
        res.efficiency = Some(res.lower_bound_s / floor);
    }
}

/// The engine's counters, and the time with the launch.
fn fill_counts(res: &mut PointResult, stats: &SimStats, launch: f64, ranks: usize) {
    res.time_s = stats.time + launch;
    res.messages = stats.messages;
    res.bytes_sent_max = stats.bytes_sent.iter().copied().max().unwrap_or(0);
    res.peak_buffer_bytes = stats.peak_buffer_bytes;
    res.events = stats.events;
    if ranks <= DETAIL_MAX_RANKS {
        res.bytes_sent_per_rank = Some(stats.bytes_sent.clone());
        res.bytes_received_per_rank = Some(stats.bytes_received.clone());
    }
}

/// Section 3's lower bound, the bandwidths and the efficiency; a run below the bound
/// fails. Without `bound` (the LogGP model, whose costs are not the topology's alpha
/// and B the bound is made of, and `latency: pipelined`, under which the bound's
/// latency and bandwidth terms may overlap) the bound is 0 and no efficiency is given.
fn check_lower_bound(
    res: &mut PointResult,
    collective: crate::collective::Collective,
    p: &Problem,
    topo: &dyn Topology,
    cost_per_byte: f64,
    bound: bool,
) {
    res.lower_bound_s = if bound { cost_model::lower_bound_of(collective, p, topo, cost_per_byte) } else { 0.0 };
    if res.time_s > 0.0 {
        // A time of a few subnormal seconds (a LogGP gap of 5e-324 s) makes bytes over
        // time overflow: no figure then, as for a run of no time, never `inf`.
        if let Some(factor) = collective.busbw_factor(p.ranks) {
            let algbw = res.bytes as f64 / res.time_s;
            res.algbw_bps = algbw.is_finite().then_some(algbw);
            res.busbw_bps = (algbw * factor).is_finite().then_some(algbw * factor);
        }
        if !bound {
            return;
        }
        let eff = res.lower_bound_s / res.time_s;
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
}

/// Why a run on a machine with a channel rate claims no closed form or bound.
pub(crate) const CHANNEL_RATE_NO_FORM: &str = "channel_bandwidth: a channel's messages pass through its own rate one after \
     another, which the closed forms and bounds do not count (docs/gpu-clusters.md, \"Channel bandwidth\")";

/// The closed form (or its bounds) against the time, and under the flow model the ideal
/// model's time. With `noise:` the closed forms describe the machine without noise: they
/// are reported as a baseline and never fail the point.
fn check_closed_forms(
    res: &mut PointResult,
    s: &Scenario,
    (algo, programs): (&dyn Algorithm, &dyn Programs),
    topo: &dyn Topology,
    p: &Problem,
    stats: &SimStats,
    launch: f64,
) {
    let machine = Machine { topo, cost_per_byte: s.cost_per_byte };
    let net = s.network;
    let noisy = s.noise.is_some();
    let ran = stats.time;
    // The closed forms count the launch as the run does: once, before everything.
    let closed_form = match net.loggp() {
        None => algo.closed_form(p, &machine),
        Some(l) => algo.closed_form_loggp(p, &machine, l),
    };
    let closed_form = closed_form.map(|(cf, tol)| (cf + launch, tol));
    if let Some(flow) = &stats.flow {
        fault_notes(res, flow, launch);
        res.links_shared = Some(flow.shared());
        res.network_links = Some(link_report(flow, ran, p.ranks <= DETAIL_MAX_RANKS));
        if noisy {
            res.notes.push(
                "noise: the check against the ideal model is skipped (the ideal model has no skew, OS detours, slow \
                 ranks or links, or link faults to run the same point with)"
                    .to_string(),
            );
        } else {
            check_against_ideal(res, programs, topo, *p, s.cost_per_byte, net, ran, flow);
        }
        if let Some(ideal) = &mut res.ideal_time_s {
            *ideal += launch;
        }
    }

    // The closed forms count payload bytes on unshared links only.
    let shared_flow = stats.flow.as_ref().is_some_and(|f| f.shared());
    // A channel's own rate (a cluster's channel_bandwidth) is the engine's, not the forms'.
    let channel_rate = topo.channel_rated();
    let closed_form = closed_form.and_then(|cf| {
        let why = if channel_rate {
            Some(CHANNEL_RATE_NO_FORM)
        } else if net.is_pipelined() {
            Some(
                "network.latency: pipelined: the closed forms and bounds hold a message's ports for its alpha too, \
                 so none is claimed under this mode (docs/model.md)",
            )
        } else if shared_flow && !noisy {
            Some("shared links slowed messages under the flow model; no closed form follows the sharing")
        } else if net.envelope > 0 {
            Some("the closed forms do not count network.envelope")
        } else {
            None
        };
        res.no_closed_form = why.map(str::to_string);
        why.is_none().then_some(cf)
    });
    // The bounds are the ideal model's.
    let loggp = net.loggp().is_some();
    let pipelined = net.is_pipelined();
    let bounds = if closed_form.is_none() && bounds_hold(&net, shared_flow, channel_rate) {
        algo.bounds(p, &machine)
    } else {
        None
    };
    if channel_rate && res.no_closed_form.is_none() {
        res.no_closed_form = Some(CHANNEL_RATE_NO_FORM.to_string());
    }
    if loggp && closed_form.is_none() && res.no_closed_form.is_none() {
        res.no_closed_form = Some(
            "no closed form under LogGP for this algorithm and problem (docs/loggp.md lists the ones there are)"
                .to_string(),
        );
    }
    if pipelined && res.no_closed_form.is_none() {
        res.no_closed_form = Some(
            "network.latency: pipelined: the closed forms and bounds hold a message's ports for its alpha too, \
             so none is claimed under this mode (docs/model.md)"
                .to_string(),
        );
    }
    let check = s.check.closed_form && !noisy;
    // The bounds count the launch as the run does, as the closed forms do.
    // Where the two meet (one order of service) they are sums in different orders and can
    // cross by a rounding: the lower is held to the upper, not reported above it.
    if let Some((lo, hi)) = bounds.map(|(lo, hi)| ((lo + launch).min(hi + launch), hi + launch)) {
        res.closed_form_kind = Some(if noisy { "baseline" } else { "bound" }.to_string());
        res.closed_form_bounds_s = Some([lo, hi]);
        let slack = 1e-9;
        if check && !(res.time_s >= lo * (1.0 - slack) && res.time_s <= hi * (1.0 + slack)) {
            res.failures.push(format!("simulated {:e} s but the bounds say between {lo:e} and {hi:e} s", res.time_s));
        }
    }
    if let Some((closed, tol)) = closed_form {
        let err = rel_err(res.time_s, closed);
        res.closed_form_kind = Some(if noisy { "baseline" } else { "exact" }.to_string());
        res.closed_form_s = Some(closed);
        // A closed form of 0 against a time above it (a noisy run's skew, where the
        // noise-free run sends nothing) has no relative error: none, not an infinity.
        res.closed_form_rel_err = err.is_finite().then_some(err);
        res.closed_form_tolerance = Some(tol);
        if check && !err.is_finite() {
            res.failures.push(format!("simulated {:e} s but the closed form says {closed:e} s", res.time_s));
        } else if check && err > tol {
            res.failures.push(format!(
                "simulated {:e} s but the closed form says {closed:e} s (relative error {err:.3e} > {tol:e})",
                res.time_s
            ));
        }
    }
}

/// The check of the final values against the exact result.
fn fill_verification(res: &mut PointResult, s: &Scenario, v: &Verification, depth: usize) {
    res.max_abs_error = Some(v.max_abs_error);
    res.max_rel_error = Some(v.max_rel_error);
    res.max_ulp_error = Some(v.max_ulp_error);
    res.reduction_depth = Some(depth as u64);
    res.error_bound = Some(v.error_bound);
    res.verified = Some(v.verified);
    res.ranks_bitwise_equal = Some(v.ranks_bitwise_equal);
    if let Some(bad) = &v.first_violation {
        res.failures.push(if bad.lost {
            format!(
                "wrong result: rank {} element {} met an element the sampled run does not track",
                bad.rank, bad.index
            )
        } else {
            format!(
                "wrong result: rank {} element {} is {:e}, exact {:e}, allowed error {:e}",
                bad.rank, bad.index, bad.got, bad.exact, bad.bound
            )
        });
    }
    if v.overflowed > 0 {
        res.notes.push(format!(
            "{} element(s) passed {}'s range in this algorithm's order of reduction (a partial \
             result beyond its largest finite value, though the exact result is not) and hold an infinity or \
             not-a-number, as IEEE arithmetic gives in that order (NCCL's and MPI's reductions alike): not \
             counted as errors; the other elements are checked against the bound",
            v.overflowed,
            s.data.dtype.name()
        ));
    }
    if s.check.bitwise && !v.ranks_bitwise_equal {
        res.failures.push(
            "ranks ended with vectors that are not bit-identical (check.bitwise: true asks that they are)".to_string(),
        );
    }
}

/// With `noise:` or `repeat:`: the point again for seeds `seed + 1 .. seed + repeat`
/// (timing only: the data does not move the times) and without noise, and the spread
/// of the times ([`Spread`]). `skew0` is the first seed's skew.
fn fill_spread(
    res: &mut PointResult,
    s: &Scenario,
    algo: &dyn Programs,
    topo: &dyn Topology,
    p: Problem,
    launch: f64,
    skew0: f64,
) {
    let net = s.network;
    let none = || None::<fn(&[usize]) -> DataPlane>;
    // Every seed's call is issued by the same host threads as the first's (whose time
    // `apply_host_floor` already raised): the same floor holds for each.
    let floor = s.host.map_or(0.0, |h| h.floor(p.ranks));
    let timed = |noise: Option<&Noise>| {
        simulate_noisy(algo, topo, p, s.cost_per_byte, net, noise, none(), &mut NoObserver)
            .map(|(st, _)| (st.time + launch).max(floor))
    };
    let (mut times, mut skews) = (vec![res.time_s], vec![skew0]);
    // Seeds (and levels' seeds) that failed: the first LISTED_LINES are listed.
    let mut failed = 0usize;
    for k in 1..s.repeat.unwrap_or(1) {
        let seed = s.seed.wrapping_add(u64::from(k));
        let noise = draw_noise(s, seed, p.ranks);
        match timed(noise.as_ref()) {
            Ok(t) => {
                times.push(t);
                skews.push(noise.as_ref().map_or(0.0, Noise::max_skew));
            }
            Err(err) => {
                if let (None, crate::sim::engine::SimError::CutOff(cut)) = (&res.cut_off, &err) {
                    res.cut_off = Some(crate::results::CutOffReport::of(cut, seed, launch));
                }
                list_failed(res, &mut failed, || format!("seed {seed}: simulation failed: {err}"));
            }
        }
    }
    let noise_free = if s.noise.is_some() {
        match timed(None) {
            Ok(t) => Some(t),
            Err(err) => {
                res.failures.push(format!("without noise: simulation failed: {err}"));
                None
            }
        }
    } else {
        None
    };
    let spread = Spread::of(&times, &skews, noise_free);
    if let Some(spec) = s.noise.as_ref().filter(|n| !n.levels.is_empty()) {
        let mut levels = Vec::new();
        for &level in &spec.levels {
            let scaled = spec.scaled(level);
            let mut sum = 0.0;
            let mut n = 0;
            for k in 0..s.repeat.unwrap_or(1) {
                let seed = s.seed.wrapping_add(u64::from(k));
                let noise = Noise::draw(&scaled, seed, p.ranks, s.network.is_flow());
                match timed(Some(&noise)) {
                    Ok(t) => {
                        sum += t;
                        n += 1;
                    }
                    Err(err) => {
                        list_failed(res, &mut failed, || {
                            format!("level {level}, seed {seed}: simulation failed: {err}")
                        });
                    }
                }
            }
            let mean = (n > 0).then(|| sum / f64::from(n));
            let slowdown = mean.zip(noise_free).map(|(m, f)| m / f);
            levels.push(crate::results::LevelResult { level, time_mean_s: mean, slowdown });
        }
        res.noise_levels = Some(levels);
    }
    if failed > LISTED_LINES {
        res.failures.push(format!(
            "{} more seed run(s) failed after these (every failed seed's time is left out of times_s)",
            failed - LISTED_LINES
        ));
    }
    if s.repeat.is_some() {
        res.times_s = Some(times);
        res.time_mean_s = Some(spread.mean);
        res.time_p50_s = Some(spread.p50);
        res.time_p90_s = Some(spread.p90);
        res.time_p99_s = Some(spread.p99);
        res.time_max_s = Some(spread.max);
    }
    if s.noise.is_some() {
        if s.repeat.is_some() {
            res.skews_s = Some(skews);
        }
        res.noise_free_time_s = noise_free;
        res.slowdown = spread.slowdown;
        res.skew_s = Some(spread.skew);
        res.skew_sensitivity = spread.sensitivity;
    }
}

/// The check of a full run from its log: tile by tile where the log allows it, else on
/// whole vectors (the log replayed as the engine would have run it).
fn verify_logged(
    cfg: DataConfig,
    log: &OpLog,
    depth: usize,
    expect: &crate::sim::data::Expectations,
) -> Option<Verification> {
    if let Some((v, _)) = verify_log(cfg, log, depth, expect) {
        return Some(v);
    }
    let (values, reference) = generate(cfg, log.ranks(), log.lens()[0], None);
    let mut plane = DataPlane::new(values, &log.lens()[1..], cfg.op);
    log.replay(&mut plane);
    plane.into_finals().map(|finals| reference.check(&finals, depth, expect))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point of fewer events than one of the engine's blocks still counts: a sweep of
    /// small full-data points read `0.000e0 events/s` while only whole blocks counted.
    #[test]
    fn progress_counts_the_events_of_small_points() {
        let p = Progress::new(2, 0, false);
        p.tick(1_000);
        p.tick(crate::sim::engine::EVENT_BLOCK + 7);
        assert_eq!(p.tails.load(Ordering::Relaxed), 1_007);
        assert_eq!(p.done.load(Ordering::Relaxed), 2);
        p.finish();
    }

    /// A point whose message count is only a bound leaves the time left unknown until a
    /// point finishes, instead of a forecast thousands of times too long.
    #[test]
    fn progress_forecasts_only_from_exact_counts() {
        let est = |events, messages_exact| crate::estimate::Estimate {
            data_bytes: 0,
            engine_bytes: 0,
            timeline_bytes: 0,
            messages: events / 3,
            messages_exact,
            events,
        };
        assert_eq!(progress_work(&[est(300, true), est(600, true)]), 900);
        assert_eq!(progress_work(&[est(300, true), est(51_538_821_120, false)]), 0);
        assert_eq!(progress_work(&[]), 0);
    }
}
