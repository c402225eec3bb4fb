//! The closed forms of `nccl_ring` and `nccl_tree` on GPU clusters (docs/nccl.md,
//! "Time"): hand-computed cases, then a sweep over clusters of 1 to 4 nodes of 1 to 8
//! GPUs, NVSwitch and PCIe, 1 to 8 NICs per node, every protocol, 1 to 4 channels and
//! sizes that do and do not divide into chunks, asserting that every point with a form
//! meets the simulated time to 1e-9 and that one ring channel always has its form.

use allreduce_sim::algos::{self, Algorithm, Machine, Params, Problem};
use allreduce_sim::scenario::ParamValue;
use allreduce_sim::sim::engine::NoObserver;
use allreduce_sim::sim::simulate;
use allreduce_sim::topology::{Cluster, ClusterSpec, InterSpec, IntraKind, PerProto, Proto, Topology};

fn build(id: &str, params: &[(&str, ParamValue)]) -> Box<dyn Algorithm> {
    let params = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    algos::build(id, Params::new(params)).expect("builds")
}

fn int(v: u64) -> ParamValue {
    ParamValue::Int(v)
}

fn cluster(nodes: usize, gpus: usize, nics: usize, kind: IntraKind, proto: Proto) -> Cluster {
    let intra = (kind, PerProto { ll: 0.6e-6, ll128: 1.9e-6, simple: 3.4e-6 }, 100e9);
    let inter = InterSpec::new(PerProto { ll: 2.7e-6, ll128: 4e-6, simple: 14e-6 }, 25e9);
    let spec = ClusterSpec::on_rails(nodes, gpus, nics, intra, inter, PerProto::all(0.0));
    Cluster::new(&spec, nodes * gpus).unwrap().with_protocol(proto)
}

/// The simulated time and the closed form of one point (timing only); where there is
/// no form, the bounds must be given and hold the simulated time.
fn point(algo: &dyn Algorithm, topo: &dyn Topology, n: usize, c: f64) -> (f64, Option<f64>) {
    let p = Problem { ranks: topo.ranks(), elems: n, elem_bytes: 4 };
    let m = Machine { topo, cost_per_byte: c };
    algo.applicable(&p, &m).unwrap();
    let (stats, _) = simulate(algo, topo, p, c, None, &mut NoObserver).unwrap();
    let form = algo.closed_form(&p, &m).map(|(t, _)| t);
    if form.is_none() {
        let (lo, hi) = algo.closed_form_bounds(&p, &m).expect("bounds where there is no form");
        let t = stats.time;
        assert!(
            lo <= t * (1.0 + 1e-9) && t <= hi * (1.0 + 1e-9),
            "{}: simulated {t:e} outside the bounds [{lo:e}, {hi:e}]",
            algo.label()
        );
        BOUNDED.with(|b| {
            let mut b = b.borrow_mut();
            b.0 += 1;
            b.1 = b.1.max(t / lo);
            b.2 = b.2.max(hi / t);
        });
    }
    (stats.time, form)
}

thread_local! {
    /// Points checked against bounds, and the largest ratios time / lower and upper / time.
    static BOUNDED: std::cell::RefCell<(usize, f64, f64)> = const { std::cell::RefCell::new((0, 1.0, 1.0)) };
}

fn close(got: f64, want: f64) {
    assert!((got / want - 1.0).abs() < 1e-12, "{got:e} vs {want:e}");
}

/// Two nodes of two GPUs on an NVSwitch, one NIC each, one channel, chunk of 64 elements,
/// n = 4 chunks: one loop of 4 chunks, 2(P-1) = 6 steps. The ring is 0 1 | 2 3: hops 0->1
/// and 2->3 inside (`near` = 1 us + 256 B / 100 GB/s), 1->2 and 3->0 across (`far` =
/// 14 us + 256 B / 25 GB/s). A crossing's sender gets its step-s chunk from inside its
/// node at `(s-1) far + near`, before its port frees at `s far`, so each crossing hop
/// carries its 6 chunks back to back: `6 far`.
#[test]
fn ring_two_by_two_by_hand() {
    let intra = (IntraKind::Nvswitch, PerProto::all(1e-6), 100e9);
    let inter = InterSpec::new(PerProto::all(14e-6), 25e9);
    let spec = ClusterSpec::on_rails(2, 2, 1, intra, inter, PerProto::all(0.0));
    let topo = Cluster::new(&spec, 4).unwrap();
    let algo = build("nccl_ring", &[("chunk", int(256))]);
    let (sim, form) = point(algo.as_ref(), &topo, 256, 0.0);
    let near = 1e-6 + 256.0 / 100e9;
    let far = 14e-6 + 256.0 / 25e9;
    // Position q sends step s when it received step s-1; the hops alternate inside and
    // across, so every chain of 6 steps crosses the nodes 3 times and stays in 3 times.
    assert!(near < far);
    close(form.expect("one channel has its form"), 6.0 * far);
    close(sim, 6.0 * far);
}

