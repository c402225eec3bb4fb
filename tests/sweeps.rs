//! Sweeps: parallel runs come out in sweep order and equal a serial run; `--shard I/N`
//! and `merge` give back the whole run; bad shards and mismatched merges are refused;
//! `explain` prints the steps of the algorithm's real program.

use std::path::{Path, PathBuf};

use allreduce_sim::report::{PointResult, Report};
use allreduce_sim::runner::{self, RunOptions};
use allreduce_sim::scenario::parse_str;
use allreduce_sim::shard::{self, Shard};
use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

/// 3 rank counts x 2 sizes x 3 algorithms = 18 points, all quick.
const SWEEP: &str = "\
name: sweep test
seed: 7
ranks: [2, 3, 8]
topology:
  link: { alpha: 1us, bandwidth: 100Gbps }
  nics: 1
compute: { cost_per_byte: 0.05ns }
algorithms: [ring, butterfly, star]
sizes: [4KiB, 64KiB]
";

fn without_wall_times(mut results: Vec<PointResult>) -> Vec<PointResult> {
    for r in &mut results {
        r.wall_time_s = 0.0;
    }
    results
}

/// A fresh directory for one test's files.
fn dir(test: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sweeps").join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_scenario(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn cli() -> Command {
    let mut c = Command::cargo_bin("allreduce-sim").unwrap();
    c.env("RUST_BACKTRACE", "0");
    c
}

/// A JSON report with every `wall_time_s` removed.
fn json_without_wall_times(path: &Path) -> Value {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for r in v["results"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("wall_time_s");
    }
    v
}

#[test]
fn parallel_sweep_equals_serial_in_order() {
    let s = parse_str(SWEEP, "sweep.yaml").unwrap();
    let points = runner::points(&s);
    assert_eq!(points.len(), 18);
    // Ranks outermost, then sizes, then algorithms.
    assert_eq!((points[0].ranks, points[0].bytes, points[0].algo), (2, 4096, 0));
    assert_eq!((points[1].ranks, points[1].bytes, points[1].algo), (2, 4096, 1));
    assert_eq!((points[3].ranks, points[3].bytes, points[3].algo), (2, 65536, 0));
    assert_eq!((points[6].ranks, points[6].bytes, points[6].algo), (3, 4096, 0));

    let parallel = runner::run(&s);
    let mut serial: Vec<PointResult> = points.iter().map(|pt| runner::run_point(&s, pt)).collect();
    // A sweep also names each point's fastest algorithm on its rows.
    allreduce_sim::select::rank(&mut serial);
    assert_eq!(without_wall_times(parallel.results.clone()), without_wall_times(serial));
    // And again: the same, run after run.
    assert_eq!(without_wall_times(runner::run(&s).results), without_wall_times(parallel.results));
}

#[test]
fn shards_partition_the_sweep_and_merge_back() {
    let s = parse_str(SWEEP, "sweep.yaml").unwrap();
    let full = runner::run(&s);
    let mut inputs = Vec::new();
    let mut total = 0;
    for index in (0..4).rev() {
        let shard = Shard { index, count: 4 };
        let part = runner::run_with(&s, &RunOptions { shard: Some(shard), progress: false, memory_limit: None });
        assert_eq!(part.shard, Some(shard));
        total += part.results.len();
        inputs.push((format!("shard{index}.json"), serde_json::to_string(&part).unwrap()));
    }
    assert_eq!(total, full.results.len());
    let merged: Report = shard::merge(&inputs).unwrap();
    assert_eq!(merged.shard, None);
    assert_eq!(without_wall_times(merged.results), without_wall_times(full.results));
}

/// A barrier runs once per rank count and reports 0 bytes: its shards merge like any
/// other (they were refused: "result 4 is P = 16, S = 0 B where the sweep has ... 4096 B").
#[test]
fn shards_of_a_sweep_with_a_barrier_merge_back() {
    let text = "ranks: [3, 4]\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps } }\n\
                algorithms: [ring, { name: all_to_all, collective: barrier }, { name: ring, collective: allgather }]\n\
                sizes: [4KiB, 64KiB]\n";
    let s = parse_str(text, "barrier.yaml").unwrap();
    let full = runner::run(&s);
    assert!(full.results.iter().any(|r| r.bytes == 0), "no barrier row");
    for count in [1, 2, 3, 5] {
        let inputs: Vec<(String, String)> = (0..count)
            .map(|index| {
                let opts = RunOptions { shard: Some(Shard { index, count }), progress: false, memory_limit: None };
                (format!("s{index}.json"), serde_json::to_string(&runner::run_with(&s, &opts)).unwrap())
            })
            .collect();
        let merged = shard::merge(&inputs).unwrap_or_else(|e| panic!("{count} shards: {e}"));
        assert_eq!(without_wall_times(merged.results), without_wall_times(full.results.clone()));
    }
}

