//! The flow model (`network.model: flow`): shared links worked by hand, the two sharing
//! rules, the envelope; and over the regression matrix, every algorithm on every kind of
//! machine: verified, equal to the ideal model bit for bit wherever no link was shared,
//! never faster than it where links were.

mod common;
use common::Script;

use allreduce_sim::algos::{self, Algorithm, Params, Problem};
use allreduce_sim::scenario::ParamValue;
use allreduce_sim::sim::data::{DataPlane, Expectations, Init, ReduceOp, Reference, Vectors, initial_values};
use allreduce_sim::sim::engine::{NoObserver, SimStats};
use allreduce_sim::sim::flow::Sharing;
use allreduce_sim::sim::{Model, Network, Op, Rank, Region, simulate_on};
use allreduce_sim::topology::{
    FatTree, FullyConnected, Graph, Grid, Hierarchical, Level, Link, Node, RankOrder, Topology,
};

const WEIGHTED: Network = Network { model: Model::Flow(Sharing::Weighted), envelope: 0 };
const MAXMIN: Network = Network { model: Model::Flow(Sharing::MaxMin), envelope: 0 };

/// From each `(src, dst, elems)`, `elems` elements of 4 bytes, all issued at 0 (tags in
/// list order).
fn sends(ranks: usize, msgs: &[(Rank, Rank, usize)]) -> Script {
    let mut ops = vec![Vec::new(); ranks];
    for (tag, &(a, b, elems)) in msgs.iter().enumerate() {
        ops[a as usize].push(Op::send(b, tag as u32, Region::vec(0, elems)));
        ops[b as usize].push(Op::recv_copy(a, tag as u32, Region::vec(0, elems)));
    }
    for o in &mut ops {
        o.push(Op::WaitAll);
    }
    Script(ops)
}

fn timing(script: &Script, topo: &dyn Topology, elems: usize, net: Network) -> SimStats {
    let p = Problem { ranks: topo.ranks(), elems, elem_bytes: 4 };
    simulate_on(script, topo, p, 0.0, net, None::<fn(&[usize]) -> DataPlane>, &mut NoObserver).unwrap().0
}

/// A ring of `p` ranks (a `1 x p` torus), alpha = 1 s and B = 1 B/s per hop: whole numbers.
fn ring(p: usize, nics: u32) -> Grid {
    Grid::ring(p, Link { alpha: 1.0, bandwidth: 1.0 }, nics)
}

#[test]
fn two_flows_on_one_link_halve_it() {
    // Ring of 4: 0 -> 2 crosses 0->1 and 1->2; 1 -> 3 crosses 1->2 and 2->3. Both start
    // at 0 and move no data for their route latency, 2 hops = 2 s. From then on both are on
    // 1->2: 0.5 B/s each, so 4 bytes take 8 s: delivered at 10 s (alone: 2 + 4 = 6 s).
    let s = sends(4, &[(0, 2, 1), (1, 3, 1)]);
    for net in [WEIGHTED, MAXMIN, Network::IDEAL] {
        let st = timing(&s, &ring(4, 1), 1, net);
        let want = if net.is_flow() { 10.0 } else { 6.0 };
        assert_eq!(st.time, want, "{net:?}");
    }
    let st = timing(&s, &ring(4, 1), 1, WEIGHTED);
    let flow = st.flow.unwrap();
    assert!(flow.shared());
    let busy: Vec<(&str, u64, u32)> = flow.links.iter().map(|l| (l.name.as_str(), l.bytes, l.peak_flows)).collect();
    assert_eq!(busy, [("r0->r1", 4, 1), ("r1->r2", 8, 2), ("r2->r3", 4, 1)]);
}

#[test]
fn weighted_sharing_favours_the_shorter_route() {
    // Ring of 5, two NICs so rank 2 can take both messages at once. A = 0 -> 2 (2 hops,
    // latency 2 s) and B = 1 -> 2 (1 hop, latency 1 s) both cross 1->2; 4 bytes each.
    // B alone moves from 1 s to 2 s at 1 B/s: 1 byte, 3 left. At 2 s A starts moving.
    // Weighted (share ~ 1/latency): A gets 1/3 B/s, B 2/3 B/s. B's 3 bytes take 4.5 s: B
    // lands at 6.5 s, by when A moved 1.5 bytes; A's last 2.5 bytes alone: 9 s.
    // Max-min: 1/2 each; B's 3 bytes take 6 s: 8 s; A moved 3, its last byte: 9 s.
    let s = sends(5, &[(0, 2, 1), (1, 2, 1)]);
    let topo = ring(5, 2);
    let log = |net| {
        let mut log = Log::default();
        let p = Problem { ranks: 5, elems: 1, elem_bytes: 4 };
        simulate_on(&s, &topo, p, 0.0, net, None::<fn(&[usize]) -> DataPlane>, &mut log).unwrap();
        log.0
    };
    assert_eq!(log(WEIGHTED), [(1, 2, 0.0, 6.5), (0, 2, 0.0, 9.0)]);
    assert_eq!(log(MAXMIN), [(1, 2, 0.0, 8.0), (0, 2, 0.0, 9.0)]);
}

