//! `calibrate`'s optimiser and what it reports: a value the logs push past its bound ends
//! on it and is reported there, and an uncertainty too large to mean anything is said in
//! words rather than as a factor of dozens of digits.

use std::path::PathBuf;

use allreduce_sim::calibrate::{self, Machine, Options};

mod common;

fn tmp(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("allreduce-sim-calibrate-fit-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// One node of 4 GPUs on a switch, LL's efficiency `ll`.
fn machine(ll: f64) -> String {
    format!(
        "name: bound test\ntopology:\n  kind: cluster\n  nodes: 1\n  gpus_per_node: 4\n  intra:\n    kind: nvswitch\n    \
         alpha: {{ simple: 2us, ll: 1us, ll128: 1us }}\n    bandwidth: 100GB/s\n  nics_per_node: 4\n  inter:\n    \
         alpha: {{ simple: 5us, ll: 2us, ll128: 2us }}\n    bandwidth: 25GB/s\n  launch: {{ simple: 10us, ll: 5us, ll128: 5us }}\n  \
         efficiency: {{ ll: {ll}, ll128: 0.9 }}\ncompute: {{ cost_per_byte: 0 }}\nalgorithms: [nccl_model]\nsizes: [1MiB]\n"
    )
}

/// A log of LL's ring on a machine whose LL carries data at 0.8 of the link's rate, above
/// the 0.5 a line of 8 data bytes in 16 allows: the fit of LL's efficiency from 0.3 ends
/// on its bound, 0.5, reports it there (the parameter's `at_bound`, the table's note, a
/// warning in words, the fitted file's comment), with the errors of the bound's value.
#[test]
fn an_efficiency_the_logs_push_past_its_bound_is_reported_there() {
    let text = machine(0.8)
        .replace("algorithms: [nccl_model]", "algorithms: [{ name: nccl_ring, protocol: ll, channels: 2 }]");
    let sizes: Vec<u64> = (10..=24).step_by(2).map(|k| 1u64 << k).collect();
    let env = "# NCCL_ALGO=Ring\n# NCCL_PROTO=LL\n";
    let runs = common::engine_log(&text, &sizes, env, 4, "Test GPU", "ll.log").1;
    let path = tmp("ll-bound.yaml");
    std::fs::write(&path, machine(0.3)).unwrap();
    let m = Machine::load(&path).unwrap();
    let opts = Options { fit: Some(vec!["topology.efficiency.ll".into()]), patience: 60, ..Options::default() };
    let c = calibrate::calibrate(&m, &runs, &[], &opts).unwrap();
    let table = calibrate::table(&c);
    let p = &c.parameters[0];
    assert_eq!(p.at_bound.as_deref(), Some("upper"), "{table}");
    assert_eq!(p.upper, 0.5);
    assert!(p.value <= 0.5 && p.value > 0.499, "{table}");
    assert!(table.contains("at upper bound"), "{table}");
    assert!(
        c.warnings.iter().any(|w| w.starts_with("topology.efficiency.ll sits at its upper bound, 0.5")),
        "{:?}",
        c.warnings
    );
    assert!(c.fitted_yaml.contains("at upper bound"), "{}", c.fitted_yaml);
    // The errors are the bound's: at the largest size, LL at 0.5 where 0.8 ran is slower
    // (at most 1.6 times, where LL's bandwidth alone would count).
    let last = c.logs[0].points.last().unwrap();
    assert!(last.rel_err > 0.05 && last.rel_err < 0.61, "{table}");
}

/// The same log fitted from a file whose LL efficiency is the truth's, 0.8 (above its
/// bound): the fit starts on the bound and stays there, as above, rather than keeping a
/// start the bounds do not allow.
#[test]
fn a_start_past_its_bound_starts_on_it() {
    let text = machine(0.8)
        .replace("algorithms: [nccl_model]", "algorithms: [{ name: nccl_ring, protocol: ll, channels: 2 }]");
    let sizes: Vec<u64> = (10..=24).step_by(2).map(|k| 1u64 << k).collect();
    let runs = common::engine_log(&text, &sizes, "# NCCL_ALGO=Ring\n# NCCL_PROTO=LL\n", 4, "Test GPU", "ll.log").1;
    let path = tmp("ll-past.yaml");
    std::fs::write(&path, machine(0.8)).unwrap();
    let m = Machine::load(&path).unwrap();
    let opts = Options { fit: Some(vec!["topology.efficiency.ll".into()]), patience: 60, ..Options::default() };
    let c = calibrate::calibrate(&m, &runs, &[], &opts).unwrap();
    let p = &c.parameters[0];
    assert_eq!(p.at_bound.as_deref(), Some("upper"), "{}", calibrate::table(&c));
    assert!(p.value <= 0.5 && p.value > 0.499, "{}", calibrate::table(&c));
}

/// An uncertainty of a log-value of 157 (a factor e^157 either way, which printed as 68
/// digits) is said as undetermined; a factor of 2.7 as that factor.
#[test]
fn huge_uncertainty_factors_are_said_in_words() {
    assert_eq!(calibrate::either_way(157.0), "more than x1000 either way: undetermined");
    assert_eq!(calibrate::either_way(f64::INFINITY), "more than x1000 either way: undetermined");
    assert_eq!(calibrate::either_way(1.0), "about x2.7 either way");
    assert_eq!(calibrate::either_way(calibrate::UNDETERMINED.ln() + 0.01), "more than x1000 either way: undetermined");
}
