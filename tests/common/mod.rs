//! Helpers shared by the test files: an algorithm of hand-written programs ([`Script`]),
//! a checked run of an algorithm with data and its closed form ([`simulate_checked`],
//! [`meets_form`]), and a scenario's points ([`scenario`], [`run_clean`]). Each test file
//! uses a part of them.
#![allow(dead_code)]

use allreduce_sim::algos::{Algorithm, Machine, Problem};
use allreduce_sim::collective::Collective;
use allreduce_sim::report::PointResult;
use allreduce_sim::runner::{Point, run_point};
use allreduce_sim::scenario::{Scenario, parse_str};
use allreduce_sim::sim::data::{Expectations, Init, ReduceOp, Reference, Vectors, initial_values};
use allreduce_sim::sim::engine::{NoObserver, SimStats};
use allreduce_sim::sim::{Op, Program, Rank, simulate};
use allreduce_sim::topology::{FullyConnected, Link, Topology};

/// An algorithm given as a fixed list of ops per rank.
#[derive(Debug)]
pub struct Script(pub Vec<Vec<Op>>);

impl Algorithm for Script {
    fn id(&self) -> &'static str {
        "script"
    }
    fn program(&self, rank: Rank, _p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        vec![Box::new(self.0[rank as usize].clone().into_iter())]
    }
    fn closed_form(&self, _p: &Problem, _m: &Machine) -> Option<(f64, f64)> {
        None
    }
    fn reduction_depth(&self, _p: &Problem, _topo: &dyn Topology) -> usize {
        1
    }
}

/// Simulate `algo` of collective `c` on `topo` with `n` random f32 elements a rank
/// (drawn from `seed`) and a cost per byte of `cpb`, and check every element the
/// collective promises.
pub fn simulate_checked(
    c: Collective,
    algo: &dyn Algorithm,
    topo: &dyn Topology,
    n: usize,
    cpb: f64,
    seed: u64,
) -> Result<SimStats, String> {
    let p = Problem { ranks: topo.ranks(), elems: n, elem_bytes: 4 };
    let m = Machine { topo, cost_per_byte: cpb };
    algo.applicable(&p, &m).map_err(|e| format!("not applicable: {e}"))?;
    let inputs: Vectors =
        (0..p.ranks).map(|r| initial_values(Init::Random, seed, r, n)).collect::<Vec<Vec<f32>>>().into();
    let reference = Reference::of(&inputs, ReduceOp::Sum);
    let (stats, vectors) = simulate(algo, topo, p, cpb, Some((inputs, ReduceOp::Sum)), &mut NoObserver)
        .map_err(|e| format!("simulation failed: {e}"))?;
    let v = vectors.ok_or("no data")?;
    let check = reference.check(&v, algo.reduction_depth(&p, topo), &c.expectations(p.ranks, n));
    if !check.verified {
        return Err(format!("wrong result {:?}", check.first_violation));
    }
    Ok(stats)
}

/// Compare a simulated `time` of `n` elements with `algo`'s closed form: `Ok(true)`
/// where it has one and meets it, `Ok(false)` where it has none and its bounds
/// (docs/nccl.md, "Bounds") hold the time.
pub fn meets_form(algo: &dyn Algorithm, topo: &dyn Topology, n: usize, cpb: f64, time: f64) -> Result<bool, String> {
    let p = Problem { ranks: topo.ranks(), elems: n, elem_bytes: 4 };
    let m = Machine { topo, cost_per_byte: cpb };
    let Some((form, tol)) = algo.closed_form(&p, &m) else {
        let (lo, hi) = algo.closed_form_bounds(&p, &m).ok_or("neither a form nor bounds")?;
        if !(lo <= time * (1.0 + 1e-9) && time <= hi * (1.0 + 1e-9)) {
            return Err(format!("simulated {time:e} outside the bounds [{lo:e}, {hi:e}]"));
        }
        return Ok(false);
    };
    let err = if form == 0.0 { time.abs() } else { (time / form - 1.0).abs() };
    if err > tol {
        return Err(format!("simulated {time:e} but closed form {form:e} (rel err {err:e})"));
    }
    Ok(true)
}

/// A fully connected machine of 1.5 us and 100 Gb/s links.
pub fn flat(ranks: usize, nics: u32) -> FullyConnected {
    FullyConnected { ranks, link: Link { alpha: 1.5e-6, bandwidth: 12.5e9 }, nics }
}

/// The scenario `text`, named `name` in messages; panics with the parser's message.
pub fn scenario(text: &str, name: &str) -> Scenario {
    parse_str(text, name).unwrap_or_else(|e| panic!("{e}"))
}