/// A `shard` field no run writes (edited, or from another tool) is refused with a message
/// before it sizes or indexes anything: no panic, no allocation of `count` slots.
#[test]
fn impossible_shard_fields_are_refused() {
    let s = parse_str(SWEEP, "sweep.yaml").unwrap();
    let part = runner::run_with(&s, &RunOptions { shard: Some(Shard { index: 0, count: 2 }), ..RunOptions::default() });
    let with_shard = |index: u64, count: u64| {
        let mut v = serde_json::to_value(&part).unwrap();
        v["shard"] = serde_json::json!({ "index": index, "count": count });
        ("edited.json".to_string(), v.to_string())
    };
    for (index, count, says) in [
        (5, 2, "says index 5 of count 2"),
        (0, 0, "says index 0 of count 0"),
        (0, 1_000_000_000_000_000, "shard(s) 1/1000000000000000, 2/1000000000000000"),
        (0, u64::MAX, "and 18446744073709551606 more missing"),
    ] {
        let e = shard::merge(&[with_shard(index, count)]).unwrap_err().to_string();
        assert!(e.contains(says), "{index}/{count}: {e}");
        // Second of two inputs too.
        let e = shard::merge(&[with_shard(0, 2), with_shard(index, count)]).unwrap_err().to_string();
        assert!(e.starts_with("edited.json"), "{index}/{count}: {e}");
    }
}

#[test]
fn shard_and_merge_round_trip_on_the_command_line() {
    let d = dir("round_trip");
    let scenario = write_scenario(&d, "sweep.yaml", SWEEP);
    let full = d.join("full.json");
    cli().arg("run").arg(&scenario).args(["--format", "json", "--output"]).arg(&full).assert().success();
    let mut shards = Vec::new();
    for i in 0..3 {
        let out = d.join(format!("shard{i}.json"));
        cli()
            .arg("run")
            .arg(&scenario)
            .args(["--shard", &format!("{i}/3"), "--format", "json", "--quiet", "--output"])
            .arg(&out)
            .assert()
            .success()
            .stderr("");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(v["shard"]["index"], i);
        assert_eq!(v["shard"]["count"], 3);
        assert_eq!(v["results"].as_array().unwrap().len(), 6);
        shards.push(out);
    }
    let merged = d.join("merged.json");
    // Any order of the inputs.
    cli().arg("merge").arg(&shards[2]).arg(&shards[0]).arg(&shards[1]).arg("--output").arg(&merged).assert().success();
    assert_eq!(json_without_wall_times(&merged), json_without_wall_times(&full));
    // The merged report is a report like any other: tables, CSV.
    cli()
        .arg("merge")
        .args(&shards)
        .args(["--format", "table"])
        .assert()
        .success()
        .stdout(predicate::str::contains("18 points, all checks held"));
    cli()
        .arg("merge")
        .args(&shards)
        .args(["--format", "csv"])
        .assert()
        .success()
        .stdout(predicate::function(|s: &str| s.lines().count() == 19));
}

/// Exit status 1 end to end: a report that records a failed check (here a shard whose
/// point says its closed form was missed) makes `merge` print the failure and exit 1,
/// the path `run` takes when a check fails. (No honest scenario makes a correct engine
/// fail a check, so the failure is written into the report.)
#[test]
fn a_failed_check_exits_1() {
    let d = dir("failed_check");
    let scenario = write_scenario(&d, "sweep.yaml", SWEEP);
    let out = d.join("shard0.json");
    cli()
        .arg("run")
        .arg(&scenario)
        .args(["--shard", "0/1", "--format", "json", "--quiet", "--output"])
        .arg(&out)
        .assert()
        .success();
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    v["results"][0]["failures"] = serde_json::json!(["closed form missed: simulated 2 s, closed form 1 s"]);
    std::fs::write(&out, serde_json::to_string(&v).unwrap()).unwrap();
    cli()
        .arg("merge")
        .arg(&out)
        .args(["--format", "table"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("closed form missed"))
        .stderr(predicate::str::contains("1 of 18 point(s) failed a check"));
}

#[test]
fn bad_shards_are_refused() {
    let d = dir("bad_shards");
    let scenario = write_scenario(&d, "sweep.yaml", SWEEP);
    for (arg, says) in [
        ("3/3", "shard index 3 is not below the count 3"),
        ("0/0", "the shard count must be at least 1"),
        ("1", "is not I/N"),
        ("a/2", "is not a whole number"),
        ("-1/2", "is not a whole number"),
    ] {
        refused(cli().arg("run").arg(&scenario).arg(format!("--shard={arg}")), says);
    }
}

/// Bad input: exit 2, nothing on stdout, and one message on stderr that says `says`.
fn refused(cmd: &mut Command, says: &str) {
    cmd.assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(says))
        .stderr(predicate::str::contains("panicked").not());
}

