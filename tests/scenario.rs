//! The scenario file and the `run` flags, through the library API: units resolved,
//! defaults filled in, and every kind of bad input reported once, at its line, with what
//! is allowed.

use allreduce_sim::scenario::units::{fmt_size_short, parse_bandwidth, parse_size, parse_time};
use allreduce_sim::scenario::{
    Collective, DataMode, Dtype, NetworkModel, Overrides, ParamValue, Scenario, TopologySpec, load_file, parse_str,
};
use allreduce_sim::sim::data::{Init, ReduceOp};
use allreduce_sim::sim::flow::Sharing;
use allreduce_sim::topology::Link;

/// Every top-level key of docs/scenario.md, set away from its default where it has one.
const FULL: &str = "\
name: two NICs, 3 sizes        # optional
seed: 42                       # default 0
ranks: [4, 8, 16]
topology:
  kind: fully_connected
  link: { alpha: 1us, bandwidth: 100Gbps }
  nics: 2
compute: { cost_per_byte: 0.05ns }
network: { model: ideal }
data: { dtype: f32, op: max, init: rank, mode: off }
collective: allreduce
algorithms: [ring, butterfly, { name: chain, segments: 4 }]
sizes: [4KiB, 1MiB, 64MiB]
check: { closed_form: false }
";

/// The smallest valid scenario; tests below break one line of it at a time.
const MINIMAL: &str = "\
ranks: 4
topology:
  link: { alpha: 1us, bandwidth: 100Gbps }
algorithms: [ring]
sizes: [4KiB]
";

/// The link and NIC count of a fully connected topology.
fn link(s: &Scenario) -> (Link, u32) {
    #[allow(unreachable_patterns)]
    match &s.topology {
        TopologySpec::FullyConnected { link, nics } => (*link, *nics),
        _ => panic!("not fully connected"),
    }
}

fn ok(text: &str) -> Scenario {
    match parse_str(text, "test.yaml") {
        Ok(s) => s,
        Err(e) => panic!("expected a valid scenario, got:\n{e}"),
    }
}

/// The error for `text` (as file `bad.yaml`), checked to start with `bad.yaml:LINE:` and
/// to contain every one of `words`.
fn err_at(text: &str, line: u64, words: &[&str]) -> String {
    let e = match parse_str(text, "bad.yaml") {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    };
    let msg = e.to_string();
    assert!(msg.starts_with(&format!("bad.yaml:{line}:")), "wrong line (want {line}):\n{msg}");
    assert_eq!(e.position().map(|p| p.0), Some(line), "{msg}");
    for w in words {
        assert!(msg.contains(w), "missing {w:?} in:\n{msg}");
    }
    // One message: the first line says everything; what follows is the source line and a caret.
    let lines: Vec<&str> = msg.lines().collect();
    assert_eq!(lines.len(), 3, "{msg}");
    assert!(lines[1].starts_with(&format!(" {line} | ")), "{msg}");
    assert!(lines[2].trim_end().ends_with('^'), "{msg}");
    msg
}

fn with(line: &str, replacement: &str) -> String {
    assert!(MINIMAL.contains(line), "{line}");
    MINIMAL.replacen(line, replacement, 1)
}

// ---------------------------------------------------------------------------------------
// Valid files

#[test]
fn full_example_resolves_every_unit() {
    let s = ok(FULL);
    assert_eq!(s.name, "two NICs, 3 sizes");
    assert_eq!(s.seed, 42);
    assert_eq!(s.ranks, vec![4, 8, 16]);
    let (l, nics) = link(&s);
    assert_eq!(l.alpha, 1e-6);
    assert_eq!(l.bandwidth, 12.5e9);
    assert_eq!(nics, 2);
    assert_eq!(s.cost_per_byte, 5e-11);
    assert_eq!(s.network.model, NetworkModel::Ideal);
    assert_eq!(s.data.dtype, Dtype::F32);
    assert_eq!(s.data.op, ReduceOp::Max);
    assert_eq!(s.data.init, Init::Rank);
    assert_eq!(s.data.mode, DataMode::Off);
    assert_eq!(s.collective, Collective::Allreduce);
    let names: Vec<_> = s.algorithms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["ring", "butterfly", "chain"]);
    assert_eq!(s.algorithms[2].params, vec![("segments".to_string(), ParamValue::Int(4))]);
    assert_eq!(s.algorithms[0].location, "test.yaml:12:14");
    assert_eq!(s.algorithms[2].location, "test.yaml:12:31");
    assert_eq!(s.sizes, vec![4096, 1 << 20, 64 << 20]);
    assert!(!s.check.closed_form);
}

