//! The files a command reads and writes (src/files.rs): every output is checked before
//! anything runs, none may overwrite an input or another output whatever path names it,
//! a report that cannot be written is printed instead of lost, and an input that is not
//! a regular file (a FIFO) is refused rather than waited on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use predicates::prelude::*;

fn cmd() -> Command {
    let mut c = Command::cargo_bin("allreduce-sim").unwrap();
    c.env("RUST_BACKTRACE", "0").timeout(Duration::from_secs(30));
    c
}

/// A fresh directory for one test, holding `q.yaml`, a one-point scenario.
fn dir(test: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("files").join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("q.yaml"), Q).unwrap();
    d
}

const Q: &str = "name: q\nranks: 4\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps } }\nalgorithms: [ring]\n\
sizes: [4KiB]\n";

/// Exit 2, nothing on standard output, one message that says `says`.
fn refused(c: &mut Command, says: &str) {
    c.assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(says))
        .stderr(predicate::str::contains("panicked").not());
}

#[test]
fn no_output_may_overwrite_the_scenario_by_any_name() {
    let d = dir("scenario");
    std::os::unix::fs::symlink("q.yaml", d.join("link.yaml")).unwrap();
    std::fs::hard_link(d.join("q.yaml"), d.join("hard.yaml")).unwrap();
    for (flag, name) in [
        ("--output", "q.yaml"),
        ("--output", "./q.yaml"),
        ("--output", "sub/../q.yaml"),
        ("--output", "link.yaml"),
        ("--output", "hard.yaml"),
        ("--trace", "q.yaml"),
    ] {
        std::fs::create_dir_all(d.join("sub")).unwrap();
        refused(
            cmd().current_dir(&d).args(["run", "q.yaml", flag, name]),
            &format!("{flag} {name} is the input q.yaml: writing it would destroy the input"),
        );
        assert_eq!(std::fs::read_to_string(d.join("q.yaml")).unwrap(), Q, "{flag} {name}");
    }
    refused(
        cmd().current_dir(&d).args(["tune", "q.yaml", "--emit", "table", "--output", "./link.yaml"]),
        "--output ./link.yaml is the input q.yaml",
    );
    assert_eq!(std::fs::read_to_string(d.join("q.yaml")).unwrap(), Q);
}

#[test]
fn two_outputs_may_not_name_one_file() {
    let d = dir("collide");
    for args in [
        &["--output", "a.svg", "--trace", "a.svg"][..],
        &["--output", "a.svg", "--gantt", "./a.svg"],
        &["--trace", "a.svg", "--gantt", "a.svg"],
        &["--output", "plots", "--plot"],
    ] {
        let c = cmd().current_dir(&d).args(["run", "q.yaml"]).args(args).assert().code(2);
        let err = String::from_utf8_lossy(&c.get_output().stderr).into_owned();
        assert!(err.contains("name the same file"), "{args:?}: {err}");
        assert!(!d.join("a.svg").exists() && !d.join("plots").exists(), "{args:?} wrote");
    }
    // Plots would be drawn over a file named like one of them.
    std::fs::write(d.join("q_time_vs_size.svg"), "mine").unwrap();
    refused(
        cmd().current_dir(&d).args(["run", "q.yaml", "--output", "q_time_vs_size.svg", "--plot=."]),
        "--plot . may draw over q_time_vs_size.svg",
    );
    refused(
        cmd().current_dir(&d).args(["run", "q.yaml", "--plot=q.yaml"]),
        "--plot q.yaml: it exists and is not a directory",
    );
    assert_eq!(std::fs::read_to_string(d.join("q_time_vs_size.svg")).unwrap(), "mine");
}

