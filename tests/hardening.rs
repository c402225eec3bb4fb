//! Inputs that once gave silent nonsense, wrapped numbers, raw escape sequences or
//! stale figures (docs/scenario.md "Limits of a sweep", docs/report.md): each is now
//! refused with a message naming the place and what is allowed, or reported right.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use allreduce_sim::estimate;
use allreduce_sim::scenario::parse_str;
use assert_cmd::Command;
use predicates::prelude::*;

mod common;
use common::cli_under;

fn cmd() -> Command {
    let mut c = Command::cargo_bin("allreduce-sim").unwrap();
    c.env("RUST_BACKTRACE", "0");
    c
}

/// A scenario file in the target directory, removed on drop.
struct File(PathBuf);
static N: AtomicUsize = AtomicUsize::new(0);
impl File {
    fn new(text: &str) -> File {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let path = dir.join(format!("hard-{}-{}.yaml", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        std::fs::write(&path, text).unwrap();
        File(path)
    }
}
impl Drop for File {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn flat(bandwidth: &str, rest: &str) -> String {
    format!("name: t\nranks: 4\ntopology: {{ link: {{ alpha: 2us, bandwidth: {bandwidth} }} }}\n{rest}")
}

fn stdout(c: &mut Command) -> String {
    String::from_utf8(c.output().unwrap().stdout).unwrap()
}

#[test]
fn a_machine_of_infinite_times_is_refused_where_it_is_written() {
    let f = File::new(&flat("5e-324", "algorithms: [ring]\nsizes: 4KiB\n"));
    cmd()
        .arg("run")
        .arg(&f.0)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(".yaml:3:11: topology:"))
        .stderr(predicate::str::contains("would not be finite numbers"))
        .stderr(predicate::str::contains("raise the bandwidth"));
    // The same through the command line's sizes.
    let f = File::new(&flat("1e-300", "data: { mode: off }\nalgorithms: [ring]\nsizes: 4KiB\n"));
    cmd().args(["run", "--sizes", "1GiB"]).arg(&f.0).assert().code(2).stderr(predicate::str::contains("--sizes"));
}

#[test]
fn huge_finite_times_print_in_scientific_notation() {
    let f = File::new(&flat("1e-300", "data: { mode: off }\nalgorithms: [ring]\nsizes: 4KiB\n"));
    let out = stdout(cmd().arg("run").arg(&f.0));
    assert!(out.contains("e303 s"), "{out}");
    assert!(out.contains("B=1e-300 B/s"), "{out}");
    assert!(out.lines().all(|l| l.chars().count() < 200), "{out}");
}

#[test]
fn sizes_whose_byte_counts_would_wrap_are_refused_with_the_limit() {
    let f =
        File::new(&flat("100Gbps", "data: { mode: off }\nalgorithms: [ring]\nsizes: [4KiB, 18446744073709551612]\n"));
    cmd()
        .arg("run")
        .arg(&f.0)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(".yaml:6:15: sizes:"))
        .stderr(predicate::str::contains("at most 288230376151711743 bytes"));
    let f = File::new(&flat("100Gbps", "data: { mode: off }\nalgorithms: [ring]\nsizes: 1GiB\n"));
    cmd()
        .args(["run", "--ranks", "100000"])
        .arg(&f.0)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--ranks"))
        .stderr(predicate::str::contains("2^64"));
}

#[test]
fn bcube_lists_only_the_powers_that_exist() {
    let f = File::new(
        &flat("100Gbps", "ranks: 6\nalgorithms: [{ name: bcube, base: 18446744073709551614 }]\nsizes: 4KiB\n")
            .replace("ranks: 4\n", ""),
    );
    let out = cmd().arg("run").arg(&f.0).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("allowed here: P = 1, 18446744073709551614\n"), "{text}");
    // Every point is n/a: nothing ran, and the run says so rather than "all checks held".
    assert!(text.contains("1 point, none could run"), "{text}");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no point ran"));
}

#[test]
fn counts_may_be_strings_of_digits_everywhere() {
    let text = flat("100Gbps", "algorithms: [{ name: ring, segments: \"4\" }]\nsizes: 4KiB\n")
        .replace("ranks: 4", "ranks: \"4\"");
    let f = File::new(&text);
    cmd().arg("run").arg(&f.0).assert().code(0).stdout(predicate::str::contains("ring(segments=4)"));
}

#[test]
fn limits_are_stated() {
    let f =
        File::new(&flat("100Gbps", "algorithms: [ring]\nsizes: 4KiB\n").replace("} }\n", "}, nics: 4294967296 }\n"));
    cmd().arg("run").arg(&f.0).assert().code(2).stderr(predicate::str::contains("from 1 to 4294967295"));
    let f = File::new(&flat("100Gbps", "algorithms: [ring]\nsizes: 4KiB\n"));
    for (flag, want) in [("--sizes", "'-1'"), ("--ranks", "a rank count must be a whole number"), ("--seed", "seed")] {
        cmd()
            .args(["run", flag, "-1"])
            .arg(&f.0)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(want))
            .stderr(predicate::str::contains("-- -1").not());
    }
}

#[test]
fn a_fat_tree_with_more_spines_than_hosts_is_refused() {
    let text = "name: t\ntopology: { kind: fat_tree, link: { alpha: 2us, bandwidth: 100Gbps }, leaves: 1, \
                hosts_per_leaf: 4, spines: 1000000 }\nalgorithms: [ring]\nsizes: 4KiB\n";
    let f = File::new(text);
    cmd()
        .arg("run")
        .arg(&f.0)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("spines: 1000000 is more spines than the tree has hosts"))
        .stderr(predicate::str::contains("write spines from 1 to 4"));
}

#[test]
fn escape_sequences_in_a_name_never_reach_the_terminal() {
    let f = File::new(
        &flat("100Gbps", "algorithms: [ring]\nsizes: 4KiB\n").replace("name: t", "name: \"x \\e]0;PWNED\\a y\""),
    );
    let out = cmd().arg("run").arg(&f.0).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
    assert!(text.starts_with("x \\u{1b}]0;PWNED\\u{7} y\n"), "{text}");
    let out = cmd().arg("validate").arg(&f.0).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\u{1b}'));
    // In an error's snippet of the line too.
    let f = File::new("name: a\u{1b}[2Jb\nbogus: 1\n");
    let out = cmd().arg("run").arg(&f.0).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stderr).contains('\u{1b}'));
}

#[test]
fn not_applicable_rows_have_no_time() {
    let f2 = File::new(
        &flat("100Gbps", "ranks: [3, 4]\nalgorithms: [ring, { name: bcube, base: 4 }]\nsizes: 4KiB\n")
            .replace("ranks: 4\n", ""),
    );
    let json = stdout(cmd().args(["run", "--format", "json"]).arg(&f2.0));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = v["results"].as_array().unwrap();
    let na: Vec<_> = rows.iter().filter(|r| !r["not_applicable"].is_null()).collect();
    assert!(!na.is_empty());
    for r in &na {
        assert!(r["time_s"].is_null() && r["lower_bound_s"].is_null(), "{r}");
    }
    assert!(rows.iter().filter(|r| r["not_applicable"].is_null()).all(|r| r["time_s"].as_f64().unwrap() > 0.0));
    let csv = stdout(cmd().args(["run", "--format", "csv"]).arg(&f2.0));
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let time = head.iter().position(|c| *c == "time_s").unwrap();
    for line in csv.lines().skip(1).filter(|l| l.contains("is not a power")) {
        assert_eq!(line.split(',').nth(time), Some(""), "{line}");
    }
}

#[test]
fn full_data_is_counted_at_what_the_tiled_replay_holds() {
    let text = flat("100Gbps", "ranks: 64\ndata: { mode: full }\nalgorithms: [ring]\nsizes: 16MiB\n")
        .replace("ranks: 4\n", "");
    let s = parse_str(&text, "t.yaml").unwrap();
    let plans = estimate::plan(&s, None);
    estimate::check_budget(&plans).expect("fits the 2 GiB budget");
    let est = plans[0].estimate();
    assert!(est.data_bytes < 256 << 20, "{est:?}");
}

#[test]
fn a_one_phase_ring_segmented_has_the_rings_closed_form() {
    let f = File::new(
        &flat("100Gbps", "ranks: 3\nalgorithms: [ring_segmented, ring]\nsizes: 4KiB\n").replace("ranks: 4\n", ""),
    );
    let json = stdout(cmd().args(["run", "--format", "json"]).arg(&f.0));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows[0]["closed_form_s"], rows[1]["closed_form_s"], "{json}");
    assert!(rows[0]["closed_form_rel_err"].as_f64().unwrap() <= 1e-9);
}

#[test]
fn a_barrier_needs_no_sizes_and_is_verified() {
    let f = File::new(
        &flat(
            "100Gbps",
            "ranks: [5, 8]\ncollective: barrier\nalgorithms: [all_to_all, all_to_one, recursive_doubling, bruck]\n",
        )
        .replace("ranks: 4\n", ""),
    );
    let out = cmd().args(["run", "--format", "json"]).arg(&f.0).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 8);
    assert!(rows.iter().all(|r| r["verified"] == true), "{v}");
    // Sizes stay required where something moves data.
    let f = File::new(&flat("100Gbps", "algorithms: [ring]\n"));
    cmd().arg("run").arg(&f.0).assert().code(2).stderr(predicate::str::contains("missing key 'sizes'"));
}

