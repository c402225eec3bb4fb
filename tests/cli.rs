//! The command line end to end: exit status 0 / 1 / 2 (docs/scenario.md), one clear
//! message for bad input, and the three formats.

use assert_cmd::Command;
use predicates::prelude::*;
use std::io::Write;

fn cmd() -> Command {
    let mut c = Command::cargo_bin("allreduce-sim").unwrap();
    c.env("RUST_BACKTRACE", "0");
    c
}

fn scenario(text: &str) -> tempfile_lite::File {
    tempfile_lite::File::new(text)
}

/// A scenario file in the target directory, removed on drop (no extra crate needed).
mod tempfile_lite {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    pub struct File(pub PathBuf);
    impl File {
        pub fn new(text: &str) -> File {
            let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
            let path = dir.join(format!("cli-{}-{}.yaml", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
            std::fs::write(&path, text).unwrap();
            File(path)
        }
    }
    impl Drop for File {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

const SMALL: &str = "name: small\nranks: [2, 5]\ntopology:\n  link: { alpha: 1us, bandwidth: 100Gbps }\n\
compute: { cost_per_byte: 0.05ns }\nalgorithms: [ring, butterfly, star]\nsizes: [4KiB, 100]\n";

#[test]
fn run_table_exits_zero_and_shows_every_point() {
    let f = scenario(SMALL);
    cmd()
        .args(["run"])
        .arg(&f.0)
        .assert()
        .success()
        .stdout(predicate::str::contains("12 points, all checks held"))
        .stdout(predicate::str::contains("P = 5, S = 4 KiB"));
}

#[test]
fn run_json_has_every_spec_field() {
    let f = scenario(SMALL);
    let out = cmd().args(["run", "--format", "json"]).arg(&f.0).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 12);
    for field in allreduce_sim::report::CORE_FIELDS {
        assert!(results[0].get(field).is_some(), "missing {field}");
    }
    assert_eq!(v["scenario"]["topology"]["link"]["bandwidth_Bps"], 12.5e9);
    // Sweep order: ranks, then sizes, then algorithms as listed.
    let order: Vec<_> = results.iter().map(|r| (r["ranks"].as_u64().unwrap(), r["bytes"].as_u64().unwrap())).collect();
    assert_eq!(order[0], (2, 4096));
    assert_eq!(order[3], (2, 100));
    assert_eq!(order[6], (5, 4096));
    assert_eq!(results[1]["algorithm"], "butterfly");
}

#[test]
fn an_output_file_without_format_takes_its_extensions_format() {
    let f = scenario(SMALL);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let stem = format!("cli-ext-{}", std::process::id());
    let read = |name: &str, extra: &[&str]| {
        let path = dir.join(format!("{stem}{name}"));
        cmd().arg("run").arg(&f.0).arg("--output").arg(&path).args(extra).assert().success();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        text
    };
    let json: serde_json::Value = serde_json::from_str(&read(".json", &[])).unwrap();
    assert_eq!(json["results"].as_array().unwrap().len(), 12);
    assert!(read(".CSV", &[]).starts_with("collective,algorithm,ranks,bytes,time_s,"));
    assert!(read(".txt", &[]).contains("12 points, all checks held"));
    // A format given wins over the extension.
    assert!(read(".json", &["--format", "table"]).contains("12 points, all checks held"));
}

#[test]
fn flags_override_the_file() {
    let f = scenario(SMALL);
    let out = cmd()
        .args(["run", "--format", "csv", "--algorithms", "ring,halving_doubling", "--ranks", "4,8", "--sizes", "1MiB"])
        .arg(&f.0)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<_> = text.lines().collect();
    assert!(rows[0].starts_with("collective,algorithm,ranks,bytes,time_s,closed_form_s"));
    assert_eq!(rows.len(), 1 + 4);
    assert!(rows[1].starts_with("allreduce,ring,4,1048576,"));
    assert!(rows[2].starts_with("allreduce,halving_doubling,4,1048576,"));
}

#[test]
fn same_seed_same_output() {
    let f = scenario(SMALL);
    // Everything but wall_time_s, the one column that may differ (no cell here is quoted).
    let strip = |b: Vec<u8>| -> Vec<String> {
        let text = String::from_utf8(b).unwrap();
        let wall = text.lines().next().unwrap().split(',').position(|c| c == "wall_time_s").unwrap();
        text.lines()
            .map(|l| l.split(',').enumerate().filter(|(i, _)| *i != wall).map(|(_, c)| c).collect::<Vec<_>>().join(","))
            .collect()
    };
    let a = cmd().args(["run", "--format", "csv"]).arg(&f.0).output().unwrap().stdout;
    let b = cmd().args(["run", "--format", "csv"]).arg(&f.0).output().unwrap().stdout;
    assert_eq!(strip(a), strip(b));
}

#[test]
fn a_point_that_is_not_applicable_is_not_a_failure() {
    let f = scenario(SMALL);
    cmd().args(["run", "--ranks", "1"]).arg(&f.0).assert().success();
}

#[test]
fn bad_input_exits_two_with_one_located_message() {
    let cases: &[(&str, &str)] = &[
        ("ranks: 0\ntopology: { link: { alpha: 1us, bandwidth: 1GB/s } }\nalgorithms: [ring]\nsizes: [4]\n", ":1:"),
        ("ranks: 4\ntopology: { link: { alpha: 1us, bandwidth: 0 } }\nalgorithms: [ring]\nsizes: [4]\n", ":2:"),
        ("ranks: 4\ntopology: { link: { alpha: 1us, bandwidth: 1GB/s } }\nalgorithms: [rign]\nsizes: [4]\n", "allowed"),
        ("ranks: 4\ntopology: { link: { alpha: 1us, bandwidth: 1GB/s } }\nalgorithms: [ring]\nsizes: [6]\n", ":4:"),
        ("ranks: 4\ntopology: { link: { alpha: 1xs, bandwidth: 1GB/s } }\nalgorithms: [ring]\nsizes: [4]\n", ":2:"),
        (
            "ranks: 4\ntopology: { link: { alpha: 1us, bandwidth: 1GB/s } }\nalgorithms: [ring]\nsizes: [4]\nspeed: 3\n",
            ":5:",
        ),
        ("ranks: [4\n", ".yaml"),
    ];
    for (text, want) in cases {
        let f = scenario(text);
        cmd()
            .arg("run")
            .arg(&f.0)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(*want))
            .stderr(predicate::str::contains("panicked").not())
            .stderr(predicate::str::contains("backtrace").not());
    }
    cmd().args(["run", "no/such/file.yaml"]).assert().code(2).stderr(predicate::str::contains("no/such/file.yaml"));
    let f = scenario(SMALL);
    cmd().args(["run", "--sizes", "3"]).arg(&f.0).assert().code(2).stderr(predicate::str::contains("--sizes"));
    cmd().args(["run", "--algorithms", "nope"]).arg(&f.0).assert().code(2).stderr(predicate::str::contains("allowed"));
    cmd().args(["frobnicate"]).assert().code(2);
}

#[test]
fn validate_runs_nothing_and_list_shows_every_algorithm() {
    let f = scenario(SMALL);
    cmd().arg("validate").arg(&f.0).assert().success().stdout(predicate::str::contains("12 point(s)"));
    let out = cmd().arg("list").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for id in ["star", "chain", "binomial_tree", "butterfly", "ring", "halving_doubling"] {
        assert!(text.contains(&format!("{id}\n")), "list lacks {id}");
    }
    assert!(text.contains("closed form:"));
}

#[test]
fn committed_scenarios_validate() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios")).unwrap() {
        let path = entry.unwrap().path();
        cmd().arg("validate").arg(&path).assert().success();
    }
    let _ = std::io::stdout().flush();
}

