//! Selectors (`auto`, `ompi_fixed`, `nccl_model`) and `tune`: the rows they add, the
//! fields every row gets, and the files `tune` writes read back against the sweep; a
//! real Open MPI loads the rules file where `mpirun` and `mpicc` are installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use allreduce_sim::collective::Collective;
use allreduce_sim::report::{Csv, Exporter, PointResult};
use allreduce_sim::runner;
use allreduce_sim::scenario::parse_str;
use allreduce_sim::select::tune::{self, Tuned};
use allreduce_sim::select::{SELECTORS, is_selector, nccl, ompi};

const SCENARIO: &str = "name: selectors
ranks: [4, 6, 16]
topology: { kind: fully_connected, link: { alpha: 2us, bandwidth: 100Gbps } }
compute: { cost_per_byte: 0.05ns }
data: { mode: off }
algorithms: [ring, auto, ompi_fixed, nccl_model]
sizes: [16B, 4KiB, 256KiB, 4MiB]
";

fn rows_at(results: &[PointResult], ranks: usize, bytes: u64) -> Vec<&PointResult> {
    results.iter().filter(|r| r.ranks == ranks && r.bytes == bytes).collect()
}

#[test]
fn selector_rows_pick_what_they_say() {
    let s = parse_str(SCENARIO, "sel.yaml").unwrap();
    let report = runner::run(&s);
    assert!(report.results.iter().all(PointResult::passed));
    // The same sweep with every algorithm listed: auto must agree with it.
    let mut all = s.clone();
    all.algorithms = tune::tune_scenario(&s).algorithms.into_iter().filter(|a| !is_selector(&a.name)).collect();
    let every = runner::run(&all);
    for &p in &s.ranks {
        for &b in &s.sizes {
            let rows = rows_at(&report.results, p, b);
            assert_eq!(rows.len(), 4);
            let best = rows[0].best_algorithm.clone().expect("a best algorithm");
            assert!(rows.iter().all(|r| r.best_algorithm.as_deref() == Some(best.as_str())), "one best per point");
            let algos: Vec<&PointResult> = rows_at(&every.results, p, b)
                .into_iter()
                .filter(|r| r.selection.is_none() && r.not_applicable.is_none())
                .collect();
            let fastest = algos.iter().map(|r| r.time_s).fold(f64::INFINITY, f64::min);
            let auto = rows.iter().find(|r| r.algorithm == "auto").unwrap();
            assert_eq!(auto.time_s, fastest, "P {p} S {b}");
            let sel = auto.selection.as_ref().unwrap();
            assert_eq!(sel.selected, best);
            assert_eq!(sel.vs_best, Some(0.0));
            assert_eq!(sel.candidates, algos.len());
            // The runner-up is the second fastest of everything the point ran, the selectors'
            // picks included (nccl_model's NCCL variant is in no candidate list), and the
            // margin their ratio.
            let picks = rows
                .iter()
                .filter(|r| r.not_applicable.is_none())
                .filter_map(|r| r.selection.as_ref().map(|s| (s.selected.as_str(), r.time_s)));
            let second = algos
                .iter()
                .map(|r| (r.algorithm.as_str(), r.time_s))
                .chain(picks)
                .filter(|(l, _)| *l != best)
                .map(|(_, t)| t)
                .fold(f64::INFINITY, f64::min);
            assert!((auto.margin.unwrap() - (second / fastest - 1.0)).abs() < 1e-12);

            // ompi_fixed runs what Open MPI 4.1.4 decides, with its fallbacks.
            let om = rows.iter().find(|r| r.algorithm == "ompi_fixed").unwrap();
            let m = ompi::runs(ompi::allreduce_fixed(p, b, true), 0, b / 4, 4, p);
            let osel = om.selection.as_ref().unwrap();
            assert_eq!(osel.selected, m.id);
            assert_eq!(osel.library_choice.as_deref(), Some(m.steps.as_str()));
            let ours = algos.iter().find(|r| r.algorithm == m.id).unwrap();
            assert_eq!(om.time_s, ours.time_s);
            assert!((osel.vs_best.unwrap() - (ours.time_s / fastest - 1.0)).abs() < 1e-12);

            // nccl_model: NCCL's choice and prediction, our simulation of it.
            let nm = rows.iter().find(|r| r.algorithm == "nccl_model").unwrap();
            let nsel = nm.selection.as_ref().unwrap();
            let x = nccl::Inputs {
                ranks: p,
                nodes: p,
                bw_intra: 12.5,
                bw_inter: 12.5,
                channels: 2,
                arch: nccl::Arch::Hopper,
                avg: false,
                pcie: false,
                ll128: true,
                nvls: false,
                nvls_heads: 0,
                tuning: nccl::Tuning::V2_30,
                search: None,
            };
            let (algo, proto, t) = nccl::choice(&x, Collective::Allreduce, b).unwrap();
            assert_eq!(nsel.library_choice.as_deref(), Some(format!("{}/{}", algo.name(), proto.name()).as_str()));
            assert_eq!(nsel.predicted_s, Some(t));
            // NCCL's own ring or tree, with the protocol it picked and its 2 channels.
            let ours = algo.ours(Collective::Allreduce);
            // (2 is nccl_tree's default, not shown; nccl_ring's is 1.)
            assert!(nsel.selected.starts_with(ours), "{}", nsel.selected);
            assert_eq!(nsel.selected.contains("channels=2"), ours == "nccl_ring", "{}", nsel.selected);
            assert_eq!(nsel.selected.contains("protocol="), proto != nccl::Proto::Simple, "{}", nsel.selected);
        }
    }
    // Open MPI's fixed rules pick segmented ring (run as the ring) below 64 B at 16 ranks.
    let om16 = rows_at(&report.results, 16, 16).into_iter().find(|r| r.algorithm == "ompi_fixed").unwrap();
    assert!(om16.selection.as_ref().unwrap().library_choice.as_ref().unwrap().starts_with("5 segmented_ring"));
}

