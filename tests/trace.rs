//! `run --trace FILE.json`: a valid Chrome trace with a process per rank, port and
//! compute tracks, slices for every rank, a flow arrow from every send to its receive;
//! a sweep is refused.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

const SCENARIO: &str = "\
name: trace test
ranks: [5, 8]
topology:
  link: { alpha: 1us, bandwidth: 100Gbps }
  nics: 2
compute: { cost_per_byte: 0.05ns }
algorithms: [ring, halving_doubling, star]
sizes: [4KiB, 64KiB]
";

fn dir(test: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace").join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("s.yaml"), SCENARIO).unwrap();
    d
}

fn cli() -> Command {
    let mut c = Command::cargo_bin("allreduce-sim").unwrap();
    c.env("RUST_BACKTRACE", "0");
    c
}

/// Run one point with `--trace` and return the parsed trace and the JSON report.
fn trace(test: &str, algorithm: &str, ranks: &str) -> (Value, Value) {
    let d = dir(test);
    traced(&d, &["--algorithms", algorithm, "--ranks", ranks, "--sizes", "4KiB"])
}

/// Run `d/s.yaml` with `args`, `--format json` and `--trace d/trace.json`; the parsed
/// trace and report.
fn traced(d: &Path, args: &[&str]) -> (Value, Value) {
    let file = d.join("trace.json");
    let out = cli()
        .arg("run")
        .arg(d.join("s.yaml"))
        .args(args)
        .args(["--format", "json", "--trace"])
        .arg(&file)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).expect("the trace is JSON");
    (trace, serde_json::from_slice(&out).unwrap())
}

fn check(trace: &Value, report: &Value, ranks: u64) {
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let r = &report["results"][0];

    // One named process per rank, with named tracks: 2 send ports, 2 recv ports, compute.
    let mut names: BTreeMap<u64, String> = BTreeMap::new();
    let mut threads: BTreeMap<(u64, u64), String> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M") {
        let pid = e["pid"].as_u64().unwrap();
        match e["name"].as_str().unwrap() {
            "process_name" => {
                names.insert(pid, e["args"]["name"].as_str().unwrap().to_string());
            }
            "thread_name" => {
                threads.insert((pid, e["tid"].as_u64().unwrap()), e["args"]["name"].as_str().unwrap().to_string());
            }
            _ => {}
        }
    }
    assert_eq!(names.len() as u64, ranks);
    for (pid, name) in &names {
        assert_eq!(name, &format!("rank {pid}"));
        let tracks: Vec<&str> = threads.range((*pid, 0)..(*pid + 1, 0)).map(|(_, n)| n.as_str()).collect();
        assert_eq!(tracks, ["send port 0", "send port 1", "recv port 0", "recv port 1", "compute"]);
    }

    // Complete events on every rank, each on a named track, with a peer and bytes for messages.
    let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let ranks_with_slices: BTreeSet<u64> = slices.iter().map(|e| e["pid"].as_u64().unwrap()).collect();
    assert_eq!(ranks_with_slices.len() as u64, ranks);
    let mut end = 0.0f64;
    for e in &slices {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        assert!(threads.contains_key(&key), "{e}");
        assert!(e["dur"].as_f64().unwrap() >= 0.0);
        end = end.max(e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap());
        if e["cat"] == "send" || e["cat"] == "recv" {
            assert!(e["args"]["peer"].is_u64() && e["args"]["bytes"].is_u64() && e["args"]["tag"].is_u64(), "{e}");
            let name = e["name"].as_str().unwrap();
            assert!(name.contains(&e["args"]["peer"].to_string()) && name.contains("tag"), "{name}");
        } else {
            assert_eq!(e["cat"], "compute");
        }
    }
    // The trace ends when the run does (microseconds).
    let time_us = r["time_s"].as_f64().unwrap() * 1e6;
    assert!((end - time_us).abs() <= 1e-9 * time_us, "{end} vs {time_us}");
    // A send and a receive slice per message.
    let messages = r["messages"].as_u64().unwrap();
    assert_eq!(slices.iter().filter(|e| e["cat"] == "send").count() as u64, messages);
    assert_eq!(slices.iter().filter(|e| e["cat"] == "recv").count() as u64, messages);

    // Flow arrows: one start and one finish per message, paired by id, from the sender's
    // send track to the receiver's recv track.
    let mut starts: BTreeMap<u64, &Value> = BTreeMap::new();
    let mut finishes: BTreeMap<u64, &Value> = BTreeMap::new();
    for e in events {
        let id = || e["id"].as_u64().unwrap();
        if e["ph"] == "s" {
            assert!(starts.insert(id(), e).is_none(), "duplicate flow start {e}");
        } else if e["ph"] == "f" {
            assert!(finishes.insert(id(), e).is_none(), "duplicate flow finish {e}");
        }
    }
    assert_eq!(starts.len() as u64, messages);
    assert_eq!(starts.keys().collect::<Vec<_>>(), finishes.keys().collect::<Vec<_>>());
    for (id, s) in &starts {
        let f = finishes[id];
        assert_eq!(f["bp"], "e");
        assert_eq!(threads[&(s["pid"].as_u64().unwrap(), s["tid"].as_u64().unwrap())].split(' ').next(), Some("send"));
        assert_eq!(threads[&(f["pid"].as_u64().unwrap(), f["tid"].as_u64().unwrap())].split(' ').next(), Some("recv"));
        assert_ne!(s["pid"], f["pid"]);
    }
}