#[test]
fn outputs_are_checked_before_the_run() {
    let d = dir("before");
    // Without the check this sweep would run first and the report be lost at the end.
    for (args, says) in [
        (&["--output", "nodir/r.json"][..], "--output nodir/r.json: the directory nodir does not exist"),
        (&["--output", "."], "--output .: it is a directory"),
        (&["--output", "new/"], "--output new/: it names a directory"),
        (&["--trace", "nodir/t.json"], "--trace nodir/t.json: the directory nodir does not exist"),
        (&["--gantt", "q.yaml/g.svg"], "q.yaml is not a directory"),
        (&["--output", ""], "a value is required for '--output <FILE>'"),
    ] {
        refused(cmd().current_dir(&d).args(["run", "q.yaml"]).args(args), says);
    }
    std::os::unix::fs::symlink("nowhere/x.json", d.join("dangling.json")).unwrap();
    refused(
        cmd().current_dir(&d).args(["run", "q.yaml", "--output", "dangling.json"]),
        "a symbolic link to a file that does not exist",
    );
    refused(
        cmd().current_dir(&d).args(["tune", "q.yaml", "--emit", "json", "--output", "nodir/t.json"]),
        "the directory nodir does not exist",
    );
}

#[test]
fn outputs_replace_the_file_a_link_points_to_and_leave_no_temporary_file() {
    let d = dir("replace");
    std::fs::write(d.join("r.json"), "old").unwrap();
    std::os::unix::fs::symlink("r.json", d.join("link.json")).unwrap();
    cmd().current_dir(&d).args(["run", "q.yaml", "--format", "json", "--output", "link.json"]).assert().success();
    assert!(std::fs::symlink_metadata(d.join("link.json")).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(d.join("r.json")).unwrap().contains("\"results\""));
    let mut names: Vec<String> =
        std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["link.json", "q.yaml", "r.json"]);
}

#[test]
fn a_report_that_cannot_be_written_is_printed_instead() {
    let d = dir("full");
    cmd()
        .current_dir(&d)
        .args(["run", "q.yaml", "--output", "/dev/full"])
        .assert()
        .code(2)
        .stdout(predicate::str::contains("1 point, all checks held"))
        .stderr(predicate::str::contains("cannot write /dev/full"))
        .stderr(predicate::str::contains("the report was printed on standard output instead"));
    // A device is written to, not replaced.
    cmd().current_dir(&d).args(["run", "q.yaml", "--output", "/dev/null"]).assert().success().stdout("");
}

#[test]
fn a_fifo_is_refused_without_opening_it() {
    let d = dir("fifo");
    let fifo = d.join("f.yaml");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // Opening it would block until a writer came: these would time out.
    refused(cmd().arg("run").arg(&fifo), "it is a FIFO, not a regular file");
    refused(cmd().arg("validate").arg(&fifo), "it is a FIFO, not a regular file");
    refused(cmd().arg("merge").arg(&fifo), "it is not a regular file (a FIFO)");
    refused(cmd().arg("plot").arg(&fifo), "it is not a regular file (a FIFO)");
    refused(cmd().arg("merge").arg("/dev/zero"), "it is not a regular file (a character device)");
}

#[test]
fn merge_and_plot_may_not_overwrite_their_inputs() {
    let d = dir("merge");
    cmd()
        .current_dir(&d)
        .args(["run", "q.yaml", "--shard", "0/1", "--format", "json", "--output", "s0.json"])
        .assert()
        .success();
    refused(
        cmd().current_dir(&d).args(["merge", "s0.json", "--output", "./s0.json"]),
        "--output ./s0.json is the input s0.json",
    );
    refused(cmd().current_dir(&d).args(["plot", "s0.json", "--out", "s0.json"]), "it exists and is not a directory");
}

#[test]
fn a_trace_too_large_to_record_is_refused_before_it_runs() {
    let d = dir("trace");
    // 2 P (P - 1) = 1,998,000 messages: refused from the estimate, so nothing is simulated.
    refused(
        cmd().current_dir(&d).args(["run", "q.yaml", "--ranks", "1000", "--trace", "t.json"]),
        "--trace: ring at P = 1000, S = 4 KiB sends 1998000 messages, more than the 1000000 intervals",
    );
    refused(
        cmd().current_dir(&d).args(["run", "q.yaml", "--ranks", "100000", "--trace", "t.json", "--max-memory", "1TiB"]),
        "sends 19999800000 messages",
    );
    assert!(!d.join("t.json").exists());
}