#[test]
fn csv_has_the_winner_columns() {
    let mut s = parse_str(SCENARIO, "sel.yaml").unwrap();
    s.ranks = vec![4];
    s.sizes = vec![4096];
    let report = runner::run(&s);
    let csv = Csv.render(&report);
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), head.len());
        assert_eq!(cells[col("best_algorithm")], "butterfly", "{line}");
        assert!(!cells[col("runner_up")].is_empty());
        assert!(cells[col("margin")].parse::<f64>().unwrap() > 0.0);
        let selected = cells[col("selected")];
        match cells[col("algorithm")] {
            "ring" => assert_eq!(selected, ""),
            "auto" => assert_eq!(selected, "butterfly"),
            "nccl_model" => assert!(cells[col("predicted_s")].parse::<f64>().unwrap() > 0.0),
            _ => assert!(!selected.is_empty()),
        }
    }
}

/// `merge` joins shards and ranks every point again over them.
#[test]
fn rank_is_the_same_over_shards() {
    let s = parse_str(SCENARIO, "sel.yaml").unwrap();
    let whole = runner::run(&s);
    let mut joined = Vec::new();
    for i in 0..3 {
        let shard = allreduce_sim::shard::Shard { index: i, count: 3 };
        let r = runner::run_with(&s, &runner::RunOptions { shard: Some(shard), ..Default::default() });
        joined.push((format!("s{i}"), serde_json::to_string(&r).unwrap()));
    }
    let merged = allreduce_sim::shard::merge(&joined).unwrap();
    for (a, b) in whole.results.iter().zip(&merged.results) {
        assert_eq!(a.algorithm, b.algorithm);
        assert_eq!((&a.best_algorithm, &a.runner_up), (&b.best_algorithm, &b.runner_up), "{} {}", a.ranks, a.bytes);
        assert_eq!(a.margin, b.margin);
        assert_eq!(a.selection.as_ref().map(|s| s.vs_best), b.selection.as_ref().map(|s| s.vs_best));
    }
}

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_allreduce-sim"))
}

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("select-{}-{name}", std::process::id()))
}

/// Run `tune` with `emit`, return the file it wrote.
fn tune_file(scenario: &Path, emit: &str, extra: &[&str]) -> String {
    let out = tmp(&format!("{emit}.out"));
    let status = Command::new(bin())
        .args(["tune", scenario.to_str().unwrap(), "--emit", emit, "--quiet", "--output", out.to_str().unwrap()])
        .args(extra)
        .status()
        .unwrap();
    assert!(status.success(), "tune --emit {emit} failed");
    std::fs::read_to_string(&out).unwrap()
}