/// `data: { mode: sample }` on a machine too big to run in full: every point checked.
#[test]
fn a_sampled_run_checks_every_point() {
    let f = scenario(
        "name: sampled\ntopology:\n  kind: torus2d\n  dims: [16, 16]\n  link: { alpha: 1us, bandwidth: 100Gbps }\n\
         data: { mode: sample }\nalgorithms: [ring, torus_2d]\nsizes: [64MiB]\n",
    );
    let out = cmd().args(["run", "--format", "json"]).arg(&f.0).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["scenario"]["data"]["mode"], "sample");
    for r in v["results"].as_array().unwrap() {
        assert_eq!(r["verified"], true, "{r}");
        assert!(r["max_abs_error"].as_f64().unwrap() > 0.0, "{r}");
    }
    cmd().arg("run").arg(&f.0).assert().success().stdout(predicate::str::contains("a sample of elements checked"));
}

/// A reader that stops early (`allreduce-sim validate big.yaml | head`) ends the program
/// quietly: no panic, no backtrace, status 0. The output here is larger than a pipe's
/// buffer, so the program is still writing when the read end closes.
#[test]
fn a_closed_pipe_is_not_a_panic() {
    let ranks: Vec<String> = (2..1200).map(|p| p.to_string()).collect();
    let file = scenario(&format!(
        "name: many\nranks: [{}]\ntopology:\n  link: {{ alpha: 1us, bandwidth: 100Gbps }}\n\
         algorithms: [ring]\nsizes: [4KiB]\n",
        ranks.join(", ")
    ));
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("allreduce-sim"))
        .args(["validate", file.0.to_str().unwrap()])
        .env("RUST_BACKTRACE", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// Standard error on a full device (or closed) loses the messages, not the exit status:
/// a refusal still exits 2 and a run that held every check 0, where every message to
/// stderr once panicked (101).
#[test]
fn a_full_standard_error_is_not_a_panic() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("skipped: this machine has no /dev/full");
        return;
    }
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let file = scenario(SMALL);
    let plots = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-full-{}", std::process::id()));
    let plot = format!("--plot={}", plots.display());
    let runs: [(Vec<&str>, i32); 3] = [
        (vec!["run", "no-such-scenario.yaml"], 2),
        (vec!["explain", "zzz"], 2),
        (vec!["run", file.0.to_str().unwrap(), &plot], 0),
    ];
    for (args, code) in runs {
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("allreduce-sim"))
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(full())
            .status()
            .unwrap();
        assert_eq!(out.code(), Some(code), "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&plots);
}

/// A list of a quarter of a million sizes (the most nodes a scenario may hold) is read in
/// time proportional to it: each duplicate check was a scan of the list so far (44 s).
#[test]
fn a_long_list_of_sizes_is_read_at_once() {
    let sizes: Vec<String> = (1..=240_000u64).map(|i| (4 * i).to_string()).collect();
    let ranks: Vec<String> = (1..=5_000u64).map(|i| i.to_string()).collect();
    let file = scenario(&format!(
        "ranks: [{}]\ntopology: {{ link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\nalgorithms: [ring]\nsizes: [{}]\n",
        ranks.join(", "),
        sizes.join(", ")
    ));
    cmd()
        .args(["validate", "--ranks", "4", "--sizes", "4"])
        .arg(&file.0)
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .code(0)
        .stdout(predicate::str::contains("1 point(s)"));
}
