//! `calibrate` end to end: it finds a machine's values again from logs that machine
//! produced, says when the logs cannot tell two values apart, and its command writes a
//! fitted machine that runs.

use std::path::{Path, PathBuf};

use allreduce_sim::calibrate::{self, Machine, Options, nccl_tests};
use allreduce_sim::runner;
use allreduce_sim::scenario;
use assert_cmd::Command;

fn tmp(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("allreduce-sim-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/hardware/data").join(name)
}

/// The machine of these tests: GPUs of a node on one level, nodes on the next.
fn machine(intra: (&str, &str), inter: (&str, &str), gpus: usize, nodes: usize, c: &str) -> String {
    format!(
        "name: test machine\ntopology:\n  kind: hierarchical\n  levels:\n    - {{ name: node, size: {gpus}, alpha: {}, bandwidth: {} }}\n    - {{ name: net, size: {nodes}, alpha: {}, bandwidth: {} }}\ncompute: {{ cost_per_byte: {c} }}\nalgorithms: [ring]\nsizes: [1MiB]\n",
        intra.0, intra.1, inter.0, inter.1
    )
}

/// An nccl-tests log of `collective` (its `_perf` name) as `truth` simulates it with
/// the ring, NCCL_ALGO=Ring printed so that calibrate simulates the ring too.
fn log_from(truth: &str, test: &str, coll: &str, gpus: usize, nodes: usize, sizes: &[u64]) -> String {
    let text = truth.replace("algorithms: [ring]", &format!("collective: {coll}\nalgorithms: [ring]")).replace(
        "sizes: [1MiB]",
        &format!("sizes: [{}]", sizes.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    );
    let s = scenario::parse_str(&text, "truth.yaml").unwrap();
    let report = runner::run(&s);
    let mut out = format!("# Collective test starting: {test}\n# NCCL_ALGO=Ring\n# Using devices\n");
    for r in 0..gpus * nodes {
        out.push_str(&format!("#  Rank {r:2} Group  0 Pid 1 on host{} device {} [0x1] Test GPU\n", r / gpus, r % gpus));
    }
    out.push_str("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n");
    for p in &report.results {
        let t = format!("{:.6}", p.time_s * 1e6);
        out.push_str(&format!("{:>12} {:>12} float sum -1 {t} 0 0 0 {t} 0 0 0\n", p.bytes, p.bytes / 4));
    }
    out
}

const SIZES: [u64; 8] = [1 << 10, 1 << 13, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26];

/// Logs of one node and of two nodes, produced by a known machine: calibrate, started
/// off (the alphas 3 and 4.5 times short, the bandwidths within the factor of 2 above the
/// file's that a fit may go), finds its four values to 0.1% and predicts four nodes it
/// never saw.
#[test]
fn finds_the_machine_that_made_the_logs() {
    let truth = |g, n| machine(("3us", "40GB/s"), ("9us", "10GB/s"), g, n, "0");
    let runs: Vec<_> = [(4, 1), (4, 2)]
        .iter()
        .flat_map(|&(g, n)| {
            nccl_tests::parse(&log_from(&truth(g, n), "all_reduce_perf", "allreduce", g, n, &SIZES), "t.log").unwrap()
        })
        .collect();
    let held =
        nccl_tests::parse(&log_from(&truth(4, 4), "all_reduce_perf", "allreduce", 4, 4, &SIZES), "h.log").unwrap();
    let path = tmp("start.yaml");
    std::fs::write(&path, machine(("1us", "25GB/s"), ("2us", "100Gbps"), 4, 2, "0")).unwrap();
    let m = Machine::load(&path).unwrap();
    let c = calibrate::calibrate(&m, &runs, &held, &Options { patience: 100, ..Options::default() }).unwrap();
    let want = [3e-6, 40e9, 9e-6, 10e9];
    for (p, w) in c.parameters.iter().zip(want) {
        assert!((p.value / w - 1.0).abs() < 1e-3, "{} = {} (want {w})\n{}", p.path, p.value, calibrate::table(&c));
        assert!(p.rel_uncertainty.is_some_and(|u| u < 1e-3), "{}: {:?}", p.path, p.rel_uncertainty);
    }
    // C was not fitted (allreduce alone cannot tell it) and says so.
    assert_eq!(c.parameters.len(), 4);
    assert!(c.warnings.iter().any(|w| w.contains("B and C cannot be told apart")), "{:?}", c.warnings);
    for l in &c.logs {
        assert!(l.max_rel_err < 1e-3, "{}: {}", l.label, l.max_rel_err);
    }
    assert_eq!(c.logs.last().unwrap().set, "hold-out");
    // The inter-node bandwidth was written in the file's unit, bits.
    assert!(c.fitted_yaml.contains("80Gbps"), "{}", c.fitted_yaml);
}

/// The B-and-C case: a true machine of alpha 2 us, 20 GB/s and C 0.02 ns, a file (written
/// as `file`) of 1 us, 15 GB/s and 0.01 ns, the three to fit, and the true machine's
/// allreduce log on 8 ranks.
fn b_and_c_on_allreduce(file: &str) -> (String, Machine, Option<Vec<String>>, Vec<calibrate::Run>) {
    let truth = machine(("2us", "20GB/s"), ("5us", "10GB/s"), 8, 1, "0.02ns");
    let path = tmp(file);
    std::fs::write(&path, machine(("1us", "15GB/s"), ("5us", "10GB/s"), 8, 1, "0.01ns")).unwrap();
    let m = Machine::load(&path).unwrap();
    let fit = Some(vec![
        "topology.levels.0.alpha".into(),
        "topology.levels.0.bandwidth".into(),
        "compute.cost_per_byte".into(),
    ]);
    let ar = nccl_tests::parse(&log_from(&truth, "all_reduce_perf", "allreduce", 8, 1, &SIZES), "ar.log").unwrap();
    (truth, m, fit, ar)
}

/// Fitting B and C on allreduce alone: a ring sees only 1/B + C/2, and calibrate says
/// so in words, with the logs that would separate them. With allgather and
/// reduce-scatter of the same machine it finds both.
#[test]
fn b_and_c_from_allreduce_alone_are_flagged_and_rs_ag_separate_them() {
    let (truth, m, fit, ar) = b_and_c_on_allreduce("bc.yaml");
    let opts = Options { fit, patience: 60, ..Options::default() };
    let c = calibrate::calibrate(&m, &ar, &[], &opts).unwrap();
    let w = c.warnings.join("\n");
    assert!(w.contains("topology.levels.0.bandwidth and compute.cost_per_byte cannot be told apart"), "{w}");
    assert!(w.contains("all_gather_perf"), "{w}");
    assert_eq!(c.degenerate_pairs.len(), 1);

    let mut runs = ar;
    for (test, coll) in [("all_gather_perf", "allgather"), ("reduce_scatter_perf", "reduce_scatter")] {
        runs.extend(nccl_tests::parse(&log_from(&truth, test, coll, 8, 1, &SIZES), "x.log").unwrap());
    }
    let c = calibrate::calibrate(&m, &runs, &[], &opts).unwrap();
    assert!(c.degenerate_pairs.is_empty(), "{:?}", c.warnings);
    let want = [2e-6, 20e9, 0.02e-9];
    for (p, w) in c.parameters.iter().zip(want) {
        assert!((p.value / w - 1.0).abs() < 1e-3, "{} = {} (want {w})", p.path, p.value);
    }
}

#[test]
fn pair_warnings_say_what_measurement_separates_them() {
    let w = calibrate::pair_warning("topology.launch", "topology.inter.alpha", 0.99);
    assert!(w.contains("another rank count"), "{w}");
    let w = calibrate::pair_warning("topology.intra.alpha.ll", "topology.intra.alpha.simple", -0.98);
    assert!(w.contains("small sizes") && w.contains("NCCL_PROTO"), "{w}");
    let w = calibrate::pair_warning("topology.link.bandwidth", "compute.cost_per_byte", 1.0);
    assert!(w.contains("1/B + C/2"), "{w}");
}

fn bin() -> Command {
    let mut c = Command::cargo_bin("allreduce-sim").unwrap();
    c.env("RUST_BACKTRACE", "0");
    c
}

/// The command on real logs: the table, the JSON of every point, a fitted file that
/// `run` takes as it is (with another node count), and the plots.
#[test]
fn the_command_on_real_logs() {
    let m = tmp("abci.yaml");
    std::fs::write(&m, machine(("5us", "20GB/s"), ("10us", "100Gbps"), 4, 2, "0")).unwrap();
    let out = tmp("fitted.yaml");
    let plots = tmp("plots");
    let a = bin()
        .arg("calibrate")
        .arg(&m)
        .arg(data("abci_v100_p4.txt"))
        .arg(data("abci_v100_p8.txt"))
        .arg("--hold-out")
        .arg(data("abci_v100_p16.txt"))
        .arg("--output")
        .arg(&out)
        .arg(format!("--plot={}", plots.display()))
        .assert()
        .success();
    let text = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    assert!(text.contains("topology.levels.1.bandwidth"), "{text}");
    assert!(text.contains("abci_v100_p16  hold-out"), "{text}");
    assert!(text.contains("hold-out: mean error"), "{text}");
    for f in ["abci-v100-p4_time.svg", "abci-v100-p8_busbw.png", "abci-v100-p16_residuals.svg"] {
        assert!(plots.join(f).exists(), "{f}");
    }
    // The fitted file runs as it is, and at twice the nodes.
    let fitted = std::fs::read_to_string(&out).unwrap();
    assert!(fitted.contains("# Fitted by allreduce-sim calibrate"), "{fitted}");
    bin().arg("run").arg(&out).assert().success();
    let four = tmp("fitted4.yaml");
    std::fs::write(&four, fitted.replace("size: 2,", "size: 4,")).unwrap();
    let r = bin().arg("run").arg(&four).arg("--format").arg("json").assert().success();
    let j: serde_json::Value = serde_json::from_slice(&r.get_output().stdout).unwrap();
    assert_eq!(j["results"][0]["ranks"], 16);

    let r = bin().arg("calibrate").arg(&m).arg(data("abci_v100_p8.txt")).args(["--format", "json"]).assert().success();
    let j: serde_json::Value = serde_json::from_slice(&r.get_output().stdout).unwrap();
    let pts = j["logs"][0]["points"].as_array().unwrap();
    assert_eq!(pts.len(), 24);
    for p in pts {
        let (m, s, e) =
            (p["measured_s"].as_f64().unwrap(), p["simulated_s"].as_f64().unwrap(), p["rel_err"].as_f64().unwrap());
        assert!((s / m - 1.0 - e).abs() < 1e-12);
    }
    // Every fitted value has an uncertainty, or a warning says the logs do not determine it.
    let warnings = j["warnings"].to_string();
    for p in j["parameters"].as_array().unwrap() {
        let named = warnings.contains(&format!("{} is not determined", p["path"].as_str().unwrap()));
        assert!(p["rel_uncertainty"].is_number() || p["fitted"] == false || named, "{p} {warnings}");
    }
}

/// A GPU cluster machine on a real two-node H100 log (its rows up to 16 MiB, to keep the
/// test short): the per-protocol times, bandwidths and launch are fitted, what ran is
/// NCCL's own ring, tree or NVLS Tree with the protocol NCCL's model picks, and the fitted file
/// runs at another node count.
#[test]
fn a_cluster_machine_fits_a_real_log() {
    let text = std::fs::read_to_string(data("gcp_a3mega_2n_p16.txt")).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| l.split_whitespace().next().and_then(|w| w.parse::<u64>().ok()).is_none_or(|b| b <= 1 << 24))
        .map(|l| format!("{l}\n"))
        .collect();
    let log = tmp("gcp_a3mega_small.txt");
    std::fs::write(&log, kept).unwrap();
    let m = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/hardware/machines/h100_node.yaml");
    let out = tmp("fitted_cluster.yaml");
    let r = bin()
        .arg("calibrate")
        .arg(&m)
        .arg(&log)
        .args(["--patience", "3", "--format", "json", "--output"])
        .arg(&out)
        .assert()
        .success();
    let j: serde_json::Value = serde_json::from_slice(&r.get_output().stdout).unwrap();
    let fitted: Vec<&str> = j["parameters"].as_array().unwrap().iter().map(|p| p["path"].as_str().unwrap()).collect();
    for p in [
        "topology.intra.alpha.simple",
        "topology.intra.alpha.ll",
        "topology.intra.alpha.ll128",
        "topology.intra.bandwidth",
        "topology.inter.alpha.simple",
        "topology.inter.alpha.ll",
        "topology.inter.alpha.ll128",
        "topology.inter.bandwidth",
        "topology.launch.simple",
        "topology.launch.ll",
    ] {
        assert!(fitted.contains(&p), "{p} not in {fitted:?}");
    }
    let pts = j["logs"][0]["points"].as_array().unwrap();
    assert!(pts.len() > 10);
    let algos: Vec<&str> = pts.iter().map(|p| p["algorithm"].as_str().unwrap()).collect();
    // Two Hopper nodes: NCCL's model runs NVLS Tree where it beats the ring and the tree.
    assert!(
        algos.iter().all(|a| a.starts_with("nccl_ring") || a.starts_with("nccl_tree") || a.starts_with("nvls_tree")),
        "{algos:?}"
    );
    assert!(algos.iter().any(|a| a.contains("protocol=ll")), "{algos:?}");
    for p in pts {
        assert!(p["simulated_s"].as_f64().unwrap() > 0.0);
        assert!(p["ran"].as_str().unwrap().starts_with("nccl_model: "), "{p}");
    }
    let fitted = std::fs::read_to_string(&out).unwrap();
    assert!(fitted.contains("kind: cluster"), "{fitted}");
    let four = tmp("fitted_cluster4.yaml");
    // The closed forms of the textbook algorithms `nccl_model` also simulates do not
    // follow this cluster's costs exactly (a check of the machine, not of calibrate).
    std::fs::write(&four, fitted.replace("nodes: 2", "nodes: 4") + "check: { closed_form: false }\n").unwrap();
    let r = bin().arg("run").arg(&four).args(["--format", "json"]).assert().success();
    let j: serde_json::Value = serde_json::from_slice(&r.get_output().stdout).unwrap();
    assert_eq!(j["results"][0]["ranks"], 32);
}