#[test]
fn tune_files_read_back_against_the_sweep() {
    let path = tmp("tune.yaml");
    std::fs::write(&path, SCENARIO).unwrap();
    let tuned: Tuned = serde_json::from_str(&tune_file(&path, "json", &[])).unwrap();
    assert_eq!(tuned.points.len(), 12);

    let rules = tune::read_ompi_rules(&tune_file(&path, "ompi-rules", &[])).unwrap();
    let all = &rules[&tune::OMPI_ALLREDUCE_ID];
    let ncsv = tune::read_nccl_csv(&tune_file(&path, "nccl-tuner", &[])).unwrap();
    for pt in &tuned.points {
        // The rule is the fastest of the algorithms Open MPI has ...
        let ompi_algos: Vec<&(String, f64)> =
            pt.times.iter().filter(|(l, _)| ompi::ompi_of(l.split('(').next().unwrap(), None).is_some()).collect();
        let fastest = ompi_algos.iter().map(|(_, t)| *t).fold(f64::INFINITY, f64::min);
        let (alg, _) = pt.ompi_rule.unwrap();
        let winner = ompi_algos.iter().find(|(l, _)| ompi::ompi_of(l, None).unwrap().0 == alg).unwrap();
        assert!(winner.1 <= fastest * (1.0 + 1e-9), "{pt:?}");
        // ... and Open MPI's lookup in the file finds it.
        assert_eq!(tune::ompi_lookup(all, pt.ranks, pt.bytes), pt.ompi_rule, "P {} S {}", pt.ranks, pt.bytes);

        let row = tune::nccl_lookup(&ncsv, "allreduce", pt.ranks, pt.ranks, pt.bytes).expect("a tuner row");
        let (algo, proto) = pt.nccl_rule.clone().unwrap();
        assert_eq!((row.algorithm.as_str(), row.protocol.as_str()), (algo.as_str(), proto.as_str()));
        let ours = if algo == "ring" { "ring" } else { "double_binary_tree" };
        let other = if algo == "ring" { "double_binary_tree" } else { "ring" };
        let time = |l: &str| pt.times.iter().find(|(a, _)| a == l).map(|(_, t)| *t).unwrap();
        assert!(time(ours) <= time(other) * (1.0 + 1e-9));
    }
    let table = tune_file(&path, "table", &[]);
    assert_eq!(table.lines().count(), 1 + 1 + 12 + 1, "{table}");
}

#[test]
fn selectors_are_documented_and_listed() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scenario.md")).unwrap();
    let list = Command::new(bin()).arg("list").output().unwrap();
    let list = String::from_utf8(list.stdout).unwrap();
    for sel in &SELECTORS {
        assert!(doc.contains(&format!("`{}`", sel.id)), "docs/scenario.md lacks {}", sel.id);
        assert!(list.contains(&format!("\n{}\n", sel.id)), "list lacks {}", sel.id);
        for p in sel.params {
            let name = p.split(['=', ':']).next().unwrap();
            assert!(doc.contains(&format!("`{name}`")), "docs/scenario.md lacks {}'s {name}", sel.id);
        }
    }
    for (name, _) in nccl::Arch::NAMES {
        assert!(doc.contains(&format!("`{name}`")));
    }
    // A bad parameter is refused where it is written.
    let bad = SCENARIO.replace("nccl_model]", "{ name: nccl_model, arch: pascal }]");
    let e = parse_str(&bad, "bad.yaml").unwrap_err();
    assert!(e.message().contains("'arch' must be one of hopper"), "{}", e.message());
    let bad = SCENARIO.replace("auto,", "{ name: auto, chunk: 1 },");
    let e = parse_str(&bad, "bad.yaml").unwrap_err();
    assert!(e.message().contains("unknown parameter 'chunk' for selector 'auto'; it takes none"), "{}", e.message());
}

/// Signature of an allreduce on 4 ranks as rank 0's calls of a user operation: the
/// element counts it was handed, in order.
fn ompi_signature(alg: u8, n: usize) -> Vec<usize> {
    match alg {
        1 => vec![n; 3],
        3 => vec![n; 2],
        4 => vec![n / 4; 3],
        6 => vec![n / 2, n / 4],
        _ => Vec::new(),
    }
}