#[derive(Default)]
struct Log(Vec<(Rank, Rank, f64, f64)>);
impl allreduce_sim::sim::engine::Observer for Log {
    fn message_end(&mut self, m: &allreduce_sim::sim::engine::MessageInfo, end: f64) {
        self.0.push((m.src, m.dst, 0.0, end));
    }
}

#[test]
fn envelope_bytes_ride_with_every_message() {
    // 4 bytes + a 12-byte envelope over one hop: 1 + 16 / 1 = 17 s, in both models.
    let s = sends(2, &[(0, 1, 1)]);
    for model in [Model::Ideal, Model::Flow(Sharing::Weighted)] {
        let st = timing(&s, &ring(2, 1), 1, Network { model, envelope: 12 });
        assert_eq!(st.time, 17.0);
    }
}

#[test]
fn zero_latency_links_still_share() {
    // alpha = 0: a zero-latency route weighs 1 s under weighted sharing (as in SimGrid),
    // so equal routes split the link equally: 0 -> 2 and 1 -> 3 both on 1->2, 4 bytes at
    // 0.5 B/s: 8 s. (Zero weights would give NaN shares.)
    let s = sends(4, &[(0, 2, 1), (1, 3, 1)]);
    let topo = Grid::ring(4, Link { alpha: 0.0, bandwidth: 1.0 }, 1);
    assert_eq!(timing(&s, &topo, 1, WEIGHTED).time, 8.0);
}

#[test]
fn a_flow_that_leaves_gives_its_share_back() {
    // Ring of 8, two NICs, alpha = 0 (data moves at once), B = 1 B/s, max-min. Three
    // messages cross link 3->4 from 0 s: X = 2 -> 5 (8 bytes), Y = 3 -> 4 (4 bytes),
    // Z = 1 -> 5 (12 bytes; 4 hops either way, so the increasing way). 1/3 B/s each: Y's 4
    // bytes land at 12 s. X and Z then get 1/2: X's last 4 bytes take 8 s, 20 s; Z has
    // 12 - 4 - 4 = 4 left, alone at 1 B/s: 24 s (24 bytes over one 1 B/s link).
    let prog = sends(8, &[(2, 5, 2), (3, 4, 1), (1, 5, 3)]);
    let topo = Grid::ring(8, Link { alpha: 0.0, bandwidth: 1.0 }, 2);
    let mut log = Log::default();
    let p = Problem { ranks: 8, elems: 3, elem_bytes: 4 };
    simulate_on(&prog, &topo, p, 0.0, MAXMIN, None::<fn(&[usize]) -> DataPlane>, &mut log).unwrap();
    assert_eq!(log.0, [(3, 4, 0.0, 12.0), (2, 5, 0.0, 20.0), (1, 5, 0.0, 24.0)]);
}

// ---------------------------------------------------------------------------------------
// Every algorithm, every machine: flow against ideal

fn variants() -> Vec<Box<dyn Algorithm>> {
    let mut out = Vec::new();
    for info in algos::registry() {
        out.push(algos::build(info.id, Params::default()).unwrap());
    }
    let p = |k: &str, v: u64| (k.to_string(), ParamValue::Int(v));
    out.push(algos::build("chain", Params::new(vec![p("segments", 4)])).unwrap());
    out.push(algos::build("double_binary_tree", Params::new(vec![p("chunk", 64)])).unwrap());
    out
}

/// What [`against_ideal`] found, when every check held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// The algorithm does not run on that point.
    NotApplicable,
    /// Sharing never slowed a flow: the ideal run, bit for bit.
    Unshared,
    /// Sharing slowed flows, and the run took at least the ideal time.
    Shared,
    /// Sharing made the run faster than the ideal one, where the ideal ports are
    /// contended out of order (a scheduling anomaly).
    Anomaly,
}

