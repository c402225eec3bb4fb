//! Link faults under the flow model (`noise.faults`, docs/variability.md): a flow on a
//! failed link keeps the bytes it moved and starts again on the fewest-hop route around
//! it; a message that starts later routes around it; a message with no route left ends
//! the run with a report of who waits for whom, never a hang or a panic.

mod common;
use common::Script;

use allreduce_sim::algos::Problem;
use allreduce_sim::sim::data::DataPlane;
use allreduce_sim::sim::engine::{NoObserver, SimError, SimStats};
use allreduce_sim::sim::flow::{CutFlow, Sharing};
use allreduce_sim::sim::noise::{FaultSpec, Noise, NoiseSpec};
use allreduce_sim::sim::{Model, Network, Op, Rank, Region, simulate_noisy};
use allreduce_sim::topology::{Grid, Hierarchical, Level, Link, Topology};

const FLOW: Network = Network { model: Model::Flow(Sharing::MaxMin), envelope: 0 };

/// A ring of `p` ranks, alpha = 1 s and B = 1 B/s per hop: whole numbers.
fn ring(p: usize) -> Grid {
    Grid::ring(p, Link { alpha: 1.0, bandwidth: 1.0 }, 1)
}

/// Rounds of messages `(src, dst, elems)` (4-byte elements): every rank waits for the
/// round's messages before the next round's.
fn rounds(ranks: usize, rounds: &[&[(Rank, Rank, usize)]]) -> Script {
    let mut ops = vec![Vec::new(); ranks];
    let mut tag = 0;
    for round in rounds {
        for &(a, b, elems) in *round {
            ops[a as usize].push(Op::send(b, tag, Region::vec(0, elems)));
            ops[b as usize].push(Op::recv_copy(a, tag, Region::vec(0, elems)));
            tag += 1;
        }
        for o in &mut ops {
            o.push(Op::WaitAll);
        }
    }
    Script(ops)
}

fn faults(list: &[(&str, &str, f64)]) -> NoiseSpec {
    let faults = list.iter().map(|&(a, b, at)| FaultSpec { a: a.into(), b: b.into(), at_s: at }).collect();
    NoiseSpec { faults, ..NoiseSpec::default() }
}

fn run(script: &Script, topo: &dyn Topology, elems: usize, spec: &NoiseSpec) -> Result<SimStats, SimError> {
    let p = Problem { ranks: topo.ranks(), elems, elem_bytes: 4 };
    let noise = Noise::draw(spec, 0, p.ranks, true);
    let none = None::<fn(&[usize]) -> DataPlane>;
    simulate_noisy(script, topo, p, 0.0, FLOW, Some(&noise), none, &mut NoObserver).map(|(st, _)| st)
}

#[test]
fn a_flow_on_a_failed_link_reroutes_keeping_its_bytes() {
    // Ring of 4. 0 -> 1 and 1 -> 0, 12 bytes each, start at 0: 1 s of latency, then 1 B/s
    // on their one-hop routes (alone: 13 s). Link r0-r1 fails at 5 s: each has moved
    // 4 bytes. Each starts again on the other way round, 3 hops: 3 s of latency, then its
    // 8 bytes at 1 B/s (0->3->2->1 and 1->2->3->0 share no directed link): 16 s.
    let s = rounds(4, &[&[(0, 1, 3), (1, 0, 3)]]);
    let quiet = run(&s, &ring(4), 3, &NoiseSpec::default()).unwrap();
    assert_eq!(quiet.time, 13.0);
    let st = run(&s, &ring(4), 3, &faults(&[("r0", "r1", 5.0)])).unwrap();
    assert_eq!(st.time, 16.0);
    let flow = st.flow.unwrap();
    assert_eq!(flow.faults.len(), 1);
    assert!(flow.faults[0].matched);
    assert_eq!((flow.faults[0].rerouted, flow.faults[0].cut), (2, 0));
    // The failed links carried all 12 bytes (counted when the flows started); the detours
    // the 8 left.
    let bytes: Vec<(&str, u64)> = flow.links.iter().map(|l| (l.name.as_str(), l.bytes)).collect();
    assert_eq!(
        bytes,
        [
            ("r0->r1", 12),
            ("r1->r0", 12),
            ("r0->r3 (wrap)", 8),
            ("r3->r2", 8),
            ("r2->r1", 8),
            ("r1->r2", 8),
            ("r2->r3", 8),
            ("r3->r0 (wrap)", 8)
        ]
    );

    // Still in its latency when the link fails (at 0.5 s): it starts again at 0.5 s on
    // the detour, 3 s of latency and all 12 bytes: 15.5 s.
    let st = run(&s, &ring(4), 3, &faults(&[("r1", "r0", 0.5)])).unwrap();
    assert_eq!(st.time, 15.5);
}

