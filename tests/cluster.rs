//! GPU clusters (`topology.kind: cluster`, docs/gpu-clusters.md): the worked cases of the
//! contract by hand, protocols, `launch`, the closed forms where one pair class carries
//! every message, the flow model's shared NIC, and the parser's messages.

mod common;
use allreduce_sim::runner::{Point, run_point};
use allreduce_sim::scenario::{Scenario, parse_str};
use allreduce_sim::topology::{self, Proto};
use common::close;

fn scenario(text: &str) -> Scenario {
    common::scenario(text, "cluster.yaml")
}

/// The one point of `s` (its first algorithm, rank count and size).
fn run(s: &Scenario) -> allreduce_sim::report::PointResult {
    common::run_clean(s, 0, s.ranks[0])
}

const TWO_BY_ONE: &str = "
topology:
  kind: cluster
  nodes: 2
  gpus_per_node: 1
  intra: { kind: nvswitch, alpha: 1us, bandwidth: 450GB/s }
  inter: { alpha: 2us, bandwidth: 25GB/s }
  launch: 4us
algorithms: [ring]
sizes: 8MB
";

#[test]
fn ring_over_two_nodes_pays_launch_once() {
    // 4 us + 2 (2 us + 4 MB / 25 GB/s) = 328 us.
    let s = scenario(TWO_BY_ONE);
    assert_eq!(s.ranks, [2]);
    let r = run(&s);
    close(r.time_s, 328e-6);
    assert_eq!(r.launch_s, Some(4e-6));
    assert_eq!(r.algorithm, "ring");
    assert_eq!(r.protocol, None);
    // One pair class, no shared interface: the flat form plus launch, exactly.
    close(r.closed_form_s.unwrap(), 328e-6);
    assert!(r.closed_form_rel_err.unwrap() < 1e-12);
}

#[test]
fn ll_halves_the_bandwidth_and_takes_its_own_alpha() {
    // 4 us + 2 (1 us + 4 MB / 12.5 GB/s) = 646 us.
    let text = TWO_BY_ONE
        .replace("inter: { alpha: 2us,", "inter: { alpha: { simple: 2us, ll: 1us, ll128: 1.5us },")
        .replace("algorithms: [ring]", "algorithms: [{ name: ring, protocol: ll }]");
    let s = scenario(&text);
    let r = run(&s);
    close(r.time_s, 646e-6);
    assert_eq!(r.algorithm, "ring(protocol=ll)");
    assert_eq!(r.protocol.as_deref(), Some("ll"));
    close(r.closed_form_s.unwrap(), 646e-6);
    // LL128: 4 + 2 (1.5 + 4 MB / (25 GB/s x 120/128)) us.
    let s = scenario(&text.replace("protocol: ll }", "protocol: ll128 }"));
    close(run(&s).time_s, 4e-6 + 2.0 * (1.5e-6 + 4e6 / (25e9 * 120.0 / 128.0)));
}

#[test]
fn efficiency_replaces_a_protocols_share_of_the_bandwidth() {
    // LL at a quarter of 25 GB/s: 4 us + 2 (1 us + 4 MB / 6.25 GB/s) = 1286 us; LL128 keeps
    // its line layout's share when only LL is given.
    let text = TWO_BY_ONE
        .replace("inter: { alpha: 2us,", "inter: { alpha: { simple: 2us, ll: 1us, ll128: 1.5us },")
        .replace("launch: 4us", "launch: 4us\n  efficiency: { ll: 0.25 }")
        .replace("algorithms: [ring]", "algorithms: [{ name: ring, protocol: ll }]");
    close(run(&scenario(&text)).time_s, 1286e-6);
    let s = scenario(&text.replace("protocol: ll }", "protocol: ll128 }"));
    close(run(&s).time_s, 4e-6 + 2.0 * (1.5e-6 + 4e6 / (25e9 * 120.0 / 128.0)));
    for (bad, why) in [("{ simple: 0.5 }", "unknown key 'simple'"), ("{ ll: 0 }", "a number above 0"), ("0.5", "a map")]
    {
        let e = parse_str(&text.replace("{ ll: 0.25 }", bad), "cluster.yaml").unwrap_err().to_string();
        assert!(e.contains("topology.efficiency") && e.contains(why), "{e}");
    }
}