/// A real Open MPI reads the rules file `tune` writes and runs what it says, for
/// allreduce and, from a file of two sections, reduce-scatter. Rank 0
/// of a small MPI program records the lengths its user-defined (commutative) sum is
/// called with, which tells Open MPI's allreduce algorithms apart on 4 ranks; the
/// program is run once with our generated file and once with a file that forces the
/// ring where Open MPI's fixed rules would not take it, so a file silently ignored
/// (Open MPI falls back to its fixed rules without a word) fails the test.
#[test]
fn open_mpi_runs_the_rules_file() {
    let have = |tool: &str| Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    if !have("mpirun") || !have("mpicc") {
        println!("skipped: mpirun or mpicc not found (apt-get install openmpi-bin libopenmpi-dev)");
        return;
    }
    let src = tmp("probe.c");
    std::fs::write(&src, PROBE).unwrap();
    let exe = tmp("probe");
    let built = Command::new("mpicc").arg(&src).arg("-o").arg(&exe).status().unwrap();
    assert!(built.success(), "mpicc failed");
    let run_with = |rules: &Path, n: usize, rs: bool| -> Vec<usize> {
        let out = Command::new("mpirun")
            .args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
            .args(["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", "coll_tuned_dynamic_rules_filename"])
            .arg(rules)
            .arg(&exe)
            .arg(n.to_string())
            .args(rs.then_some("rs"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("sum ok"), "{text}{}", String::from_utf8_lossy(&out.stderr));
        let line = text.lines().find_map(|l| l.strip_prefix("calls:")).unwrap();
        line.split_whitespace().map(|w| w.parse().unwrap()).collect()
    };
    let run = |rules: &Path, n: usize| run_with(rules, n, false);
    let run_rs = |rules: &Path, n: usize| run_with(rules, n, true);

    // Our rules at 4 ranks, from a sweep whose winners differ in size.
    let path = tmp("mpi.yaml");
    std::fs::write(&path, SCENARIO.replace("[4, 6, 16]", "[4]")).unwrap();
    let text = tune_file(&path, "ompi-rules", &[]);
    let rules_path = tmp("rules.txt");
    std::fs::write(&rules_path, &text).unwrap();
    let rules = tune::read_ompi_rules(&text).unwrap();
    for (bytes, n) in [(4096u64, 1024usize), (4 << 20, 1 << 20)] {
        let (alg, _) = tune::ompi_lookup(&rules[&tune::OMPI_ALLREDUCE_ID], 4, bytes).unwrap();
        let want = ompi_signature(alg, n);
        assert!(!want.is_empty(), "no signature for algorithm {alg}");
        assert_eq!(run(&rules_path, n), want, "S = {bytes}: Open MPI did not run {}", ompi::name(alg));
    }

    // The ring at 1 MiB, where the fixed rules run Rabenseifner: the file was read.
    assert_eq!(ompi::allreduce_fixed(4, 1 << 20, true), 6);
    let t = Tuned {
        scenario: "ring".into(),
        open_mpi: ompi::VERSION.into(),
        nccl: nccl::VERSION.into(),
        nccl_nodes: Default::default(),
        points: vec![tune::TunedPoint {
            collective: Collective::Allreduce,
            ranks: 4,
            bytes: 4,
            best_algorithm: None,
            best_time_s: None,
            runner_up: None,
            margin: None,
            times: Vec::new(),
            ompi_fixed: None,
            nccl_model: None,
            ompi_rule: Some((4, 0)),
            nccl_rule: None,
        }],
    };
    let forced = tmp("ring.txt");
    std::fs::write(&forced, tune::ompi_rules(&t)).unwrap();
    assert_eq!(run(&forced, 1 << 18), ompi_signature(4, 1 << 18));

    // A file of two collectives: the allreduce's ring and the reduce-scatter's ring
    // (Open MPI's reduce_scatter 3), at 16 KiB, where the fixed rules run recursive
    // halving (its calls: n/2, then n/4). Both sections are read.
    let rs = allreduce_sim::collective::Collective::ReduceScatter;
    assert_eq!(ompi::fixed(rs, 4, 16_384, true), 2);
    let mut two = t.clone();
    two.points.push(tune::TunedPoint { collective: rs, ompi_rule: Some((3, 0)), ..t.points[0].clone() });
    let text = tune::ompi_rules(&two);
    let rules = tune::read_ompi_rules(&text).unwrap();
    assert_eq!(rules.keys().copied().collect::<Vec<_>>(), [tune::OMPI_ALLREDUCE_ID, ompi::collective_id(rs)]);
    std::fs::write(&forced, &text).unwrap();
    assert_eq!(run(&forced, 1 << 18), ompi_signature(4, 1 << 18));
    assert_eq!(run_rs(&forced, 4096), vec![1024; 3], "Open MPI did not run the reduce-scatter ring");
}

/// The MPI program: an in-place allreduce of n floats (or, with a second argument, a
/// reduce-scatter of n floats into P equal blocks) with a user-defined commutative sum
/// that records, on rank 0, the length of every call.
const PROBE: &str = r#"#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int calls[64], ncalls = 0;
static void sum(void *in, void *inout, int *len, MPI_Datatype *t) {
  float *a = in, *b = inout;
  for (int i = 0; i < *len; i++) b[i] += a[i];
  if (ncalls < 64) calls[ncalls] = *len;
  ncalls++;
}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = atoi(argv[1]);
  float *v = malloc(sizeof(float) * n);
  for (int i = 0; i < n; i++) v[i] = rank + 1;
  MPI_Op op;
  MPI_Op_create(sum, 1, &op);
  int ok = 1, rs = argc > 2;
  if (rs) {
    int *counts = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) counts[i] = n / size;
    float *out = malloc(sizeof(float) * (n / size));
    MPI_Reduce_scatter(v, out, counts, MPI_FLOAT, op, MPI_COMM_WORLD);
    for (int i = 0; i < n / size; i++) ok &= out[i] == size * (size + 1) / 2;
  } else {
    MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_FLOAT, op, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) ok &= v[i] == size * (size + 1) / 2;
  }
  if (rank == 0) {
    printf("calls:");
    for (int i = 0; i < ncalls && i < 64; i++) printf(" %d", calls[i]);
    printf("\n%s\n", ok ? "sum ok" : "sum WRONG");
  }
  MPI_Finalize();
  return !ok;
}
"#;