#[test]
fn a_message_that_starts_after_the_fault_routes_around_it() {
    // Round 1: 3 -> 0 over the wrap link (4 bytes, 1 + 4 = 5 s). Round 2 at 5 s: 0 -> 1,
    // 4 bytes; r0-r1 failed at 2 s, while no message was on it: the detour, 3 + 4 = 7 s:
    // 12 s.
    let s = rounds(4, &[&[(3, 0, 1)], &[(0, 1, 1)]]);
    let st = run(&s, &ring(4), 1, &faults(&[("r0", "r1", 2.0)])).unwrap();
    assert_eq!(st.time, 12.0);
    assert_eq!(st.flow.as_ref().unwrap().detoured, 1);
    // In flight when it fails: 0 -> 1 alone from 0 s has moved 1 of 4 bytes at 2 s, then
    // 3 s of latency and 3 bytes on the detour: 8 s.
    let s = rounds(4, &[&[(0, 1, 1)]]);
    assert_eq!(run(&s, &ring(4), 1, &faults(&[("r0", "r1", 2.0)])).unwrap().time, 8.0);
    // A fault after the run ended changes nothing, not even the end time (its event,
    // which no flow in flight could feel, is skipped).
    let quiet = run(&s, &ring(4), 1, &NoiseSpec::default()).unwrap();
    let late = run(&s, &ring(4), 1, &faults(&[("r0", "r1", 100.0)])).unwrap();
    assert_eq!(late.time, quiet.time);
    assert_eq!(late.events, quiet.events);
}

#[test]
fn no_route_left_ends_the_run_with_who_waits_for_whom() {
    // Ring of 4, 0 -> 1 (12 bytes); r0-r1 and r2-r3 fail at 5 s: no way from 0 to 1.
    let s = rounds(4, &[&[(0, 1, 3)]]);
    let err = run(&s, &ring(4), 3, &faults(&[("r0", "r1", 5.0), ("r2", "r3", 5.0)])).unwrap_err();
    let SimError::CutOff(cut) = &err else { panic!("{err}") };
    let want = CutFlow { id: 0, src: 0, dst: 1, bytes: 12, moved: 4.0, at: 5.0, link: "r0->r1".into() };
    assert_eq!(cut.flows, [want]);
    assert_eq!(cut.time, 5.0);
    let text = err.to_string();
    assert!(text.contains("rank 1 waits for rank 0's message, 4 of 12 bytes moved when r0->r1 failed"), "{text}");
    assert!(text.contains("ranks waiting: rank 1 (stream 0)"), "{text}");

    // A message that starts after its pair was cut off is cut off when it starts.
    let s = rounds(4, &[&[(3, 0, 1)], &[(0, 1, 1)]]);
    let err = run(&s, &ring(4), 1, &faults(&[("r0", "r1", 1.0), ("r3", "r2", 1.0)])).unwrap_err();
    let SimError::CutOff(cut) = &err else { panic!("{err}") };
    assert_eq!(cut.flows.len(), 1);
    assert_eq!((cut.flows[0].src, cut.flows[0].dst, cut.flows[0].moved, cut.flows[0].at), (0, 1, 0.0, 5.0));

    // A tree has no second way: a hierarchy (which does not describe its graph) cuts
    // off what crossed the link.
    let lv = |size, alpha: f64| Level { size, link: Link { alpha, bandwidth: 1.0 }, nics: None };
    let h = Hierarchical::new(vec![lv(2, 2.0), lv(2, 4.0)], 1).unwrap();
    let s = rounds(4, &[&[(0, 2, 1)]]);
    let err = run(&s, &h, 1, &faults(&[("level00", "level10", 0.5)])).unwrap_err();
    assert!(matches!(&err, SimError::CutOff(c) if c.flows[0].link == "level00->level10"), "{err}");
}

/// A ring of 4 under the flow model in a scenario, with `extra` appended.
fn scenario(extra: &str) -> String {
    format!(
        "ranks: 4\ntopology: {{ kind: ring, link: {{ alpha: 1us, bandwidth: 1GB/s }} }}\n\
         network: {{ model: flow }}\nalgorithms: [ring]\nsizes: [64KiB]\n{extra}"
    )
}

