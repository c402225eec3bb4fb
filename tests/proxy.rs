//! A cluster's network proxy (`inter.proxy`): a message across nodes waits its sender's
//! connections across nodes times the proxy's time per connection, and with Simple its
//! receiver's as well (the receiving GPU reads a Simple step once its proxy has moved the
//! tail; LL and LL128 lines carry their own flags). Worked by hand on a two-node and a
//! four-node tree, with the connections counted from the programs, the closed form and
//! the bounds held to the run, and nothing changed with the key at 0.

use allreduce_sim::algos::{self, Algorithm, Machine, Params, Problem};
use allreduce_sim::scenario::ParamValue;
use allreduce_sim::sim::proxy::{ProxyView, connections};
use allreduce_sim::topology::{Cluster, ClusterSpec, InterSpec, IntraKind, PerProto, Proto, Topology};

mod common;
use common::run_allreduce as run;

const ALPHA: f64 = 5e-6;
const B: f64 = 25e9;
const NEAR_ALPHA: f64 = 1e-6;
const NEAR_B: f64 = 100e9;

fn build(name: &str, params: &[(&str, ParamValue)]) -> Box<dyn Algorithm> {
    let params = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    algos::build(name, Params::new(params)).expect("builds")
}

fn cluster(nodes: usize, gpus: usize, nics: usize, proxy: f64) -> Cluster {
    let intra = (IntraKind::Nvswitch, PerProto::all(NEAR_ALPHA), NEAR_B);
    let mut inter = InterSpec::new(PerProto::all(ALPHA), B);
    inter.proxy_s = PerProto::all(proxy);
    let spec = ClusterSpec::on_rails(nodes, gpus, nics, intra, inter, PerProto::all(0.0));
    Cluster::new(&spec, nodes * gpus).unwrap()
}

fn close(got: f64, want: f64) -> bool {
    (got / want - 1.0).abs() < 1e-12
}

/// Two nodes of two GPUs (a NIC each), NCCL's split tree, one channel, one element, with
/// Simple (the cluster's default). Node 1's first GPU (2) talks to the parent node, node
/// 0's second GPU (1) to the child: each has two connections across nodes (the sum up,
/// the result down), so each of the two messages across nodes waits `2 proxy` for its
/// sender's proxy and `2 proxy` for its receiver's: `4 near + 2 far + 8 proxy`, where the
/// tree without a proxy took `4 near + 2 far` (tests/nccl_tree_patterns.rs).
#[test]
fn two_node_split_tree_waits_two_connections_each_way() {
    let proxy = 0.7e-6;
    let topo = cluster(2, 2, 2, proxy);
    let near = NEAR_ALPHA + 4.0 / NEAR_B;
    let far = ALPHA + 4.0 / B;
    let split = build("nccl_tree", &[("pattern", ParamValue::Str("split".into())), ("channels", ParamValue::Int(1))]);
    let p = Problem { ranks: 4, elems: 1, elem_bytes: 4 };
    assert_eq!(connections(split.as_ref(), p, &topo), vec![0, 2, 2, 0]);
    let t = run(split.as_ref(), &topo, 1);
    assert!(close(t, 4.0 * near + 2.0 * far + 8.0 * proxy), "{t:e}");
    // The closed form prices each hop by the same pairs, so it meets the run.
    let view = ProxyView::of(split.as_ref(), p, &topo).expect("a proxy cost");
    let form = split.closed_form(&p, &Machine { topo: &view, cost_per_byte: 0.0 });
    let (form, _) = form.expect("two nodes, one channel: a form");
    assert!(close(form, t), "form {form:e} run {t:e}");
    // At 0 the pairs are the machine's own and no view is made.
    let plain = cluster(2, 2, 2, 0.0);
    assert!(ProxyView::of(split.as_ref(), p, &plain).is_none());
    assert!(close(run(split.as_ref(), &plain, 1), 4.0 * near + 2.0 * far));
}

