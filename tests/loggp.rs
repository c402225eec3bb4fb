//! The LogGP model (docs/loggp.md): its rules on hand-computed cases, and the engine
//! against the closed forms of ring, butterfly and the binomial tree, which are read
//! off the schedules by LogGP's rules (src/cost_model/loggp.rs), on both sides of the
//! eager threshold.

mod common;
use common::Script;

use allreduce_sim::algos::{self, Algorithm, Machine, Params, Problem, forms};
use allreduce_sim::collective::Collective;
use allreduce_sim::sim::engine::{NoObserver, SimError, SimStats};
use allreduce_sim::sim::network::loggp::LogGP;
use allreduce_sim::sim::{Model, Network, Op, Region, simulate_on};
use allreduce_sim::topology::{FullyConnected, Link};

fn net(l: LogGP) -> Network {
    Network { model: Model::LogGP(l), envelope: 0 }
}

/// The topology's link is not LogGP's: a slow one shows it is not used.
fn topo(ranks: usize, nics: u32) -> FullyConnected {
    FullyConnected { ranks, link: Link { alpha: 1e3, bandwidth: 1e-3 }, nics }
}

fn run(algo: &dyn Algorithm, p: Problem, nics: u32, c: f64, l: LogGP) -> Result<SimStats, SimError> {
    let none = None::<fn(&[usize]) -> allreduce_sim::sim::data::DataPlane>;
    simulate_on(algo, &topo(p.ranks, nics), p, c, net(l), none, &mut NoObserver).map(|(s, _)| s)
}

/// o = 1, g = 3, L = 10, G = 0.5 s per byte, everything eager.
const BASE: LogGP = LogGP { o: 1.0, g: 3.0, latency: 10.0, per_byte: 0.5, eager_threshold: 1 << 20 };

/// One message of 9 bytes (one element of 9 bytes keeps the arithmetic whole).
const MSG: Region = Region::vec(0, 1);
fn nine(ranks: usize) -> Problem {
    Problem { ranks, elems: 1, elem_bytes: 9 }
}

#[test]
fn a_ping_costs_o_then_l_and_the_bytes_then_o() {
    // Send overhead 0-1, ports at 1, last byte 1 + 10 + 8 x 0.5 = 15, receive overhead
    // 15-16.
    let ping = Script(vec![vec![Op::send(1, 0, MSG)], vec![Op::recv_copy(0, 0, MSG), Op::WaitAll]]);
    assert_eq!(run(&ping, nine(2), 1, 0.0, BASE).unwrap().time, 16.0);
    // A gap longer than the message: the ports are free at 1 + 100 + 4 = 105, after the
    // run, which still ends at 16 (a port's release finishes nothing).
    let long_gap = LogGP { g: 100.0, ..BASE };
    assert_eq!(run(&ping, nine(2), 1, 0.0, long_gap).unwrap().time, 16.0);
    // Adding what arrives follows the receive overhead: 16 + 9 x 2.
    let add = Script(vec![vec![Op::send(1, 0, MSG)], vec![Op::recv_reduce(0, 0, MSG), Op::WaitAll]]);
    assert_eq!(run(&add, nine(2), 1, 2.0, BASE).unwrap().time, 34.0);
    // An empty message costs L alone on the wire: 1 + 10 + 1.
    let empty = Script(vec![
        vec![Op::send(1, 0, Region::vec(0, 0))],
        vec![Op::recv_copy(0, 0, Region::vec(0, 0)), Op::WaitAll],
    ]);
    assert_eq!(run(&empty, nine(2), 1, 0.0, BASE).unwrap().time, 12.0);
}

