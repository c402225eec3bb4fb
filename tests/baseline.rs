//! `run --baseline`: the CI regression gate end to end. A run against its own saved report
//! passes; a cost nudged by one part in a million fails with the point named; points on
//! one side only are named; a bad baseline is bad input; the JUnit file has a test case per
//! point.

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::PathBuf;

fn cmd() -> Command {
    let mut c = Command::cargo_bin("allreduce-sim").unwrap();
    c.env("RUST_BACKTRACE", "0");
    c
}

/// A fresh directory under the target directory for one test's files.
fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("baseline-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn scenario(alpha: &str) -> String {
    format!(
        "name: gate\nranks: [4, 6]\ntopology:\n  link: {{ alpha: {alpha}, bandwidth: 100Gbps }}\n\
         compute: {{ cost_per_byte: 0.05ns }}\nalgorithms: [ring, butterfly]\nsizes: [4KiB, 64KiB]\n"
    )
}

/// Writes the scenario with `alpha` and its JSON report (the baseline) into `d`.
fn saved(d: &std::path::Path) -> (PathBuf, PathBuf) {
    let s = d.join("gate.yaml");
    std::fs::write(&s, scenario("1us")).unwrap();
    let base = d.join("base.json");
    cmd().args(["run", "--quiet", "--format", "json", "--output"]).arg(&base).arg(&s).assert().success();
    (s, base)
}

#[test]
fn identical_run_passes_and_junit_has_a_passing_case_per_point() {
    let d = dir("same");
    let (s, base) = saved(&d);
    let junit = d.join("junit.xml");
    cmd()
        .args(["run", "--quiet", "--format", "json", "--baseline"])
        .arg(&base)
        .arg("--junit")
        .arg(&junit)
        .arg(&s)
        .assert()
        .success()
        .stderr(
            predicate::str::contains("8 point(s) compared, 0 moved beyond").and(predicate::str::contains("passed")),
        );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 8, "{xml}");
    assert!(xml.contains("tests=\"8\" failures=\"0\""), "{xml}");
    assert!(xml.contains("name=\"allreduce ring P=6 S=65536\""), "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");
}

#[test]
fn alpha_nudged_by_one_part_in_a_million_is_caught() {
    let d = dir("nudge");
    let (_, base) = saved(&d);
    let nudged = d.join("nudged.yaml");
    std::fs::write(&nudged, scenario("1.000001us")).unwrap();
    let junit = d.join("junit.xml");
    let out = cmd()
        .args(["run", "--quiet", "--baseline"])
        .arg(&base)
        .arg("--junit")
        .arg(&junit)
        .arg(&nudged)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("8 moved beyond the relative tolerance 1e-9"), "{err}");
    assert!(err.contains("FAILED"), "{err}");
    // The table names the point and the field, with the relative change.
    let line = err.lines().find(|l| l.contains("allreduce ring P=4 S=4096") && l.contains("time_s")).expect(&err);
    assert!(line.contains("<- beyond"), "{line}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<failure type=\"moved\"").count(), 8, "{xml}");
    // A tolerance looser than the nudge lets it through, and the table still shows it.
    cmd()
        .args(["run", "--quiet", "--tolerance", "1e-5", "--baseline"])
        .arg(&base)
        .arg(&nudged)
        .assert()
        .success()
        .stderr(predicate::str::contains("time_s").and(predicate::str::contains("0 moved beyond")));
}

#[test]
fn points_on_one_side_only_are_named() {
    let d = dir("missing");
    let (s, base) = saved(&d);
    cmd()
        .args(["run", "--quiet", "--algorithms", "ring,star", "--baseline"])
        .arg(&base)
        .arg(&s)
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("missing from this run (in the baseline): allreduce butterfly P=4 S=4096")
                .and(predicate::str::contains("not in the baseline (new in this run): allreduce star P=6 S=65536"))
                .and(predicate::str::contains("4 missing from this run, 4 not in the baseline")),
        );
}

#[test]
fn a_bad_baseline_is_bad_input() {
    let d = dir("bad");
    let (s, _) = saved(&d);
    let junk = d.join("junk.json");
    std::fs::write(&junk, "{\"results\": [{\"algorithm\": \"ring\"}]}").unwrap();
    cmd()
        .args(["run", "--quiet", "--baseline"])
        .arg(&junk)
        .arg(&s)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("junk.json: results[0]: no \"ranks\""));
    std::fs::write(&junk, "ranks: 4\n").unwrap();
    cmd()
        .args(["run", "--quiet", "--baseline"])
        .arg(&junk)
        .arg(&s)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("junk.json:1:1: not JSON"));
    cmd()
        .args(["run", "--quiet", "--baseline"])
        .arg(d.join("absent.json"))
        .arg(&s)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("absent.json: cannot read it"));
    cmd()
        .args(["run", "--quiet", "--tolerance=-1", "--baseline"])
        .arg(d.join("base.json"))
        .arg(&s)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--tolerance"));
}