/// Four nodes of one GPU (one NIC), NCCL's tree, one channel, one element, with Simple.
/// Tree 0 is 0 -> 2 -> {1, 3}: rank 2 receives from 1 and 3 and sends to 0 on the way
/// up, receives from 0 and sends to 1 and 3 on the way down, six connections; the others
/// two each. Every message across nodes has rank 2 at one end and a rank of two at the
/// other, so it waits `2 + 6` proxies. With `F = alpha + 4/B` and one port each way (the
/// ideal model holds a port for a message's whole cost): up, 1 and 3 reach 2 one after
/// the other, `2 (F + 8 proxy)`; 2 to 0, `F + 8 proxy`; 0 to 2, `F + 8 proxy`; 2 to 1
/// and 3 one after the other, `2 (F + 8 proxy)`: in all `6 F + 48 proxy`.
#[test]
fn four_node_tree_waits_for_its_busiest_proxy() {
    let proxy = 0.5e-6;
    let topo = cluster(4, 1, 1, proxy);
    let f = ALPHA + 4.0 / B;
    let tree = build("nccl_tree", &[("channels", ParamValue::Int(1))]);
    let p = Problem { ranks: 4, elems: 1, elem_bytes: 4 };
    assert_eq!(connections(tree.as_ref(), p, &topo), vec![2, 2, 6, 2]);
    let t = run(tree.as_ref(), &topo, 1);
    assert!(close(t, 6.0 * f + 48.0 * proxy), "{t:e} against {:e}", 6.0 * f + 48.0 * proxy);
    let plain = cluster(4, 1, 1, 0.0);
    assert!(close(run(tree.as_ref(), &plain, 1), 6.0 * f));
    // A head serving its parent and children through one NIC has no form; its bounds,
    // priced by the same pairs, hold the run.
    let view = ProxyView::of(tree.as_ref(), p, &topo).expect("a proxy cost");
    let m = Machine { topo: &view, cost_per_byte: 0.0 };
    assert!(tree.closed_form(&p, &m).is_none());
    let (lo, hi) = tree.bounds(&p, &m).expect("bounds");
    assert!(lo <= t * (1.0 + 1e-12) && t <= hi * (1.0 + 1e-12), "{lo:e} <= {t:e} <= {hi:e}");
    let (lo0, _) = tree.bounds(&p, &Machine { topo: &plain, cost_per_byte: 0.0 }).expect("bounds");
    assert!(lo > lo0, "the lower bound counts the proxy: {lo:e} against {lo0:e}");
}

/// NCCL's ring on 2 nodes of 2 GPUs: each crossing GPU has one connection across nodes
/// (a send, or a receive), so every message across nodes waits one proxy at each end with
/// Simple; inside a node nothing changes. One channel has its form, and the form meets
/// the run.
#[test]
fn ring_crossings_wait_one_connection() {
    let proxy = 0.9e-6;
    let topo = cluster(2, 2, 2, proxy);
    let ring = build("nccl_ring", &[("channels", ParamValue::Int(1))]);
    let p = Problem { ranks: 4, elems: 1000, elem_bytes: 4 };
    assert_eq!(connections(ring.as_ref(), p, &topo), vec![1, 1, 1, 1]);
    let view = ProxyView::of(ring.as_ref(), p, &topo).expect("a proxy cost");
    assert_eq!(view.link(1, 2).alpha, ALPHA + 2.0 * proxy);
    assert_eq!(view.link(0, 1).alpha, NEAR_ALPHA);
    let t = run(ring.as_ref(), &topo, 1000);
    let (form, _) = ring.closed_form(&p, &Machine { topo: &view, cost_per_byte: 0.0 }).expect("a form");
    assert!(close(form, t), "form {form:e} run {t:e}");
    let t0 = run(ring.as_ref(), &cluster(2, 2, 2, 0.0), 1000);
    assert!(t > t0);
}

/// With LL (and LL128) the receiving GPU polls its lines' flags, so a message waits only
/// its sender's proxy: the two-node split tree of the first case pays `4 proxy` more than
/// without one, where Simple pays `8 proxy`, and the ring's crossing pair `alpha + proxy`.
#[test]
fn ll_waits_the_sender_only() {
    let proxy = 0.7e-6;
    let split = build("nccl_tree", &[("pattern", ParamValue::Str("split".into())), ("channels", ParamValue::Int(1))]);
    let t = |proxy: f64, proto: Proto| run(split.as_ref(), &cluster(2, 2, 2, proxy).with_protocol(proto), 1);
    assert!(close(t(proxy, Proto::Ll) - t(0.0, Proto::Ll), 4.0 * proxy), "{:e}", t(proxy, Proto::Ll));
    assert!(close(t(proxy, Proto::Ll128) - t(0.0, Proto::Ll128), 4.0 * proxy));
    assert!(close(t(proxy, Proto::Simple) - t(0.0, Proto::Simple), 8.0 * proxy));
    let ring = build("nccl_ring", &[("channels", ParamValue::Int(1))]);
    let p = Problem { ranks: 4, elems: 1000, elem_bytes: 4 };
    let ll = cluster(2, 2, 2, proxy).with_protocol(Proto::Ll);
    let view = ProxyView::of(ring.as_ref(), p, &ll).expect("a proxy cost");
    assert_eq!(view.link(1, 2).alpha, ALPHA + proxy);
    assert_eq!(view.link(2, 1).alpha, ALPHA + proxy);
}