/// A log of 2 GPUs on the DGX-1's 8-GPU cube-mesh runs on part of the node instead of
/// being refused, and the held-out 4- and 8-GPU runs use a channel per ring over
/// distinct NVLinks (4 and 6), which makes them faster per byte than 2 GPUs' one link.
/// As in `validation/hardware/run.sh`, alpha is held: the logs start at 32 MiB and cannot
/// tell it from the bandwidth.
#[test]
fn a_log_of_part_of_an_nvlink_node_runs_on_that_node() {
    let m = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/hardware/machines/dgx1_v100.yaml");
    let r = bin()
        .arg("calibrate")
        .arg(&m)
        .arg(data("astrasim_hpe_v100_p2.txt"))
        .arg("--hold-out")
        .args([data("astrasim_hpe_v100_p4.txt"), data("astrasim_hpe_v100_p8.txt")])
        .args(["--fit", "topology.intra.bandwidth,topology.launch"])
        .args(["--patience", "3", "--format", "json"])
        .assert()
        .success();
    let j: serde_json::Value = serde_json::from_slice(&r.get_output().stdout).unwrap();
    let logs = j["logs"].as_array().unwrap();
    let busbw = |l: &serde_json::Value| {
        let pts = l["points"].as_array().unwrap();
        pts.last().unwrap()["simulated_busbw_Bps"].as_f64().unwrap()
    };
    for (l, channels) in logs.iter().zip(["channels=2", "channels=4", "channels=6"]) {
        let a = l["points"][0]["algorithm"].as_str().unwrap();
        assert!(a.starts_with("nccl_ring") && a.contains(channels), "{a}");
    }
    assert!(busbw(&logs[1]) > 3.0 * busbw(&logs[0]), "{} vs {}", busbw(&logs[1]), busbw(&logs[0]));
    assert!(busbw(&logs[2]) > 5.0 * busbw(&logs[0]), "{} vs {}", busbw(&logs[2]), busbw(&logs[0]));
}