/// Point `algo` of `s` at its first size on `ranks` ranks, which must run and pass.
pub fn run_clean(s: &Scenario, algo: usize, ranks: usize) -> PointResult {
    let r = run_point(s, &Point { algo, ranks, bytes: s.sizes[0] });
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert!(r.not_applicable.is_none(), "{:?}", r.not_applicable);
    r
}

/// `got` within 1e-12 of `want`, relatively.
pub fn close(got: f64, want: f64) {
    assert!((got / want - 1.0).abs() < 1e-12, "got {got:e}, want {want:e}");
}

/// Simulate an allreduce of `n` random elements a rank, check every element against the
/// reference sum, and return the time.
pub fn run_allreduce(algo: &dyn Algorithm, topo: &dyn Topology, n: usize) -> f64 {
    let p = Problem { ranks: topo.ranks(), elems: n, elem_bytes: 4 };
    algo.applicable(&p, &Machine { topo, cost_per_byte: 0.0 }).unwrap();
    let inputs: Vectors = (0..p.ranks).map(|r| initial_values(Init::Random, 3, r, n)).collect::<Vec<Vec<f32>>>().into();
    let reference = Reference::of(&inputs, ReduceOp::Sum);
    let (stats, v) = simulate(algo, topo, p, 0.0, Some((inputs, ReduceOp::Sum)), &mut NoObserver).unwrap();
    let check = reference.check(&v.unwrap(), algo.reduction_depth(&p, topo), &Expectations::Allreduce);
    assert!(check.verified, "{}: {:?}", algo.label(), check.first_violation);
    stats.time
}

/// The all_reduce_perf log the engine gives for scenario `text` at `sizes` (which replace
/// its `sizes: [1MiB]` line), timing only: `env` (whole `# NAME=value` lines) in the
/// header, `ranks` devices named `device`, 4 to a host, and every time to 12 decimals of a
/// microsecond, so that a fit at the machine that made the log is exact. The report's
/// results come back beside it.
pub fn engine_log(
    text: &str,
    sizes: &[u64],
    env: &str,
    ranks: usize,
    device: &str,
    name: &str,
) -> (Vec<PointResult>, Vec<allreduce_sim::calibrate::Run>) {
    engine_log_on_hosts(text, sizes, env, ranks, 4, device, name)
}

/// [`engine_log`] with `per_host` devices to a host (the GPUs per node `calibrate` reads
/// off the log).
pub fn engine_log_on_hosts(
    text: &str,
    sizes: &[u64],
    env: &str,
    ranks: usize,
    per_host: usize,
    device: &str,
    name: &str,
) -> (Vec<PointResult>, Vec<allreduce_sim::calibrate::Run>) {
    let text = text.replace(
        "sizes: [1MiB]",
        &format!(
            "sizes: [{}]\ndata: {{ mode: off }}\ncheck: {{ closed_form: false }}",
            sizes.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        ),
    );
    let s = parse_str(&text, "truth.yaml").unwrap();
    let report = allreduce_sim::runner::run(&s);
    let mut out = format!("# Collective test starting: all_reduce_perf\n{env}# Using devices\n");
    for r in 0..ranks {
        out.push_str(&format!(
            "#  Rank {r:2} Group  0 Pid 1 on host{} device {} [0x1] {device}\n",
            r / per_host,
            r % per_host
        ));
    }
    out.push_str("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n");
    for p in &report.results {
        assert!(p.failures.is_empty(), "{:?}", p.failures);
        let t = format!("{:.12}", p.time_s * 1e6);
        out.push_str(&format!("{:>12} {:>12} float sum -1 {t} 0 0 0 {t} 0 0 0\n", p.bytes, p.bytes / 4));
    }
    let runs = allreduce_sim::calibrate::nccl_tests::parse(&out, name).unwrap();
    (report.results, runs)
}

/// The binary started by `sh -c "<limit> && exec \"$0\" <args>"`, so that a process limit
/// (`ulimit -v`, `-f`, `-s`) or an `export` applies to it alone and not to the test. `args`
/// may name `"$1"`, `"$2"`, ...: the `positional` paths, in order.
pub fn cli_under(limit: &str, args: &str, positional: &[&std::path::Path]) -> std::process::Command {
    let mut c = std::process::Command::new("sh");
    c.args(["-c", &format!("{limit} && exec \"$0\" {args}")])
        .arg(env!("CARGO_BIN_EXE_allreduce-sim"))
        .args(positional)
        .env("RUST_BACKTRACE", "0");
    c
}