/// Run `algo` on `topo` under `net` and under the ideal model, with data, and check the
/// flow run against the ideal one.
fn against_ideal(algo: &dyn Algorithm, topo: &dyn Topology, n: usize, c: f64, net: Network) -> Result<Outcome, String> {
    let np = topo.ranks();
    let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
    let what = format!("{} on {} n={n} under {:?}", algo.label(), topo.describe(), net.model);
    let m = allreduce_sim::algos::Machine { topo, cost_per_byte: c };
    if algo.applicable(&p, &m).is_err() {
        return Ok(Outcome::NotApplicable);
    }
    let inputs: Vectors = (0..np).map(|r| initial_values(Init::Random, 11, r, n)).collect::<Vec<Vec<f32>>>().into();
    let reference = Reference::of(&inputs, ReduceOp::Sum);
    let run = |net: Network, inputs: Vectors, waits: &mut PortWaits| {
        let plane = move |scratch: &[usize]| DataPlane::new(inputs, scratch, ReduceOp::Sum);
        simulate_on(algo, topo, p, c, net, Some(plane), waits).map_err(|e| format!("{what}: {e}"))
    };
    let (flow, fv) = run(net, inputs.clone(), &mut PortWaits::default())?;
    let mut waits = PortWaits::default();
    let (ideal, iv) = run(Network::IDEAL, inputs, &mut waits)?;
    let check = reference.check(fv.as_ref().unwrap(), algo.reduction_depth(&p, topo), &Expectations::Allreduce);
    if !check.verified {
        return Err(format!("{what}: wrong result {:?}", check.first_violation));
    }
    let fs = flow.flow.as_ref().unwrap();
    if fs.faster_than_alone > 0 {
        return Err(format!("{what}: {} messages beat their time alone", fs.faster_than_alone));
    }
    if !fs.shared() {
        // No flow ever slowed: the same events in the same order, so the same times and
        // the same vectors, bit for bit.
        if flow.time != ideal.time || flow.rank_finish != ideal.rank_finish || fv != iv {
            return Err(format!("{what}: nothing shared, yet {} s against the ideal {} s", flow.time, ideal.time));
        }
        return Ok(Outcome::Unshared);
    }
    if flow.time >= ideal.time * (1.0 - 1e-9) {
        return Ok(Outcome::Shared);
    }
    // Faster than the ideal model although no message was: only a different order at a
    // contended port can do that (a scheduling anomaly; docs/flow-model.md). Even where
    // the ideal model has a closed form a contended step is served greedily, and a
    // message slowed by sharing can change that order; without any port wait it cannot.
    if waits.0 == 0 {
        return Err(format!(
            "{what}: {} s is {:.3}% faster than the ideal {} s",
            flow.time,
            100.0 * (1.0 - flow.time / ideal.time),
            ideal.time
        ));
    }
    Ok(Outcome::Anomaly)
}

/// Counts the messages that waited for a port (started after they were issued).
#[derive(Default)]
struct PortWaits(usize);
impl allreduce_sim::sim::engine::Observer for PortWaits {
    fn message(&mut self, m: &allreduce_sim::sim::engine::MessageInfo, start: f64, _end: f64) {
        if start > m.issued {
            self.0 += 1;
        }
    }
}

/// Runs, the label of every run that was a scheduling anomaly, and the failures.
fn sweep(topos: &[Box<dyn Topology>], nets: &[Network]) -> (usize, Vec<String>, Vec<String>) {
    let (mut runs, mut anomalies, mut bad) = (0, Vec::new(), Vec::new());
    for algo in variants() {
        for topo in topos {
            let np = topo.ranks();
            for n in [0, 1, np.saturating_sub(1).max(1), 3 * np + 1, 4096] {
                for c in [0.0, 1e-10] {
                    for &net in nets {
                        match against_ideal(algo.as_ref(), topo.as_ref(), n, c, net) {
                            Ok(outcome) => {
                                runs += 1;
                                if outcome == Outcome::Anomaly {
                                    anomalies.push(algo.label());
                                }
                            }
                            Err(e) => bad.push(e),
                        }
                    }
                }
            }
        }
    }
    (runs, anomalies, bad)
}

/// Machines with switches: fat trees (8:1 and with two spines; host order and strided) and
/// a graph where two leaf switches hang off one core switch through links of different
/// latency, so flows of different weight meet on the core links.
fn switched() -> Vec<Box<dyn Topology>> {
    let l = Link { alpha: 1e-6, bandwidth: 12.5e9 };
    let slow = Link { alpha: 4e-6, bandwidth: 12.5e9 };
    let tree = |spines, uplink, order, ranks| -> Box<dyn Topology> {
        Box::new(FatTree::new(4, 3, spines, l, uplink).unwrap().placed(order, ranks).unwrap())
    };
    let host = |name: &str| Node { name: name.to_string(), host: true, nics: 1 };
    let switch = |name: &str| Node { name: name.to_string(), host: false, nics: 1 };
    // h0 h1 h2 on s0, h3 h4 on s1, s0 - core fast, s1 - core slow.
    let nodes =
        vec![host("h0"), host("h1"), host("h2"), host("h3"), host("h4"), switch("s0"), switch("s1"), switch("core")];
    let links = [(0, 5, l), (1, 5, l), (2, 5, l), (3, 6, l), (4, 6, l), (5, 7, l), (6, 7, slow)];
    vec![
        tree(1, Link { alpha: 1e-6, bandwidth: 12.5e9 / 2.0 }, RankOrder::HostOrder, 12),
        tree(1, Link { alpha: 1e-6, bandwidth: 12.5e9 / 2.0 }, RankOrder::Strided, 12),
        tree(2, l, RankOrder::Strided, 7),
        Box::new(Graph::new(nodes, &links).unwrap()),
    ]
}