/// The plot of where Open MPI's fixed rules lose: one cell per (ranks, size).
#[test]
fn plot_shows_where_ompi_fixed_loses() {
    let mut s = parse_str(SCENARIO, "sel.yaml").unwrap();
    s.ranks = vec![4, 32];
    s.sizes = vec![1024, 16384];
    let report = runner::run(&s);
    let dir = tmp("plots");
    let files = allreduce_sim::plots::plot_report(&report, &dir).unwrap();
    let svg = files.iter().find(|f| f.to_string_lossy().ends_with("_ompi_fixed_vs_best.svg")).expect("the map");
    let text = std::fs::read_to_string(svg).unwrap();
    assert!(text.contains("Open MPI 4.1.4"));
    // P = 32, 1 KiB: Rabenseifner where recursive doubling is fastest (a loss above 1.00x).
    let om = rows_at(&report.results, 32, 1024).into_iter().find(|r| r.algorithm == "ompi_fixed").unwrap();
    let ratio = format!("{:.2}x", 1.0 + om.selection.as_ref().unwrap().vs_best.unwrap());
    assert_ne!(ratio, "1.00x");
    assert!(text.contains(&ratio), "{ratio} not in the map");
}

const COLLECTIVES: &str = "name: nccl collectives
ranks: [4, 6, 16]
topology: { kind: fully_connected, link: { alpha: 2us, bandwidth: 100Gbps } }
compute: { cost_per_byte: 0.05ns }
data: { mode: off }
algorithms:
  - { name: nccl_model, collective: reduce_scatter }
  - { name: nccl_model, collective: allgather }
  - { name: nccl_model, collective: broadcast }
  - { name: nccl_model, collective: reduce }
  - { name: all_to_all, collective: barrier }
sizes: [4KiB, 256KiB, 4MiB]
";

/// `nccl_model` on the other collectives: NCCL's choice and prediction, run as ours
/// (PAT as halving_doubling, the ring broadcast and reduce as a chain in NCCL's chunks).
#[test]
fn nccl_model_on_every_collective() {
    let s = parse_str(COLLECTIVES, "nccl.yaml").unwrap();
    let report = runner::run(&s);
    let mut picked = std::collections::BTreeSet::new();
    for r in report.results.iter().filter(|r| r.algorithm == "nccl_model") {
        let x = nccl::Inputs {
            ranks: r.ranks,
            nodes: r.ranks,
            bw_intra: 12.5,
            bw_inter: 12.5,
            channels: 2,
            arch: nccl::Arch::Hopper,
            avg: false,
            pcie: false,
            ll128: true,
            nvls: false,
            nvls_heads: 0,
            tuning: nccl::Tuning::V2_30,
            search: None,
        };
        let (algo, proto, t) = nccl::choice(&x, r.collective, r.bytes).unwrap();
        let sel = r.selection.as_ref().unwrap();
        assert_eq!(sel.library_choice.as_deref(), Some(format!("{}/{}", algo.name(), proto.name()).as_str()));
        assert_eq!(sel.predicted_s, Some(t));
        let want = match r.collective {
            Collective::Broadcast | Collective::Reduce => {
                assert_eq!(algo, nccl::Algo::Ring, "NCCL has only the ring there");
                match nccl::chain_segments(&x, proto, r.bytes, r.bytes / 4) {
                    1 => "chain".to_string(),
                    k => format!("chain(segments={k})"),
                }
            }
            // NCCL's PAT runs as `pat` with the model's 2 channels.
            c if algo == nccl::Algo::Pat => format!("{}(channels=2)", algo.ours(c)),
            // NCCL's ring of reduce_scatter and allgather runs as `nccl_ring` with the
            // picked protocol and the model's 2 channels.
            Collective::ReduceScatter | Collective::Allgather if algo == nccl::Algo::Ring => {
                let label = &sel.selected;
                assert!(
                    label.starts_with("nccl_ring(")
                        && label.contains(&format!("protocol={}", proto.name()))
                        && label.contains("channels=2"),
                    "{label}"
                );
                label.clone()
            }
            c => algo.ours(c).to_string(),
        };
        assert_eq!(sel.selected, want, "{} P {} S {}", r.collective, r.ranks, r.bytes);
        picked.insert((r.collective, algo.name()));
        // `pat` runs at any P.
        assert!(r.not_applicable.is_none() && r.passed(), "{r:?}");
    }
    // PAT where its latency wins (small sizes from 16 ranks), the ring elsewhere.
    for c in [Collective::ReduceScatter, Collective::Allgather] {
        assert!(picked.contains(&(c, "pat")) && picked.contains(&(c, "ring")), "{picked:?}");
    }
    // 4 MiB broadcast: 4 MiB over 2 channels of 512 KiB chunks = 4 segments.
    let big = report
        .results
        .iter()
        .find(|r| r.algorithm == "nccl_model" && r.collective == Collective::Broadcast && r.bytes == 4 << 20)
        .unwrap();
    assert_eq!(big.selection.as_ref().unwrap().selected, "chain(segments=4)");

    // An avg reduce-scatter never takes PAT (NCCL leaves it out for PreMulSum/SumPostDiv).
    let avg =
        parse_str(&COLLECTIVES.replace("data: { mode: off }", "data: { mode: off, op: avg }"), "avg.yaml").unwrap();
    let report = runner::run(&avg);
    for r in report.results.iter().filter(|r| r.algorithm == "nccl_model") {
        let choice = r.selection.as_ref().unwrap().library_choice.clone().unwrap();
        if r.collective == Collective::ReduceScatter {
            assert!(choice.starts_with("ring/"), "{choice}");
        }
    }

    // NCCL has no barrier: refused where it is written, with the reason.
    let bad =
        COLLECTIVES.replace("{ name: all_to_all, collective: barrier }", "{ name: nccl_model, collective: barrier }");
    let e = parse_str(&bad, "bad.yaml").unwrap_err();
    assert!(e.message().contains("not for barrier (NCCL has no barrier collective)"), "{}", e.message());
}