#[test]
fn faults_in_a_scenario_reroute_or_report_the_cut() {
    use allreduce_sim::runner::run;
    use allreduce_sim::scenario::parse_str;
    let results = |extra: &str| run(&parse_str(&scenario(extra), "t.yaml").unwrap()).results;
    let quiet = results("");
    // One failed link: the ring's messages across it go the long way; slower, verified.
    let one = results("noise:\n  faults: [{ a: r1, b: r2, at: 10us }]\n");
    assert!(one[0].failures.is_empty(), "{:?}", one[0].failures);
    assert_eq!(one[0].verified, Some(true));
    assert!(one[0].time_s > quiet[0].time_s);
    assert_eq!(one[0].noise_free_time_s, Some(quiet[0].time_s));
    assert!(one[0].notes.iter().any(|n| n.starts_with("fault r1-r2 at 10 us:")), "{:?}", one[0].notes);
    // A name that is no link of the machine fails nothing, and says so.
    let none = results("noise:\n  faults: [{ a: r1, b: r3, at: 10us }]\n");
    assert_eq!(none[0].time_s, quiet[0].time_s);
    assert!(none[0].notes.iter().any(|n| n.contains("no link of this machine")), "{:?}", none[0].notes);
    // Two: the ring is cut in two; the point reports who waits for whom and fails only so.
    let cut = results("noise:\n  faults: [{ a: r1, b: r2, at: 10us }, { a: r3, b: r0, at: 10us }]\n");
    let c = cut[0].cut_off.as_ref().expect("cut off");
    assert!(!c.messages.is_empty());
    assert!(c.messages.iter().all(|m| m.at_s == 10e-6 && (m.link.contains("r1") || m.link.contains("r0"))));
    assert!(cut[0].only_cut_off(), "{:?}", cut[0].failures);
}

#[test]
fn bad_faults_are_located() {
    let base = scenario("");
    let first = base.lines().count() as u64;
    let cases = [
        ("noise:\n  faults: [{ a: r1, b: r1, at: 1us }]\n", "a and b are the same"),
        ("noise:\n  faults: [{ a: r1, b: r2 }]\n", "missing key 'at'"),
        ("noise:\n  faults: [{ a: 1, b: r2, at: 1us }]\n", "noise.faults.a"),
        ("noise:\n  faults: [{ a: r1, b: r2, at: -1us }]\n", "noise.faults.at"),
        ("noise:\n  faults: [{ a: r1, b: r2, at: 1us, when: 2us }]\n", "when"),
    ];
    for (extra, want) in cases {
        let err = allreduce_sim::scenario::parse_str(&format!("{base}{extra}"), "t.yaml").expect_err(extra);
        let (l, _) = err.position().unwrap_or_else(|| panic!("{extra}: no position in {err}"));
        assert_eq!(l, first + 2, "{extra}: {err}");
        assert!(err.message().contains(want), "{extra}: {err}");
    }
    // Under the ideal model there is no physical link to fail.
    let ideal = base.replace("network: { model: flow }\n", "");
    let err = allreduce_sim::scenario::parse_str(
        &format!("{ideal}noise:\n  faults: [{{ a: r1, b: r2, at: 1us }}]\n"),
        "t.yaml",
    )
    .expect_err("ideal");
    assert!(err.message().contains("need network.model: flow"), "{err}");
}

#[test]
fn random_faults_are_drawn_by_the_seed_from_the_machine_links() {
    use allreduce_sim::sim::noise::{FaultPool, RandomFaults};
    use allreduce_sim::topology::{Fabric, FatTree};
    let l = Link { alpha: 1e-6, bandwidth: 1e9 };
    let t = FatTree::new(2, 3, 2, l, l).unwrap();
    let fabric: &dyn Fabric = &t;
    let spec = |count, among| NoiseSpec {
        random_faults: vec![RandomFaults { count, from_s: 1e-6, to_s: 5e-6, among }],
        ..NoiseSpec::default()
    };
    let drawn = |seed, s: &NoiseSpec| Noise::draw(s, seed, 6, true).faults_on(fabric);
    // 6 host links and 6 leaf-spine links: the fabric pool holds only the latter.
    let pick = spec(3, FaultPool::Fabric);
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let f = drawn(seed, &pick);
        assert_eq!(f, drawn(seed, &pick), "seed {seed}: a pure function of the seed");
        assert_eq!(f.len(), 3);
        assert!(f.windows(2).all(|w| w[0].at_s <= w[1].at_s), "by time");
        for x in &f {
            assert!(x.a.starts_with("leaf") && x.b.starts_with("spine"), "{x:?}");
            assert!((1e-6..=5e-6).contains(&x.at_s));
            seen.insert((x.a.clone(), x.b.clone()));
        }
        let mut links: Vec<_> = f.iter().map(|x| (&x.a, &x.b)).collect();
        links.sort();
        links.dedup();
        assert_eq!(links.len(), 3, "without replacement");
    }
    assert_eq!(seen.len(), 6, "every fabric link drawn by some seed: {seen:?}");
    // More than the machine has: every link of the pool, once.
    assert_eq!(drawn(1, &spec(100, FaultPool::All)).len(), 12);
    assert_eq!(drawn(1, &spec(100, FaultPool::Fabric)).len(), 6);
    // Listed faults come first among equal times; the drawn ones keep the seed's picks.
    let mut both = spec(2, FaultPool::Fabric);
    both.faults = vec![FaultSpec { a: "h0".into(), b: "leaf0".into(), at_s: 0.0 }];
    let f = drawn(4, &both);
    assert_eq!(f[0].a, "h0");
    assert_eq!(&f[1..], &drawn(4, &spec(2, FaultPool::Fabric))[..]);
}

