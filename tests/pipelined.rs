//! `network.latency: pipelined` (docs/model.md, "Pipelined latency"): under the ideal
//! model a message holds its ports for its bytes only, `m / B`, and lands `alpha` after
//! its last byte left. Every expected time below is worked out by hand from that rule.

mod common;
use common::Script;

use allreduce_sim::algos::{self, Params, Problem};
use allreduce_sim::scenario::{NetworkModel, parse_str};
use allreduce_sim::sim::engine::{NoObserver, SimStats};
use allreduce_sim::sim::{Model, Network, Op, Region, simulate_on};
use allreduce_sim::topology::{FullyConnected, Link};
use assert_cmd::Command;

const PIPELINED: Network = Network { model: Model::Pipelined, envelope: 0 };
const HOLDS: Network = Network::IDEAL;

/// alpha = 10 s, B = 2 B/s: a message of 8 bytes has 4 s of bytes.
const LINK: Link = Link { alpha: 10.0, bandwidth: 2.0 };

fn run(algo: &dyn algos::Algorithm, p: Problem, c: f64, net: Network) -> SimStats {
    let topo = FullyConnected { ranks: p.ranks, link: LINK, nics: 1 };
    let none = None::<fn(&[usize]) -> allreduce_sim::sim::data::DataPlane>;
    simulate_on(algo, &topo, p, c, net, none, &mut NoObserver).unwrap().0
}

/// Messages of one element of 8 bytes.
fn eight(ranks: usize) -> Problem {
    Problem { ranks, elems: 1, elem_bytes: 8 }
}
const MSG: Region = Region::vec(0, 1);

#[test]
fn one_message_alone_costs_alpha_and_its_bytes() {
    let ping = Script(vec![vec![Op::send(1, 0, MSG)], vec![Op::recv_copy(0, 0, MSG), Op::WaitAll]]);
    // 10 + 8 / 2, either way.
    assert_eq!(run(&ping, eight(2), 0.0, PIPELINED).time, 14.0);
    assert_eq!(run(&ping, eight(2), 0.0, HOLDS).time, 14.0);
}

#[test]
fn back_to_back_messages_stream_behind_each_other() {
    // Two messages 0 -> 1 issued together. The first holds the ports 0-4 and lands at
    // 14; the second starts at m/B = 4, its bytes leave by 8, it lands at 2m/B + alpha
    // = 18. Under holds_ports the second waits for the first's delivery: 14 + 14 = 28.
    let two = |wait_first: bool| {
        let mut recv = vec![Op::recv_copy(0, 0, MSG), Op::recv_copy(0, 1, MSG)];
        recv.push(if wait_first { Op::Wait(0) } else { Op::Wait(1) });
        Script(vec![vec![Op::send(1, 0, MSG), Op::send(1, 1, MSG)], recv])
    };
    assert_eq!(run(&two(false), eight(2), 0.0, PIPELINED).time, 18.0);
    assert_eq!(run(&two(false), eight(2), 0.0, HOLDS).time, 28.0);
    // The run ends with the last delivery, not with the first one's (a port's release
    // at 4 and 8 finishes nothing).
    assert_eq!(run(&two(true), eight(2), 0.0, PIPELINED).time, 18.0);
}

#[test]
fn a_relayed_pipeline_pays_each_hops_latency_once() {
    // Rank 0 sends k chunks to 1, which forwards each to 2 as it lands. Pipelined: chunk
    // i leaves 0 over [4i, 4i + 4], lands at 1 at 4(i+1) + 10, leaves 1 by 4(i+2) + 10
    // (ports free, 1 -> 2 idle until then) and lands at 2 at 4(i+2) + 20; the last,
    // i = k-1: 4(k+1) + 2 alpha. Holding ports, chunk i takes [14i, 14(i+1)] on 0 -> 1
    // and [14(i+1), 14(i+2)] on 1 -> 2: the last lands at 14(k+1). The difference is
    // (k-1) alpha.
    for k in [1u32, 2, 5] {
        let sends: Vec<Op> = (0..k).map(|i| Op::send(1, i, Region::vec(i as usize, 1))).collect();
        let mut relay = Vec::new();
        for i in 0..k {
            relay.push(Op::recv_copy(0, i, Region::vec(i as usize, 1)));
            relay.push(Op::Wait(i));
            relay.push(Op::send(2, i, Region::vec(i as usize, 1)));
        }
        let sink: Vec<Op> =
            (0..k).map(|i| Op::recv_copy(1, i, Region::vec(i as usize, 1))).chain([Op::WaitAll]).collect();
        let chain = Script(vec![sends, relay, sink]);
        let p = Problem { ranks: 3, elems: k as usize, elem_bytes: 8 };
        let kf = f64::from(k);
        let pipelined = run(&chain, p, 0.0, PIPELINED).time;
        let holds = run(&chain, p, 0.0, HOLDS).time;
        assert_eq!(pipelined, 4.0 * (kf + 1.0) + 20.0, "k = {k}");
        assert_eq!(holds, 14.0 * (kf + 1.0), "k = {k}");
        assert_eq!(holds - pipelined, (kf - 1.0) * 10.0, "k = {k}");
    }
}