#[test]
fn mismatched_merges_are_refused() {
    let d = dir("mismatch");
    let scenario = write_scenario(&d, "sweep.yaml", SWEEP);
    let shard = |i: usize, n: usize, extra: &[&str]| {
        let out = d.join(format!("s{i}of{n}{}.json", extra.join("").replace('-', "")));
        cli()
            .arg("run")
            .arg(&scenario)
            .args(["--shard", &format!("{i}/{n}"), "--format", "json", "--output"])
            .arg(&out)
            .args(extra)
            .assert()
            .success();
        out
    };
    let (a, b) = (shard(0, 2, &[]), shard(1, 2, &[]));
    let other_seed = shard(1, 2, &["--seed", "8"]);
    let of_three = shard(1, 3, &[]);
    let full = d.join("full.json");
    cli().arg("run").arg(&scenario).args(["--format", "json", "--output"]).arg(&full).assert().success();
    let garbage = d.join("garbage.json");
    std::fs::write(&garbage, "{\"not\": \"a report\"}").unwrap();

    for (inputs, says) in [
        (vec![&a, &other_seed], "come from different scenarios"),
        (vec![&a, &a, &b], "are both shard 0/2"),
        (vec![&a], "shard(s) 1/2 missing"),
        (vec![&a, &of_three], "the shard counts differ"),
        (vec![&full], "is not a shard report"),
        (vec![&garbage], "not an allreduce-sim JSON report"),
    ] {
        refused(cli().arg("merge").args(inputs), says);
    }
}