/// The L40S machine names its GPUs by PCI bus: the P = 2 log's ranks (buses 4a and ca)
/// run on GPUs under different CPU sockets, so the log's large sizes fit the link between
/// the sockets. Without the buses the two ranks take GPUs 0 and 1, under one CPU, and no
/// point depends on that link.
#[test]
fn a_pcie_log_runs_on_the_gpus_its_buses_name() {
    let m = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/hardware/machines/l40s_pcie.yaml");
    let fit = |machine: &Path| {
        let r = bin()
            .arg("calibrate")
            .arg(machine)
            .arg(data("l40s_p2_ring.txt"))
            .args(["--fit", "topology.intra.socket_link.bandwidth,topology.launch.ll,topology.launch.simple"])
            .args(["--patience", "3", "--format", "json"])
            .assert()
            .success();
        let j: serde_json::Value = serde_json::from_slice(&r.get_output().stdout).unwrap();
        j["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"] == "topology.intra.socket_link.bandwidth")
            .cloned()
            .unwrap()
    };
    let across = fit(&m);
    let bw = across["value"].as_f64().unwrap();
    assert!(across["fitted"] == true && (14e9..17e9).contains(&bw), "{across}");
    let text = std::fs::read_to_string(&m).unwrap();
    let bus_line = text.lines().find(|l| l.trim_start().starts_with("pci_bus:")).unwrap();
    let unnamed = tmp("l40s_no_buses.yaml");
    std::fs::write(&unnamed, text.replace(bus_line, "")).unwrap();
    let under_one = fit(&unnamed);
    assert!(under_one["fitted"] == false, "{under_one}");
}