#[test]
fn the_gap_spaces_messages_through_a_port() {
    // Two messages 0 -> 1. Overheads 0-1 and 1-2. The first takes the ports at 1 and
    // frees them at 1 + g + 4; the second starts then (or at 2), lands 14 later, and
    // its receive overhead ends 1 after that.
    let two = Script(vec![
        vec![Op::send(1, 0, MSG), Op::send(1, 1, MSG)],
        vec![Op::recv_copy(0, 0, MSG), Op::recv_copy(0, 1, MSG), Op::WaitAll],
    ]);
    // g = 20: second start 25, last byte 39, done 40.
    assert_eq!(run(&two, nine(2), 1, 0.0, LogGP { g: 20.0, ..BASE }).unwrap().time, 40.0);
    // g = 0: the bytes alone space them: second start max(2, 5) = 5, done 20.
    assert_eq!(run(&two, nine(2), 1, 0.0, LogGP { g: 0.0, ..BASE }).unwrap().time, 20.0);
    // Two ports: the second goes at 2, when its overhead ends: done 17.
    assert_eq!(run(&two, nine(2), 2, 0.0, LogGP { g: 20.0, ..BASE }).unwrap().time, 17.0);
    // A large o: the CPU, not the port, spaces them (overheads 0-30 and 30-60; the
    // second starts at 60, lands at 74, its receive overhead ends at 104).
    assert_eq!(run(&two, nine(2), 1, 0.0, LogGP { o: 30.0, ..BASE }).unwrap().time, 104.0);
}

#[test]
fn the_overheads_queue_on_the_compute_unit_with_the_reductions() {
    // Rank 1 first adds 9 bytes locally (C = 2: 0-18), then receives: the message lands
    // at 15 but its receive overhead waits for the compute unit, 18-19.
    let busy =
        Script(vec![vec![Op::send(1, 0, MSG)], vec![Op::reduce(MSG, MSG), Op::recv_copy(0, 0, MSG), Op::WaitAll]]);
    assert_eq!(run(&busy, nine(2), 1, 2.0, BASE).unwrap().time, 19.0);
    // Rank 0 adds first (0-18): its send overhead follows, 18-19; ports 19; lands 33;
    // received 34.
    let late =
        Script(vec![vec![Op::reduce(MSG, MSG), Op::send(1, 0, MSG)], vec![Op::recv_copy(0, 0, MSG), Op::WaitAll]]);
    assert_eq!(run(&late, nine(2), 1, 2.0, BASE).unwrap().time, 34.0);
}

#[test]
fn above_the_threshold_a_message_waits_for_its_receive() {
    // Rank 1 adds 9 bytes (0-18) and only then posts its receive.
    let late_recv = Script(vec![
        vec![Op::send(1, 0, MSG)],
        vec![Op::reduce(MSG, MSG), Op::Wait(0), Op::recv_copy(0, 0, MSG), Op::WaitAll],
    ]);
    // Eager (9 bytes <= 9): lands at 15, received 18-19 once the compute unit is free.
    let eager = LogGP { eager_threshold: 9, ..BASE };
    assert_eq!(run(&late_recv, nine(2), 1, 2.0, eager).unwrap().time, 19.0);
    // Rendezvous (9 > 8): its overhead ends at 1, then it waits for the receive posted
    // at 18: ports 18, last byte 32, received 33.
    let rendezvous = LogGP { eager_threshold: 8, ..BASE };
    assert_eq!(run(&late_recv, nine(2), 1, 2.0, rendezvous).unwrap().time, 33.0);
    // A rendezvous send whose receive is never posted deadlocks, as in MPI.
    let never = Script(vec![vec![Op::send(1, 0, MSG), Op::WaitSends(0)], vec![]]);
    let err = run(&never, nine(2), 1, 0.0, rendezvous).unwrap_err();
    assert!(err.to_string().contains("never received a message from rank 0"), "{err}");
}