#[test]
fn random_faults_in_a_scenario_are_reproducible_with_repeat() {
    use allreduce_sim::runner::run;
    use allreduce_sim::scenario::parse_str;
    let text = scenario("noise:\n  faults: [{ random: 1, between: [0, 40us] }]\nrepeat: 6\n");
    let a = run(&parse_str(&text, "t.yaml").unwrap()).results;
    let b = run(&parse_str(&text, "t.yaml").unwrap()).results;
    assert_eq!(a[0].times_s, b[0].times_s);
    let times = a[0].times_s.as_ref().expect("repeat");
    assert_eq!(times.len(), 6);
    // One failed link of a ring of 4 leaves a route for every pair: verified, slower.
    assert!(a[0].failures.is_empty(), "{:?}", a[0].failures);
    let quiet = a[0].noise_free_time_s.unwrap();
    assert!(times.iter().all(|&t| t > quiet), "{times:?} vs {quiet}");
    let notes: Vec<_> = a[0].notes.iter().filter(|n| n.starts_with("fault r")).collect();
    assert_eq!(notes.len(), 1, "{:?}", a[0].notes);
    // Another seed draws another link or time.
    let other = run(&parse_str(&text.replace("ranks: 4", "seed: 9\nranks: 4"), "t.yaml").unwrap()).results;
    assert_ne!(other[0].times_s, a[0].times_s);
}

#[test]
fn bad_random_faults_are_located() {
    let base = scenario("");
    let first = base.lines().count() as u64;
    let cases = [
        ("noise:\n  faults: [{ random: 2, a: r1 }]\n", "leave a and b out"),
        ("noise:\n  faults: [{ random: -1 }]\n", "noise.faults.random"),
        ("noise:\n  faults: [{ random: 1, between: [1us] }]\n", "two times"),
        ("noise:\n  faults: [{ random: 1, between: [5us, 1us] }]\n", "before it starts"),
        ("noise:\n  faults: [{ random: 1, among: spines }]\n", "allowed: all, fabric"),
        ("noise:\n  faults: [{ random: 1, at: 1us, between: [0, 1us] }]\n", "not both"),
        ("noise:\n  faults: [{ a: r1, b: r2, at: 1us, among: all }]\n", "goes with random"),
    ];
    for (extra, want) in cases {
        let err = allreduce_sim::scenario::parse_str(&format!("{base}{extra}"), "t.yaml").expect_err(extra);
        let (l, _) = err.position().unwrap_or_else(|| panic!("{extra}: no position in {err}"));
        assert_eq!(l, first + 2, "{extra}: {err}");
        assert!(err.message().contains(want), "{extra}: {err}");
    }
}

