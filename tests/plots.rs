//! Plots: every chart of a small sweep is written as non-empty SVG and PNG, the `plot`
//! subcommand works end to end on a JSON report, and `run --gantt` draws one point and
//! refuses a sweep.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

use allreduce_sim::plots::{self, PlotData};
use allreduce_sim::report::{Exporter, Json};
use allreduce_sim::runner;
use allreduce_sim::scenario::parse_str;

/// Two rank counts, two sizes, three algorithms: every chart has data.
const SWEEP: &str = "\
name: tiny sweep
ranks: [4, 8]
topology:
  link: { alpha: 1us, bandwidth: 100Gbps }
algorithms: [ring, butterfly, star]
sizes: [4KiB, 64KiB]
";

/// A fresh, empty directory under cargo's per-test scratch space.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plots").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn bin() -> Command {
    let mut c = Command::cargo_bin("allreduce-sim").unwrap();
    c.env("RUST_BACKTRACE", "0");
    c
}

/// The chart names every file of a complete sweep must include.
const CHARTS: [&str; 11] = [
    "time_vs_size_P4",
    "busbw_vs_size_P4",
    "efficiency_vs_size_P4",
    "time_vs_size_P8",
    "busbw_vs_size_P8",
    "efficiency_vs_size_P8",
    "time_vs_ranks_S4KiB",
    "time_vs_ranks_S64KiB",
    "sim_vs_closed_form",
    "best_algorithm",
    "error_vs_ranks_S64KiB",
];

fn assert_every_chart(dir: &Path, files: &[PathBuf]) {
    for chart in CHARTS {
        for ext in ["svg", "png"] {
            let f = dir.join(format!("tiny-sweep_{chart}.{ext}"));
            assert!(files.contains(&f), "{} not in {files:?}", f.display());
            let bytes = std::fs::read(&f).unwrap();
            assert!(bytes.len() > 1000, "{} is {} bytes", f.display(), bytes.len());
            if ext == "png" {
                assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", f.display());
            } else {
                let text = String::from_utf8(bytes).unwrap();
                assert!(text.starts_with("<svg") && text.contains("tiny sweep"), "{}", f.display());
            }
        }
    }
    assert_eq!(files.len(), 2 * CHARTS.len(), "{files:?}");
}

#[test]
fn every_plot_of_a_sweep_is_written_and_non_empty() {
    let s = parse_str(SWEEP, "tiny.yaml").unwrap();
    let report = runner::run(&s);
    let dir = scratch("library");
    let files = plots::plot_report(&report, &dir).unwrap();
    assert_every_chart(&dir, &files);
}

#[test]
fn a_single_rank_count_skips_the_charts_over_ranks() {
    let s = parse_str(&SWEEP.replace("ranks: [4, 8]", "ranks: 4"), "tiny.yaml").unwrap();
    let dir = scratch("one_rank_count");
    let files = plots::plot_report(&runner::run(&s), &dir).unwrap();
    let names: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert!(names.iter().any(|n| n.contains("time_vs_size_P4")), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("vs_ranks")), "{names:?}");
}

#[test]
fn plot_subcommand_end_to_end() {
    let s = parse_str(SWEEP, "tiny.yaml").unwrap();
    let dir = scratch("cli");
    let report = dir.join("report.json");
    std::fs::write(&report, Json.render(&runner::run(&s))).unwrap();
    let out = dir.join("out");
    let assert = bin().arg("plot").arg(&report).arg("--out").arg(&out).assert().success();
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let files: Vec<PathBuf> = stdout.lines().map(PathBuf::from).collect();
    assert_every_chart(&out, &files);
    // The report reads back into the same data the library plotted.
    let data = PlotData::load(&report).unwrap();
    assert_eq!(data.name, "tiny sweep");
    assert_eq!(data.points.len(), 12);
}