#[test]
fn bad_input_is_one_message_and_status_2() {
    let m = tmp("m.yaml");
    std::fs::write(&m, machine(("5us", "20GB/s"), ("10us", "100Gbps"), 4, 2, "0")).unwrap();
    let bad = tmp("bad.log");
    std::fs::write(
        &bad,
        "#  size count type redop time algbw busbw error time algbw busbw error\n  64 16 float sum 1.0 0 0\n",
    )
    .unwrap();
    let a = bin().arg("calibrate").arg(&m).arg(&bad).assert().code(2);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(err.starts_with(&format!("error: {}:2: a data row of 7 fields", bad.display())), "{err}");
    assert!(!err.contains("panicked"));
    let a = bin()
        .arg("calibrate")
        .arg(&m)
        .arg(data("abci_v100_p8.txt"))
        .args(["--fit", "topology.levels.7.alpha"])
        .assert()
        .code(2);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(err.contains("topology.levels.7.alpha"), "{err}");
    let a = bin().arg("calibrate").arg(&m).arg(data("aws_p5_2n_p16.txt")).assert().code(2);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(err.contains("--ranks"), "{err}");
    bin().arg("calibrate").arg(&m).arg(tmp("missing.log")).assert().code(2);
}

/// ABCI's 2-node log, picked by NCCL 2.8.4's model (the machine file names the release):
/// each allreduce runs on the channels 2.8.4 opens for the call, twice the 2 its search
/// finds (one per EDR NIC) at large sizes and fewer for a small call (the ring's LL keeps
/// one below 2 x 32 KiB, 512 threads x 8 bytes x 8 ranks a channel; LL128 adds one per
/// 640 x 8 bytes). With the NICs under the GPUs' PCIe switches (`nic_path: pxb`) the ring
/// takes LL to 32 KiB, the tree LL128 at 64 KiB (its bus, 2 x 24 GB/s inside the node, is
/// capped at 2 x 18.5), the ring LL128 at 8 MiB. ABCI's own file (`nic_path: phb`, its
/// NICs on the CPUs) has no LL128 across nodes: the ring with LL at 64 KiB (2 channels),
/// Simple at 8 MiB (docs/nccl.md, "ABCI's NICs behind the CPUs").
#[test]
fn nccl_2_8_runs_its_channels_per_call() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/hardware/machines/abci_v100.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("nic_path: phb"));
    let pxb = tmp("abci_pxb.yaml");
    std::fs::write(&pxb, text.replace("nic_path: phb", "nic_path: pxb")).unwrap();
    let picks = |m: &Path| {
        let r = bin()
            .arg("calibrate")
            .arg(m)
            .arg(data("abci_v100_p8.txt"))
            .args(["--fit", "topology.launch.ll", "--format", "json"])
            .assert()
            .success();
        let j: serde_json::Value = serde_json::from_slice(&r.get_output().stdout).unwrap();
        j["logs"][0]["points"].as_array().unwrap().clone()
    };
    let pts = picks(&pxb);
    let ran = |pts: &[serde_json::Value], bytes: u64| {
        let p = pts.iter().find(|p| p["bytes"] == bytes).unwrap();
        (p["algorithm"].as_str().unwrap().to_string(), p["ran"].as_str().unwrap().to_string())
    };
    let (a, how) = ran(&pts, 4);
    assert!(how.ends_with("ring/ll") && a.contains("channels=1"), "{a} {how}");
    let (a, how) = ran(&pts, 32_768);
    assert!(how.ends_with("ring/ll") && a.contains("channels=1"), "{a} {how}");
    let (a, how) = ran(&pts, 65_536);
    assert!(how.ends_with("tree/ll128") && a.starts_with("nccl_tree") && a.contains("channels=4"), "{a} {how}");
    let (a, how) = ran(&pts, 8 << 20);
    assert!(how.ends_with("ring/ll128") && a.starts_with("nccl_ring") && a.contains("channels=4"), "{a} {how}");
    let pts = picks(&file);
    let (a, how) = ran(&pts, 65_536);
    assert!(how.ends_with("ring/ll") && a.contains("channels=2"), "{a} {how}");
    let (a, how) = ran(&pts, 8 << 20);
    assert!(how.ends_with("ring/simple") && a.contains("channels=4"), "{a} {how}");
    assert!(pts.iter().all(|p| !p["ran"].as_str().unwrap().ends_with("ll128")));
}