/// `nccl_tree` on 2 nodes of 1 GPU, one channel, 3 chunks: the root (node 0) adds each
/// chunk from node 1 and sends it back. Up: chunks leave node 1 at 0, T, 2T (one port);
/// the third lands at 3T, goes down at 3T and lands at 4T; the down port was free.
#[test]
fn tree_two_nodes_by_hand() {
    let intra = (IntraKind::Nvswitch, PerProto::all(1e-6), 100e9);
    let inter = InterSpec::new(PerProto::all(5e-6), 25e9);
    let spec = ClusterSpec::on_rails(2, 1, 1, intra, inter, PerProto::all(0.0));
    let topo = Cluster::new(&spec, 2).unwrap();
    let algo = build("nccl_tree", &[("chunk", int(400)), ("channels", int(1))]);
    let (sim, form) = point(algo.as_ref(), &topo, 300, 0.0);
    let t = 5e-6 + 400.0 / 25e9;
    close(form.expect("two nodes, one channel"), 4.0 * t);
    close(sim, 4.0 * t);
}

/// `nccl_tree` with `schedule=up_then_down` (NCCL 2.9 and earlier with Simple and LL:
/// every chunk up, then every chunk down, on one stream) on 2 nodes of 2 GPUs, one NIC
/// each, one channel of 3 chunks of 400 B, C = 0. Ranks 0 1 | 2 3; the root is rank 0,
/// its children rank 1 (its chain) and rank 2 (node 1's head), whose child is rank 3.
/// `near` = 1 us + 400 B / 100 GB/s (NVSwitch), `far` = 5 us + 400 B / 25 GB/s (NIC).
///
/// Up: the leaves 1 and 3 send their 3 chunks at once; chunk j lands at `(j+1) near`.
/// Rank 2 adds chunk j at `(j+1) near` and sends it across, its NIC one chunk at a time:
/// chunk j lands at the root at `near + (j+1) far`. The root's way up ends with chunk 2:
/// `near + 3 far`.
/// Down, from there: the root sends all 3 chunks to both children (7 per child may be
/// in flight); chunk j reaches rank 2 at `near + 3 far + (j+1) far`, which passes it on
/// to rank 3 (`near`, its port idle since `far > near`): the last lands at
/// `2 near + 6 far`, the up pipeline (`near + 3 far`) plus the down one (`3 far + near`).
///
/// Split (up and down at once) the root sends chunk j down as soon as it is added, at
/// `near + (j+1) far`, so the last reaches rank 3 at `2 near + 4 far`.
#[test]
fn tree_up_then_down_by_hand() {
    let intra = (IntraKind::Nvswitch, PerProto::all(1e-6), 100e9);
    let inter = InterSpec::new(PerProto::all(5e-6), 25e9);
    let spec = ClusterSpec::on_rails(2, 2, 1, intra, inter, PerProto::all(0.0));
    let topo = Cluster::new(&spec, 4).unwrap();
    let near = 1e-6 + 400.0 / 100e9;
    let far = 5e-6 + 400.0 / 25e9;
    let params = [("chunk", int(400)), ("channels", int(1)), ("protocol", ParamValue::Str("simple".into()))];
    let mut serial = params.to_vec();
    serial.push(("schedule", ParamValue::Str("up_then_down".into())));
    let algo = build("nccl_tree", &serial);
    let (sim, form) = point(algo.as_ref(), &topo, 300, 0.0);
    close(sim, 2.0 * near + 6.0 * far);
    close(form.expect("one channel, one NIC"), 2.0 * near + 6.0 * far);
    let split = build("nccl_tree", &params);
    let (sim, _) = point(split.as_ref(), &topo, 300, 0.0);
    close(sim, 2.0 * near + 4.0 * far);
}

