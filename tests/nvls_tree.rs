//! NCCL's NVLS Tree allreduce (`nvls_tree`, docs/nccl.md): its refusals, NCCL's model
//! weighing it (by hand from `src/graph/tuning.cc`), and `nccl_model` running it.

use allreduce_sim::collective::Collective;
use allreduce_sim::runner;
use allreduce_sim::scenario::parse_str;
use allreduce_sim::select::nccl::{Algo, Arch, Inputs, Proto, Tuning, lat_bw};

/// `nodes` DGX-like nodes of 8 GPUs on an NVSwitch of 100 GB/s, `nics` NICs of 400 Gb/s.
fn cluster(nodes: usize, nics: usize, algorithms: &str, sizes: &str, extra: &str) -> String {
    format!(
        "name: nvls_tree\nranks: [{}]\ntopology:\n  kind: cluster\n  nodes: {nodes}\n  gpus_per_node: 8\n  \
         intra: {{ kind: nvswitch, alpha: 2us, bandwidth: 100GB/s }}\n  nics_per_node: {nics}\n  \
         inter: {{ alpha: 3us, bandwidth: 400Gbps }}\ncompute: {{ cost_per_byte: 0.01ns }}\n\
         {extra}algorithms: {algorithms}\nsizes: {sizes}\n",
        nodes * 8
    )
}

fn why(text: &str) -> String {
    let r = &runner::run(&parse_str(text, "nvls_tree.yaml").unwrap()).results[0];
    r.not_applicable.clone().unwrap_or_else(|| panic!("ran: {r:?}"))
}

/// Refused with the reason: one node, PCIe, one GPU per node, data on.
#[test]
fn refusals_say_why() {
    let off = "data: { mode: off }\n";
    assert!(why(&cluster(1, 8, "[nvls_tree]", "[1MiB]", off)).contains("across nodes"));
    assert!(why(&cluster(2, 8, "[nvls_tree]", "[1MiB]", off).replace("nvswitch", "pcie")).contains("NVSwitch"));
    let single = cluster(2, 1, "[nvls_tree]", "[1MiB]", off).replace("gpus_per_node: 8", "gpus_per_node: 1");
    let single = single.replace("ranks: [16]", "ranks: [2]");
    assert!(why(&single).contains("two or more GPUs per node"));
    assert!(why(&cluster(2, 8, "[nvls_tree]", "[1MiB]", "")).contains("data: { mode: off }"));
}

/// It runs, and where the NICs bind it beats NCCL's ring: each node sends every element
/// across once and gets it back once, spread over its 8 NICs (S / 400 GB/s = 0.67 ms at
/// 256 MiB), where the ring crosses each node boundary with `2(P-1)/P S`. Each GPU's
/// NVLink carries `(H+1)/H` of S each way (0.67 ms at 450 GB/s). Under `latency:
/// pipelined` a chunk holds its port for its bytes only, so it comes within 1.5 times of
/// those bounds.
#[test]
fn runs_and_beats_the_ring_where_the_nics_bind() {
    let text = cluster(
        2,
        8,
        "[nvls_tree, { name: nccl_ring, channels: 16 }]",
        "[256MiB]",
        "data: { mode: off }\nnetwork: { model: ideal, latency: pipelined }\n",
    )
    .replace("bandwidth: 100GB/s", "bandwidth: 450GB/s");
    let report = runner::run(&parse_str(&text, "nvls_tree.yaml").unwrap());
    let t: Vec<f64> = report.results.iter().map(|r| r.time_s).collect();
    assert!(report.results.iter().all(|r| r.not_applicable.is_none() && r.passed()), "{report:?}");
    let bound = 268435456.0 / 400e9;
    assert!(t[0] < t[1] && t[0] >= bound && t[0] < 1.5 * bound, "{t:?} {bound}");
}