#[test]
fn explain_ring_shows_its_steps() {
    let out = cli().args(["explain", "ring", "--ranks", "4"]).assert().success().get_output().stdout.clone();
    let text = String::from_utf8(out).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip_while(|l| !l.starts_with("step"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    // 2(P-1) = 6 steps of 4 messages each; 1 KiB of f32 = 256 elements, chunks of 64.
    assert_eq!(rows.len(), 24, "{text}");
    // Step 1: every rank r sends chunk r to r+1, which reduces it in.
    assert_eq!(&rows[0][..8], ["1", "0", "->", "1", "0", "[0,", "64)", "[0,"], "{text}");
    for (r, row) in rows[..4].iter().enumerate() {
        let line = row.join(" ");
        let (lo, hi) = (64 * r, 64 * (r + 1));
        assert!(line.contains(&format!("{r} -> {} ", (r + 1) % 4)), "{line}");
        assert!(line.contains(&format!("[{lo}, {hi}) [{lo}, {hi}) 256 B reduce")), "{line}");
    }
    // Step 4, the first of the allgather: rank r passes on chunk r+1, which is copied.
    assert_eq!(rows[12][0], "4");
    for (r, row) in rows[12..16].iter().enumerate() {
        let line = row.join(" ");
        let c = (r + 1) % 4;
        assert!(
            line.contains(&format!("[{}, {}) [{}, {}) 256 B copy", 64 * c, 64 * c + 64, 64 * c, 64 * c + 64)),
            "{line}"
        );
    }
    assert!(text.contains("24 messages in 6 steps, 12 reductions"), "{text}");
    assert!(text.contains("closed form:  segments = 1: 2(P-1)(alpha + c/B) + (P-1) c C"), "{text}");
    assert!(
        text.contains("filled in:    segments = 1: 2(4-1)(1e-6 + c/1.25e10) + (4-1) c 5e-11,  c = ceil(256/4) 4"),
        "{text}"
    );
    assert!(text.contains("within tolerance"), "{text}");
}

#[test]
fn explain_refuses_bad_input() {
    for (args, says) in [
        (vec!["explain", "nope"], "unknown algorithm 'nope' for allreduce; allowed: "),
        (vec!["explain", "ring", "--collective", "broadcast"], "allowed: one_to_all, binomial_tree, chain"),
        (vec!["explain", "ring", "--collective", "gossip"], "--collective: 'gossip' is not known"),
        (vec!["explain", "ring", "--ranks", "0"], "P must be a whole number from 1 to 256"),
        (vec!["explain", "ring", "--size", "6"], "multiple of 4 bytes"),
        (vec!["explain", "ring", "--alpha", "fast"], "--alpha"),
        (vec!["explain", "ring", "--param", "segment=4"], "unknown parameter 'segment'"),
    ] {
        refused(cli().args(&args), says);
    }
}

#[test]
fn critical_path_accounts_for_the_whole_time() {
    let text = SWEEP.replace(
        "algorithms: [ring, butterfly, star]",
        "algorithms: [ring, butterfly, star, chain, binomial_tree, halving_doubling]",
    );
    let s = parse_str(&text, "sweep.yaml").unwrap();
    for pt in runner::points(&s) {
        let (r, timeline) = runner::run_point_timeline(&s, &pt, true);
        let t = timeline.unwrap();
        let cp = r.critical_path.as_ref().unwrap_or_else(|| panic!("{} P={}: no critical path", r.algorithm, r.ranks));
        let total = cp.transfer_s + cp.compute_s + cp.idle_s;
        assert!((total - r.time_s).abs() <= 1e-12 * r.time_s, "{} P={}: {total} vs {}", r.algorithm, r.ranks, r.time_s);
        let steps = cp.steps.as_ref().unwrap();
        assert_eq!(steps.len() as u64, cp.messages + cp.reductions);
        // A chain: each link starts the instant the one before it ends, the last ends the run.
        for w in steps.windows(2) {
            assert_eq!(w[0].end_s, w[1].start_s, "{} P={}", r.algorithm, r.ranks);
        }
        assert_eq!(steps.last().unwrap().end_s, r.time_s);
        // Counters: per rank from the engine, per link from the timeline.
        let sent = r.bytes_sent_per_rank.as_ref().unwrap();
        assert_eq!(sent.len(), r.ranks);
        assert_eq!(sent.iter().copied().max(), Some(r.bytes_sent_max));
        assert_eq!(r.bytes_received_per_rank.as_ref().unwrap().iter().sum::<u64>(), sent.iter().sum::<u64>());
        assert_eq!(r.link_bytes_max, Some(t.link_bytes().values().copied().max().unwrap_or(0)));
    }
    // Ring on 8 ranks: 2(P-1) messages and P-1 reductions, as its closed form says.
    let ring8 = runner::points(&s).into_iter().find(|p| p.algo == 0 && p.ranks == 8).unwrap();
    let cp = runner::run_point(&s, &ring8).critical_path.unwrap();
    assert_eq!((cp.messages, cp.reductions), (14, 7));
    assert!(cp.steps.is_none(), "a sweep's points carry no steps");
}

#[test]
fn reports_read_back_from_json() {
    let s = parse_str(SWEEP, "sweep.yaml").unwrap();
    let report = runner::run(&s);
    let text = serde_json::to_string(&report).unwrap();
    let back: Report = serde_json::from_str(&text).unwrap();
    assert_eq!(back.results, report.results);
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
}

#[test]
fn the_table_has_a_critical_path_line_per_point() {
    let d = dir("table");
    let scenario = write_scenario(&d, "sweep.yaml", SWEEP);
    let out = cli()
        .arg("run")
        .arg(&scenario)
        .args(["--ranks", "8", "--sizes", "4KiB"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for line in [
        "   ring: critical path 14 messages, 7 reductions, ",
        "   butterfly: critical path ",
        "   star: critical path ",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
}

/// Where the estimate says its message count is exact, the run sends exactly that many:
/// the runner trusts an exact count to skip a timeline that would overflow. Every
/// collective, with and without segments where they take them, at rank counts that are and are not powers of two.
#[test]
fn exact_message_estimates_are_exact() {
    let s = parse_str(
        "name: estimates\nranks: [2, 5, 8]\ntopology:\n  link: { alpha: 1us, bandwidth: 100Gbps }\n\
         data: { mode: off }\nalgorithms:\n\
         \x20 - ring\n  - { name: ring, segments: 4 }\n  - { name: chain, segments: 3 }\n  - star\n\
         \x20 - binomial_tree\n  - butterfly\n  - halving_doubling\n\
         \x20 - { name: ring, collective: reduce_scatter }\n\
         \x20 - { name: ring, collective: allgather }\n  - { name: chain, collective: broadcast, segments: 5 }\n\
         \x20 - { name: chain, collective: reduce, segments: 2 }\n  - { name: one_to_all, collective: broadcast }\n\
         \x20 - { name: binomial_tree, collective: reduce }\n  - { name: all_to_all, collective: barrier }\n\
         \x20 - { name: all_to_one, collective: barrier }\n\
         sizes: [4KiB]\n",
        "estimates.yaml",
    )
    .unwrap();
    let mut exact = 0;
    for pt in runner::points(&s) {
        let est = allreduce_sim::estimate::estimate(&s, &pt, false);
        if !est.messages_exact {
            continue;
        }
        let r = runner::run_point(&s, &pt);
        if r.not_applicable.is_some() {
            continue;
        }
        exact += 1;
        assert_eq!(r.messages, est.messages, "{} at P = {}", r.algorithm, r.ranks);
    }
    assert!(exact >= 30, "only {exact} points had an exact estimate");
}