#[test]
fn a_ring_whose_steps_wait_for_each_other_is_unchanged() {
    // Each step's send waits for the previous step's receive and reduction, by which
    // time its ports are free under either rule: 2(P-1)(alpha + c/B) + (P-1) c C with
    // c = n e / P = 8 bytes, C = 0.25 s/B: 2 x 3 x 14 + 3 x 2 = 90.
    let ring = algos::build("ring", Params::default()).unwrap();
    let p = Problem { ranks: 4, elems: 4, elem_bytes: 8 };
    assert_eq!(run(ring.as_ref(), p, 0.25, HOLDS).time, 90.0);
    assert_eq!(run(ring.as_ref(), p, 0.25, PIPELINED).time, 90.0);
}

const SCENARIO: &str = "name: t\nranks: 4\ntopology: { link: { alpha: 2us, bandwidth: 10GB/s } }\n\
                        algorithms: [ring]\nsizes: 64KiB\n";

fn with_network(net: &str) -> String {
    format!("{SCENARIO}network: {net}\n")
}

#[test]
fn the_key_parses_and_defaults_to_holding_ports() {
    let s = parse_str(&with_network("{ model: ideal, latency: pipelined }"), "t.yaml").unwrap();
    assert_eq!(s.network.model, NetworkModel::Pipelined);
    let s = parse_str(&with_network("{ model: ideal, latency: holds_ports }"), "t.yaml").unwrap();
    assert_eq!(s.network.model, NetworkModel::Ideal);
    let s = parse_str(&with_network("{ latency: pipelined }"), "t.yaml").unwrap();
    assert_eq!(s.network.model, NetworkModel::Pipelined);
}

/// A scenario file in the target directory, removed on drop.
struct File(std::path::PathBuf);
impl File {
    fn new(name: &str, text: &str) -> File {
        let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("pipelined-{}-{name}.yaml", std::process::id()));
        std::fs::write(&path, text).unwrap();
        File(path)
    }
}
impl Drop for File {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn bad_values_exit_2_naming_the_place() {
    let cases = [
        ("unknown", "{ model: ideal, latency: overlapped }", "network.latency: 'overlapped' is not known"),
        ("flow", "{ model: flow, latency: pipelined }", "network.latency: applies only under model: ideal"),
        ("loggp", "{ model: loggp, L: 1us, G: 1ns, latency: pipelined }", "applies only under model: ideal"),
    ];
    for (name, net, why) in cases {
        let f = File::new(name, &with_network(net));
        let out = Command::cargo_bin("allreduce-sim").unwrap().arg("run").arg(&f.0).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(why), "{name}: {stderr}");
        // Line 6 of the file, the column of the value.
        let col = net.find("latency").unwrap() + "network: ".len() + "latency: ".len() + 1;
        let at = format!("{}:6:{col}", f.0.display());
        assert!(stderr.contains(&at), "{name}: wanted {at} in {stderr}");
    }
}

#[test]
fn a_run_reports_the_mode_and_claims_no_closed_form() {
    let f = File::new("run", &with_network("{ model: ideal, latency: pipelined }"));
    let out =
        Command::cargo_bin("allreduce-sim").unwrap().args(["run", "--format", "json"]).arg(&f.0).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("\"latency\": \"pipelined\""), "{text}");
    assert!(text.contains("network.latency: pipelined"), "{text}");
    assert!(!text.contains("\"closed_form_s\": 0") && !text.contains("\"efficiency\": 0."), "{text}");
}

#[test]
fn deferred_sends_change_no_time() {
    // Without a data plane the engine may keep a rank's sends behind its busy ports as
    // records (deferred sends); with one it may not. Early port release must not make
    // the two disagree, on algorithms that queue many sends per port.
    for name in ["direct", "ring", "butterfly", "binomial_tree", "chain", "star"] {
        let algo = algos::build(name, Params::default()).unwrap();
        for ranks in [4usize, 7] {
            let p = Problem { ranks, elems: 1000, elem_bytes: 4 };
            let topo = FullyConnected { ranks, link: Link { alpha: 3e-6, bandwidth: 1e10 }, nics: 1 };
            let none = None::<fn(&[usize]) -> allreduce_sim::sim::data::DataPlane>;
            let lazy = simulate_on(algo.as_ref(), &topo, p, 1e-10, PIPELINED, none, &mut NoObserver).unwrap().0;
            let plane = Some(allreduce_sim::sim::log_plane(p));
            let eager = simulate_on(algo.as_ref(), &topo, p, 1e-10, PIPELINED, plane, &mut NoObserver).unwrap().0;
            assert_eq!(lazy.time, eager.time, "{name}, P = {ranks}");
            assert_eq!(lazy.messages, eager.messages, "{name}, P = {ranks}");
        }
    }
}