/// NCCL's model for NVLS Tree, by hand (Hopper, 8 heads, 100 GB/s of NVLink, NICs of
/// 50 GB/s): per channel min(100/8 x 0.85 x 7/8 x 2, 50 x 2 on two nodes, 57.7) =
/// 18.59375 GB/s, 8 channels: bus 148.75 GB/s, algorithm bandwidth P/(2(P-1)) of it;
/// latency 25 + 2 log2(N) x 20.9 us. On 8 nodes with 400 GB/s of NVLink the NIC binds:
/// min(93.0, 50, 45.5) = 45.5 per channel.
#[test]
fn tuning_by_hand() {
    let x = Inputs {
        ranks: 16,
        nodes: 2,
        bw_intra: 100.0,
        bw_inter: 50.0,
        channels: 2,
        arch: Arch::Hopper,
        avg: false,
        pcie: false,
        ll128: true,
        nvls: true,
        nvls_heads: 8,
        tuning: Tuning::V2_30,
        search: None,
    };
    let ar = Collective::Allreduce;
    let (lat, bw) = lat_bw(&x, ar, Algo::NvlsTree, Proto::Simple);
    assert!((lat - (25.0 + 2.0 * 20.9)).abs() < 1e-9, "{lat}");
    assert!((bw - 148.75 * 16.0 / 30.0).abs() < 1e-9, "{bw}");
    let big = Inputs { ranks: 64, nodes: 8, bw_intra: 400.0, ..x };
    let (lat, bw) = lat_bw(&big, ar, Algo::NvlsTree, Proto::Simple);
    assert!((lat - (25.0 + 6.0 * 20.9)).abs() < 1e-9, "{lat}");
    assert!((bw - 8.0 * 45.5 * 64.0 / 126.0).abs() < 1e-9, "{bw}");
    // Simple only, allreduce only, more than one node, two heads or more, NVLS on, and
    // NCCL 2.18 or later.
    assert_eq!(lat_bw(&x, ar, Algo::NvlsTree, Proto::Ll).1, 0.0);
    assert_eq!(lat_bw(&x, Collective::Allgather, Algo::NvlsTree, Proto::Simple).1, 0.0);
    assert_eq!(lat_bw(&Inputs { ranks: 8, nodes: 1, ..x }, ar, Algo::NvlsTree, Proto::Simple).1, 0.0);
    assert_eq!(lat_bw(&Inputs { nvls_heads: 1, ..x }, ar, Algo::NvlsTree, Proto::Simple).1, 0.0);
    assert_eq!(lat_bw(&Inputs { nvls: false, ..x }, ar, Algo::NvlsTree, Proto::Simple).1, 0.0);
    assert_eq!(lat_bw(&x.with_release("2.17.1"), ar, Algo::NvlsTree, Proto::Simple).1, 0.0);
    assert!(lat_bw(&x.with_release("2.18.3+cuda12.2"), ar, Algo::NvlsTree, Proto::Simple).1 > 0.0);
    assert!(!x.with_release("2.16.5").nvls && x.with_release("2.17.1").nvls);
    assert_eq!(lat_bw(&x.with_tuning(Tuning::V2_8), ar, Algo::NvlsTree, Proto::Simple).1, 0.0);
}

/// `nccl_model` on two Hopper nodes at 1 GiB picks NVLS Tree (the case above: 79.3 GB/s
/// of algorithm bandwidth against the ring's 53.3 and the tree's 41.4) and runs it as
/// `nvls_tree` on NCCL's 16 channels and 128 KiB chunk; `nvls: 0` leaves it out, and so
/// does one NIC per node (one head: NCCL's NVLS graph needs two channels).
#[test]
fn nccl_model_picks_nvls_tree() {
    let text = cluster(2, 8, "[nccl_model, { name: nccl_model, nvls: 0 }]", "[1GiB]", "data: { mode: off }\n");
    let report = runner::run(&parse_str(&text, "nvls_tree.yaml").unwrap());
    let on = report.results[0].selection.as_ref().unwrap();
    assert_eq!(on.library_choice.as_deref(), Some("nvls_tree/simple"));
    assert_eq!(on.selected, "nvls_tree(chunk=131072, protocol=simple)");
    let want = (25.0 + 2.0 * 20.9 + 1073741824.0 / (1000.0 * 148.75 * 16.0 / 30.0)) * 1e-6;
    assert!((on.predicted_s.unwrap() / want - 1.0).abs() < 1e-12, "{:?} {want}", on.predicted_s);
    assert!(report.results[0].passed(), "{:?}", report.results[0]);
    let off = report.results[1].selection.as_ref().unwrap();
    assert_ne!(off.library_choice.as_deref(), Some("nvls_tree/simple"));
    let one_nic = cluster(2, 1, "[nccl_model]", "[1GiB]", "data: { mode: off }\n");
    let report = runner::run(&parse_str(&one_nic, "nvls_tree.yaml").unwrap());
    let sel = report.results[0].selection.as_ref().unwrap();
    assert_ne!(sel.library_choice.as_deref(), Some("nvls_tree/simple"));
}