#[test]
fn launch_per_protocol_and_auto() {
    let text = TWO_BY_ONE.replace("launch: 4us", "launch: { simple: 4us, ll: 3us, ll128: 5us }");
    let s = scenario(&text.replace("algorithms: [ring]", "algorithms: [{ name: ring, protocol: ll }]"));
    close(run(&s).time_s, 3e-6 + 2.0 * (2e-6 + 4e6 / 12.5e9));
    // auto: NCCL's model picks per point; the report says which, and the time is that
    // protocol's run.
    let auto = text.replace("algorithms: [ring]", "algorithms: [{ name: ring, protocol: auto }]");
    for size in ["8B", "64MB"] {
        let s = scenario(&auto.replace("sizes: 8MB", &format!("sizes: {size}")));
        let r = run(&s);
        let picked = Proto::from_name(r.protocol.as_deref().unwrap()).unwrap();
        let fixed = scenario(
            &text
                .replace("algorithms: [ring]", &format!("algorithms: [{{ name: ring, protocol: {} }}]", picked.name()))
                .replace("sizes: 8MB", &format!("sizes: {size}")),
        );
        assert_eq!(r.time_s, run(&fixed).time_s, "{size}");
        assert_eq!(r.algorithm, "ring(protocol=auto)");
    }
    // At 8 bytes NCCL's model runs LL, at 64 MB Simple.
    let small = run(&scenario(&auto.replace("sizes: 8MB", "sizes: 8B")));
    assert_eq!(small.protocol.as_deref(), Some("ll"));
    let large = run(&scenario(&auto.replace("sizes: 8MB", "sizes: 64MB")));
    assert_eq!(large.protocol.as_deref(), Some("simple"));
}

/// 2 nodes x 2 GPUs, butterfly of a whole vector S = 1 MB: the intra-node step, then the
/// cross-node step with `nics` NICs per node under `model`.
fn butterfly(nics: usize, model: &str) -> f64 {
    let text = format!(
        "
topology:
  kind: cluster
  nodes: 2
  gpus_per_node: 2
  nics_per_node: {nics}
  intra: {{ kind: nvswitch, alpha: 1us, bandwidth: 100GB/s }}
  inter: {{ alpha: 2us, bandwidth: 25GB/s }}
network: {{ model: {model} }}
algorithms: [butterfly]
sizes: 1MB
"
    );
    run(&scenario(&text)).time_s
}

const INTRA: f64 = 1e-6 + 1e6 / 100e9;
const ALPHA: f64 = 2e-6;
const S_OVER_B: f64 = 1e6 / 25e9;

#[test]
fn a_shared_nic_under_flow_shares_its_bandwidth() {
    close(butterfly(1, "flow"), INTRA + ALPHA + 2.0 * S_OVER_B);
}

#[test]
fn two_nics_serve_both_gpus_at_once() {
    close(butterfly(2, "flow"), INTRA + ALPHA + S_OVER_B);
    close(butterfly(2, "ideal"), INTRA + ALPHA + S_OVER_B);
}

#[test]
fn a_shared_nic_under_ideal_serves_one_message_at_a_time() {
    // The NIC is one port each way, shared by both GPUs of the node: the engine must hold
    // the ports of `Topology::route_interfaces`, not of the rank.
    close(butterfly(1, "ideal"), INTRA + 2.0 * (ALPHA + S_OVER_B));
}

#[test]
fn one_node_with_nvswitch_has_the_flat_closed_forms() {
    let text = "
topology:
  kind: cluster
  nodes: 1
  gpus_per_node: 8
  intra: { kind: nvswitch, alpha: { simple: 3us, ll: 1us, ll128: 2us }, bandwidth: 400GB/s }
  launch: 5us
algorithms: [ring, { name: ring, protocol: ll128 }, butterfly, halving_doubling]
sizes: 64MiB
";
    let s = scenario(text);
    assert_eq!(s.ranks, [8]);
    for algo in 0..s.algorithms.len() {
        let r = run_point(&s, &Point { algo, ranks: 8, bytes: s.sizes[0] });
        assert!(r.failures.is_empty(), "{}: {:?}", r.algorithm, r.failures);
        assert!(r.closed_form_s.is_some(), "{}", r.algorithm);
    }
    // Ring, LL128: 5 us + 14 (2 us + 8 MiB / (400 GB/s x 120/128)).
    let r = run_point(&s, &Point { algo: 1, ranks: 8, bytes: s.sizes[0] });
    close(r.time_s, 5e-6 + 14.0 * (2e-6 + (8 << 20) as f64 / (400e9 * 120.0 / 128.0)));
}

const DGX: &str = "
topology:
  kind: cluster
  nodes: 2
  gpus_per_node: 4
  nics_per_node: 4
  intra: { kind: nvswitch, alpha: 1us, bandwidth: 100GB/s }
  inter: { alpha: 2us, bandwidth: 25GB/s }
  launch: 3us
algorithms: [ring, hierarchical_ring, double_binary_tree]
sizes: 4MiB
";

#[test]
fn flow_equals_ideal_where_no_link_is_shared() {
    // Ring in rank order: each GPU sends to the next; the two node crossings leave by
    // different NICs (GPU 3 on NIC 3, GPU 7 on NIC 3 of the other node, opposite ways).
    let ideal = scenario(DGX);
    let flow = scenario(&DGX.replace("launch: 3us", "launch: 3us\nnetwork: { model: flow }"));
    let a = run(&ideal);
    let b = run(&flow);
    assert_eq!(b.links_shared, Some(false));
    close(a.time_s, b.time_s);
    close(b.ideal_time_s.unwrap(), a.time_s);
    for algo in 1..3 {
        let r = run_point(&ideal, &Point { algo, ranks: 8, bytes: ideal.sizes[0] });
        assert!(
            r.failures.is_empty() && r.not_applicable.is_none(),
            "{}: {:?} {:?}",
            r.algorithm,
            r.failures,
            r.not_applicable
        );
        assert_eq!(r.verified, Some(true));
    }
}