/// The limits of each kind of value: an efficiency at most its protocol's data share of
/// a line (LL 8 bytes of 16, LL128 120 of 128); bandwidths and latencies, like a value the
/// file does not give, move up to a million-fold either way (docs/calibrate.md, "Bounds
/// and the prior": tighter bounds stalled the optimiser).
#[test]
fn each_kind_of_value_has_its_bounds() {
    let tree = calibrate::yaml::Yaml::parse(
        "topology:\n  inter: { bandwidth: 100Gbps, alpha: { ll: 2us } }\n  efficiency: { ll: 0.4, ll128: 0.9 }\n  launch: 5us\nhost: { issue: 1us }\n",
    )
    .unwrap();
    let b = |path: &str| calibrate::bounds(&calibrate::Param::of(&tree, path).unwrap());
    assert_eq!(b("topology.efficiency.ll").hi, 0.5);
    assert_eq!(b("topology.efficiency.ll128").hi, 120.0 / 128.0);
    assert!(b("topology.efficiency.ll").lo > 0.0);
    let bw = b("topology.inter.bandwidth");
    assert!((bw.hi / 12.5e15 - 1.0).abs() < 1e-12 && bw.lo < 1e5, "{bw:?}");
    assert!((b("topology.inter.alpha.ll").hi / 2.0 - 1.0).abs() < 1e-12);
    assert!((b("topology.launch").hi / 5.0 - 1.0).abs() < 1e-12);
    // Not a latency: only the wide limits.
    assert!((b("host.issue").hi / 1.0 - 1.0).abs() < 1e-12);
    // Not in the file: the fit guesses a start, and nothing is nominal about it.
    let guess = b("topology.intra.bandwidth");
    assert!(guess.hi > 1e15, "{guess:?}");
}

