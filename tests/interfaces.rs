//! Ports belong to interfaces: a machine whose GPUs share a node's NIC, written by hand,
//! run under the ideal model.

use allreduce_sim::algos::{self, Params, Problem};
use allreduce_sim::sim::data::DataPlane;
use allreduce_sim::sim::engine::{MessageInfo, Observer};
use allreduce_sim::sim::{Network, simulate_on};
use allreduce_sim::topology::{Link, Topology};

/// Two nodes of two GPUs (ranks 0, 1 on node 0; 2, 3 on node 1). Inside a node a GPU
/// talks over its own NVLink interface (interfaces 0..4, one per rank); across nodes
/// through its node's one NIC (interfaces 4 and 5), `nic_ports` ports each.
#[derive(Debug)]
struct TwoNodes {
    nic_ports: u32,
}

const INTRA: Link = Link { alpha: 1.0, bandwidth: 4096.0 };
const INTER: Link = Link { alpha: 2.0, bandwidth: 1024.0 };

impl Topology for TwoNodes {
    fn ranks(&self) -> usize {
        4
    }
    fn link(&self, a: usize, b: usize) -> Link {
        if a / 2 == b / 2 { INTRA } else { INTER }
    }
    fn nics(&self, _rank: usize) -> u32 {
        1
    }
    fn best_link(&self) -> (Link, u32) {
        (INTRA, 1)
    }
    fn interfaces(&self) -> usize {
        6
    }
    fn interface_ports(&self, i: usize) -> u32 {
        if i < 4 { 1 } else { self.nic_ports }
    }
    fn route_interfaces(&self, a: usize, b: usize) -> (usize, usize) {
        if a / 2 == b / 2 { (a, b) } else { (4 + a / 2, 4 + b / 2) }
    }
    fn describe(&self) -> String {
        "two nodes of two GPUs".into()
    }
}

/// Every message's rank pair and its start and end.
#[derive(Default)]
struct Log(Vec<(u32, u32, f64, f64)>);

impl Observer for Log {
    fn message(&mut self, m: &MessageInfo, start: f64, end: f64) {
        self.0.push((m.src, m.dst, start, end));
    }
}

fn butterfly(topo: &TwoNodes) -> (f64, Vec<(u32, u32, f64, f64)>) {
    let algo = algos::build("butterfly", Params::default()).unwrap();
    // 1024 elements of 4 bytes: m = 4096 B. Inside a node a message takes 1 + 4096/4096
    // = 2 s, across 2 + 4096/1024 = 6 s; a reduction 4096 / 4096 = 1 s.
    let p = Problem { ranks: 4, elems: 1024, elem_bytes: 4 };
    let mut log = Log::default();
    let none = None::<fn(&[usize]) -> DataPlane>;
    let (stats, _) = simulate_on(algo.as_ref(), topo, p, 1.0 / 4096.0, Network::IDEAL, none, &mut log).unwrap();
    log.0.sort_by(|a, b| a.2.total_cmp(&b.2).then((a.0, a.1).cmp(&(b.0, b.1))));
    (stats.time, log.0)
}

/// Butterfly at P = 4: step 0 swaps inside each node (each GPU on its own NVLink
/// interface, all four at once: 0..2 s, reduced by 3 s); step 1 swaps across nodes, and
/// the two messages leaving node 0 (0 -> 2, 1 -> 3) need its one NIC's one outgoing port,
/// as the two arriving need its incoming port. In the order (issue time, sender rank):
/// 0 -> 2 and 2 -> 0 go first, 3..9 s; 1 -> 3 and 3 -> 1 wait for the NIC, 9..15 s.
/// Ranks 1 and 3 reduce last, 15..16 s: the run takes 16 s.
#[test]
fn a_shared_nic_serves_its_gpus_one_after_the_other() {
    let (time, msgs) = butterfly(&TwoNodes { nic_ports: 1 });
    assert_eq!(time, 16.0);
    let want = [
        (0, 1, 0.0, 2.0),
        (1, 0, 0.0, 2.0),
        (2, 3, 0.0, 2.0),
        (3, 2, 0.0, 2.0),
        (0, 2, 3.0, 9.0),
        (2, 0, 3.0, 9.0),
        (1, 3, 9.0, 15.0),
        (3, 1, 9.0, 15.0),
    ];
    assert_eq!(msgs, want);
}

/// The same machine with two ports on each NIC: the cross-node messages no longer queue,
/// and the run is butterfly's `log2 P (T + R)` with each step's own T: (2 + 1) + (6 + 1).
#[test]
fn a_nic_with_a_port_per_gpu_does_not_queue() {
    let (time, msgs) = butterfly(&TwoNodes { nic_ports: 2 });
    assert_eq!(time, 10.0);
    assert!(msgs[4..].iter().all(|m| (m.2, m.3) == (3.0, 9.0)), "{msgs:?}");
}