/// `tune --emit nccl-tuner` on a sweep of several collectives: a row for every
/// collective NCCL has, read back by the plugin's lookup, each naming the faster of the
/// algorithms NCCL weighs there.
#[test]
fn nccl_tuner_rows_for_every_collective() {
    let path = tmp("nccl-collectives.yaml");
    let scenario = COLLECTIVES.replace("[4, 6, 16]", "[4, 16]").replace(
        "  - { name: all_to_all, collective: barrier }\n",
        "  - { name: all_to_all, collective: barrier }\n  - { name: ring, collective: allreduce }\n",
    );
    std::fs::write(&path, scenario).unwrap();
    let tuned: Tuned = serde_json::from_str(&tune_file(&path, "json", &[])).unwrap();
    let rows = tune::read_nccl_csv(&tune_file(&path, "nccl-tuner", &[])).unwrap();
    // Six collectives x 2 rank counts x 3 sizes, the barrier once per rank count.
    assert_eq!(tuned.points.len(), 5 * 2 * 3 + 2);
    let names: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.collective.as_str()).collect();
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["allgather", "allreduce", "broadcast", "reduce", "reducescatter"]
    );
    for pt in &tuned.points {
        let Some(name) = nccl::collective_name(pt.collective) else {
            assert!(pt.nccl_rule.is_none(), "a barrier rule");
            continue;
        };
        let row = tune::nccl_lookup(&rows, name, pt.ranks, pt.ranks, pt.bytes).expect("a tuner row");
        let (algo, proto) = pt.nccl_rule.clone().unwrap();
        assert_eq!((row.algorithm.as_str(), row.protocol.as_str()), (algo.as_str(), proto.as_str()));
        let weighed = nccl::algorithms(pt.collective);
        let mine = weighed.iter().find(|a| a.name() == algo).expect("an algorithm NCCL weighs for the collective");
        let x = nccl::Inputs {
            ranks: pt.ranks,
            nodes: pt.ranks,
            bw_intra: 12.5,
            bw_inter: 12.5,
            channels: 2,
            arch: nccl::Arch::Hopper,
            avg: false,
            pcie: false,
            ll128: true,
            nvls: false,
            nvls_heads: 0,
            tuning: nccl::Tuning::V2_30,
            search: None,
        };
        // The protocol is the one NCCL's model ranks first for that algorithm ...
        assert_eq!(nccl::best_protocol(&x, pt.collective, *mine, pt.bytes).unwrap().0.name(), proto);
        // ... and of the algorithms NCCL would run here, ours of it simulated fastest.
        let time = |l: &str| pt.times.iter().find(|(a, _)| a == l).map(|(_, t)| *t);
        for other in weighed.iter().filter(|o| nccl::best_protocol(&x, pt.collective, **o, pt.bytes).is_some()) {
            if let (Some(a), Some(b)) = (time(mine.textbook(pt.collective)), time(other.textbook(pt.collective))) {
                assert!(a <= b * (1.0 + 1e-9), "{pt:?}");
            }
        }
    }
}