/// The sweep. Every form meets the simulation to 1e-9; one ring channel always has one;
/// several channels have theirs where each GPU's ports suffice (many points do).
#[test]
fn forms_meet_the_simulation_on_clusters() {
    let (mut points, mut ring_exact, mut ring_multi, mut tree_exact, mut serial_exact) = (0, 0, 0, 0, 0);
    for nodes in 1..=4 {
        for gpus in [1, 2, 3, 4, 8] {
            let mut nic_counts = vec![1, 2, gpus];
            nic_counts.retain(|&k| k <= gpus);
            nic_counts.dedup();
            for nics in nic_counts {
                for kind in [IntraKind::Nvswitch, IntraKind::Pcie] {
                    if kind == IntraKind::Pcie && (gpus == 1 || nodes > 2) {
                        continue;
                    }
                    for proto in [Proto::Simple, Proto::Ll, Proto::Ll128] {
                        let topo = cluster(nodes, gpus, nics, kind, proto);
                        for channels in [1u64, 2, 4] {
                            for chunk in [None, Some(1000u64)] {
                                let mut params = vec![("channels", int(channels))];
                                if let Some(c) = chunk {
                                    params.push(("chunk", int(c)));
                                }
                                let ring = build("nccl_ring", &params);
                                let tree = build("nccl_tree", &params);
                                params.push(("schedule", ParamValue::Str("up_then_down".into())));
                                let serial = build("nccl_tree", &params);
                                for n in [0usize, 5, 12_345, 300_001] {
                                    // Protocol chunks are large: the big size only with them.
                                    if chunk.is_some() && n > 20_000 {
                                        continue;
                                    }
                                    for c in [0.0, 1e-11] {
                                        let at = format!(
                                            "{nodes}x{gpus} nics={nics} {kind:?} {proto:?} ch={channels} \
                                             chunk={chunk:?} n={n} C={c}"
                                        );
                                        points += 1;
                                        let (sim, form) = point(ring.as_ref(), &topo, n, c);
                                        match form {
                                            Some(f) => {
                                                let err = if f == 0.0 { sim } else { (sim / f - 1.0).abs() };
                                                assert!(err < 1e-9, "nccl_ring {at}: sim {sim:e} form {f:e}");
                                                ring_exact += 1;
                                                ring_multi += usize::from(channels > 1);
                                            }
                                            None => assert!(channels > 1, "nccl_ring {at}: one channel, no form"),
                                        }
                                        for tree in [&tree, &serial] {
                                            let (sim, form) = point(tree.as_ref(), &topo, n, c);
                                            if let Some(f) = form {
                                                let err = if f == 0.0 { sim } else { (sim / f - 1.0).abs() };
                                                assert!(err < 1e-9, "{} {at}: sim {sim:e} form {f:e}", tree.label());
                                                tree_exact += 1;
                                                serial_exact += usize::from(tree.label().contains("up_then_down"));
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "{points} points: nccl_ring exact {ring_exact} ({ring_multi} multi-channel), nccl_tree {tree_exact} \
         ({serial_exact} up then down)"
    );
    assert!(ring_multi > 0 && tree_exact > 0 && serial_exact > 0);
    // Every point without a form was held to its bounds (in `point`).
    let (bounded, below, above) = BOUNDED.with(|b| *b.borrow());
    eprintln!("{bounded} points within bounds; time / lower at most {below:.3}, upper / time at most {above:.3}");
    assert_eq!(bounded, 3 * points - ring_exact - tree_exact);
}

/// `explain nccl_ring` on a cluster of 2 nodes of 4 GPUs: the rings node by node, the
/// pipeline, each hop's cost and the form beside the simulation; with 2 channels on
/// one NVSwitch port per GPU, no form and the port that lacks.
#[test]
fn explain_on_a_cluster() {
    use allreduce_sim::explain::{Request, explain};
    use allreduce_sim::scenario::TopologySpec;
    let intra = (IntraKind::Nvswitch, PerProto::all(1e-6), 100e9);
    let inter = InterSpec::new(PerProto::all(5e-6), 25e9);
    let spec = ClusterSpec::on_rails(2, 4, 2, intra, inter, PerProto::all(0.0));
    let req = |channels: u64| Request {
        algorithm: "nccl_ring".into(),
        params: vec![("chunk".into(), int(64)), ("channels".into(), int(channels))],
        ranks: 8,
        bytes: 256,
        cost_per_byte: 0.0,
        topology: Some(TopologySpec::Cluster(spec.clone())),
        ..Request::default()
    };
    let text = explain(&req(1)).unwrap();
    // Two GPUs share each NIC, so the channel enters and leaves each node by one NIC:
    // in at GPU 1, out at GPU 0, both on NIC 0.
    assert!(text.contains("channel 0: ring 1 2 3 0 | 5 6 7 4 (back to 1)"), "{text}");
    assert!(text.contains("per loop 14 steps"), "{text}");
    assert!(text.contains("hop across nodes: alpha 5 us"), "{text}");
    assert!(text.contains("(within tolerance 1e-9)"), "{text}");
    let text = explain(&req(2)).unwrap();
    assert!(text.contains("no exact form: GPU 0's own incoming side carries 2 channels on 1 port(s)"), "{text}");
    let tree = explain(&Request { algorithm: "nccl_tree".into(), ..req(2) }).unwrap();
    assert!(tree.contains("channel 1 (tree 1): parent of rank 0.. = 4 0 1 2 - 4 5 6"), "{tree}");
}