/// The logs of a machine whose NVLink is four times the file's: the fit reaches it (a
/// bandwidth bound at twice the file's value stopped it there, and the optimiser, which
/// clamps, stalled the values beside it), and nothing is marked at a bound.
#[test]
fn a_file_four_times_off_is_fitted_through() {
    let truth = |g, n| machine(("3us", "40GB/s"), ("9us", "10GB/s"), g, n, "0");
    let runs: Vec<_> = [(4, 1), (4, 2)]
        .iter()
        .flat_map(|&(g, n)| {
            nccl_tests::parse(&log_from(&truth(g, n), "all_reduce_perf", "allreduce", g, n, &SIZES), "t.log").unwrap()
        })
        .collect();
    let path = tmp("bound.yaml");
    std::fs::write(&path, machine(("3us", "10GB/s"), ("9us", "80Gbps"), 4, 2, "0")).unwrap();
    let m = Machine::load(&path).unwrap();
    let c = calibrate::calibrate(&m, &runs, &[], &Options { patience: 60, ..Options::default() }).unwrap();
    let bw = c.parameters.iter().find(|p| p.path == "topology.levels.0.bandwidth").unwrap();
    assert!((bw.value / 40e9 - 1.0).abs() < 1e-3, "{}", calibrate::table(&c));
    assert!(c.parameters.iter().all(|p| p.at_bound.is_none()), "{}", calibrate::table(&c));
    assert!(!calibrate::table(&c).contains("at upper bound"));
}