#[test]
fn a_small_ring_by_hand() {
    // P = 3, n = 3 elements of 4 bytes: chunks of m = 4 bytes, W = L + 3 G = 8,
    // gap 2 + 3 = 5. o = 1, C = 0.5: a reduce-scatter step takes 2o + W + m C = 12, an
    // allgather step 2o + W = 10; two of each: 44.
    let l = LogGP { o: 1.0, g: 2.0, latency: 5.0, per_byte: 1.0, eager_threshold: 1 << 20 };
    let p = Problem { ranks: 3, elems: 3, elem_bytes: 4 };
    let ring = algos::build("ring", Params::default()).unwrap();
    assert_eq!(run(ring.as_ref(), p, 1, 0.5, l).unwrap().time, 44.0);
    // g = 15 (gap 18): the messages start at 1, 19, 37, 55, each 18 after the one
    // before, later than their overheads end (13, 31, 47); the last lands at 63 and is
    // received at 64, with nothing to add (allgather).
    let gapped = LogGP { g: 15.0, ..l };
    assert_eq!(run(ring.as_ref(), p, 1, 0.5, gapped).unwrap().time, 64.0);
    // The closed form says the same.
    let topo = topo(3, 1);
    let m = Machine { topo: &topo, cost_per_byte: 0.5 };
    assert_eq!(ring.closed_form_loggp(&p, &m, &l).unwrap().0, 44.0);
    assert_eq!(ring.closed_form_loggp(&p, &m, &gapped).unwrap().0, 64.0);
}

fn rel(a: f64, b: f64) -> f64 {
    if a == b { 0.0 } else { (a - b).abs() / a.abs().max(b.abs()) }
}

/// Parameter sets: CPU-bound, latency-bound, gap-bound (g beyond a step), bytes-bound,
/// no overhead; each with the threshold below and above the messages.
fn param_sets() -> Vec<(LogGP, f64)> {
    let sets = [
        (LogGP { o: 1.5e-6, g: 1e-6, latency: 2.5e-6, per_byte: 6e-12, eager_threshold: 0 }, 5e-11),
        (LogGP { o: 0.2e-6, g: 0.5e-6, latency: 5e-6, per_byte: 8e-11, eager_threshold: 0 }, 0.0),
        (LogGP { o: 0.1e-6, g: 40e-6, latency: 1e-6, per_byte: 1e-12, eager_threshold: 0 }, 1e-12),
        (LogGP { o: 0.0, g: 0.0, latency: 1e-6, per_byte: 1e-10, eager_threshold: 0 }, 2e-10),
        (LogGP { o: 3e-6, g: 0.0, latency: 0.0, per_byte: 0.0, eager_threshold: 0 }, 0.0),
    ];
    sets.iter().flat_map(|&(l, c)| [(l, c), (LogGP { eager_threshold: u64::MAX, ..l }, c)]).collect()
}

/// The engine meets `algo`'s LogGP closed form to 1e-9 wherever it has one; returns how
/// many points it checked.
fn check(id: &str, collective: Collective, ranks: &[usize], nics: &[u32]) -> usize {
    let algo = algos::build_for(collective, id, Params::default()).unwrap();
    let mut checked = 0;
    for &np in ranks {
        for elems in [np * 64, np * 1000, np * 4096, np * 64 + 1] {
            let p = Problem { ranks: np, elems, elem_bytes: 4 };
            for &k in nics {
                for (l, c) in param_sets() {
                    let topo = topo(np, k);
                    let m = Machine { topo: &topo, cost_per_byte: c };
                    let Some((want, tol)) = algo.closed_form_loggp(&p, &m, &l) else { continue };
                    let got = run(algo.as_ref(), p, k, c, l).unwrap().time;
                    let err = rel(got, want);
                    assert!(
                        err <= tol.max(1e-9),
                        "{id} P={np} n={elems} k={k} {l:?} C={c}: engine {got:e}, closed {want:e}"
                    );
                    checked += 1;
                }
            }
        }
    }
    checked
}

#[test]
fn ring_meets_its_closed_form() {
    let n = check("ring", Collective::Allreduce, &[2, 3, 4, 5, 8, 13], &[1, 2]);
    assert_eq!(n, 6 * 3 * 2 * 10, "every P dividing n has a closed form");
    assert!(check("ring", Collective::ReduceScatter, &[3, 8], &[1]) > 0);
    assert!(check("ring", Collective::Allgather, &[3, 8], &[1]) > 0);
}

#[test]
fn butterfly_meets_its_closed_form() {
    let n = check("butterfly", Collective::Allreduce, &[2, 4, 8, 16, 6], &[1, 2]);
    assert_eq!(n, 4 * 4 * 2 * 10, "every power of two has a closed form, 6 none");
}