#[test]
fn defaults() {
    let s = parse_str(MINIMAL, "scenarios/minimal.yaml").unwrap();
    assert_eq!(s.name, "minimal");
    assert_eq!(s.seed, 0);
    assert_eq!(link(&s).1, 1);
    assert_eq!(s.cost_per_byte, 0.0);
    assert_eq!(s.network.model, NetworkModel::Ideal);
    assert_eq!(s.data.dtype, Dtype::F32);
    assert_eq!(s.data.op, ReduceOp::Sum);
    assert_eq!(s.data.init, Init::Random);
    assert_eq!(s.data.mode, DataMode::Auto);
    assert_eq!(s.data.memory_budget, 2 << 30);
    assert!(!s.check.bitwise);
    assert_eq!(s.collective, Collective::Allreduce);
    assert!(s.check.closed_form);
    assert_eq!(parse_str(MINIMAL, "").unwrap().name, "scenario");
}

#[test]
fn yaml_numbers_are_base_units() {
    let s = ok("\
ranks: 2
topology:
  link: { alpha: 1e-6, bandwidth: 12.5e9 }
compute: { cost_per_byte: 0 }
algorithms: [ring]
sizes: [4096, 1e6, 0]
");
    assert_eq!(link(&s).0, Link { alpha: 1e-6, bandwidth: 12.5e9 });
    assert_eq!(s.sizes, vec![4096, 1_000_000, 0]);
}

#[test]
fn other_unit_spellings() {
    let s = ok("\
ranks: 2
topology:
  link: { alpha: 250 ps, bandwidth: 12.5GB/s }
compute: { cost_per_byte: 2ms }
algorithms: [ring]
sizes: [1KB, 1MB, 2.5MiB, 1GiB]
");
    assert_eq!(link(&s).0, Link { alpha: 2.5e-10, bandwidth: 12.5e9 });
    assert_eq!(s.cost_per_byte, 2e-3);
    assert_eq!(s.sizes, vec![1000, 1_000_000, 2_621_440, 1 << 30]);
    let s = ok(&with("100Gbps", "25Gb/s"));
    assert_eq!(link(&s).0.bandwidth, 3.125e9);
}

#[test]
fn ranks_and_sizes_as_scalar_or_list() {
    let s = ok(&with("sizes: [4KiB]", "sizes: 1MiB"));
    assert_eq!((s.ranks.clone(), s.sizes.clone()), (vec![4], vec![1 << 20]));
    let s = ok(&with("ranks: 4", "ranks: [2, 3, 5]").replace("sizes: [4KiB]", "sizes:\n  - 4KiB\n  - 8KiB\n"));
    assert_eq!((s.ranks, s.sizes), (vec![2, 3, 5], vec![4096, 8192]));
    let s = ok(&with("ranks: 4", "ranks:\n  - 1\n  - 2"));
    assert_eq!(s.ranks, vec![1, 2]);
}

#[test]
fn block_style_algorithm_entries_keep_parameters_and_locations() {
    let s = ok(&with("algorithms: [ring]", "algorithms:\n  - ring\n  - name: chain\n    segments: 8\n  - chain"));
    assert_eq!(s.algorithms.len(), 3);
    assert_eq!(s.algorithms[1].params, vec![("segments".to_string(), ParamValue::Int(8))]);
    assert_eq!(s.algorithms[1].location, "test.yaml:6:5");
    assert!(s.algorithms[2].params.is_empty());
}

#[test]
fn file_is_read_and_named_after_its_stem() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("allreduce-sim-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("my run.yaml");
    std::fs::write(&path, MINIMAL).unwrap();
    let s = load_file(&path).unwrap();
    assert_eq!(s.name, "my run");
    std::fs::write(&path, with("ranks: 4", "ranks: 0")).unwrap();
    let e = load_file(&path).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}:1:8: ranks:", path.display())), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_file_names_path_and_reason() {
    let path = std::path::Path::new("/nonexistent/dir/none.yaml");
    let e = load_file(path).unwrap_err().to_string();
    assert!(e.starts_with("/nonexistent/dir/none.yaml: cannot read the scenario file: "), "{e}");
    assert!(e.to_lowercase().contains("no such file"), "{e}");
}

// ---------------------------------------------------------------------------------------
// Bad files: one message, the right line, what is allowed

#[test]
fn malformed_yaml() {
    err_at(&with("{ alpha: 1us, bandwidth: 100Gbps }", "{ alpha: 1us, bandwidth: 100Gbps"), 4, &[]);
    err_at("ranks: 4\n  topology: x\n", 2, &[]);
    err_at("- ring\n", 1, &["expected a mapping"]);
    err_at(&with("ranks: 4", "ranks: 4\n\tseed: 1"), 1, &["tab"]);
}

#[test]
fn empty_file() {
    for text in ["", "  \n", "# nothing here\n---\n"] {
        let e = parse_str(text, "bad.yaml").unwrap_err().to_string();
        assert!(e.starts_with("bad.yaml: the file is empty"), "{e}");
        assert!(e.contains("topology, ranks, algorithms and sizes"), "{e}");
    }
}

#[test]
fn unknown_keys() {
    let m = err_at(&with("ranks: 4", "ranks: 4\nrank: 4"), 2, &["unknown key 'rank'", "allowed: name, seed, ranks"]);
    assert_eq!(m.matches("unknown key").count(), 1, "said twice:\n{m}");
    err_at(&with("100Gbps }", "100Gbps, beta: 1 }"), 3, &["unknown key 'beta'", "allowed: alpha, bandwidth"]);
    err_at(&with("topology:", "topology:\n  nic: 2"), 3, &["unknown key 'nic'", "nics"]);
    err_at(&format!("{MINIMAL}data: {{ type: f32 }}\n"), 6, &["unknown key 'type'", "allowed: dtype, op, init, mode"]);
    err_at(&format!("{MINIMAL}check: {{ closed: true }}\n"), 6, &["unknown key 'closed'", "closed_form"]);
}

#[test]
fn duplicate_keys() {
    err_at(&with("ranks: 4", "ranks: 4\nranks: 8"), 2, &["duplicate key 'ranks'"]);
}

#[test]
fn unknown_units() {
    err_at(&with("1us", "1xs"), 3, &["topology.link.alpha", "unknown time unit 'xs'", "allowed: s, ms, us"]);
    err_at(&with("100Gbps", "100Gbs"), 3, &["topology.link.bandwidth", "unknown bandwidth unit 'Gbs'", "Gbps"]);
    err_at(
        &with("[4KiB]", "[4KiB, 4KiBs]"),
        5,
        &[
            "sizes: unknown size unit 'KiBs' in '4KiBs'; allowed: B, KB, MB, GB, TB, PB, EB, KiB, MiB, GiB, TiB, PiB, EiB",
        ],
    );
    err_at(&format!("{MINIMAL}compute: {{ cost_per_byte: fast }}\n"), 6, &["compute.cost_per_byte", "not a time"]);
}

#[test]
fn out_of_range_link() {
    err_at(&with("100Gbps", "0Gbps"), 3, &["bandwidth", "greater than 0"]);
    err_at(&with("100Gbps", "0"), 3, &["bandwidth", "greater than 0"]);
    err_at(&with("100Gbps", "-5GB/s"), 3, &["bandwidth", "greater than 0"]);
    err_at(&with("1us", "-1us"), 3, &["alpha", "negative", "at least 0"]);
    err_at(&with("1us", "-1e-6"), 3, &["alpha", "negative"]);
    err_at(&with("1us", "true"), 3, &["alpha", "expected a time"]);
    err_at(&with("topology:", "topology:\n  nics: 0"), 3, &["topology.nics", "from 1 to 4294967295"]);
    err_at(&with("topology:", "topology:\n  nics: 1.5"), 3, &["topology.nics", "from 1 to", "1.5"]);
}

#[test]
fn bad_ranks() {
    err_at(&with("ranks: 4", "ranks: 0"), 1, &["ranks:", "from 1 to 4294967295"]);
    err_at(&with("ranks: 4", "ranks: [4, -2]"), 1, &["ranks:", "from 1 to 4294967295", "-2"]);
    err_at(&with("ranks: 4", "ranks:\n  - 4\n  - 8.5"), 3, &["ranks:", "whole number", "8.5"]);
    err_at(&with("ranks: 4", "ranks: [8, 4, 8]"), 1, &["ranks: 8 is listed twice", "first at line 1, column 9"]);
    err_at(&with("ranks: 4", "ranks: []"), 1, &["ranks: the list is empty"]);
    err_at(&with("ranks: 4", "ranks: { n: 4 }"), 1, &["expected a rank count", "found map"]);
    err_at(&with("ranks: 4", "seed: 1"), 1, &["missing key 'ranks'", "fully_connected"]);
}

#[test]
fn bad_sizes() {
    err_at(&with("[4KiB]", "[4KiB, 6]"), 5, &["6 bytes is not a whole number of 4-byte f32 elements"]);
    err_at(&with("[4KiB]", "1.5"), 5, &["not a whole number of bytes"]);
    err_at(&with("[4KiB]", "[-4KiB]"), 5, &["sizes:", "negative"]);
    err_at(&with("[4KiB]", "[4KiB, 4096]"), 5, &["4096 bytes is listed twice"]);
    err_at(&with("[4KiB]", "[]"), 5, &["sizes: the list is empty"]);
    err_at(&with("sizes: [4KiB]", ""), 1, &["missing key 'sizes'", "4KiB"]);
}

#[test]
fn bad_algorithms() {
    err_at(&with("[ring]", "[]"), 4, &["algorithms: the list is empty", "allreduce-sim list"]);
    err_at(&with("algorithms: [ring]", ""), 1, &["missing key 'algorithms'"]);
    err_at(&with("[ring]", "[ring, rign]"), 4, &["unknown algorithm 'rign'", "allowed: ", "ring", "butterfly"]);
    err_at(&with("[ring]", "[ring, ring]"), 4, &["'ring' is listed twice", "first at line 4, column 14"]);
    err_at(&with("[ring]", "[{ segments: 4 }]"), 4, &["no 'name'", "{ name: ID"]);
    err_at(&with("[ring]", "[7]"), 4, &["expected an algorithm id", "found integer"]);
    // Parameters are checked by the algorithm's own builder, located at the key or value.
    let m = err_at(
        &with("algorithms: [ring]", "algorithms:\n  - name: chain\n    segmnts: 4"),
        6,
        &["unknown parameter 'segmnts'", "allowed: segments"],
    );
    assert!(m.contains("bad.yaml:6:5:"), "{m}");
    let m = err_at(&with("[ring]", "[{ name: chain, segments: 0 }]"), 4, &["'segments'", "from 1 to"]);
    assert!(m.contains("bad.yaml:4:39:"), "{m}");
    err_at(&with("[ring]", "[{ name: ring, segment: 4KiB }]"), 4, &["unknown parameter 'segment'", "'ring'"]);
    // Same id with different parameters is two entries, not a duplicate.
    let s = ok(&with("[ring]", "[chain, { name: chain, segments: 2 }]"));
    assert_eq!(s.algorithms.len(), 2);
    err_at(
        &with("[ring]", "[{ name: chain, segments: 2 }, { segments: 2, name: chain }]"),
        4,
        &["'chain' is listed twice"],
    );
}

#[test]
fn network_keys() {
    let flow = ok(&format!("{MINIMAL}network: {{ model: flow, sharing: maxmin, envelope: 16 }}\n"));
    assert_eq!(flow.network.model, NetworkModel::Flow(Sharing::MaxMin));
    assert_eq!(flow.network.envelope, 16);
    let weighted = ok(&format!("{MINIMAL}network: {{ model: flow }}\n"));
    assert_eq!(weighted.network.model, NetworkModel::Flow(Sharing::Weighted));
    err_at(
        &format!("{MINIMAL}network: {{ model: fluid }}\n"),
        6,
        &["network.model: 'fluid' is not known", "ideal, flow, loggp"],
    );
    err_at(
        &format!("{MINIMAL}network: {{ model: flow, sharing: fair }}\n"),
        6,
        &["network.sharing", "weighted, maxmin"],
    );
    err_at(&format!("{MINIMAL}network: {{ sharing: maxmin }}\n"), 6, &["applies only under model: flow"]);
    err_at(&format!("{MINIMAL}network: {{ envelope: -3 }}\n"), 6, &["network.envelope"]);
    err_at(&format!("{MINIMAL}network: {{ speed: 3 }}\n"), 6, &["unknown key 'speed'", "model, sharing, envelope"]);
    let loggp = ok(&format!(
        "{MINIMAL}network: {{ model: loggp, o: 1.5us, g: 1us, L: 2.5us, G: 0.006ns, eager_threshold: 16KiB }}\n"
    ));
    let NetworkModel::LogGP(l) = loggp.network.model else { panic!("{:?}", loggp.network) };
    assert_eq!((l.o, l.g, l.latency, l.per_byte, l.eager_threshold), (1.5e-6, 1e-6, 2.5e-6, 6e-12, 16384));
    // o and g default to 0, the threshold to LogGOPSim's 65535 bytes.
    let plain = ok(&format!("{MINIMAL}network: {{ model: loggp, L: 2us, G: 0.1ns }}\n"));
    let NetworkModel::LogGP(l) = plain.network.model else { panic!("{:?}", plain.network) };
    assert_eq!((l.o, l.g, l.eager_threshold), (0.0, 0.0, 65535));
    err_at(&format!("{MINIMAL}network: {{ model: loggp, G: 0.1ns }}\n"), 6, &["loggp needs L", "o, g, L, G"]);
    err_at(&format!("{MINIMAL}network: {{ model: loggp, L: 2us }}\n"), 6, &["loggp needs G"]);
    err_at(&format!("{MINIMAL}network: {{ model: loggp, L: 2xs, G: 1ns }}\n"), 6, &["network.L", "allowed: s, ms"]);
    err_at(&format!("{MINIMAL}network: {{ model: loggp, L: 2us, G: 1ns, o: -1us }}\n"), 6, &["network.o"]);
    err_at(&format!("{MINIMAL}network: {{ model: loggp, L: 2us, G: 1ns, g: 5s }}\n"), 6, &["network.g", "0 to 1 s"]);
    err_at(
        &format!("{MINIMAL}network: {{ model: loggp, L: 2us, G: 1ns, eager_threshold: lots }}\n"),
        6,
        &["network.eager_threshold"],
    );
    err_at(&format!("{MINIMAL}network: {{ model: flow, o: 1us }}\n"), 6, &["network.o", "only under model: loggp"]);
    err_at(
        &format!("{MINIMAL}network: {{ model: loggp, L: 1us, G: 1ns, sharing: maxmin }}\n"),
        6,
        &["network.sharing"],
    );
    // Under flow a hierarchy's outer level crosses the inner level's links too.
    let inverted = "topology:\n  kind: hierarchical\n  levels:\n    - { size: 2, alpha: 1us, bandwidth: 10GB/s }\n    \
                    - { size: 2, alpha: 1us, bandwidth: 20GB/s }\nalgorithms: [ring]\nsizes: 4KiB\nnetwork:\n  model: flow\n";
    err_at(inverted, 9, &["level 1 (level 1) is faster than level 0", "bandwidth at most"]);
}

#[test]
fn not_implemented_yet() {
    // The kinds of issue 3 are built (tests/topology.rs covers their keys).
    let torus = ok(&with("topology:", "topology:\n  kind: torus2d\n  dims: [2, 2]"));
    assert!(matches!(torus.topology, TopologySpec::Torus2d { dims: Some([2, 2]), .. }));
    err_at(&with("topology:", "topology:\n  kind: hierarchical"), 4, &["'link' does not apply to kind hierarchical"]);
    err_at(&with("topology:", "topology:\n  kind: star"), 3, &["'star' is not known", "allowed: fully_connected"]);
    err_at(&with("topology:", "topology:\n  dims: [2, 2]"), 3, &["'dims' does not apply", "kind, link, nics"]);
    err_at(&format!("{MINIMAL}data: {{ dtype: f128 }}\n"), 6, &["data.dtype: 'f128'", "allowed: f32, f64, f16, bf16"]);
    err_at(&format!("{MINIMAL}data: {{ op: xor }}\n"), 6, &["data.op", "allowed: sum, prod, max, min, avg"]);
    err_at(&format!("{MINIMAL}data: {{ init: zeros }}\n"), 6, &["data.init", "allowed: random, normal, ones, rank"]);
    err_at(&format!("{MINIMAL}data: {{ mode: half }}\n"), 6, &["data.mode", "allowed: auto, full, sample, off"]);
    err_at(&format!("{MINIMAL}data: {{ memory_budget: lots }}\n"), 6, &["data.memory_budget"]);
    err_at(&format!("{MINIMAL}check: {{ bitwise: 3 }}\n"), 6, &["check.bitwise: must be true or false"]);
    let s = ok(&format!(
        "{MINIMAL}data: {{ dtype: bf16, op: avg, init: gradients, memory_budget: 1GiB }}\ncheck: {{ bitwise: true }}\n"
    ));
    assert_eq!(
        (s.data.dtype, s.data.op, s.data.init, s.data.memory_budget),
        (Dtype::Bf16, ReduceOp::Avg, Init::Gradients, 1 << 30)
    );
    assert!(s.check.bitwise);
    err_at(
        &format!("{MINIMAL}collective: alltoall\n"),
        6,
        &["collective: 'alltoall' is not implemented yet; allowed: allreduce, reduce_scatter, allgather"],
    );
    err_at(&format!("{MINIMAL}collective: allreduse\n"), 6, &["'allreduse' is not known", "allowed: allreduce"]);
}

#[test]
fn missing_link_parts() {
    err_at(&with("  link: { alpha: 1us, bandwidth: 100Gbps }", "  nics: 1"), 3, &["missing key 'link'", "alpha: 1us"]);
    err_at(&with("{ alpha: 1us, bandwidth: 100Gbps }", "{ alpha: 1us }"), 3, &["missing key 'bandwidth'"]);
    err_at(&with("{ alpha: 1us, bandwidth: 100Gbps }", "{ bandwidth: 100Gbps }"), 3, &["missing key 'alpha'"]);
    err_at("ranks: 4\nalgorithms: [ring]\nsizes: 4KiB\n", 1, &["missing key 'topology'"]);
}

#[test]
fn other_values() {
    err_at(&format!("{MINIMAL}seed: -1\n"), 6, &["seed:", "whole number"]);
    err_at(&format!("{MINIMAL}check: {{ closed_form: maybe }}\n"), 6, &["check.closed_form", "true or false"]);
    let s = ok(&format!("{MINIMAL}check: {{ closed_form: false }}\nseed: 18446744073709551615\n"));
    assert!(!s.check.closed_form);
    assert_eq!(s.seed, u64::MAX);
}

#[test]
fn keys_without_values_are_reported_where_they_are() {
    err_at(&with("sizes: [4KiB]", "sizes:"), 5, &["sizes:", "found nothing"]);
    err_at(&with("ranks: 4", "ranks:"), 1, &["ranks:", "not nothing"]);
    err_at(&with("algorithms: [ring]", "algorithms:"), 4, &["algorithms: the list is empty"]);
    err_at(&with("alpha: 1us", "alpha: "), 3, &["topology.link.alpha", "found nothing"]);
    err_at(&with("  link: { alpha: 1us, bandwidth: 100Gbps }", "  link:"), 3, &["missing key 'alpha'"]);
}

#[test]
fn a_second_document_is_an_error() {
    err_at(&format!("{MINIMAL}---\nranks: 8\n"), 7, &["one YAML document"]);
}

// ---------------------------------------------------------------------------------------
// Flags

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn overrides_replace_the_file() {
    let mut s = ok(FULL);
    Overrides {
        collective: None,
        algorithms: Some(strings(&["star", "chain"])),
        ranks: Some(vec![2, 3]),
        sizes: Some(strings(&["8KiB", "1MB"])),
        seed: Some(7),
    }
    .apply(&mut s)
    .unwrap();
    let names: Vec<_> = s.algorithms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["star", "chain"]);
    // An id the file lists keeps the file's parameters; a new one gets none.
    assert!(s.algorithms[0].params.is_empty());
    assert_eq!(s.algorithms[1].params, vec![("segments".to_string(), ParamValue::Int(4))]);
    assert_eq!(s.ranks, vec![2, 3]);
    assert_eq!(s.sizes, vec![8192, 1_000_000]);
    assert_eq!(s.seed, 7);
}