/// B and C on allreduce alone: the logs see only 1/B + C/2. With the prior the fit still
/// reproduces the logs, the pair is still reported (the logs alone cannot tell them),
/// and each value comes out near the file's with a finite uncertainty, marked as the
/// prior's; without it the fit's values along the line are wherever the optimiser stopped.
#[test]
fn the_prior_settles_what_the_logs_cannot_tell() {
    let (_, m, fit, ar) = b_and_c_on_allreduce("prior.yaml");
    let with = Options { fit: fit.clone(), patience: 60, prior_width: Some(10.0), ..Options::default() };
    let c = calibrate::calibrate(&m, &ar, &[], &with).unwrap();
    assert_eq!(c.degenerate_pairs.len(), 1, "{:?}", c.warnings);
    assert!(c.logs[0].max_rel_err < 1e-3, "{}", calibrate::table(&c));
    for p in &c.parameters {
        assert!(p.rel_uncertainty.is_some_and(f64::is_finite), "{}: {:?}", p.path, p.rel_uncertainty);
        assert!(p.prior_share.is_some(), "{}", p.path);
    }
    let share = |c: &calibrate::Calibration, k: &str| c.parameters.iter().find(|p| p.path == k).unwrap().prior_share;
    // Alpha shows at small sizes: the logs decide it.
    assert!(share(&c, "topology.levels.0.alpha").unwrap() < 0.01, "{}", calibrate::table(&c));
    assert!(share(&c, "compute.cost_per_byte").unwrap() > 0.3, "{}", calibrate::table(&c));
    assert!(c.warnings.iter().any(|w| w.contains("--prior-width 10")), "{:?}", c.warnings);
    // The fit is between the file's B and C: on the line, and by the prior near both.
    let b = c.parameters.iter().find(|p| p.path == "topology.levels.0.bandwidth").unwrap().value;
    assert!(b > 15e9 && b < 20e9, "{b}");
    // Without it, no value is the prior's.
    let without = Options { fit, patience: 60, prior_width: None, ..Options::default() };
    let c = calibrate::calibrate(&m, &ar, &[], &without).unwrap();
    assert!(c.parameters.iter().all(|p| p.prior_share.is_none()));
}

/// A setting given with --env is shown as such in what ran, one the log printed as the log's.
#[test]
fn the_ran_column_says_where_a_setting_came_from() {
    let truth = machine(("2us", "20GB/s"), ("5us", "10GB/s"), 4, 1, "0");
    let printed = log_from(&truth, "all_reduce_perf", "allreduce", 4, 1, &SIZES[..3]);
    let bare = printed.replace("# NCCL_ALGO=Ring\n", "");
    let opts = Options { env: vec![("NCCL_ALGO".into(), "Ring".into())], patience: 5, ..Options::default() };
    let m = tmp("env.yaml");
    std::fs::write(&m, &truth).unwrap();
    let m = Machine::load(&m).unwrap();
    for (name, text, want) in
        [("printed.log", &printed, "NCCL_ALGO=Ring (log)"), ("bare.log", &bare, "NCCL_ALGO=Ring (--env)")]
    {
        let path = tmp(name);
        std::fs::write(&path, text).unwrap();
        let runs = calibrate::read_log(&path, &opts).unwrap();
        let c = calibrate::calibrate(&m, &runs, &[], &opts).unwrap();
        assert!(c.logs[0].points.iter().all(|p| p.ran.starts_with(want)), "{name}: {}", c.logs[0].points[0].ran);
    }
}

/// --prior-width takes a factor above 1, or off.
#[test]
fn prior_width_is_a_factor_or_off() {
    let m = tmp("pw.yaml");
    std::fs::write(&m, machine(("5us", "20GB/s"), ("10us", "100Gbps"), 4, 1, "0")).unwrap();
    for bad in ["1", "0.5", "wide", "inf"] {
        let a =
            bin().arg("calibrate").arg(&m).arg(data("abci_v100_p4.txt")).args(["--prior-width", bad]).assert().code(2);
        let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
        assert!(err.contains("--prior-width must be a factor above 1"), "{err}");
    }
}