#[test]
fn the_fault_scenario_reroutes_then_cuts_leaf0_off() {
    use allreduce_sim::runner::run;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/faults.yaml");
    let s = allreduce_sim::scenario::load_file(&path).unwrap();
    let results = run(&s).results;
    let point = |algo: &str, size: u64| {
        results.iter().find(|r| r.algorithm == algo && r.bytes == size).unwrap_or_else(|| panic!("{algo} {size}"))
    };
    let (kib16, mib1, mib4): (u64, u64, u64) = (16 << 10, 1 << 20, 4 << 20);
    // Runs that end before 1 ms survive the first fault: verified times, never faster than
    // without it, and the second fault says it came after their end.
    for (algo, size) in [
        ("ring", kib16),
        ("halving_doubling", kib16),
        ("double_binary_tree", kib16),
        ("binomial_tree", kib16),
        ("ring", mib1),
        ("halving_doubling", mib1),
        ("double_binary_tree", mib1),
        ("halving_doubling", mib4),
    ] {
        let r = point(algo, size);
        assert!(r.failures.is_empty() && r.cut_off.is_none(), "{algo} {size}: {:?}", r.failures);
        let free = r.noise_free_time_s.unwrap();
        assert!(r.time_s >= free && r.time_s < 1e-3, "{algo} {size}: {} vs {free}", r.time_s);
        assert!(
            r.notes.iter().any(|n| n.starts_with("fault leaf0-spine0 at 1 ms: due after the run ended")),
            "{algo} {size}: {:?}",
            r.notes
        );
    }
    // halving_doubling's exchanges across leaves share leaf 0's one uplink left: slower.
    for size in [kib16, mib1, mib4] {
        let r = point("halving_doubling", size);
        assert!(r.time_s > r.noise_free_time_s.unwrap(), "{size}");
    }
    // The ring leaves and enters leaf 0 only toward hosts 16 and 0, both by spine 0 (D-mod-k):
    // the first fault never touches it.
    assert_eq!(point("ring", mib1).time_s, point("ring", mib1).noise_free_time_s.unwrap());
    // Still running at 1 ms: cut off, each cut message on one of leaf 0's links, its
    // receiver waiting for its sender, and the point failed only so.
    for (algo, size) in [("binomial_tree", mib1), ("ring", mib4), ("double_binary_tree", mib4), ("binomial_tree", mib4)]
    {
        let r = point(algo, size);
        let c = r.cut_off.as_ref().unwrap_or_else(|| panic!("{algo} {size}: not cut off"));
        assert!(r.only_cut_off(), "{algo} {size}: {:?}", r.failures);
        assert!(!c.messages.is_empty());
        for m in &c.messages {
            assert!(m.at_s >= 1e-3 && m.link.contains("leaf0") && m.link.contains("spine"), "{m:?}");
            // One end under leaf 0 (hosts 0..16), the other under another leaf.
            assert!((m.src < 16) != (m.dst < 16), "{m:?}");
            assert!(m.moved_bytes < m.bytes as f64);
        }
    }
}

/// Two DGX-like nodes of 4 GPUs on an NVSwitch, 2 NICs each, rail-optimized, under flow.
fn cluster(extra: &str) -> String {
    format!(
        "ranks: 8\ntopology:\n  kind: cluster\n  nodes: 2\n  gpus_per_node: 4\n  \
         intra: {{ kind: nvswitch, alpha: 1us, bandwidth: 100GB/s }}\n  nics_per_node: 2\n  \
         inter: {{ alpha: 2us, bandwidth: 100Gbps }}\n  fabric: {{ kind: rail_optimized }}\n\
         network: {{ model: flow }}\nalgorithms: [ring]\nsizes: [1MiB]\n{extra}"
    )
}

#[test]
fn a_cluster_reroutes_through_another_gpu_nic_or_reports_the_cut() {
    use allreduce_sim::runner::run;
    use allreduce_sim::scenario::parse_str;
    let results = |extra: &str| run(&parse_str(&cluster(extra), "t.yaml").unwrap()).results;
    let quiet = results("");
    // GPU 0's NIC loses its rail: the ring's message into node 1 goes through the NVSwitch
    // to a GPU on NIC 1, out through it; verified, slower.
    let one = results("noise:\n  faults: [{ a: n0nic0, b: leaf0, at: 0 }]\n");
    assert!(one[0].failures.is_empty(), "{:?}", one[0].failures);
    assert_eq!(one[0].verified, Some(true));
    assert!(one[0].time_s > quiet[0].time_s, "{} vs {}", one[0].time_s, quiet[0].time_s);
    assert!(one[0].notes.iter().any(|n| n.contains("started on a detour")), "{:?}", one[0].notes);
    // Both of node 0's NICs cut from their rails: node 0 is alone, and the point says who
    // waits for whom.
    let cut = results("noise:\n  faults: [{ a: n0nic0, b: leaf0, at: 0 }, { a: n0nic1, b: leaf1, at: 0 }]\n");
    let c = cut[0].cut_off.as_ref().expect("cut off");
    assert!(cut[0].only_cut_off(), "{:?}", cut[0].failures);
    assert!(c.messages.iter().all(|m| (m.src < 4) != (m.dst < 4)), "{:?}", c.messages);
}