#[test]
fn overrides_split_commas_and_default_to_nothing() {
    let mut s = ok(FULL);
    let before = format!("{s:?}");
    Overrides::default().apply(&mut s).unwrap();
    assert_eq!(format!("{s:?}"), before);
    Overrides {
        algorithms: Some(strings(&["ring,butterfly"])),
        sizes: Some(strings(&["4KiB, 1MiB"])),
        ..Default::default()
    }
    .apply(&mut s)
    .unwrap();
    assert_eq!(s.algorithms.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["ring", "butterfly"]);
    assert_eq!(s.sizes, vec![4096, 1 << 20]);
}

#[test]
fn bad_overrides_name_the_flag() {
    let cases: Vec<(Overrides, &[&str])> = vec![
        (
            Overrides { algorithms: Some(strings(&["ring", "rign"])), ..Default::default() },
            &["--algorithms: unknown algorithm 'rign' for allreduce; allowed: ", "ring"],
        ),
        (Overrides { algorithms: Some(strings(&["ring,,star"])), ..Default::default() }, &["--algorithms: empty"]),
        (
            Overrides { algorithms: Some(strings(&["ring,ring"])), ..Default::default() },
            &["--algorithms: 'ring' is given twice"],
        ),
        (Overrides { ranks: Some(vec![4, 0]), ..Default::default() }, &["--ranks: ", "at least 1"]),
        (Overrides { ranks: Some(vec![4, 4]), ..Default::default() }, &["--ranks: 4 is given twice"]),
        (Overrides { ranks: Some(vec![]), ..Default::default() }, &["--ranks: no rank counts"]),
        (
            Overrides { sizes: Some(strings(&["4KiBs"])), ..Default::default() },
            &["--sizes: unknown size unit 'KiBs'", "allowed: B, KB"],
        ),
        (
            Overrides { sizes: Some(strings(&["6"])), ..Default::default() },
            &["--sizes: 6 bytes is not a whole number of 4-byte f32 elements"],
        ),
        (
            Overrides { sizes: Some(strings(&["1KiB,1024"])), ..Default::default() },
            &["--sizes: 1024 bytes is given twice"],
        ),
    ];
    for (o, words) in cases {
        let mut s = ok(FULL);
        let e = o.apply(&mut s).unwrap_err().to_string();
        for w in words {
            assert!(e.contains(w), "missing {w:?} in {e:?}");
        }
        assert!(e.starts_with("--"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}

// ---------------------------------------------------------------------------------------
// Units round trips

proptest::proptest! {
    #[test]
    fn short_size_labels_parse_back(n: u64) {
        proptest::prop_assert_eq!(parse_size(&fmt_size_short(n)), Ok(n));
        proptest::prop_assert_eq!(parse_size(&n.to_string()), Ok(n));
    }

    #[test]
    fn plain_seconds_parse_exactly(t in 0.0f64..1e6) {
        proptest::prop_assert_eq!(parse_time(&t.to_string()), Ok(t));
        proptest::prop_assert_eq!(parse_time(&format!("{t:e}")), Ok(t));
    }

    #[test]
    fn plain_bandwidths_parse_exactly(b in 1e-3f64..1e15) {
        proptest::prop_assert_eq!(parse_bandwidth(&b.to_string()), Ok(b));
    }
}