/// `--output` is the machine file as the user wrote it, with the fitted values put in:
/// its own comments, layout and quoting stay, and a calibrated file calibrated again
/// carries one head and the user's comments once.
#[test]
fn the_fitted_file_keeps_the_machine_files_comments() {
    let truth = machine(("3us", "40GB/s"), ("9us", "10GB/s"), 4, 2, "0");
    let log = tmp("comments.log");
    std::fs::write(&log, log_from(&truth, "all_reduce_perf", "allreduce", 4, 2, &SIZES)).unwrap();
    let start = "# Our two test nodes (measured by hand, March)\nname: 'test machine'\ntopology:\n  kind: hierarchical\n  levels:\n    # NVLink inside a node\n    - { name: node, size: 4, alpha: 1us, bandwidth: 25GB/s }  # vendor's figures\n    - name: net\n      size: 2\n      alpha: 2us   # one switch hop\n      bandwidth: 100Gbps\ncompute: { cost_per_byte: 0 }\nalgorithms: [ring]\nsizes: [1MiB]\n";
    let m = tmp("commented.yaml");
    std::fs::write(&m, start).unwrap();
    let once = tmp("commented-fitted.yaml");
    let twice = tmp("commented-fitted-again.yaml");
    for (from, to) in [(&m, &once), (&once, &twice)] {
        bin().arg("calibrate").arg(from).arg(&log).args(["--patience", "20", "--output"]).arg(to).assert().success();
    }
    let once = std::fs::read_to_string(&once).unwrap();
    for kept in
        ["# Our two test nodes (measured by hand, March)\n", "name: 'test machine'\n", "    # NVLink inside a node\n"]
    {
        assert!(once.contains(kept), "{kept:?} lost:\n{once}");
    }
    assert!(once.contains("  # vendor's figures\n") && once.contains("  # one switch hop\n"), "{once}");
    assert!(once.contains("alpha: 2us") || once.contains("      alpha: "), "{once}");
    assert!(!once.contains("alpha: 2us   # one switch hop"), "the fitted value was not written in:\n{once}");
    assert!(once.lines().any(|l| l.starts_with("      alpha: ") && l.contains("# fitted")), "{once}");
    let twice = std::fs::read_to_string(&twice).unwrap();
    assert_eq!(twice.matches("# Fitted by allreduce-sim calibrate").count(), 1, "{twice}");
    assert_eq!(twice.matches("one switch hop").count(), 1, "{twice}");
    assert_eq!(twice.matches("vendor's figures").count(), 1, "{twice}");
    assert_eq!(twice.matches("# Our two test nodes").count(), 1, "{twice}");
    bin().arg("run").arg(tmp("commented-fitted-again.yaml")).assert().success();
}

/// An OSU file of one run per data type (float, double, then float again) gives three
/// logs with three names, so the table tells them apart and `--plot` writes three sets of
/// charts: all three were `o:allreduce`, and each run's charts overwrote the last one's.
#[test]
fn runs_of_one_file_have_names_of_their_own() {
    let float = "# OSU MPI Allreduce Latency Test v7.3\n# Datatype: MPI_FLOAT.\n# Size       Avg Latency(us)\n4   10.0\n8   10.5\n";
    let double = "# OSU MPI Allreduce Latency Test v7.3\n# Datatype: MPI_DOUBLE.\n# Size       Avg Latency(us)\n8   10.6\n16  11.0\n";
    let text = format!("{float}{double}{float}");
    let runs = calibrate::osu::parse(&text, "dir/o.txt", Some(4)).unwrap();
    let labels: Vec<String> = runs.iter().map(|r| r.label(&runs)).collect();
    assert_eq!(labels, ["o:allreduce:float:1", "o:allreduce:double", "o:allreduce:float:2"]);
    assert_eq!(runs[1].label(&runs[1..2]), "o", "a run alone in its set is its file's stem");
    let log = tmp("o.txt");
    std::fs::write(&log, &text).unwrap();
    let m = tmp("osu-machine.yaml");
    std::fs::write(&m, machine(("1us", "10GB/s"), ("5us", "10GB/s"), 2, 2, "0")).unwrap();
    let plots = tmp("osu-plots");
    let r = bin()
        .arg("calibrate")
        .arg(&m)
        .arg(&log)
        .args(["--ranks", "4", "--gpus-per-node", "2", "--patience", "2", "--quiet", "--format", "json"])
        .arg(format!("--plot={}", plots.display()))
        .assert()
        .success();
    let j: serde_json::Value = serde_json::from_slice(&r.get_output().stdout).unwrap();
    let got: Vec<&str> = j["logs"].as_array().unwrap().iter().map(|l| l["label"].as_str().unwrap()).collect();
    assert_eq!(got, labels);
    for l in ["o-allreduce-float-1", "o-allreduce-double", "o-allreduce-float-2"] {
        assert!(plots.join(format!("{l}_time.svg")).exists(), "{l}_time.svg not written");
    }
}