#[test]
fn topology_of_a_scenario() {
    let s = scenario(DGX);
    let t = topology::build(&s.topology, 8).unwrap();
    assert_eq!(t.node_shape(), Some((2, 4)));
    assert_eq!(t.link(0, 5).bandwidth, 25e9);
    assert_eq!(t.interfaces(), 8 + 8);
    let one = topology::build(&s.topology, 2).unwrap();
    assert_eq!(one.node_shape(), Some((1, 2)));
    assert!(topology::build(&s.topology, 6).unwrap_err().contains("not 6"));
    let ll = topology::build_for_run(&s.topology, 8, Proto::Ll, false).unwrap();
    assert_eq!(ll.link(0, 5).bandwidth, 12.5e9);
    assert_eq!(topology::launch(&s.topology, Proto::Ll), 3e-6);
}

#[test]
fn dgx1_cube_mesh_routes_through_nvlink() {
    let s = parse_str(&std::fs::read_to_string("scenarios/dgx1_v100.yaml").unwrap(), "dgx1_v100.yaml").unwrap();
    let t = topology::build(&s.topology, 8).unwrap();
    // GPU 0 has two NVLinks to GPU 3 and to GPU 4, one to GPUs 1 and 2, none to 5, 6, 7.
    assert_eq!(t.link(0, 3).bandwidth, 2.0 * t.link(0, 1).bandwidth);
    assert_eq!(t.link(0, 5).alpha, 2.0 * t.link(0, 1).alpha);
    let r = run_point(&s, &Point { algo: 0, ranks: 8, bytes: 1 << 20 });
    assert!(r.failures.is_empty() && r.not_applicable.is_none(), "{:?} {:?}", r.failures, r.not_applicable);
}

