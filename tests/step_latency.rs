//! `intra.step_latency` (docs/gpu-clusters.md, "Step latency"): NCCL's ring and tree pay
//! it once per call for each of their pipeline's steps inside a node, on top of `launch`,
//! whatever the size; every other algorithm, and a machine without it, is unchanged.

mod common;
use allreduce_sim::scenario::{Scenario, parse_str};
use common::{close, run_clean as run};

fn scenario(text: &str) -> Scenario {
    common::scenario(text, "step_latency.yaml")
}

/// Two nodes of 4 GPUs on an NVSwitch; `STEP` is replaced by the step latency line.
const MACHINE: &str = "
topology:
  kind: cluster
  nodes: 2
  gpus_per_node: 4
  intra: { kind: nvswitch, alpha: 1us, bandwidth: 100GB/s STEP }
  nics_per_node: 4
  inter: { alpha: 2us, bandwidth: 25GB/s }
  launch: 4us
ranks: [2, 4, 8]
algorithms:
  - { name: nccl_ring, channels: 2 }
  - { name: nccl_ring, collective: reduce_scatter, channels: 2 }
  - { name: nccl_tree, channels: 2 }
  - ring
  - { name: nccl_ring, protocol: ll }
sizes: 3MiB
";

fn machine(step: &str) -> Scenario {
    scenario(&MACHINE.replace(" STEP", step))
}

/// The run with a step latency is the run without it shifted by the steps' latency:
/// the schedule itself does not change.
fn shifted(algo: usize, ranks: usize, step: &str, want_shift: f64) {
    let (with, without) = (run(&machine(step), algo, ranks), run(&machine(""), algo, ranks));
    close(with.time_s - without.time_s + 1.0, want_shift + 1.0);
    assert_eq!(with.messages, without.messages);
    close(with.launch_s.unwrap(), without.launch_s.unwrap() + want_shift);
    if let (Some(a), Some(b)) = (with.closed_form_s, without.closed_form_s) {
        close(a - b + 1.0, want_shift + 1.0);
    }
}

#[test]
fn the_ring_pays_one_step_latency_per_step_inside_a_node() {
    let step = ", step_latency: 3us";
    // One node: every one of the allreduce's 2(P-1) steps is inside it.
    shifted(0, 2, step, 2.0 * 3e-6);
    shifted(0, 4, step, 6.0 * 3e-6);
    // Two nodes of 4: 2(P-1) = 14 steps, of which 2(N-1) = 2 cross nodes: 12 inside.
    shifted(0, 8, step, 12.0 * 3e-6);
    // The reduce-scatter is one pass: P-1 steps, P - N of them inside a node.
    shifted(1, 4, step, 3.0 * 3e-6);
    shifted(1, 8, step, 6.0 * 3e-6);
}

#[test]
fn the_tree_pays_its_chain_up_and_down() {
    // 2(g-1) for g GPUs per node, whatever the number of nodes.
    shifted(2, 4, ", step_latency: 3us", 6.0 * 3e-6);
    shifted(2, 8, ", step_latency: 3us", 6.0 * 3e-6);
}

#[test]
fn other_algorithms_and_other_protocols_take_their_own() {
    // The textbook ring is not NCCL's kernel: nothing added.
    shifted(3, 8, ", step_latency: 3us", 0.0);
    // Per protocol: LL takes its own value.
    shifted(4, 4, ", step_latency: { simple: 3us, ll: 0.5us, ll128: 2us }", 6.0 * 0.5e-6);
    shifted(0, 4, ", step_latency: { simple: 3us, ll: 0.5us, ll128: 2us }", 6.0 * 3e-6);
}

#[test]
fn a_machine_without_it_reports_as_before() {
    let s = machine("");
    let text = serde_json::to_string(&s.topology).unwrap();
    assert!(!text.contains("step_latency"), "{text}");
    let with = serde_json::to_string(&machine(", step_latency: 3us").topology).unwrap();
    assert!(with.contains("step_latency"), "{with}");
}

#[test]
fn a_bad_step_latency_is_located_and_explained() {
    for (bad, want) in [
        (", step_latency: -1us", "topology.intra.step_latency"),
        (", step_latency: { simple: 1us }", "topology.intra.step_latency: missing ll, ll128"),
        (", step_latency: { simple: 1us, ll: 1us, ll128: 1us, tcp: 1us }", "unknown protocol 'tcp'"),
    ] {
        let Err(e) = parse_str(&MACHINE.replace(" STEP", bad), "bad.yaml") else { panic!("{bad} was accepted") };
        let e = e.to_string();
        assert!(e.contains(want), "{bad}: {e}");
        assert!(e.contains("bad.yaml:"), "{bad}: {e}");
    }
}

/// `explain` shifts the schedule by the same start-up as `run`.
#[test]
fn explain_counts_the_steps_as_run_does() {
    let s = scenario(&MACHINE.replace(" STEP", ", step_latency: 3us"));
    let req = allreduce_sim::explain::Request {
        algorithm: "nccl_ring".to_string(),
        ranks: 4,
        bytes: 3 << 20,
        cost_per_byte: s.cost_per_byte,
        topology: Some(s.topology.clone()),
        ..Default::default()
    };
    let text = allreduce_sim::explain::explain(&req).unwrap();
    // launch 4 us + 6 steps x 3 us.
    assert!(text.contains("launch 22 us"), "{text}");
}