/// A selector's point costs its algorithms: their work summed, the memory of the
/// largest; the progress counts the algorithms run only for selectors; a run the memory
/// limit makes serial runs them one at a time, with the same report.
#[test]
fn selector_points_are_estimated_counted_and_kept_serial() {
    let mut s = parse_str(SCENARIO, "sel.yaml").unwrap();
    s.ranks = vec![8];
    s.sizes = vec![4096, 1 << 20];
    s.data.mode = allreduce_sim::scenario::DataMode::Full;
    let pts = runner::points(&s);
    for pt in pts.iter().filter(|pt| s.algorithms[pt.algo].name == "auto") {
        let est = allreduce_sim::estimate::estimate(&s, pt, false);
        let mut events = 0;
        let mut largest = 0;
        for id in allreduce_sim::select::candidates(allreduce_sim::collective::Collective::Allreduce) {
            let mut one = s.clone();
            one.algorithms =
                parse_str(&SCENARIO.replace("[ring, auto, ompi_fixed, nccl_model]", &format!("[{id}]")), "x")
                    .unwrap()
                    .algorithms;
            let e = allreduce_sim::estimate::estimate(&one, &runner::Point { algo: 0, ..pt.clone() }, false);
            events += e.events;
            largest = largest.max(e.data_bytes + e.engine_bytes);
        }
        assert_eq!(est.events, events);
        assert_eq!(est.memory_bytes(), largest);
        assert!(largest > 0);
    }
    // ring is listed: auto simulates the others; ompi_fixed and nccl_model pick listed
    // ones or auto's.
    let n = allreduce_sim::select::candidates(allreduce_sim::collective::Collective::Allreduce).len();
    // nccl_model also runs NCCL's own ring or tree, which nothing lists, at each point.
    assert_eq!(allreduce_sim::select::planned_runs(&s, &pts), 2 * (n - 1) + 2);

    let parallel = runner::run(&s);
    let serial = runner::run_with(&s, &runner::RunOptions { memory_limit: Some(1), ..Default::default() });
    for (a, b) in parallel.results.iter().zip(&serial.results) {
        assert_eq!((&a.algorithm, a.time_s, &a.selection), (&b.algorithm, b.time_s, &b.selection));
    }
}

/// `--trace` and `--gantt` on a selector's single point record the algorithm it picks,
/// and say so.
#[test]
fn trace_of_a_selector_records_its_pick() {
    let path = tmp("trace.yaml");
    std::fs::write(&path, SCENARIO).unwrap();
    let trace = tmp("trace.json");
    let gantt = tmp("gantt.svg");
    for (sel, picks) in [("nccl_model", "nccl_tree(protocol=ll)"), ("auto", "butterfly")] {
        let out = Command::new(bin())
            .args(["run", path.to_str().unwrap(), "--algorithms", sel, "--ranks", "16", "--sizes", "4KiB", "--quiet"])
            .args(["--format", "json", "--trace", trace.to_str().unwrap(), "--gantt", gantt.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.contains(&format!("{sel} picks {picks} at P = 16, S = 4 KiB: recording {picks}")), "{err}");
        let report: allreduce_sim::report::Report = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report.results[0].algorithm, picks);
        let meta = std::fs::read_to_string(&trace).unwrap();
        assert!(
            meta.contains(&format!("\"algorithm\":\"{picks}\""))
                || meta.contains(&format!("\"algorithm\": \"{picks}\""))
        );
        assert!(std::fs::read_to_string(&gantt).unwrap().contains(picks));
    }
}