/// The parser's message for `text`, which must fail.
fn error(text: &str) -> String {
    match parse_str(text, "bad.yaml") {
        Ok(_) => panic!("parsed:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_clusters_are_located_and_explained() {
    let cases: [(&str, &str, &str); 11] = [
        (
            "kind: nvswitch,",
            "kind: infiniband,",
            "bad.yaml:6:18: topology.intra.kind: 'infiniband' is not known; allowed: nvswitch, pcie, nvlink",
        ),
        ("bandwidth: 450GB/s }", "bandwidth: 450GB/s, lanes: 16 }", "bad.yaml:6:"),
        ("gpus_per_node: 1", "gpus_per_node: 1\n  nics: 2", "nics' does not apply to kind cluster"),
        ("nodes: 2", "nodes: [a, b]", "kind cluster takes the number of servers"),
        ("gpus_per_node: 1", "gpus_per_node: 0", "topology.gpus_per_node: must be a whole number of at least 1"),
        ("gpus_per_node: 1", "gpus_per_node: 1\n  nics_per_node: 2", "2 NICs for 1 GPUs per node"),
        ("inter: { alpha: 2us,", "inter: { alpha: { simple: 2us, ll: 1us },", "topology.inter.alpha: missing ll128"),
        (
            "inter: { alpha: 2us,",
            "inter: { alpha: { simple: 2us, ll: 1us, ll64: 1us },",
            "unknown protocol 'll64'; allowed: simple, ll, ll128",
        ),
        (
            "algorithms: [ring]",
            "algorithms: [{ name: ring, protocol: ll256 }]",
            "protocol: 'll256' is not a protocol; allowed: simple, ll, ll128, auto",
        ),
        (
            "algorithms: [ring]",
            "algorithms: [{ name: butterfly, protocol: auto }]",
            "NCCL has no counterpart of 'butterfly'",
        ),
        (
            "inter: { alpha: 2us,",
            "inter: { nic_path: node, alpha: 2us,",
            "topology.inter.nic_path: 'node' is not known; allowed: pix, pxb, phb, sys",
        ),
    ];
    for (from, to, want) in cases {
        assert!(TWO_BY_ONE.contains(from), "{from}");
        let msg = error(&TWO_BY_ONE.replace(from, to));
        assert!(msg.contains(want), "{to}:\n{msg}\nwanted: {want}");
    }
    // A node whose NVLinks leave a pair without a route, at the list.
    let nv = TWO_BY_ONE.replace("gpus_per_node: 1", "gpus_per_node: 4").replace(
        "kind: nvswitch, alpha: 1us, bandwidth: 450GB/s",
        "kind: nvlink, alpha: 1us, bandwidth: 25GB/s, links: [[0, 1, 1], [2, 3, 1]]",
    );
    let msg = error(&nv);
    assert!(msg.contains("bad.yaml:6:") && msg.contains("GPUs 0 and 2 have no NVLink"), "{msg}");
    let msg = error(&nv.replace("[2, 3, 1]]", "[2, 4, 1]]"));
    assert!(msg.contains("4 is not a GPU of the node; GPUs are 0 to 3"), "{msg}");
    // Ranks are part of a node or whole nodes.
    let msg = error(&TWO_BY_ONE.replace("gpus_per_node: 1", "gpus_per_node: 4").replace("sizes:", "ranks: 6\nsizes:"));
    assert!(msg.contains("ranks: 6 does not fit the topology"), "{msg}");
    // Keys of a cluster on other kinds.
    let msg = error(
        "topology: { kind: fully_connected, link: { alpha: 1us, bandwidth: 1GB/s }, launch: 1us }\nranks: 2\nalgorithms: [ring]\nsizes: 1KiB\n",
    );
    assert!(msg.contains("'launch' does not apply to kind fully_connected"), "{msg}");
}

#[test]
fn protocols_on_other_kinds_scale_bandwidth_only() {
    let text = "
topology: { kind: fully_connected, link: { alpha: 2us, bandwidth: 25GB/s } }
ranks: 2
algorithms: [{ name: ring, protocol: ll }]
sizes: 8MB
";
    let r = run(&scenario(text));
    close(r.time_s, 2.0 * (2e-6 + 4e6 / 12.5e9));
    assert_eq!(r.launch_s, None);
}

#[test]
fn gpus_on_a_pcie_switch_share_its_bandwidth_both_ways() {
    // A ring of 4 GPUs in lockstep: every step has 4 messages of S/4 inside the node, all
    // through the switch's one core link under flow: B/4 each, so a step takes
    // alpha + (S/4) / (B/4); under ideal each message alone takes alpha + (S/4) / B.
    let text = "
topology:
  kind: cluster
  nodes: 1
  gpus_per_node: 4
  intra: { kind: pcie, alpha: 2us, bandwidth: 32GB/s }
  launch: 5us
algorithms: [ring]
sizes: 4MiB
";
    let s = (4 << 20) as f64;
    let ideal = run(&scenario(text));
    close(ideal.time_s, 5e-6 + 6.0 * (2e-6 + s / 4.0 / 32e9));
    let flow = run(&scenario(&format!("{text}network: {{ model: flow, sharing: maxmin }}\n")));
    close(flow.time_s, 5e-6 + 6.0 * (2e-6 + s / 32e9));
    assert_eq!(flow.links_shared, Some(true));
}

#[test]
fn nvlink_rings_send_a_channels_slices_one_after_another() {
    // GPUs 0 to 3 of a DGX-1 (its NVLink quad): NCCL's search lays 4 rings over distinct
    // NVLinks, two of them on each 2-link bundle they share. S = 16 MiB over 4 channels:
    // each channel's 4 MiB is one loop of four 1 MiB chunks, moved as 512 KiB slices.
    // Each ring's flow has one link's bandwidth b to itself (two flows on a 2-link
    // bundle), so the rings move in lockstep, and a channel sends its next slice when its
    // previous one has arrived: 2(P-1) steps x 2 slices, each alpha + 512 KiB / b. With
    // both slices of a step in flight at once the steps would take alpha + 1 MiB / b,
    // 6 alpha less in all, and a ring could take a second share of a bundle another ring
    // needs.
    let text = "
topology:
  kind: cluster
  nodes: 1
  gpus_per_node: 4
  intra:
    kind: nvlink
    alpha: 1us
    bandwidth: 25GB/s
    links: [[0, 1, 1], [0, 2, 1], [0, 3, 2], [1, 2, 2], [1, 3, 1], [2, 3, 2]]
  launch: 5us
network: { model: flow }
algorithms: [{ name: nccl_ring, channels: 4, protocol: simple }]
sizes: 16MiB
";
    let r = run(&scenario(text));
    close(r.time_s, 5e-6 + 12.0 * (1e-6 + 524288.0 / 25e9));
}

/// `explain --scenario` on a cluster counts the launch as `run` does: once, before every
/// rank's first operation, in the simulated time and the closed form.
#[test]
fn explain_on_a_cluster_counts_the_launch() {
    let s = scenario(TWO_BY_ONE);
    let req = allreduce_sim::explain::Request {
        ranks: 2,
        bytes: 8_000_000,
        cost_per_byte: s.cost_per_byte,
        topology: Some(s.topology.clone()),
        ..Default::default()
    };
    let text = allreduce_sim::explain::explain(&req).unwrap();
    assert!(text.contains("launch 4 us"), "{text}");
    assert!(text.contains("simulated:    328 us (3.28e-4 s)"), "{text}");
    assert!(text.contains("= 328 us (3.28e-4 s)"), "{text}");
    // The schedule's first message leaves after the launch.
    assert!(text.contains("reduce    4 us  166 us"), "{text}");
}

/// A PCIe node of 4 GPUs, two under each CPU socket.
const SOCKETS: &str = "
topology:
  kind: cluster
  nodes: 1
  gpus_per_node: 4
  intra:
    kind: pcie
    alpha: 2us
    bandwidth: 32GB/s
    sockets: [[0, 1], [2, 3]]
    socket_link: { alpha: 0us, bandwidth: 20GB/s }
  launch: 5us
algorithms: [ring]
sizes: 4MiB
";

#[test]
fn a_ring_across_cpu_sockets_runs_at_the_socket_link() {
    let s = (4 << 20) as f64;
    // Two ranks take GPUs 0 and 1, under one CPU: the pair as given.
    let two = run(&scenario(&SOCKETS.replace("sizes:", "ranks: 2\nsizes:")));
    close(two.time_s, 5e-6 + 2.0 * (2e-6 + s / 2.0 / 32e9));
    // Four: GPUs 1 and 3 send across the sockets at 20 GB/s and hold the ring back in
    // every step; the pairs under one CPU wait for them.
    let four = run(&scenario(SOCKETS));
    close(four.time_s, 5e-6 + 6.0 * (2e-6 + s / 4.0 / 20e9));
    // Under flow each socket's PCIe core carries three of a step's four messages (its
    // own pair's and both crossings): a third of 32 GB/s each, below the link's 20.
    let flow = run(&scenario(&format!("{SOCKETS}network: {{ model: flow, sharing: maxmin }}\n")));
    close(flow.time_s, 5e-6 + 6.0 * (2e-6 + s / 4.0 / (32e9 / 3.0)));
    assert_eq!(flow.links_shared, Some(true));
}

#[test]
fn bad_sockets_are_located_and_explained() {
    let cases = [
        (
            "sockets: [[0, 1], [2, 3]]",
            "sockets: [[0, 1], [1, 2, 3]]",
            "bad.yaml:10:14: topology: intra.sockets[1]: GPU 1",
        ),
        (
            "sockets: [[0, 1], [2, 3]]",
            "sockets: [[0, 1], [2, 4]]",
            "bad.yaml:10:27: topology.intra.sockets[1]: 4 is not",
        ),
        (
            "    socket_link: { alpha: 0us, bandwidth: 20GB/s }\n",
            "",
            "bad.yaml:10:14: topology.intra: missing key 'socket_link'",
        ),
        (
            "sockets: [[0, 1], [2, 3]]",
            "sockets: [[0, 1, 2, 3]]",
            "bad.yaml:11:18: topology.intra.socket_link: applies only",
        ),
        ("kind: pcie", "kind: nvswitch", "topology.intra.sockets: applies to kind pcie only"),
        ("{ alpha: 0us, bandwidth: 20GB/s }", "{ alpha: 0us }", "socket_link: missing key 'bandwidth'"),
        ("{ alpha: 0us,", "{ alpha: { ll: 1us },", "socket_link.alpha: missing ll128, simple"),
        ("kind: pcie", "kind: pcie\n    pci_bus: [\"4a\", \"61\"]", "pci_bus: names 2 GPUs but a node has 4"),
        (
            "kind: pcie",
            "kind: pcie\n    pci_bus: [\"4a\", \"61\", \"zz\", \"e1\"]",
            "pci_bus[2]: 'zz' is not a PCI bus",
        ),
        (
            "kind: pcie",
            "kind: pcie\n    pci_bus: [\"4a\", \"61\", \"0000:4a:00\", \"e1\"]",
            "bus 0000:4a is GPU 0's already",
        ),
    ];
    for (from, to, want) in cases {
        assert!(SOCKETS.contains(from), "{from}");
        let msg = error(&SOCKETS.replace(from, to));
        assert!(msg.contains(want), "{to}:\n{msg}\nwanted: {want}");
    }
}

/// TWO_BY_ONE with one LL channel limited to 5 GB/s (the link carries LL at 12.5 GB/s).
fn channel_limited(extra: &str, algorithm: &str) -> String {
    TWO_BY_ONE
        .replace("launch: 4us", &format!("launch: 4us\n  channel_bandwidth: {{ ll: 5GB/s }}\n{extra}"))
        .replace("algorithms: [ring]", &format!("algorithms: [{algorithm}]"))
}

#[test]
fn a_channel_moves_no_faster_than_its_channel_bandwidth() {
    // Ring of 2 ranks, S = 8 MB: two steps of 4 MB, each leaving at the channel's 5 GB/s
    // (800 us) rather than the link's 12.5 GB/s (320 us): 4 + 2 (800 + 2) us = 1608 us,
    // under both ways of holding ports (the step waits for the one before it anyway).
    for net in ["", "network: { model: ideal, latency: pipelined }"] {
        let r = run(&scenario(&channel_limited(net, "{ name: ring, protocol: ll }")));
        close(r.time_s, 1608e-6);
        // The forms do not count the channel's rate, and say so.
        assert!(r.closed_form_s.is_none() && r.closed_form_bounds_s.is_none());
        assert!(r.no_closed_form.as_deref().unwrap().contains("channel_bandwidth"), "{:?}", r.no_closed_form);
    }
    // A protocol left out has no limit: Simple is the plain 328 us, closed form and all.
    let r = run(&scenario(&channel_limited("", "ring")));
    close(r.time_s, 328e-6);
    // One value for every protocol.
    let all = channel_limited("", "ring").replace("{ ll: 5GB/s }", "5GB/s");
    close(run(&scenario(&all)).time_s, 4e-6 + 2.0 * (4e6 / 5e9 + 2e-6));
}

#[test]
fn channels_share_a_port_but_each_has_its_own_rate() {
    // nccl_ring on 2 channels of 2 chunks of 2 MB (one loop each), both through one NIC
    // port each way, under pipelined latency: a message holds the port for its bytes at
    // the link's 12.5 GB/s (160 us) and leaves once its channel has copied it at 5 GB/s
    // (400 us), then takes alpha (2 us) to land. Channel 0 takes the port at 4 us and
    // lands at 4 + 400 + 2 = 406 us; channel 1 takes it at 164 us and lands at
    // 164 + 400 + 2 = 566 us. Their second steps start when the first ones land (the
    // port is free again by then): channel 0 lands at 406 + 402 = 808 us, channel 1 at
    // 566 + 402 = 968 us.
    let algo = "{ name: nccl_ring, protocol: ll, channels: 2, chunk: 2MB }";
    let text = channel_limited("network: { model: ideal, latency: pipelined }", algo);
    close(run(&scenario(&text)).time_s, 968e-6);
    // One channel at a time through the port would take 4 + 4 x 402 = 1612 us; without
    // the rate the port alone sets the time: 4 + 4 x 160 + 2 = 646 us.
    let free = text.replace("  channel_bandwidth: { ll: 5GB/s }\n", "");
    close(run(&scenario(&free)).time_s, 646e-6);
}

#[test]
fn bad_channel_bandwidths_are_located_and_explained() {
    let text = channel_limited("", "ring");
    for (bad, want) in [
        ("{ ll: 0GB/s }", "topology.channel_bandwidth.ll: bandwidth '0GB/s' must be greater than 0"),
        ("{ ll64: 5GB/s }", "topology.channel_bandwidth: unknown protocol 'll64'; allowed: simple, ll, ll128"),
        ("{ ll: fast }", "topology.channel_bandwidth.ll:"),
    ] {
        let msg = error(&text.replace("{ ll: 5GB/s }", bad));
        assert!(msg.contains("bad.yaml:") && msg.contains(want), "{bad}:\n{msg}\nwanted: {want}");
    }
    let msg = error(
        "topology: { kind: fully_connected, link: { alpha: 1us, bandwidth: 1GB/s }, channel_bandwidth: 1GB/s }\nranks: 2\nalgorithms: [ring]\nsizes: 1KiB\n",
    );
    assert!(msg.contains("'channel_bandwidth' does not apply to kind fully_connected"), "{msg}");
    // Modelled under the ideal model only: the flow model says so rather than ignore it,
    // where the file gives the topology, before any point runs (it failed every point).
    let msg = error(&channel_limited("network: { model: flow }", "ring").replace("{ ll: 5GB/s }", "5GB/s"));
    assert!(
        msg.contains("bad.yaml:")
            && msg.contains("topology.channel_bandwidth: modelled under network model ideal only, not flow"),
        "{msg}"
    );
}

/// `inter.nic_path` is read into the cluster (default `pxb`) and says whether the GPU-NIC
/// path crosses a CPU, which is where NCCL keeps LL128 off across nodes.
#[test]
fn nic_path_is_read_and_defaults_to_pxb() {
    use allreduce_sim::scenario::TopologySpec;
    use allreduce_sim::topology::NicPath;
    let path = |text: &str| match &scenario(text).topology {
        TopologySpec::Cluster(c) => c.inter.nic_path,
        _ => panic!("not a cluster"),
    };
    assert_eq!(path(TWO_BY_ONE), NicPath::Pxb);
    for (name, want) in [("pix", NicPath::Pix), ("pxb", NicPath::Pxb), ("phb", NicPath::Phb), ("sys", NicPath::Sys)] {
        let text = TWO_BY_ONE.replace("inter: { alpha: 2us,", &format!("inter: {{ nic_path: {name}, alpha: 2us,"));
        assert_eq!(path(&text), want, "{name}");
        let topo = topology::build(&scenario(&text).topology, 2).unwrap();
        assert_eq!(topo.nic_through_cpu(), want.through_cpu(), "{name}");
    }
}

/// TWO_BY_ONE whose channels hand LL to the network at 5 GB/s (the NIC carries LL at
/// 12.5 GB/s), under `net`.
fn inter_channel_limited(net: &str, algorithm: &str) -> String {
    TWO_BY_ONE
        .replace(
            "inter: { alpha: 2us, bandwidth: 25GB/s }",
            "inter: { alpha: 2us, bandwidth: 25GB/s, channel_bandwidth: { ll: 5GB/s } }",
        )
        .replace("launch: 4us", &format!("launch: 4us\n{net}"))
        .replace("algorithms: [ring]", &format!("algorithms: [{algorithm}]"))
}

#[test]
fn a_message_across_nodes_leaves_at_its_channels_inter_rate() {
    // Ring of 2 ranks on 2 nodes, S = 8 MB: two steps of 4 MB across nodes, each handed to
    // the network at 5 GB/s (800 us) rather than the NIC's 12.5 GB/s for LL (320 us):
    // 4 + 2 (800 + 2) us = 1608 us, under both ways of holding ports.
    for net in ["", "network: { model: ideal, latency: pipelined }"] {
        let r = run(&scenario(&inter_channel_limited(net, "{ name: ring, protocol: ll }")));
        close(r.time_s, 1608e-6);
        assert!(r.closed_form_s.is_none() && r.closed_form_bounds_s.is_none());
        assert!(r.no_closed_form.as_deref().unwrap().contains("channel_bandwidth"), "{:?}", r.no_closed_form);
    }
    // Simple has no rate given: the plain 4 + 2 (2 + 160) = 328 us.
    close(run(&scenario(&inter_channel_limited("", "ring"))).time_s, 328e-6);
}

/// Two nodes of two GPUs (NVSwitch at 450 GB/s, LL at 225; one NIC of 25 GB/s, LL at
/// 12.5), the channels handing LL to the network at 5 GB/s.
const TWO_BY_TWO_RATED: &str = "
topology:
  kind: cluster
  nodes: 2
  gpus_per_node: 2
  intra: { kind: nvswitch, alpha: 1us, bandwidth: 450GB/s }
  nics_per_node: 2
  inter: { alpha: 2us, bandwidth: 25GB/s, channel_bandwidth: { ll: 5GB/s } }
  launch: 4us
algorithms: [{ name: ring, protocol: ll }]
sizes: 8MB
";

#[test]
fn messages_inside_a_node_do_not_pay_the_inter_rate() {
    // Two ranks (part of one node): only NVSwitch messages, at the link's rate:
    // 4 + 2 (1 + 4 MB / 225 GB/s) us, with the closed form (nothing crosses nodes).
    let one = TWO_BY_TWO_RATED.replace("sizes: 8MB", "sizes: 8MB\nranks: 2");
    let r = run(&scenario(&one));
    close(r.time_s, 4e-6 + 2.0 * (1e-6 + 4e6 / 225e9));
    assert!(r.closed_form_s.is_some(), "{:?}", r.no_closed_form);
    // Four ranks: the ring 0 -> 1 -> 2 -> 3 -> 0 crosses nodes at 1 -> 2 and 3 -> 0. Six
    // steps of 2 MB; a step across nodes takes 2 MB / 5 GB/s + 2 us = 402 us, one inside
    // 1 + 2 MB / 225 GB/s = 9.9 us, and each step waits for the one across before it:
    // 4 + 6 x 402 = 2416 us (ports held for the message's time). Under pipelined latency
    // the NIC port is free after 160 us, and the sender's unit copies one step after the
    // other: the last step across lands at 4 + 6 x 400 + 2 = 2406 us, and the step inside
    // the node that follows it has already landed.
    close(run(&scenario(TWO_BY_TWO_RATED)).time_s, 2416e-6);
    let pipelined =
        TWO_BY_TWO_RATED.replace("launch: 4us", "launch: 4us\nnetwork: { model: ideal, latency: pipelined }");
    close(run(&scenario(&pipelined)).time_s, 2406e-6);
    // Without the rate each step across takes 2 MB / 12.5 GB/s + 2 = 162 us: 4 + 6 x 162.
    let free = TWO_BY_TWO_RATED.replace(", channel_bandwidth: { ll: 5GB/s }", "");
    close(run(&scenario(&free)).time_s, 4e-6 + 6.0 * 162e-6);
}

#[test]
fn bad_inter_channel_bandwidths_are_located_and_explained() {
    let text = inter_channel_limited("", "ring");
    for (bad, want) in [
        (
            "{ ll: 0GB/s }",
            "bad.yaml:7:68: topology.inter.channel_bandwidth.ll: bandwidth '0GB/s' must be greater than 0",
        ),
        ("{ ll64: 5GB/s }", "topology.inter.channel_bandwidth: unknown protocol 'll64'; allowed: simple, ll, ll128"),
        ("{ ll: fast }", "topology.inter.channel_bandwidth.ll:"),
        ("-1GB/s", "topology.inter.channel_bandwidth"),
    ] {
        let msg = error(&text.replace("{ ll: 5GB/s }", bad));
        assert!(msg.contains("bad.yaml:") && msg.contains(want), "{bad}:\n{msg}\nwanted: {want}");
    }
    let msg = error(&inter_channel_limited("network: { model: flow }", "ring"));
    assert!(
        msg.contains("bad.yaml:")
            && msg.contains("topology.inter.channel_bandwidth: modelled under network model ideal only, not flow"),
        "{msg}"
    );
}

#[test]
fn inter_efficiency_sets_the_nics_share_and_defaults_to_efficiency() {
    // LL at a quarter of every link (efficiency), but at its line share, a half, on the
    // NIC: ring of 2 ranks on 2 nodes, S = 8 MB, 4 + 2 (2 + 4 MB / 12.5 GB/s) = 648 us.
    let quarter = TWO_BY_ONE
        .replace("launch: 4us", "launch: 4us\n  efficiency: { ll: 0.25 }")
        .replace("algorithms: [ring]", "algorithms: [{ name: ring, protocol: ll }]");
    let text = quarter.replace("bandwidth: 25GB/s }", "bandwidth: 25GB/s, efficiency: { ll: 0.5 } }");
    close(run(&scenario(&text)).time_s, 648e-6);
    // Left out, the NIC takes the cluster's efficiency: 4 + 2 (2 + 4 MB / 6.25 GB/s).
    close(run(&scenario(&quarter)).time_s, 1288e-6);
    // Only LL named: Simple keeps its share of 1 on the NIC, 328 us.
    let simple = text.replace("algorithms: [{ name: ring, protocol: ll }]", "algorithms: [ring]");
    close(run(&scenario(&simple)).time_s, 328e-6);
    for (bad, want) in [
        ("{ ll: 0 }", "bad.yaml:7:61: topology.inter.efficiency.ll: expected a number above 0, got 0"),
        ("{ simple: 0.5 }", "topology.inter.efficiency: unknown key 'simple'; allowed: ll, ll128"),
        ("0.5", "topology.inter.efficiency: expected a map { ll: F, ll128: F }"),
    ] {
        let msg = error(&text.replace("efficiency: { ll: 0.5 } }", &format!("efficiency: {bad} }}")));
        assert!(msg.contains(want), "{bad}:\n{msg}\nwanted: {want}");
    }
}

/// `algorithm` on `nodes` x `gpus` (NVSwitch inside a node, `nics` NICs per node shared
/// by its GPUs under the ideal model) at `size`: the closed form, its bounds where it has
/// none, and the simulated time.
fn closed_and_simulated(
    nodes: usize,
    gpus: usize,
    nics: usize,
    algorithm: &str,
    size: &str,
) -> (Option<f64>, Option<[f64; 2]>, f64) {
    let text = format!(
        "
topology:
  kind: cluster
  nodes: {nodes}
  gpus_per_node: {gpus}
  nics_per_node: {nics}
  intra: {{ kind: nvswitch, alpha: 1us, bandwidth: 100GB/s }}
  inter: {{ alpha: 2us, bandwidth: 25GB/s }}
algorithms: [{algorithm}]
sizes: [{size}]
data: {{ mode: off }}
"
    );
    let s = scenario(&text);
    let r = run_point(&s, &Point { algo: 0, ranks: s.ranks[0], bytes: s.sizes[0] });
    (r.closed_form_s, r.closed_form_bounds_s, r.time_s)
}

#[test]
fn the_step_recurrence_is_the_engines_time_where_gpus_share_a_nic() {
    // The step recurrence once let a node-mate's message of an earlier round take the
    // shared NIC ahead of a waiting one of higher priority: the double binary tree's
    // closed form with one NIC per node was one NVSwitch hop short (78.909 us against
    // 80.564 us at 512 KiB). The tree's forms must be exact; butterfly and
    // halving_doubling have none on these machines, only bounds, which must hold.
    let dbt_128k = "{ name: double_binary_tree, chunk: 128KiB }";
    let mut cases = Vec::new();
    for (nodes, gpus) in [(2, 2), (2, 4), (4, 2)] {
        for nics in [1, 2] {
            for algorithm in ["double_binary_tree", dbt_128k, "butterfly", "halving_doubling"] {
                for size in ["512KiB", "1MiB"] {
                    cases.push((nodes, gpus, nics, algorithm, size));
                }
            }
        }
    }
    for (nodes, gpus, nics, algorithm, size) in cases {
        let (closed, bounds, simulated) = closed_and_simulated(nodes, gpus, nics, algorithm, size);
        let what = format!("{algorithm} on {nodes}x{gpus}, {nics} NIC(s) a node, {size}");
        match (closed, bounds) {
            (Some(closed), _) => {
                assert!(
                    (closed / simulated - 1.0).abs() < 1e-9,
                    "{what}: closed form {closed:e}, simulated {simulated:e}"
                )
            }
            (None, Some([lo, hi])) if !algorithm.contains("double_binary_tree") => {
                assert!(
                    lo <= simulated * (1.0 + 1e-9) && simulated <= hi * (1.0 + 1e-9),
                    "{what}: {simulated:e} outside [{lo:e}, {hi:e}]"
                )
            }
            _ => panic!("{what}: no closed form"),
        }
    }
}