#[test]
fn one_nic_on_private_links_shares_nothing_and_equals_the_ideal_model() {
    // Fully connected under flow: a private link per ordered pair, and one port per rank
    // means one message per pair at a time, so no link is ever shared: every algorithm of
    // the matrix must give the ideal model's times and vectors, bit for bit.
    let mut topos: Vec<Box<dyn Topology>> = Vec::new();
    for np in [1usize, 2, 3, 4, 5, 7, 8, 12, 16] {
        for (alpha, bw) in [(1e-6, 12.5e9), (0.0, 25e9)] {
            topos.push(Box::new(FullyConnected { ranks: np, link: Link { alpha, bandwidth: bw }, nics: 1 }));
        }
    }
    for algo in variants() {
        for topo in &topos {
            let np = topo.ranks();
            for n in [0, 1, np.saturating_sub(1).max(1), 3 * np + 1, 4096] {
                for net in [WEIGHTED, MAXMIN] {
                    let outcome = against_ideal(algo.as_ref(), topo.as_ref(), n, 5e-11, net).unwrap();
                    let what = format!("{} P={np} n={n}", algo.label());
                    assert!(matches!(outcome, Outcome::Unshared | Outcome::NotApplicable), "{what}: {outcome:?}");
                }
            }
        }
    }
}

#[test]
fn every_algorithm_on_every_machine_verifies_and_is_never_faster_than_ideal() {
    let l = Link { alpha: 1e-6, bandwidth: 12.5e9 };
    let lv = |size, alpha, bandwidth| Level { size, link: Link { alpha, bandwidth }, nics: None };
    let topos: Vec<Box<dyn Topology>> = vec![
        Box::new(FullyConnected { ranks: 6, link: l, nics: 2 }),
        Box::new(Grid::torus(4, 4, l, 1)),
        Box::new(Grid::torus(3, 4, l, 2)),
        Box::new(Grid::mesh(3, 3, l, 2)),
        Box::new(Grid::ring(7, l, 1)),
        Box::new(Hierarchical::new(vec![lv(4, 0.7e-6, 150e9), lv(3, 5e-6, 12.5e9)], 1).unwrap()),
        Box::new(Hierarchical::new(vec![lv(2, 0.7e-6, 150e9), lv(2, 2e-6, 40e9), lv(2, 5e-6, 12.5e9)], 2).unwrap()),
    ];
    let topos: Vec<Box<dyn Topology>> = topos.into_iter().chain(switched()).collect();
    let (runs, anomalies, bad) = sweep(&topos, &[WEIGHTED, MAXMIN]);
    assert!(bad.is_empty(), "{} of {runs} failed:\n{}", bad.len(), bad.join("\n"));
    assert!(runs > 2000, "only {runs} runs");
    // A handful of pipelined double_binary_tree and folded halving_doubling points.
    let at_once = |a: &&String| matches!(a.as_str(), "naive" | "direct");
    let two_rings = |a: &&String| a.as_str() == "bidirectional_ring";
    let others: Vec<&String> = anomalies.iter().filter(|a| !at_once(a) && !two_rings(a)).collect();
    assert!(others.len() <= runs / 100, "{} of {runs} runs faster than the ideal model: {others:?}", others.len());
    // naive and direct issue all P-1 messages of a phase at once: on one NIC the ideal
    // model's ports serve them in priority order, while shared links let them all make
    // progress, which is sometimes sooner (52 runs of this sweep).
    let n = anomalies.iter().filter(at_once).count();
    assert!(n <= runs / 50, "{n} all-at-once runs of {runs} faster than the ideal model");
    // bidirectional_ring's two streams per rank contend for its ports and compute unit
    // in an order that ties decide (it has no closed form there): under an eighth of its runs.
    let n = anomalies.iter().filter(two_rings).count();
    let its_runs = runs / variants().len();
    assert!(n <= its_runs / 8, "bidirectional_ring: {n} of {its_runs} runs faster than the ideal model");
}