#[test]
fn validate_takes_the_sweep_flags() {
    let f = File::new(
        &flat("100Gbps", "ranks: [4, 8]\nalgorithms: [ring, star]\nsizes: [4KiB, 1MiB]\n").replace("ranks: 4\n", ""),
    );
    cmd()
        .args(["validate", "--ranks", "8", "--sizes", "1KiB", "--algorithms", "ring"])
        .arg(&f.0)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("1 algorithm(s) x 1 rank count(s) x 1 size(s) = 1 point(s)"))
        .stdout(predicate::str::contains("ring at P = 8, S = 1 KiB"));
    cmd().args(["validate", "--sizes", "1e40"]).arg(&f.0).assert().code(2);
}

/// The README's excerpt of the quickstart's report is what a run prints (line for line,
/// the `...` standing for lines left out).
#[test]
fn the_readmes_quickstart_excerpt_matches_a_run() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let prompt = "$ allreduce-sim run scenarios/quickstart.yaml\n";
    let start = readme.find(prompt).expect("the README shows the quickstart's report") + prompt.len();
    let excerpt = &readme[start..start + readme[start..].find("```").unwrap()];
    let out = stdout(cmd().args(["run", "--quiet", &format!("{root}/scenarios/quickstart.yaml")]));
    let lines: Vec<&str> = out.lines().collect();
    let mut at = 0;
    for want in excerpt.lines().filter(|l| l.trim() != "...") {
        let found = lines[at..].iter().position(|l| *l == want);
        assert!(found.is_some(), "README line not in the run's report (in order):\n{want}\n\nrun:\n{out}");
        at += found.unwrap() + 1;
    }
}

/// CI runs exactly the README's test command (with `--locked`), so the figures the
/// README gives for it are the ones CI pays.
#[test]
fn ci_runs_the_readmes_test_command() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let ci = std::fs::read_to_string(format!("{root}/.ci/run")).unwrap();
    let test = readme.lines().find(|l| l.starts_with("cargo test")).expect("the README's test command");
    let command = test.split('#').next().unwrap().trim();
    assert_eq!(command, "cargo test --release");
    assert!(ci.lines().any(|l| l.trim() == "cargo test --release --locked"), "{ci}");
    assert!(readme.contains("cargo run --release"));
}

// ---------------------------------------------------------------------------------------
// The newcomer trial of docs/hardening.md: each input below once overwrote a file, hung
// or printed nonsense.