#[test]
fn plot_refuses_bad_input_with_one_message() {
    let dir = scratch("bad");
    let not_json = dir.join("scenario.yaml");
    std::fs::write(&not_json, SWEEP).unwrap();
    bin()
        .arg("plot")
        .arg(&not_json)
        .arg("--out")
        .arg(dir.join("out"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not a JSON report").and(predicate::str::contains("panicked").not()));
    bin()
        .arg("plot")
        .arg(dir.join("missing.json"))
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with("error: cannot read").and(predicate::str::contains("missing.json")));
}

#[test]
fn gantt_draws_one_point_and_refuses_a_sweep() {
    let dir = scratch("gantt");
    let scenario = dir.join("tiny.yaml");
    std::fs::write(&scenario, SWEEP).unwrap();
    let (png, svg) = (dir.join("ring.png"), dir.join("ring.svg"));
    for out in [&png, &svg] {
        bin()
            .arg("run")
            .arg(&scenario)
            .args(["--algorithms", "ring", "--ranks", "4", "--sizes", "4KiB", "--gantt"])
            .arg(out)
            .assert()
            .success();
    }
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.len() > 1000 && bytes.starts_with(b"\x89PNG"), "{} bytes", bytes.len());

    // As SVG every interval is a rectangle at least 2 px wide, short reductions included.
    let text = std::fs::read_to_string(&svg).unwrap();
    let narrow =
        text.lines().filter(|l| l.starts_with("<rect") && (l.contains(" width=\"0\"") || l.contains(" width=\"1\"")));
    assert_eq!(narrow.count(), 0, "{svg:?}");
    assert!(text.contains("every interval at least 2 px wide"));

    let refused = dir.join("sweep.png");
    bin()
        .arg("run")
        .arg(&scenario)
        .arg("--gantt")
        .arg(&refused)
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("--gantt draws a single point").and(predicate::str::contains("12 points")));
    assert!(!refused.exists());

    bin()
        .arg("run")
        .arg(&scenario)
        .args(["--algorithms", "ring", "--ranks", "65", "--sizes", "4KiB", "--gantt"])
        .arg(&refused)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("at most 64 ranks"));
}

#[test]
fn run_plot_writes_into_the_given_directory() {
    let dir = scratch("run_plot");
    let scenario = dir.join("tiny.yaml");
    std::fs::write(&scenario, SWEEP).unwrap();
    let out = dir.join("figs");
    bin()
        .arg("run")
        .arg(&scenario)
        .arg(format!("--plot={}", out.display()))
        .assert()
        .success()
        .stderr(predicate::str::contains("wrote 22 plot file(s)"));
    assert!(out.join("tiny-sweep_time_vs_size_P8.png").exists());
}

#[test]
fn the_best_algorithm_map_shows_a_tie_as_a_tie() {
    // Under the ideal model on a torus, halving_doubling and torus_2d take the same time up
    // to the last bits (1e-16 apart): the map splits those cells and says "tie" in them.
    let dir = scratch("tie");
    let scenario = dir.join("torus.yaml");
    let text = "name: tie\nranks: [16, 64]\ntopology:\n  kind: torus2d\n  link: { alpha: 1us, bandwidth: 100Gbps }\n\
                algorithms: [torus_2d, halving_doubling]\nsizes: [64KiB, 1MiB]\ndata: { mode: off }\n";
    std::fs::write(&scenario, text).unwrap();
    bin().arg("run").arg(&scenario).arg(format!("--plot={}", dir.display())).assert().success();
    let svg = std::fs::read_to_string(dir.join("tie_best_algorithm.svg")).unwrap();
    let texts: Vec<&str> = svg.lines().map(str::trim).collect();
    let ties = texts.iter().filter(|l| **l == "tie").count();
    assert!(ties >= 2, "{ties} cells marked as a tie");
    assert!(!texts.contains(&"1.00x"), "a tie shown as a lead of 1.00x");
    // On the line charts halving_doubling lies on torus_2d: the legend says so.
    let lines = std::fs::read_to_string(dir.join("tie_time_vs_size_P64.svg")).unwrap();
    assert!(lines.contains("halving_doubling (= torus_2d)"), "no legend note for the hidden line");
}