#[test]
fn binomial_tree_meets_its_closed_form() {
    assert!(check("binomial_tree", Collective::Allreduce, &[2, 4, 8, 16], &[1, 2]) > 100);
    assert!(check("binomial_tree", Collective::Reduce, &[2, 8, 16], &[1]) > 0);
    // The broadcast's closed form holds at any P.
    assert_eq!(check("binomial_tree", Collective::Broadcast, &[3, 5, 8, 13], &[1, 2, 3]), 4 * 4 * 3 * 10);
}

#[test]
fn the_closed_forms_in_their_textbook_shape() {
    // With no port waits the steps are alike: ring 2(P-1)(2o + W) + (P-1) m C,
    // butterfly log2 P (2o + W + S C).
    let l = LogGP { o: 1e-6, g: 1e-6, latency: 3e-6, per_byte: 1e-10, eager_threshold: 1 << 16 };
    let c = 1e-10;
    let p = Problem { ranks: 8, elems: 8 * 1024, elem_bytes: 4 };
    let m = (p.elems / 8 * 4) as u64;
    let w = l.latency + (m - 1) as f64 * l.per_byte;
    let ring = 14.0 * (2.0 * l.o + w) + 7.0 * m as f64 * c;
    assert!(rel(forms::ring_loggp(&p, &l, c, 1, &[true, false]).unwrap(), ring) < 1e-12);
    let s = p.bytes();
    let w = l.latency + (s - 1.0) * l.per_byte;
    let bfly = 3.0 * (2.0 * l.o + w + s * c);
    assert!(rel(forms::butterfly_loggp(&p, &l, c, 1).unwrap(), bfly) < 1e-12);
    assert!(rel(forms::binomial_reduce_loggp(&p, &l, c).unwrap(), bfly) < 1e-12);
    // A gap beyond a step has the tree's children queue: no closed form.
    assert_eq!(forms::binomial_reduce_loggp(&p, &LogGP { g: 1.0, ..l }, c), None);
}

#[test]
fn the_example_scenario_meets_every_closed_form() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/loggp.yaml");
    let s = allreduce_sim::scenario::load_file(&path).unwrap();
    let report = allreduce_sim::runner::run(&s);
    assert_eq!(report.results.len(), 18);
    for r in &report.results {
        assert!(r.failures.is_empty(), "{} P={} {}: {:?}", r.algorithm, r.ranks, r.bytes, r.failures);
        assert!(r.closed_form_s.is_some(), "{} P={} {}: no closed form", r.algorithm, r.ranks, r.bytes);
        assert!(r.closed_form_rel_err.unwrap() <= 1e-9, "{} P={} {}", r.algorithm, r.ranks, r.bytes);
        assert_eq!(r.verified, Some(true));
        // No critical path under LogGP (its rules know no overheads).
        assert!(r.critical_path.is_none());
    }
}

#[test]
fn one_network_from_the_file_to_the_report() {
    // The scenario's network is the engine's `Network`; the report writes it as it always
    // wrote the ideal and flow models, and LogGP's parameters beside them, and reads it back.
    let ideal = serde_json::to_string(&Network::IDEAL).unwrap();
    assert_eq!(ideal, r#"{"model":"ideal","sharing":"weighted","envelope":0}"#);
    let flow = Network { model: Model::Flow(allreduce_sim::sim::flow::Sharing::MaxMin), envelope: 16 };
    assert_eq!(serde_json::to_string(&flow).unwrap(), r#"{"model":"flow","sharing":"maxmin","envelope":16}"#);
    let loggp = net(BASE);
    let text = serde_json::to_string(&loggp).unwrap();
    assert!(text.contains(r#""model":"loggp""#) && text.contains(r#""L":10.0"#), "{text}");
    for n in [Network::IDEAL, flow, loggp] {
        let back: Network = serde_json::from_str(&serde_json::to_string(&n).unwrap()).unwrap();
        assert_eq!(back, n);
    }
    assert!(serde_json::from_str::<Network>(r#"{"model":"loggp","sharing":"weighted","envelope":0}"#).is_err());
}