/// A fresh directory for one case, removed on drop.
struct Dir(PathBuf);
impl Dir {
    fn new() -> Dir {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "hard-dir-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }
    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.0.join(name), text).unwrap();
    }
    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.0.join(name)).unwrap()
    }
}
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn junit_is_checked_with_the_other_outputs_before_the_run() {
    let d = Dir::new();
    d.write("s.yaml", &flat("100Gbps", "algorithms: [ring]\nsizes: 4KiB\n"));
    let run = |args: &[&str]| cmd().current_dir(&d.0).args(["run", "s.yaml", "--quiet"]).args(args).output().unwrap();
    assert!(run(&["--format", "json", "--output", "b.json"]).status.success());
    let baseline = d.read("b.json");
    // The baseline, the scenario, another output, a directory that does not exist.
    for (junit, more, said) in [
        ("b.json", &[][..], "is the input b.json"),
        ("s.yaml", &[], "is the input s.yaml"),
        ("o.json", &["--output", "o.json"], "name the same file"),
        ("nodir/j.xml", &[], "the directory nodir does not exist"),
    ] {
        let out = run(&[&["--baseline", "b.json", "--junit", junit][..], more].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--junit {junit}: {stderr}");
        assert!(stderr.contains(said), "--junit {junit}: {stderr}");
        assert!(out.stdout.is_empty(), "--junit {junit}: refused before the run");
    }
    assert_eq!(d.read("b.json"), baseline);
    assert!(d.read("s.yaml").starts_with("name: t"));
    // And a good one is written.
    assert!(run(&["--baseline", "b.json", "--junit", "j.xml"]).status.success());
    assert!(d.read("j.xml").contains("<testsuite"));
}

/// The machine and log of the calibration walkthrough, in `d`.
fn calibration_inputs(d: &Dir) {
    let root = env!("CARGO_MANIFEST_DIR");
    d.write("m.yaml", &std::fs::read_to_string(format!("{root}/validation/hardware/machines/abci_v100.yaml")).unwrap());
    d.write("a.txt", &std::fs::read_to_string(format!("{root}/validation/hardware/data/abci_v100_p4.txt")).unwrap());
}

#[test]
fn calibrate_never_writes_over_its_inputs_and_refuses_a_fifo_log() {
    let d = Dir::new();
    calibration_inputs(&d);
    let (machine, log) = (d.read("m.yaml"), d.read("a.txt"));
    let calibrate = |args: &[&str]| {
        cmd()
            .current_dir(&d.0)
            .args(["calibrate", "m.yaml", "a.txt", "--patience", "3"])
            .args(args)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap()
    };
    for (args, said) in [
        (&["--output", "m.yaml"][..], "is the input m.yaml"),
        (&["--output", "./a.txt"], "is the input a.txt"),
        (&["--output", "nodir/m.yaml"], "does not exist"),
        (&["--plot=a.txt"], "--plot"),
        (&["--ranks", "0"], "--ranks must be at least 1"),
        (&["--gpus-per-node", "0"], "--gpus-per-node must be at least 1"),
    ] {
        let out = calibrate(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
    assert_eq!((d.read("m.yaml"), d.read("a.txt")), (machine, log));
    // A FIFO as a log blocked in open() forever.
    let fifo = d.0.join("fifo.txt");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let out = calibrate(&["--hold-out", "fifo.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a FIFO"));
}

#[test]
fn calibrate_refuses_a_size_too_large_to_count_and_prints_no_infinite_factor() {
    let d = Dir::new();
    calibration_inputs(&d);
    let log = d.read("a.txt");
    // A row whose size is past 2^64 was skipped without a word.
    let row = log.lines().position(|l| l.trim_start().starts_with("4 ")).expect("a 4-byte row") + 1;
    d.write("big.txt", &log.replacen("           4             1   float", "18446744073709551616 1 float", 1));
    let out = cmd().current_dir(&d.0).args(["calibrate", "m.yaml", "big.txt"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("big.txt:{row}: the size in bytes '18446744073709551616'")), "{stderr}");
    // A value the logs do not see printed "about xinf either way".
    let out = cmd().current_dir(&d.0).args(["calibrate", "m.yaml", "a.txt", "--patience", "3"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!text.contains("xinf"), "{text}");
}

#[test]
fn a_fifo_baseline_is_refused_without_opening_it() {
    let d = Dir::new();
    d.write("s.yaml", &flat("100Gbps", "algorithms: [ring]\nsizes: 4KiB\n"));
    assert!(std::process::Command::new("mkfifo").arg(d.0.join("b.json")).status().unwrap().success());
    let out = cmd()
        .current_dir(&d.0)
        .args(["run", "s.yaml", "--quiet", "--baseline", "b.json"])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--baseline b.json: it is a FIFO"), "{stderr}");
}

#[test]
fn calibrate_refuses_a_count_that_does_not_match_its_size_and_an_unknown_protocol() {
    let d = Dir::new();
    calibration_inputs(&d);
    let log = d.read("a.txt");
    let calibrate = |file: &str| {
        cmd()
            .current_dir(&d.0)
            .args(["calibrate", "m.yaml", file, "--patience", "3"])
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap()
    };
    // 8 bytes of float are 2 elements: a count of 3 was read without a word.
    let row = log.lines().position(|l| l.trim_start().starts_with("8 ")).expect("an 8-byte row") + 1;
    d.write("count.txt", &log.replacen("           8             2   float", "           8             3   float", 1));
    let out = calibrate("count.txt");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("count.txt:{row}: the count 3 does not match the size 8")), "{stderr}");
    // Every count half what an allreduce prints: consistent, but not an allreduce's.
    let halved: String = log
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match (f.first().and_then(|b| b.parse::<u64>().ok()), f.get(2)) {
                (Some(b), Some(&"float")) if b >= 8 => Some(format!("{} {} {}", f[0], b / 8, f[2..].join(" "))),
                (Some(_), Some(&"float")) => None,
                _ => Some(l.to_string()),
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    d.write("halved.txt", &halved);
    let out = calibrate("halved.txt");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the count is the size in elements over 2"), "{stderr}");
    // A protocol NCCL does not have was dropped from the list silently.
    d.write("proto.txt", &format!("# NCCL_PROTO=Simpel\n{log}"));
    let out = calibrate("proto.txt");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("NCCL_PROTO=Simpel names the protocol 'Simpel'"), "{stderr}");
}

#[test]
fn merge_refuses_a_negative_time() {
    let d = Dir::new();
    d.write("s.yaml", &flat("100Gbps", "algorithms: [ring]\nsizes: [4KiB, 8KiB]\n"));
    let run = cmd()
        .current_dir(&d.0)
        .args(["run", "s.yaml", "--quiet", "--shard", "0/1", "--format", "json", "--output", "s0.json"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let mut shard: serde_json::Value = serde_json::from_str(&d.read("s0.json")).unwrap();
    shard["results"][1]["time_s"] = serde_json::json!(-1.0);
    d.write("s0.json", &shard.to_string());
    let out = cmd().current_dir(&d.0).args(["merge", "s0.json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("s0.json: result 1 has time_s -1"), "{stderr}");
    assert!(out.stdout.is_empty());
}

/// A shard whose row names another algorithm than the sweep's entry (the twenty-ninth
/// trial's `"zzz"`, printed as the winner): rows are checked by algorithm too, label
/// and all (parameters, protocol), and the shards as written merge back.
#[test]
fn merge_refuses_a_row_of_another_algorithm() {
    let d = Dir::new();
    d.write(
        "s.yaml",
        &flat(
            "100Gbps",
            "algorithms: [ring, auto, { name: ring_segmented, segment: 4 }, { name: ring, protocol: ll128 }, \
             hierarchical_ring]\nsizes: [4KiB, 8KiB]\n",
        ),
    );
    for i in 0..2 {
        let out = cmd()
            .current_dir(&d.0)
            .args(["run", "s.yaml", "--quiet", "--shard", &format!("{i}/2"), "--format", "json"])
            .args(["--output", &format!("s{i}.json")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let merge = || cmd().current_dir(&d.0).args(["merge", "s0.json", "s1.json"]).output().unwrap();
    assert!(merge().status.success());
    let good = d.read("s1.json");
    let rows: serde_json::Value = serde_json::from_str(&good).unwrap();
    let rows = rows["results"].as_array().unwrap().iter().map(|r| r["algorithm"].as_str().unwrap().to_string());
    // Each row renamed, stripped of its parameters, or given one it did not have.
    let edits = rows.enumerate().flat_map(|(row, label)| {
        let other = match label.split_once('(') {
            Some((name, _)) => name.to_string(),
            None => format!("{label}(protocol=ll)"),
        };
        [(row, "zzz".to_string()), (row, other)]
    });
    for (row, edit) in edits {
        let mut shard: serde_json::Value = serde_json::from_str(&good).unwrap();
        shard["results"][row]["algorithm"] = serde_json::json!(edit);
        d.write("s1.json", &shard.to_string());
        let out = merge();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{edit}: {stderr}");
        assert!(stderr.contains(&format!("s1.json: result {row} is allreduce {edit:?}")), "{stderr}");
        assert!(out.stdout.is_empty());
    }
}

// ---------------------------------------------------------------------------------------
// The third trial of docs/hardening.md (new inputs of issue 25's kinds): each of these
// once printed `inf` or `NaN`, hung, or echoed an escape sequence.

/// A skew of 1e308 s made every time `inf`, the mean `inf` and the time lost per second
/// of skew `NaN`, with exit status 0.
#[test]
fn noise_that_would_overflow_the_times_is_refused() {
    let topo = "topology: { link: { alpha: 1us, bandwidth: 100Gbps } }\n";
    for noise in [
        "noise: { skew: { per_rank: [1e308s, 1e308s, 1e308s, 1e308s] } }\nrepeat: 2\n",
        "noise: { skew: { dist: exponential, scale: 1e300s, fraction: 1 } }\nrepeat: 1000\n",
        "noise: { slow_ranks: [{ rank: 0, factor: 1e308 }] }\n",
        // The thirtieth trial: `time inf s`, exit 0. The limit counted the detours'
        // stretch of the busy time, not the whole detour a short run still meets.
        "noise: { os: { interval: 1e308s, duration: 9.99e307s } }\n",
        "noise: { os: { interval: 1e300s, duration: 9e299s } }\n",
    ] {
        let f = File::new(&format!("ranks: 4\n{topo}algorithms: [ring]\nsizes: [4KiB]\n{noise}"));
        cmd()
            .args(["run", "--quiet"])
            .arg(&f.0)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(":5:8: noise: with this noise the sweep's worst run could take"));
    }
    // A skew of an hour is noise, not an overflow.
    let f = File::new(&format!(
        "ranks: 4\n{topo}algorithms: [ring]\nsizes: [4KiB]\nnoise: {{ skew: {{ per_rank: [3600s] }} }}\nrepeat: 2\n"
    ));
    let out = stdout(cmd().args(["run", "--quiet"]).arg(&f.0));
    assert!(!out.contains("inf") && !out.contains("NaN"), "{out}");
    // Nor are detours of everyday lengths.
    let f = File::new(&format!(
        "ranks: 4\n{topo}algorithms: [ring]\nsizes: [4KiB]\nnoise: {{ os: {{ interval: 1ms, duration: 20us }} }}\n"
    ));
    cmd().args(["run", "--quiet"]).arg(&f.0).assert().code(0);
}

/// Numbers far from 1 in a message are written as `1e-320`, not as 320 digits.
#[test]
fn tiny_and_huge_numbers_in_messages_are_in_scientific_notation() {
    for (rest, want) in [
        ("algorithms: [ring]\nsizes: [4KiB]\ncompute: { cost_per_byte: -1e-320 }\n", "-1e-320"),
        ("algorithms: [ring]\nsizes: [4KiB]\nnoise: { slow_links: [{ a: r0, b: r1, factor: 1e308 }] }\n", "1e308"),
        ("algorithms: [ring]\nsizes: [4KiB]\nnoise: { levels: [1e300, 1e300] }\n", "1e300"),
        ("algorithms: [{ name: double_binary_tree, chunk: 2.5e-310 }]\nsizes: [4KiB]\n", "2.5e-310"),
    ] {
        let f = File::new(&flat("100Gbps", rest));
        let out = cmd().args(["run", "--quiet"]).arg(&f.0).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{rest}: {err}");
        assert!(err.contains(want) && !err.contains("00000000"), "{rest}: {err}");
    }
    // A refused machine's message gives the bound, not `inf s`.
    let f = File::new(&flat("2.5e-310", "algorithms: [ring]\nsizes: [4KiB]\n"));
    let out = cmd().args(["run", "--quiet"]).arg(&f.0).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("takes longer than 1.8e308 s") && !err.contains("inf"), "{err}");
}

/// `explain` on a machine where times overflow printed `inf` with exit status 0.
#[test]
fn explain_refuses_a_machine_of_infinite_times() {
    cmd()
        .args(["explain", "ring", "--bandwidth", "1e-320"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not finite numbers"));
}

/// NCCL has at most 64 channels; 2^32 of them built a schedule for minutes.
#[test]
fn nccl_channels_stop_at_sixty_four() {
    for algo in ["nccl_ring", "nccl_tree"] {
        cmd()
            .args(["explain", algo, "--param", "channels=4294967296"])
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(predicate::str::contains("'channels' must be 1 to 64, not 4294967296"));
    }
    let f = File::new(&flat("100Gbps", "algorithms: [{ name: nccl_ring, channels: 65 }]\nsizes: [4KiB]\n"));
    cmd().arg("run").arg(&f.0).assert().code(2).stderr(predicate::str::contains("1 to 64, not 65"));
}

/// Writing into a FIFO no process reads waited in `open()` for ever, with no word.
#[test]
fn a_fifo_output_without_a_reader_is_refused_before_the_run() {
    let d = Dir::new();
    d.write("s.yaml", &flat("100Gbps", "algorithms: [ring]\nsizes: [4KiB]\n"));
    let fifo = d.0.join("f.json");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for flag in ["--output", "--trace"] {
        cmd()
            .current_dir(&d.0)
            .args(["run", "s.yaml", "--quiet", flag, "f.json"])
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!("{flag} f.json: it is a FIFO that no process reads")));
    }
    // With a reader, the report goes through the FIFO. The read end is opened without
    // waiting (O_NONBLOCK), so it is there before the run looks; the report is far below
    // a pipe's buffer, so the run never waits for it to be read.
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut reader = std::fs::OpenOptions::new().read(true).custom_flags(0o4000).open(&fifo).unwrap();
    let out = cmd()
        .current_dir(&d.0)
        .args(["run", "s.yaml", "--quiet", "--format", "csv", "--output", "f.json"])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let mut got = String::new();
    reader.read_to_string(&mut got).unwrap();
    assert!(got.starts_with("collective,algorithm,"), "{got}");
}

/// `calibrate --env NCCL_ALGO=<escape>` echoed the escape sequence in its table.
#[test]
fn calibrate_escapes_what_it_echoes() {
    let d = Dir::new();
    calibration_inputs(&d);
    let out = cmd()
        .current_dir(&d.0)
        .args(["calibrate", "m.yaml", "a.txt", "--patience", "2", "--env", "NCCL_ALGO=\u{1b}]0;x\u{7}"])
        .output()
        .unwrap();
    assert!(!out.stdout.contains(&0x1b) && !out.stderr.contains(&0x1b), "{}", String::from_utf8_lossy(&out.stdout));
}

/// Issue 25's documentation items, as the code has them: `explain` leaves the symbol a
/// condition is about (it printed "for 6 a power of two"), docs/model.md names the
/// generator the engine uses, docs/sources.md says the bidirectional ring is built.
#[test]
fn the_docs_say_what_the_code_does() {
    let out = stdout(cmd().args(["explain", "butterfly", "--ranks", "6"]));
    assert!(out.contains("for P a power of two") && !out.contains("for 6 a power"), "{out}");
    let root = env!("CARGO_MANIFEST_DIR");
    let model = std::fs::read_to_string(format!("{root}/docs/model.md")).unwrap();
    assert!(model.contains("SplitMix64") && !model.contains("ChaCha"));
    let generator = std::fs::read_to_string(format!("{root}/src/sim/data/generator.rs")).unwrap();
    assert!(generator.contains("SplitMix64") || generator.contains("splitmix"));
    let sources = std::fs::read_to_string(format!("{root}/docs/sources.md")).unwrap();
    assert!(sources.contains("built as `bidirectional_ring`"), "docs/sources.md");
    assert!(
        allreduce_sim::algos::find_in(allreduce_sim::collective::Collective::Allreduce, "bidirectional_ring").is_some()
    );
}

/// The twenty-fifth trial: a ring of 4 ranks cut into 40,000 segments (64 MiB, under a
/// million messages, which `chain` runs in a third of a second) ran past a minute, and
/// a binomial tree of 160,000 segments took 26 s: every rank posts a receive for each
/// segment of a source at once, and a rank's matching table was keyed by the source
/// alone, so each match walked every piece waiting from that source, quadratic in the
/// segments. Keyed by source and tag, each match walks its own.
#[test]
fn twenty_fifth_trial_many_segments_from_one_source_match_in_linear_time() {
    for algo in ["{ name: ring, segments: 40000 }", "{ name: binomial_tree, segments: 160000 }"] {
        let f = File::new(&format!(
            "name: t\nranks: 4\ntopology: {{ link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\n\
             data: {{ mode: off }}\nalgorithms: [{algo}]\nsizes: [64MiB]\n"
        ));
        let out = cmd()
            .args(["run", f.0.to_str().unwrap(), "--quiet"])
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{algo}: {stderr}");
    }
}

/// The messages the estimate counts in flight at point (`np`, `bytes`) of `text`, a
/// scenario of one algorithm on a fully connected machine (alpha 1 us, 100 Gb/s, `nics`
/// NICs, f32, data off), and the most the engine held at once (`peak_in_flight`)
/// running it there.
fn in_flight_counted_and_held(text: &str, np: usize, bytes: u64, nics: u32) -> (u64, u64) {
    use allreduce_sim::algos::{self, Params, Problem};
    use allreduce_sim::results::Point;
    use allreduce_sim::sim::engine::NoObserver;
    use allreduce_sim::topology::{FullyConnected, Link};
    let s = parse_str(text, "s.yaml").unwrap_or_else(|e| panic!("{text}: {e}"));
    let counted = estimate::Planned::new(&s, &Point { algo: 0, ranks: np, bytes }, false).in_flight();
    let spec = &s.algorithms[0];
    let built = algos::build_for(spec.collective, &spec.name, Params::new(spec.params.clone())).unwrap();
    let topo = FullyConnected { ranks: np, link: Link { alpha: 1e-6, bandwidth: 1.25e10 }, nics };
    let p = Problem { ranks: np, elems: bytes as usize / 4, elem_bytes: 4 };
    let (stats, _) = allreduce_sim::sim::simulate(built.as_ref(), &topo, p, 5e-11, None, &mut NoObserver).unwrap();
    (counted, stats.peak_in_flight)
}

/// The twenty-fifth trial: `chain` of 10^9 segments on 4 ranks (4 GiB, data off) was
/// estimated at 4 KiB of memory, ran, and died of `memory allocation of 8589934592 bytes
/// failed` (exit 134): its first rank issues a send of every segment at once, and the
/// engine queued 10^9 of them. `double_binary_tree` of 16-byte chunks held 1.2 GB where
/// the estimate said 4 KiB. The estimate counts P messages a piece where the scenario
/// cuts the vector (`segments`, `chunk`), which covers what the engine holds at once
/// (`peak_in_flight`), and refuses such a point before it runs.
#[test]
fn twenty_fifth_trial_the_estimate_counts_pieces_issued_at_once() {
    let cases = [
        ("allreduce", "{ name: chain, segments: 3000 }"),
        ("allreduce", "{ name: binomial_tree, segments: 3000 }"),
        ("allreduce", "{ name: ring, segments: 700 }"),
        ("allreduce", "{ name: double_binary_tree, chunk: 64 }"),
        ("broadcast", "{ name: chain, segments: 3000 }"),
        ("reduce", "{ name: chain, segments: 3000 }"),
    ];
    for (coll, algo) in cases {
        for np in [2usize, 4, 5, 8] {
            let bytes = 48_000u64;
            let text = format!(
                "ranks: {np}\ncollective: {coll}\ntopology: {{ kind: fully_connected, link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\n\
                 data: {{ mode: off }}\nalgorithms: [{algo}]\nsizes: [{bytes}]\n"
            );
            let (counted, held) = in_flight_counted_and_held(&text, np, bytes, 1);
            assert!(counted >= held, "{coll} {algo} at P = {np}: counted {counted}, held {held}");
        }
    }
    let f = File::new(
        "name: t\nranks: 4\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps } }\n\
         data: { mode: off }\nalgorithms: [{ name: chain, segments: 1000000000 }]\nsizes: [4GiB]\n",
    );
    let out = cmd()
        .args(["run", f.0.to_str().unwrap(), "--quiet", "--max-memory", "4GiB"])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("chain at P = 4, S = 4 GiB would need about"), "{stderr}");
}

/// The twenty-fifth trial: refusals that did not say what is allowed, or printed a
/// figure that is not a number. `calibrate --gpus-per-node 0x10` said `invalid digit
/// found in string` (the standard library's words); `--tolerance 0x10` said `invalid
/// float literal` and `--tolerance -9223372036854775808` quoted `-9223372036854776000`;
/// a skew of scale 1e308 said the worst run `could take inf s (skew inf s, ...)`; a
/// cluster of 2^32 - 1 GPUs a node and a fat tree of 2^64 - 1 leaves were "too large to
/// count" without the limits.
#[test]
fn twenty_fifth_trial_refusals_say_what_is_allowed() {
    let refused = |args: &[&str]| {
        let out = cmd().args(args).timeout(std::time::Duration::from_secs(20)).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    for v in ["0x10", "1e3", "-0", "18446744073709551616", "٣"] {
        let stderr = refused(&["calibrate", "m.yaml", "a.txt", "--gpus-per-node", v]);
        assert!(
            stderr.contains(&format!("GPUs per node must be a whole number from 1 to {}, not '{v}'", usize::MAX)),
            "{stderr}"
        );
    }
    for v in ["0x10", "٣", "-9223372036854775808", "nan", "inf", "1e400"] {
        let stderr = refused(&["run", "s.yaml", "--baseline", "b.json", "--tolerance", v]);
        assert!(stderr.contains(&format!("a finite number >= 0 such as 1e-9, not '{v}'")), "{stderr}");
    }
    let f = File::new(&flat(
        "100Gbps",
        "noise: { skew: { dist: exponential, scale: 1e308 } }\nalgorithms: [ring]\nsizes: [4KiB]\n",
    ));
    let stderr = refused(&["run", f.0.to_str().unwrap(), "--quiet"]);
    assert!(!stderr.contains("inf"), "{stderr}");
    assert!(stderr.contains("could take more than 1.8") && stderr.contains("(skew more than 1.8"), "{stderr}");
    let f = File::new(
        "name: t\nranks: 2\ntopology:\n  kind: cluster\n  nodes: 1\n  gpus_per_node: 4294967295\n  \
         intra: { kind: nvswitch, alpha: 3us, bandwidth: 450GB/s }\nalgorithms: [nccl_ring]\nsizes: [4KiB]\n",
    );
    let stderr = refused(&["run", f.0.to_str().unwrap(), "--quiet"]);
    assert!(stderr.contains("nodes x gpus_per_node may be at most 536870911"), "{stderr}");
    let f = File::new(
        "name: t\nranks: 4\ntopology: { kind: fat_tree, hosts_per_leaf: 2, leaves: 18446744073709551615, \
         link: { alpha: 1us, bandwidth: 1Gbps } }\nalgorithms: [ring]\nsizes: [4KiB]\n",
    );
    let stderr = refused(&["run", f.0.to_str().unwrap(), "--quiet"]);
    assert!(stderr.contains("hosts_per_leaf x leaves + leaves x spines must stay below 2^62"), "{stderr}");
}

/// The twenty-sixth trial: `bcube` with one group of 1,024 ranks (base = P, 16 MiB, data
/// off) held 481 MB where `validate` said 1 MiB: each rank sends its b - 1 data messages
/// and b - 1 notifications of a step at once, so the engine holds up to 2 P (b - 1). The
/// estimate counts them (held to what the engine holds, `peak_in_flight`, here and at
/// smaller bases).
#[test]
fn twenty_sixth_trial_the_estimate_counts_bcubes_group_in_flight() {
    for (np, base) in [(16usize, 16usize), (27, 3), (64, 64), (64, 8), (64, 4), (32, 2)] {
        for nics in [1, 2] {
            let bytes = 4 * 3 * np as u64 * 7;
            let text = format!(
                "ranks: {np}\ntopology: {{ kind: fully_connected, link: {{ alpha: 1us, bandwidth: 100Gbps }}, nics: {nics} }}\n\
                 data: {{ mode: off }}\nalgorithms: [{{ name: bcube, base: {base} }}]\nsizes: [{bytes}]\n"
            );
            let (counted, held) = in_flight_counted_and_held(&text, np, bytes, nics);
            assert!(counted >= held, "bcube base {base} at P = {np}, {nics} NICs: counted {counted}, held {held}");
            if base == np {
                assert!(held >= (np * (np - 1)) as u64, "one group holds a step's sends at once: {held}");
            }
        }
    }
}

/// The twenty-seventh trial: `ompi_fixed` and `nccl_model` were estimated as their pick
/// alone (1 MiB at 1,024 ranks) while, as `auto`, they simulate every algorithm of the
/// collective to set their pick against the best: `--max-memory 8MiB` let them run (113
/// MB), and at 2,048 ranks under an address-space limit they aborted where `auto` was
/// refused. Every selector is estimated at what it simulates, and refused alike.
#[test]
fn twenty_seventh_trial_every_selector_is_estimated_at_what_it_simulates() {
    use allreduce_sim::results::Point;
    let text = |algo: &str| {
        format!(
            "name: t\nranks: 1024\ntopology: {{ kind: fully_connected, link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\n\
             data: {{ mode: off }}\nalgorithms: [{algo}]\nsizes: [4000]\n"
        )
    };
    let est = |algo: &str| {
        let s = parse_str(&text(algo), "s.yaml").unwrap();
        estimate::estimate(&s, &Point { algo: 0, ranks: 1024, bytes: 4000 }, false)
    };
    let auto = est("auto");
    for sel in ["ompi_fixed", "nccl_model"] {
        let e = est(sel);
        assert!(e.memory_bytes() >= auto.memory_bytes(), "{sel}: {e:?} against auto's {auto:?}");
        assert!(e.messages >= auto.messages, "{sel}: {e:?} against auto's {auto:?}");
        let f = File::new(&text(sel));
        let out = cmd()
            .args(["run", f.0.to_str().unwrap(), "--quiet", "--max-memory", "8MiB"])
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sel}: {stderr}");
        assert!(stderr.contains("would need about"), "{sel}: {stderr}");
    }
}

/// Twenty-eighth trial: a LogGP gap of a subnormal number of seconds (any `G` up to
/// 5e-309 s, inside the documented 0 to 1 s) gives a finite time of a few subnormal
/// seconds, and bytes over it overflowed: the table printed `inf B/s` and the CSV `inf`.
/// Such a bandwidth is no figure, as for a run of no time.
#[test]
fn twenty_eighth_trial_a_subnormal_time_prints_no_infinite_bandwidth() {
    let f = File::new(
        "name: t\nranks: 4\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps } }\n\
         network: { model: loggp, L: 0s, G: 5e-324s }\nalgorithms: [ring, direct]\nsizes: [1KiB]\n",
    );
    for format in ["table", "csv", "json"] {
        let out = cmd().args(["run", f.0.to_str().unwrap(), "--quiet", "--format", format]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_lowercase();
        assert_eq!(out.status.code(), Some(0), "{format}: {text}");
        assert!(!text.contains("inf") && !text.contains("nan"), "{format}: {text}");
    }
}

/// Twenty-eighth trial: `explain` filed every rank's operations and recorded the run
/// before it knew the point was past what it records: `double_binary_tree` of 1-element
/// chunks at 256 ranks aborted on an allocation after 25 s at 8 GB, and `ring` of 16
/// segments at 256 ranks was refused after 3.4 s and 938 MB with "too many messages to
/// explain", naming nothing. It is now refused at once, saying how many messages, the
/// limit, and the flags that make the point smaller.
#[test]
fn twenty_eighth_trial_explain_refuses_a_schedule_past_its_recording_at_once() {
    let cases: [&[&str]; 2] = [
        &["explain", "double_binary_tree", "--ranks", "256", "--size", "256KiB", "--param", "chunk=1"],
        &["explain", "ring", "--ranks", "256", "--size", "4MiB", "--param", "segments=16"],
    ];
    for args in cases {
        let out = cmd().args(args).timeout(std::time::Duration::from_secs(60)).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("messages here, more than explain records"), "{args:?}: {stderr}");
        assert!(stderr.contains("--ranks") && stderr.contains("--param"), "{args:?}: {stderr}");
    }
}

/// `nics` at its documented limit, 4294967295: the closed forms' port recurrences once
/// held a vector of one free time per NIC (34 GB: an abort), and the trace and the Gantt
/// chart a track per port. Every collective's algorithms and both drawings, on a flat
/// machine and a hierarchy, with P not a power of two.
#[test]
fn the_largest_nics_costs_no_memory() {
    let d = Dir::new();
    let machines = [
        "ranks: 5\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps }, nics: 4294967295 }",
        "topology: { kind: hierarchical, levels: [ { size: 2, alpha: 1us, bandwidth: 1GB/s }, \
         { size: 3, alpha: 2us, bandwidth: 1GB/s } ], nics: 4294967295 }",
    ];
    let sized = "sizes: [1KiB, 3000]";
    let collectives = [
        (
            "allreduce",
            "[star, chain, {name: chain, segments: 3}, binomial_tree, {name: binomial_tree, segments: 3}, \
             butterfly, ring, {name: ring, segments: 2}, ring_segmented, bidirectional_ring, halving_doubling, \
             hierarchical_ring, blueconnect, double_binary_tree, naive, ring_gloo, ring_chunked, bcube, direct, \
             nccl_ring, nccl_tree, auto, ompi_fixed, nccl_model]",
            sized,
        ),
        ("broadcast", "[one_to_all, binomial_tree, chain, binary_tree, knomial, scatter_allgather, auto]", sized),
        ("reduce", "[binomial_tree, chain, all_to_one, binary_tree, in_order_binary_tree, auto]", sized),
        ("reduce_scatter", "[ring, halving_doubling, direct, butterfly, recursive_halving, pat, nccl_ring]", sized),
        ("allgather", "[ring, halving_doubling, direct, neighbor_exchange, pat, nccl_ring]", sized),
        ("barrier", "[all_to_all, all_to_one, recursive_doubling, bruck]", ""),
    ];
    for machine in machines {
        for (coll, algorithms, sizes) in collectives {
            d.write("s.yaml", &format!("name: t\n{machine}\ncollective: {coll}\nalgorithms: {algorithms}\n{sizes}\n"));
            let out = cmd().current_dir(&d.0).args(["run", "s.yaml", "--quiet"]).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{coll} on {machine}: {stderr}");
        }
    }
    // One point drawn: a track per port used, not per port the machine has.
    d.write("b.yaml", &format!("name: t\n{}\ncollective: barrier\nalgorithms: [bruck]\n", machines[0]));
    let out = cmd()
        .current_dir(&d.0)
        .args(["run", "b.yaml", "--quiet", "--trace", "t.json", "--gantt", "g.svg"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(d.read("t.json").len() < 100_000 && d.read("g.svg").len() < 1_000_000);
}

// ---------------------------------------------------------------------------------------
// The thirtieth trial of docs/hardening.md.

/// A slowdown of 3 x 10^292 (a noise-free time of 3e-287 ps under a skew of 1 us) was
/// printed in fixed point, 293 digits.
#[test]
fn thirtieth_trial_a_huge_slowdown_is_in_scientific_notation() {
    let f = File::new(
        "ranks: 4\ntopology: { link: { alpha: 1e-300s, bandwidth: 1e300B/s } }\ncompute: { cost_per_byte: 0 }\n\
         noise: { skew: { dist: fixed, scale: 1us } }\nalgorithms: [ring]\nsizes: [16]\n",
    );
    let out = stdout(cmd().args(["run", "--quiet"]).arg(&f.0));
    let line = out.lines().find(|l| l.contains("the noise-free")).unwrap_or_default();
    assert!(line.contains("x3.333e292"), "{out}");
    let digits = line.split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap_or(0);
    assert!(digits < 20, "{line}");
}

/// Refusals of slow ranks and links that printed `xinf` or left out the upper limit, and a
/// slow link between rank 2^64 - 1 and rank 0 that was taken (and ignored).
#[test]
fn thirtieth_trial_slow_ranks_and_links_say_their_limits() {
    for (noise, want) in [
        ("{ slow_links: [{ a: 3, b: 4, factor: 5e-324 }] }", "slowdown xmore than 1.798e308"),
        ("{ slow_ranks: [{ rank: 4294967295, factor: 2 }] }", "a rank number from 0 to 4294967294"),
        ("{ slow_links: [{ a: 18446744073709551615, b: 0, factor: 0.5 }] }", "rank numbers from 0 to 4294967294"),
        ("{ slow_links: [{ a: '4294967295', b: 0, factor: 0.5 }] }", "rank numbers from 0 to 4294967294"),
    ] {
        let f = File::new(&format!(
            "ranks: 16\ntopology: {{ link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\nalgorithms: [ring]\n\
             sizes: [4KiB]\nnoise: {noise}\n"
        ));
        let out = cmd().args(["run", "--quiet"]).arg(&f.0).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{noise}: {err}");
        assert!(err.contains(want) && !err.contains("inf "), "{noise}: {err}");
    }
}

// ---------------------------------------------------------------------------------------
// The thirty-first trial of docs/hardening.md.

/// `explain` counted a schedule past its recording by walking every rank's program:
/// 41 s for `double_binary_tree` of 4-byte chunks (534,773,760 messages), 20 s for
/// `ring_segmented` of 4-byte segments, 19 s for `pat` allgather of 4-byte chunks, each
/// then refused. The count `validate` prints (the algorithm's own, or the one read off
/// its schedule) is taken first; a walk stops once past the limit.
#[test]
fn thirty_first_trial_explain_refuses_past_its_recording_at_once() {
    let cases: [&[&str]; 3] = [
        &["explain", "double_binary_tree", "--ranks", "256", "--size", "4MiB", "--param", "chunk=4"],
        &["explain", "ring_segmented", "--ranks", "256", "--size", "4MiB", "--param", "segment=4"],
        &["explain", "pat", "--collective", "allgather", "--ranks", "256", "--size", "4MiB", "--param", "chunk=4"],
    ];
    for args in cases {
        let started = std::time::Instant::now();
        let out = cmd().args(args).timeout(std::time::Duration::from_secs(15)).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("messages here, more than explain records"), "{args:?}: {stderr}");
        // Seconds of a loaded machine's start-up at most, not a walk of every message.
        assert!(started.elapsed().as_secs_f64() < 5.0, "{args:?}: {:?}", started.elapsed());
    }
    let out = cmd().args(cases[0]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("sends 534773760 messages"));
}

/// `explain ring_chunked --ranks 256 --size 4` (521,984 messages, a tag each) held
/// 525 MB, ~1 KB a message (a map entry and queue per tag, ten strings per table row),
/// and died of a failed allocation (exit 134) under `ulimit -v` of 200,000 to
/// 400,000 KB. It now holds ~135 MB, and a table that would not fit is refused before
/// anything is filed.
#[test]
fn thirty_first_trial_explain_refuses_a_table_that_would_not_fit() {
    // The table of `explain ring_chunked --ranks 256 --size 4` under an address-space limit, KB.
    let explain_under = |kb: u32| {
        cli_under(&format!("ulimit -v {kb}"), "explain ring_chunked --ranks 256 --size 4", &[]).output().unwrap()
    };
    let out = explain_under(200_000);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ring_chunked sends 521984 messages here, whose table and recording need"), "{stderr}");
    assert!(stderr.contains("--ranks"), "{stderr}");
    // With room, the whole table.
    let out = explain_under(600_000);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("521984 messages"));
}

/// A machine of one host has no link: `explain` printed its "best link" as `alpha = 0e0 s,
/// B = inf B/s` and filled a form in with `1024/inf`, and `run` under the flow model
/// ended a line with `0 of 0 links used; busiest ` and nothing after it.
#[test]
fn thirty_first_trial_a_machine_of_one_host_prints_no_infinite_link() {
    let machines = [
        "topology: { kind: custom, nodes: [n0], link: { alpha: 1us, bandwidth: 100Gbps } }",
        "topology: { kind: graph, nodes: [h0], link: { alpha: 1us, bandwidth: 100Gbps } }\nnetwork: { model: flow }",
        "topology: { kind: graph, nodes: [h0], link: { alpha: 1us, bandwidth: 100Gbps } }\n\
         network: { model: loggp, L: 1us, G: 1ns }",
    ];
    for machine in machines {
        let f = File::new(&format!("{machine}\nalgorithms: [ring]\nsizes: [1KiB]\n"));
        let out = stdout(cmd().args(["explain", "ring", "--scenario"]).arg(&f.0));
        assert!(!out.contains("inf"), "{machine}: {out}");
        assert!(out.contains("alpha and B: none (the machine has no link; one rank sends nothing)"), "{out}");
        let run = stdout(cmd().args(["run", "--quiet"]).arg(&f.0));
        assert!(!run.contains("inf") && !run.contains("busiest \n"), "{machine}: {run}");
        if machine.contains("flow") {
            assert!(run.contains("ring: the machine has no link (one rank sends nothing)"), "{run}");
        }
    }
}

/// `calibrate` of a log whose row is past the sizes' limit (`4 P^2 S` below 2^64) named
/// the machine file as `calibrate` had edited it (`m.yaml:29:5` of a 5-line file, echoing
/// a line the file does not have); the log's own row is named now.
#[test]
fn thirty_first_trial_calibrate_names_the_logs_row_past_the_size_limit() {
    let dir = std::env::temp_dir().join(format!("hardening-31-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("m.yaml"),
        "ranks: 4\ntopology: { link: { alpha: 1us, bandwidth: 10GB/s } }\ncompute: { cost_per_byte: 0 }\n\
         algorithms: [ompi_fixed]\nsizes: [4]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("o.txt"),
        "# OSU MPI Allreduce Latency Test v7.3\n# Datatype: MPI_FLOAT.\n# Size       Avg Latency(us)\n\
         4   2.004\n8   2.008\n18446744073709551612 1e9\n",
    )
    .unwrap();
    let out = cmd().current_dir(&dir).args(["calibrate", "m.yaml", "o.txt", "--ranks", "4"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("o.txt:6: a size of 18446744073709551612 bytes"), "{stderr}");
    assert!(stderr.contains("at most 288230376151711743 bytes"), "{stderr}");
    assert!(!stderr.contains("m.yaml"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Wording: a number of 5,000 digits was echoed whole with no key; the YAML reader's
/// node limit was shown in its Debug form; `bcube`'s `base=0` was told "from 1" and
/// `base=1` then refused.
#[test]
fn thirty_first_trial_refusals_say_the_key_and_the_limit() {
    let f = File::new(&format!(
        "ranks: {}\ntopology: {{ link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\nalgorithms: [ring]\nsizes: [4]\n",
        "9".repeat(5000)
    ));
    let out = cmd().arg("validate").arg(&f.0).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(":1:8: ranks: 99999999999999999999...99999999 (5000 characters) is not a finite"), "{err}");
    assert!(err.contains("at most 4294967295") && err.len() < 1000, "{err}");

    let nodes: String = (0..250_000).map(|i| format!("  - n{i}\n")).collect();
    let f = File::new(&format!("topology:\n  kind: custom\n  nodes:\n{nodes}algorithms: [ring]\n"));
    let out = cmd().arg("validate").arg(&f.0).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("too large or too complex: more than 250000 nodes"), "{err}");
    assert!(!err.contains("Nodes {"), "{err}");

    for (base, code) in [("0", 2), ("1", 2), ("2", 0)] {
        let out =
            cmd().args(["explain", "bcube", "--ranks", "4", "--param", &format!("base={base}")]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{base}: {err}");
        if code == 2 {
            assert!(err.contains("'base' must be a whole number from 2 to"), "{base}: {err}");
        }
    }
}

/// Under an address-space limit a run either runs or is refused, and more room never
/// turns a run into an abort. `ring` at 256 ranks (a 24 MB heap) ran under a `ulimit -v`
/// of 200 MB and died of a failed allocation (exit 134) under 300 MB: glibc's per-thread
/// arenas reserved 64 MiB each, as many as threads had allocated first. `naive` at 256
/// ranks and 64 KiB with full data died under 130 to 200 MB: each thread's tiled replay
/// kept a copy of every message in flight, which the estimate left out. Under 20 MB the
/// worker threads could not start and the first use of the pool panicked (exit 101).
#[test]
fn thirty_second_trial_more_room_never_turns_a_run_into_an_abort() {
    let flat = "ranks: 256\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps }, nics: 1 }\n\
                compute: { cost_per_byte: 0.05ns }\ndata: { mode: off }\nalgorithms: [ring]\nsizes: [4000004]\n";
    let hier = "ranks: 256\ntopology: { kind: hierarchical, levels: [ { size: 16, alpha: 0.5us, bandwidth: 300GB/s }, \
                { size: 16, alpha: 10us, bandwidth: 25Gbps, nics: 1 } ], nics: 2 }\ncompute: { cost_per_byte: 0.05ns }\n\
                data: { mode: full }\nalgorithms: [naive]\nsizes: [64KiB]\n";
    for text in [flat, hier] {
        let f = File::new(text);
        let mut codes = Vec::new();
        for kb in [20_000, 130_000, 200_000, 300_000, 450_000, 700_000] {
            let out = cli_under(&format!("ulimit -v {kb}"), "run --quiet \"$1\"", &[&f.0]).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let code = out.status.code();
            assert!(code == Some(0) || code == Some(2), "{kb} KB: {code:?} {stderr}");
            if code == Some(2) {
                assert!(stderr.contains("ulimit"), "{kb} KB: {stderr}");
            }
            codes.push(code);
        }
        // Refused below some limit, run above it.
        let first_run = codes.iter().position(|&c| c == Some(0)).expect("runs with 700 MB");
        assert!(codes[first_run..].iter().all(|&c| c == Some(0)), "{codes:?}");
        assert_eq!(codes[0], Some(2));
    }
    // `explain`'s text (6 MB here) grew by doubling past what its check counted: an abort
    // under 40 to 60 MB.
    for (kb, code) in [(60_000, 2), (200_000, 0)] {
        let out = cli_under(&format!("ulimit -v {kb}"), "explain naive --ranks 256 --size 1MiB", &[]).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{kb} KB: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// The process's other limits and the environment's thread settings: each is an error
/// with status 2 or a run, never a signal or a panic. Under `ulimit -f` smaller than the
/// report the kernel killed the process with SIGXFSZ (status 153, no message), and a
/// `--plot` cut short replaced a whole plot of an earlier run with a truncated one; under
/// `ulimit -s 64` reading the scenario overflowed the main thread's stack (134);
/// `RUST_MIN_STACK=1` gave the workers a stack too small to run (134);
/// `RAYON_NUM_THREADS=10000` started ten thousand threads before even `list` (minutes).
#[test]
fn thirty_second_trial_process_limits_are_errors_not_signals() {
    let f = File::new(
        "ranks: 8\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps } }\nalgorithms: [ring, butterfly]\n\
         sizes: [4KiB, 1MiB]\n",
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hard-32-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let under = |limit: &str, args: &str| cli_under(limit, args, &[&f.0, &dir]).output().unwrap();
    // A whole report, then one that cannot be written past 4 KiB: the old file is kept.
    let report = dir.join("r.json");
    let out = under("true", "run --quiet \"$1\" --output \"$2/r.json\" --plot=\"$2/plots\"");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let before = std::fs::read(&report).unwrap();
    let plots: Vec<_> = std::fs::read_dir(dir.join("plots")).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(plots.len() > 2 && plots.iter().any(|p| std::fs::metadata(p).unwrap().len() > 4096));
    let whole: Vec<_> = plots.iter().map(|p| std::fs::read(p).unwrap()).collect();
    for args in ["run --quiet \"$1\" --output \"$2/r.json\"", "run --quiet \"$1\" --plot=\"$2/plots\""] {
        let out = under("ulimit -f 4", args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args}: {stderr}");
        assert!(stderr.contains("File too large"), "{args}: {stderr}");
    }
    assert_eq!(std::fs::read(&report).unwrap(), before);
    for (p, w) in plots.iter().zip(&whole) {
        assert_eq!(&std::fs::read(p).unwrap(), w, "{} changed", p.display());
    }
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .chain(std::fs::read_dir(dir.join("plots")).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    // A small stack for the main thread, or asked for the workers; a run either way.
    for limit in ["ulimit -s 64", "export RUST_MIN_STACK=1"] {
        let out = under(limit, "run --quiet \"$1\"");
        assert_eq!(out.status.code(), Some(0), "{limit}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // Too many workers asked for: refused at once, naming the variable and the range.
    let out = under("export RAYON_NUM_THREADS=100000", "list");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("RAYON_NUM_THREADS=100000") && stderr.contains("1 to 1024"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--max-memory` too small for `full` data: the refusal's hint offered `data.mode: sample`
/// needing more than full data did (a small vector's sample keeps 16 bytes an element
/// against 4): only a mode that needs less is offered now.
#[test]
fn thirty_second_trial_a_refusal_offers_only_a_mode_that_needs_less() {
    let f = File::new(
        "ranks: 64\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps } }\ndata: { mode: full }\n\
         algorithms: [direct]\nsizes: [4KiB]\n",
    );
    let out = cmd().args(["run", "--quiet", "--max-memory", "0"]).arg(&f.0).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("data.mode: off needs about"), "{stderr}");
    assert!(!stderr.contains("data.mode: sample"), "{stderr}");
    // Where sampling does save memory, it is offered.
    let f = File::new(
        "ranks: 16\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps } }\ndata: { mode: full }\n\
         algorithms: [direct]\nsizes: [64KiB]\n",
    );
    let out = cmd().args(["run", "--quiet", "--max-memory", "0"]).arg(&f.0).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("data.mode: sample needs about"));
}

/// Ctrl-C (SIGINT) during the points: the points under way finish, the report holds them
/// and says it was interrupted, status 130. During the plots, after the report: the plot
/// being drawn is finished and the rest skipped, status 130. It printed "finishing the
/// points under way", drew every plot and exited 0. No file is ever left cut short.
#[test]
fn ctrl_c_stops_between_points_then_between_plots() {
    use std::os::unix::process::ExitStatusExt;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hard-ctrlc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sigint = |child: &std::process::Child| {
        // SAFETY: kill sends a signal to the child's pid, which has not been waited for.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    };
    let spawn = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_allreduce-sim"))
            .args(args)
            .env("RUST_BACKTRACE", "0")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };

    // 48 points of a few tenths of a second each. The handler is set once the scenario is
    // read and checked: a signal before that kills the process (as it should), and the
    // case is tried again later.
    let sizes: Vec<String> = (0..48).map(|i| (4096 + 4 * i).to_string()).collect();
    let long = File::new(&format!(
        "ranks: 2048\ntopology: {{ link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\ndata: {{ mode: off }}\n\
         algorithms: [ring]\nsizes: [{}]\n",
        sizes.join(", ")
    ));
    let report = dir.join("r.json");
    let mut done = false;
    for wait_ms in [300, 1000, 3000] {
        let child =
            spawn(&["run".as_ref(), "--quiet".as_ref(), long.0.as_os_str(), "--output".as_ref(), report.as_os_str()]);
        std::thread::sleep(std::time::Duration::from_millis(wait_ms));
        sigint(&child);
        let out = child.wait_with_output().unwrap();
        if out.status.signal() == Some(libc::SIGINT) {
            continue;
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{stderr}");
        assert!(stderr.contains("interrupted: finishing the points under way"), "{stderr}");
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        assert_eq!(json["interrupted"], true);
        let n = json["results"].as_array().unwrap().len();
        assert!(n < 48, "{n} points");
        assert!(stderr.contains(&format!("the report holds the {n} of 48 point(s) that finished")), "{stderr}");
        done = true;
        break;
    }
    assert!(done, "the run never got as far as its Ctrl-C handler");

    // The plot phase: the signal is sent once the report is in place (the report is
    // written first, then about 200 plots, for most of a second).
    let ranks: Vec<String> = (1..=32).map(|i| (2 * i).to_string()).collect();
    let many = File::new(&format!(
        "name: many\nranks: [{}]\ntopology: {{ link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\n\
         data: {{ mode: off }}\nalgorithms: [ring, butterfly]\nsizes: [4KiB, 64KiB, 1MiB]\n",
        ranks.join(", ")
    ));
    let plots = dir.join("plots");
    let args = ["run".as_ref(), "--quiet".as_ref(), many.0.as_os_str(), "--output".as_ref(), report.as_os_str()];
    let plot_arg = format!("--plot={}", plots.display());
    let whole = cmd().args(args).arg(&plot_arg).output().unwrap();
    assert_eq!(whole.status.code(), Some(0));
    let files: Vec<PathBuf> = std::fs::read_dir(&plots).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(files.len() > 100, "{} plots", files.len());
    let before: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    std::fs::remove_file(&report).unwrap();
    let mut all: Vec<&std::ffi::OsStr> = args.to_vec();
    all.push(plot_arg.as_ref());
    let child = spawn(&all);
    let started = std::time::Instant::now();
    while !report.exists() {
        assert!(started.elapsed().as_secs() < 60, "no report after a minute");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted: stopping once the file being written is whole"), "{stderr}");
    assert!(stderr.contains("interrupted: the report holds every point; skipped: the plots not yet drawn"), "{stderr}");
    let drawn: usize = stderr
        .lines()
        .find_map(|l| l.strip_prefix("wrote ")?.split(' ').next()?.parse().ok())
        .expect("a count of plots");
    assert!(drawn < files.len(), "{drawn} of {}: {stderr}", files.len());
    // Every plot whole: those drawn again are the same bytes, the rest untouched.
    for (p, b) in files.iter().zip(&before) {
        assert_eq!(&std::fs::read(p).unwrap(), b, "{}", p.display());
    }
    let left = std::fs::read_dir(&plots)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(".tmp"));
    assert_eq!(left.count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A sweep of 12,000 small points (ranks 4 and 8, three algorithms, 2,000 sizes, data
/// off): under a second of CPU and a 19 MB JSON report.
fn twelve_thousand_small_points() -> File {
    let sizes: Vec<String> = (1..=2000).map(|i| (4 * i).to_string()).collect();
    File::new(&format!(
        "ranks: [4, 8]\ntopology: {{ link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\ndata: {{ mode: off }}\n\
         algorithms: [ring, star, butterfly]\nsizes: [{}]\n",
        sizes.join(", ")
    ))
}

/// Memory that runs out where no estimate looked (a scenario of 15 MB of comments, a
/// merge of large shards, the comparison after a sweep) aborted (134, `memory allocation
/// of N bytes failed`) under `ulimit -v`; the command now says so and exits with status 2.
/// A sweep of many small points is refused before it runs: its results are reserved.
#[test]
fn thirty_third_trial_memory_that_runs_out_is_an_error_not_an_abort() {
    let comment: String = (0..150_000).map(|i| format!("# {i:0>96}\n")).collect();
    let f = File::new(&format!(
        "ranks: 4\ntopology: {{ link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\nalgorithms: [ring]\nsizes: [4]\n{comment}"
    ));
    for (kb, code) in [(45_000, 2), (50_000, 2), (400_000, 0)] {
        let out = cli_under(&format!("ulimit -v {kb}"), "validate \"$1\"", &[&f.0]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{kb} KB: {stderr}");
        if code == 2 {
            assert!(stderr.contains("ulimit -v"), "{kb} KB: {stderr}");
        }
    }
    let f = twelve_thousand_small_points();
    let out = cli_under("ulimit -v 60000", "run --quiet \"$1\" --format json", &[&f.0]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the 12000 points' results would need at least"), "{stderr}");
    assert!(out.stdout.is_empty());
}

/// SIGTERM while a report is being written left its hidden temporary file behind (58 MB
/// once); the soft CPU limit (`ulimit -t`) killed a run with no word (status 152). The
/// temporary file is removed now, and the CPU limit is an error with a message.
#[test]
fn thirty_third_trial_signals_leave_no_temporary_file() {
    use std::os::unix::process::ExitStatusExt;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hard-33-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let f = twelve_thousand_small_points();
    let temps = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(".tmp"))
            .count()
    };
    // The signal is sent once the temporary file appears; where the write was over first
    // (status 0) the case is tried again.
    let mut caught = 0;
    for _ in 0..5 {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_allreduce-sim"))
            .args(["run", "--quiet", "--format", "json", "--output"])
            .arg(dir.join("r.json"))
            .arg(&f.0)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while temps() == 0 && started.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        // SAFETY: kill sends a signal to the child's pid, which has not been waited for.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
        let out = child.wait_with_output().unwrap();
        assert_eq!(temps(), 0, "a temporary file left: {:?}", out.status);
        assert!(out.status.signal().is_none(), "{:?}", out.status);
        if out.status.code() == Some(143) {
            caught += 1;
        } else {
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        }
    }
    assert!(caught > 0, "no SIGTERM arrived during a write");

    // Seconds of CPU under a limit of one.
    let long = File::new(
        "ranks: 2048\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps } }\ndata: { mode: off }\n\
         algorithms: [ring]\nsizes: [4096, 4100, 4104, 4108, 4112, 4116, 4120, 4124]\n",
    );
    let out =
        cli_under("ulimit -St 1", "run --quiet \"$1\" --output \"$2/t.json\"", &[&long.0, &dir]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{:?} {stderr}", out.status);
    assert!(stderr.contains("the CPU time limit (`ulimit -t`) ran out"), "{stderr}");
    assert_eq!(temps(), 0);
    // A legal name of 250 bytes: its temporary name fits too.
    let name = format!("{}.json", "a".repeat(245));
    let out = cmd()
        .args(["run", "--quiet", "--output"])
        .arg(dir.join(&name))
        .arg(&long.0)
        .args(["--sizes", "4"])
        .args(["--ranks", "4"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.join(&name).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A legal sweep of 4,000,000 points under `ulimit -v` was refused for its results'
/// memory only after 89 s of planning every point; its count is weighed first now. A
/// sweep with `repeat:` keeps every seed's time of every point, which the flat 6 KiB a
/// point did not count (100 points of 100,000 seeds: about 1.1 GB in JSON; such a run
/// ran 25 s, then ran out of memory under a `ulimit -v` of 400 MB).
#[test]
fn thirty_fourth_trial_a_sweep_is_weighed_by_its_count_and_its_seeds() {
    let ranks: Vec<String> = (2..=201).map(|r| r.to_string()).collect();
    let sizes: Vec<String> = (1..=2000).map(|i| (4 * i).to_string()).collect();
    let huge = File::new(&format!(
        "ranks: [{}]\ntopology: {{ link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\ndata: {{ mode: off }}\n\
         algorithms: [ring, star, butterfly, halving_doubling, double_binary_tree, binomial_tree, direct, chain, \
         bidirectional_ring, ring_segmented]\nsizes: [{}]\n",
        ranks.join(", "),
        sizes.join(", ")
    ));
    let out = cli_under("ulimit -v 1000000", "run --quiet \"$1\" --format csv", &[&huge.0]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the 4000000 points' results would need at least"), "{stderr}");
    assert!(out.stdout.is_empty());

    let seeds = File::new(&format!(
        "ranks: 2\ntopology: {{ link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\ndata: {{ mode: off }}\n\
         algorithms: [ring]\nsizes: [{}]\nnoise: {{ skew: {{ dist: exponential, scale: 10us }} }}\nrepeat: 100000\n",
        sizes[..100].join(", ")
    ));
    let out = cli_under("ulimit -v 400000", "run --quiet \"$1\" --format json", &[&seeds.0]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the 100 points' results would need about 1.49 GiB"), "{stderr}");
}

/// Lines of one kind were listed without end: a failure for each seed a fault cut off
/// (`repeat: 100000`, half of them cut: 31 MB of failures at one point) and a note for each
/// `noise.faults` entry (5,000 entries naming no node: 5,000 notes at every point). Both
/// passed the report's reservation and ran out of memory after the sweep. A point lists
/// the first 16 of each, then counts the rest in one line.
#[test]
fn thirty_fifth_trial_a_point_lists_sixteen_failing_seeds_and_fault_notes() {
    let cut = File::new(
        "topology: { kind: fat_tree, hosts_per_leaf: 2, leaves: 2, spines: 2, link: { alpha: 1us, bandwidth: 100Gbps \
         } }\nnetwork: { model: flow }\ndata: { mode: off }\nalgorithms: [ring]\nsizes: [4KiB]\nnoise:\n  faults:\n    \
         - { random: 1 }\nrepeat: 400\n",
    );
    let out = cmd().args(["run", "--quiet", "--format", "json"]).arg(&cut.0).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let res = &report["results"][0];
    let failures: Vec<&str> = res["failures"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    let times = res["times_s"].as_array().unwrap().len();
    assert_eq!(failures.len(), 17, "{failures:?}");
    assert!(failures[..16].iter().all(|f| f.starts_with("seed ") && f.contains("cut off")), "{failures:?}");
    // Every seed either has its time or failed.
    let more: usize = failures[16].split(' ').next().unwrap().parse().unwrap();
    assert!(
        failures[16].ends_with("more seed run(s) failed after these (every failed seed's time is left out of times_s)")
    );
    assert_eq!(times + 16 + more, 400, "{}", failures[16]);

    let faults: String = (0..40).map(|i| format!("    - {{ a: nosuchnode{i:03}, b: r1, at: 1us }}\n")).collect();
    let missing = File::new(&format!(
        "ranks: 4\ntopology: {{ kind: ring, link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\nnetwork: {{ model: flow }}\n\
         data: {{ mode: off }}\nalgorithms: [ring]\nsizes: [64]\nnoise:\n  faults:\n{faults}"
    ));
    let out = cmd().args(["run", "--quiet", "--format", "json"]).arg(&missing.0).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes: Vec<&str> =
        report["results"][0]["notes"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    let listed = notes.iter().filter(|n| n.contains("no link of this machine joins these two nodes")).count();
    assert_eq!(listed, 16, "{notes:?}");
    assert!(
        notes.contains(&"24 more fault(s) after these: 0 due after the run ended, 24 joining no two nodes of this machine, 0 failing a link (0 message(s) in flight rerouted, 0 cut off)"),
        "{notes:?}"
    );
}

/// Under the flow model a point of at most 64 ranks lists every link it uses, and the
/// run reserved room for every link of the machine: a ring on a fully connected machine
/// of 64 ranks uses 64 of its 4,032 links, and 2,000 such points were refused under a
/// `ulimit -v` of 500,000 KB for 3.5 GiB of results though the run holds about 60 MB.
/// The links a point uses are walked from its programs now. The other way, a graph
/// whose node names are 1,000 bytes long lists links of 2,000-byte names that were
/// counted as short (`tests/report_memory.rs` counts both).
#[test]
fn thirty_fifth_trial_a_flow_sweep_reserves_for_the_links_it_uses() {
    let sizes: Vec<String> = (1..=2000).map(|i| (64 * i).to_string()).collect();
    let ring = File::new(&format!(
        "ranks: 64\ntopology: {{ link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\nnetwork: {{ model: flow }}\n\
         data: {{ mode: off }}\nalgorithms: [ring]\nsizes: [{}]\n",
        sizes.join(", ")
    ));
    let out = cli_under("ulimit -v 500000", "run --quiet \"$1\" --format json", &[&ring.0]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let links = &report["results"][1999]["network_links"];
    assert_eq!(links["used"], 64, "{links}");
    assert_eq!(links["machine_links"], 4032, "{links}");
    assert_eq!(links["all"].as_array().unwrap().len(), 64);
}

/// Under the flow model's weighted sharing a flow's share is `1 / L`, its route latency:
/// a latency below about 5.6e-309 s made it infinite, every rate NaN, the time 0, the
/// table `NaN%`, a false "shared links slowed it" and a failed check (status 1) on every
/// topology. A latency below 1e-290 s weighs as 1e-290 s now.
#[test]
fn thirty_sixth_trial_a_subnormal_latency_shares_a_link_as_a_tiny_one() {
    for alpha in ["1e-310", "5e-324", "1e-300"] {
        let f = File::new(&format!(
            "ranks: 4\ntopology: {{ kind: fully_connected, link: {{ alpha: {alpha}, bandwidth: 100Gbps }} }}\n\
             network: {{ model: flow }}\nalgorithms: [ring, direct]\nsizes: [4KiB]\n"
        ));
        let out = cmd().args(["run", "--quiet", "--format", "json"]).arg(&f.0).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{alpha}: {}", String::from_utf8_lossy(&out.stdout));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for res in report["results"].as_array().unwrap() {
            let t = res["time_s"].as_f64().unwrap();
            assert!(t > 4.0e-7 && t.is_finite(), "{alpha}: {res}");
        }
    }
}

/// A point that cannot run (the report's `n/a`) was estimated as if it ran: `mesh_2d` on
/// a fully connected machine refused a whole run for a data plane of 4.38 GiB.
#[test]
fn thirty_sixth_trial_a_point_is_estimated_at_what_it_runs() {
    let f = File::new(
        "ranks: 16\ntopology: { kind: fully_connected, link: { alpha: 1us, bandwidth: 100Gbps } }\n\
         data: { mode: full }\nalgorithms: [ring, mesh_2d]\nsizes: [64MiB]\n",
    );
    let out = cmd().args(["run", "--quiet", "--format", "json"]).arg(&f.0).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["results"][1]["not_applicable"].is_string(), "{}", report["results"][1]);
    assert_eq!(report["results"][0]["verified"], true, "{}", report["results"][0]);
}

/// Points run a thread each, and the reservation held the largest point once: two points
/// of `scenarios/tpu_mesh.yaml` side by side ran out of memory under a `ulimit -v` of
/// 102,000 to 132,000 KB, and `bcube` at 256 ranks under 74,000 to 80,000. Where the
/// largest that would run together cannot be reserved but each alone can, they run one
/// at a time.
#[test]
fn thirty_sixth_trial_points_that_cannot_run_together_run_one_at_a_time() {
    let f = File::new(
        "ranks: 256\ntopology: { kind: fully_connected, nics: 2, link: { alpha: 1us, bandwidth: 100Gbps } }\n\
         network: { model: flow }\ndata: { mode: sample }\nalgorithms: [bcube]\n\
         sizes: [64, 4096, 65536, 1048576, 15269888, 16777216, 268435456]\n",
    );
    for kb in (70_000..=90_000).step_by(2_000) {
        let out = cli_under(&format!("ulimit -v {kb}"), "run --quiet \"$1\" --format json", &[&f.0]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(matches!(out.status.code(), Some(0 | 2)), "{kb} KB: {stderr}");
        assert!(!stderr.contains("out of memory"), "{kb} KB: {stderr}");
    }
}

/// A selector's candidates were simulated for the whole sweep and all their results held
/// until the rows were filled: `nccl_model` under the flow model at 64 ranks kept about
/// 1 MB a point (each candidate lists its links), so 300 points passed a reservation
/// counting their rows and ran out of memory 45 s later under 320,000 KB. They run a
/// batch of points at a time now, and the reservation counts a batch.
#[test]
fn thirty_sixth_trial_a_selectors_candidates_are_dropped_a_batch_at_a_time() {
    let sizes: Vec<String> = (1..=300).map(|i| (64 * i).to_string()).collect();
    let f = File::new(&format!(
        "ranks: 64\ntopology: {{ kind: fully_connected, link: {{ alpha: 1us, bandwidth: 100Gbps }} }}\n\
         network: {{ model: flow }}\ndata: {{ mode: off }}\nalgorithms: [nccl_model]\nsizes: [{}]\n",
        sizes.join(", ")
    ));
    let out = cli_under("ulimit -v 160000", "run --quiet \"$1\" --format table", &[&f.0]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