#[test]
fn ring_trace_has_every_rank_and_paired_flows() {
    let (trace, report) = trace("ring", "ring", "5");
    check(&trace, &report, 5);
    assert_eq!(trace["otherData"]["algorithm"], "ring");
    // A single-point run also reports its critical path with its steps.
    let cp = &report["results"][0]["critical_path"];
    assert_eq!(cp["messages"], 8);
    assert_eq!(cp["reductions"], 4);
    assert_eq!(cp["steps"].as_array().unwrap().len(), 12);
}

#[test]
fn star_trace_uses_both_ports() {
    // The root of a star receives from two ranks at once on its two NICs.
    let (trace, report) = trace("star", "star", "8");
    check(&trace, &report, 8);
    let root_port_1 = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["ph"] == "X" && e["pid"] == 0 && e["tid"] == 4 && e["cat"] == "recv");
    assert!(root_port_1, "no message on rank 0's recv port 1");
}

#[test]
fn a_sweep_is_refused() {
    let d = dir("sweep");
    let file = d.join("trace.json");
    cli()
        .arg("run")
        .arg(d.join("s.yaml"))
        .arg("--trace")
        .arg(&file)
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("--trace records a single point, but this run is a sweep of 12 points"))
        .stderr(predicate::str::contains("--algorithms, --ranks and --sizes"));
    assert!(!file.exists());
}

#[test]
fn trace_and_shard_do_not_mix() {
    let d = dir("shard");
    cli()
        .arg("run")
        .arg(d.join("s.yaml"))
        .args(["--trace", "t.json", "--shard", "0/2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot be used with"));
}

#[test]
fn under_the_flow_model_busy_links_get_counter_tracks() {
    // Butterfly on a ring of 4: its second step's two messages each way share a link.
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace").join("flow");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let scenario = "ranks: 4\ntopology:\n  kind: ring\n  link: { alpha: 1us, bandwidth: 1GB/s }\n\
                    network: { model: flow }\nalgorithms: [butterfly]\nsizes: [1MB]\n";
    std::fs::write(d.join("s.yaml"), scenario).unwrap();
    let (trace, report) = traced(&d, &[]);
    let r = &report["results"][0];
    // 1 MB at 1 GB/s: step 1 alone (1 us + 1 ms), step 2 two flows per link (2 us + 2 ms).
    assert!((r["time_s"].as_f64().unwrap() - 3.003e-3).abs() < 1e-12, "{r}");
    assert_eq!(r["links_shared"], true);
    assert!(r["closed_form_s"].is_null());
    assert_eq!(r["network_links"]["busiest"][0]["name"], "r0->r1");
    let events = trace["traceEvents"].as_array().unwrap();
    let network = events.iter().any(|e| e["ph"] == "M" && e["pid"] == 4 && e["args"]["name"] == "network");
    assert!(network, "no network process");
    let counters: Vec<&Value> = events.iter().filter(|e| e["ph"] == "C").collect();
    assert!(counters.iter().all(|e| e["pid"] == 4 && e["name"].as_str().unwrap().starts_with("link r")));
    // r1->r2 carries only step 2's two messages (0 -> 2 and 1 -> 3): full from 2 us.
    let r12: Vec<(f64, f64)> = counters
        .iter()
        .filter(|e| e["name"] == "link r1->r2")
        .map(|e| (e["ts"].as_f64().unwrap(), e["args"]["utilisation"].as_f64().unwrap()))
        .collect();
    assert_eq!(r12.first().map(|x| x.1), Some(1.0), "{r12:?}");
    assert_eq!(r12.last().map(|x| x.1), Some(0.0), "{r12:?}");
}
