//! A point's algorithm is built once ([`allreduce_sim::estimate::Planned`]): the
//! estimates that decide how it runs, the run, its checks and the reruns of `repeat:`
//! all read the one build. Counted with [`allreduce_sim::algos::builds`], which counts
//! every build of the process, so the cases run one at a time.

use std::sync::Mutex;

use allreduce_sim::algos;
use allreduce_sim::estimate;
use allreduce_sim::runner::{self, RunOptions};
use allreduce_sim::scenario::parse_str;
use allreduce_sim::shard::Shard;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const SWEEP: &str = "
name: builds
seed: 3
ranks: [4, 7]
topology: { kind: fully_connected, link: { alpha: 1us, bandwidth: 100Gbps }, nics: 2 }
compute: { cost_per_byte: 0.05ns }
data: { dtype: f32, op: sum, init: random, mode: full }
algorithms: [ring, double_binary_tree, butterfly, {name: binomial_tree, segments: 2}]
sizes: [1KiB, 64KiB]
";

/// Builds while `f` runs.
fn builds_of(f: impl FnOnce()) -> u64 {
    let before = algos::builds();
    f();
    algos::builds() - before
}

#[test]
fn every_point_builds_its_algorithm_once() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = parse_str(SWEEP, "builds.yaml").unwrap();
    let points = s.points().len() as u64;
    assert_eq!(points, 16);
    // As `run` does: plan, check the memory, run the planned points.
    let mut passed = false;
    let builds = builds_of(|| {
        let (plans, limit) =
            estimate::checked_plan(&s, None, Some("64GiB"), "--max-memory", estimate::ReportForm::Json, "--ranks")
                .unwrap();
        let opts = RunOptions { shard: None, progress: true, memory_limit: limit };
        let report = runner::run_planned(&s, plans, &opts);
        passed = report.results.iter().all(|r| r.passed());
    });
    assert!(passed);
    assert_eq!(builds, points, "a point built its algorithm more than once");
    // The library's one call, and a shard of it.
    let opts = RunOptions { shard: None, progress: false, memory_limit: Some(u64::MAX) };
    assert_eq!(builds_of(|| drop(runner::run_with(&s, &opts))), points);
    let opts = RunOptions { shard: Some("1/3".parse::<Shard>().unwrap()), ..opts };
    assert_eq!(builds_of(|| drop(runner::run_with(&s, &opts))), s.points_of(opts.shard).len() as u64);
}

#[test]
fn reruns_and_checks_reuse_the_build() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Noise and repeat: the point runs four times and once more without noise; under
    // the flow model each run is checked against the ideal model too.
    let text = format!(
        "{SWEEP}repeat: 4\nnoise: {{ skew: {{ dist: exponential, scale: 10us, fraction: 0.5 }} }}\nnetwork: {{ model: flow }}\n"
    );
    let s = parse_str(&text, "repeat.yaml").unwrap();
    let points = s.points().len() as u64;
    let mut times = 0;
    let builds = builds_of(|| {
        let report = runner::run_with(&s, &RunOptions::default());
        times = report.results.iter().map(|r| r.times_s.as_ref().map_or(0, Vec::len)).sum();
    });
    assert_eq!(times as u64, 4 * points, "each point ran for every seed");
    assert_eq!(builds, points, "a rerun built its algorithm again");
}