/// Where NCCL's model picks Simple, `nccl_model`'s allreduce runs `nccl_ring` with its
/// protocol given as `simple`: the row of that run is labelled
/// `nccl_ring(channels=2, protocol=simple)` (the entry's protocol is written even where it
/// is the algorithm's default), and the selector must find it by that label. It once
/// looked for `nccl_ring(channels=2)` and reported "did not run" at every large size, on
/// a flat machine and on a 4-GPU PCIe box alike.
#[test]
fn nccl_model_finds_its_simple_ring() {
    for machine in [
        "topology: { kind: fully_connected, link: { alpha: 1.5us, bandwidth: 100Gbps } }",
        "topology: { kind: cluster, nodes: 1, gpus_per_node: 4, intra: { kind: pcie, alpha: 5.7us, bandwidth: 24GB/s } }",
    ] {
        let text = format!(
            "name: simple ring\nranks: [4]\n{machine}\ncompute: {{ cost_per_byte: 0.05ns }}\ndata: {{ mode: off }}\n\
             algorithms: [nccl_model]\nsizes: [2MiB, 64MiB]\n"
        );
        let s = parse_str(&text, "simple.yaml").unwrap();
        let report = runner::run(&s);
        let mut simple = 0;
        for r in &report.results {
            let sel = r.selection.as_ref().unwrap();
            assert!(r.not_applicable.is_none() && r.passed() && r.time_s > 0.0, "{machine}: {r:?}");
            if sel.library_choice.as_deref() == Some("ring/simple") {
                assert_eq!(sel.selected, "nccl_ring(channels=2, protocol=simple)");
                simple += 1;
            }
        }
        assert!(simple > 0, "{machine}: NCCL's model picks Simple at 64 MiB");
    }
}

/// A selector's distance from the fastest where it did not pick the fastest. `nccl_model`'s
/// NCCL variant is in no candidate list, so it can beat every algorithm `auto` weighs: then
/// `auto`'s line gives its distance from the best, not the point's runner-up (which may be
/// `auto`'s own pick). And a best of 0 s (a 0-byte reduce-scatter that NCCL skips) gives no
/// ratio: `vs_best` is null, not the 0 that reads as "picked the fastest".
#[test]
fn a_selector_behind_a_best_it_did_not_pick_says_how_far() {
    use allreduce_sim::report::{Json, Table};
    let zero = "name: zero
ranks: 3
topology: { kind: fully_connected, link: { alpha: 14us, bandwidth: 400Gbps } }
collective: reduce_scatter
algorithms: [direct, ring, auto, ompi_fixed, nccl_model]
sizes: [0]
";
    let report = runner::run(&parse_str(zero, "zero.yaml").unwrap());
    let row = |name: &str| report.results.iter().find(|r| r.algorithm == name).unwrap();
    assert_eq!(row("auto").best_time_s, Some(0.0));
    assert!(row("auto").time_s > 0.0);
    for name in ["auto", "ompi_fixed"] {
        assert_eq!(row(name).selection.as_ref().unwrap().vs_best, None, "{name}");
    }
    assert_eq!(row("nccl_model").selection.as_ref().unwrap().vs_best, Some(0.0));
    let table = Table.render(&report);
    let best = row("auto").best_algorithm.clone().unwrap();
    assert!(table.contains(&format!("auto: ring of 4 algorithms, against 0 s for the best ({best})")), "{table}");
    assert!(table.contains(&format!("ring simulates 28 us, against 0 s for the best ({best})")), "{table}");
    assert!(!table.contains("runner-up ring"), "{table}");
    // Written and read back: null stays null, and `merge` of shards gives the same.
    let json = Json.render(&report);
    assert!(json.contains("\"vs_best\": null"), "{json}");
    let back: allreduce_sim::report::Report = serde_json::from_str(&json).unwrap();
    assert_eq!(back.results, report.results);

    // 16 GPUs on two DGX-like nodes, 64 KiB: NCCL's LL tree beats every textbook algorithm.
    let gpus = "name: gpus
ranks: 16
topology:
  kind: cluster
  nodes: 2
  gpus_per_node: 8
  intra: { kind: nvswitch, alpha: { simple: 3.4us, ll: 0.6us, ll128: 1.9us }, bandwidth: 450GB/s }
  nics_per_node: 8
  inter: { alpha: { simple: 14us, ll: 2.7us, ll128: 4us }, bandwidth: 400Gbps }
  fabric: { kind: rail_optimized }
  launch: { simple: 8.4us, ll: 6.6us, ll128: 14us }
data: { mode: off }
algorithms: [ring, auto, nccl_model]
sizes: [64KiB]
";
    let report = runner::run(&parse_str(gpus, "gpus.yaml").unwrap());
    let row = |name: &str| report.results.iter().find(|r| r.algorithm == name).unwrap();
    let auto = row("auto");
    let (pick, best) = (&auto.selection.as_ref().unwrap().selected, auto.best_algorithm.clone().unwrap());
    assert_ne!(*pick, best, "NCCL's variant is the fastest here");
    let vs = auto.selection.as_ref().unwrap().vs_best.unwrap();
    assert!((vs - (auto.time_s / auto.best_time_s.unwrap() - 1.0)).abs() < 1e-12 && vs > 0.0);
    let table = Table.render(&report);
    let line = format!("auto: {pick} of {} algorithms, ", auto.selection.as_ref().unwrap().candidates);
    assert!(table.contains(&line) && table.contains(&format!("vs the best ({best})")), "{table}");
}
