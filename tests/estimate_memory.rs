//! The memory estimate is an upper figure of what a point's run holds: the heap's peak
//! while the point runs (its simulation, then the closed form's check) is held to the
//! estimate of the point, measured by a counting allocator. The points are those whose
//! closed form is a step recurrence that books every message (an exchange on a machine
//! whose links differ), which the estimate once left out: `naive` at 256 ranks on a
//! hierarchy held 2.5 times its estimate; `pat`'s, whose bounds read off the programs (it
//! has no closed form) hold its leaves' unmatched sends: its allgather at 256 ranks held
//! more than its estimate; `nvls_tree` on NVSwitch clusters, whose streams (two a GPU,
//! switch agent and channel) and messages in flight it also left out: 22.7 MB held at 512
//! ranks where it said 512 KiB; the points whose check sweeps or runs the step recurrence
//! of another algorithm (`ring_chunked` at 200 ranks held 96 MB for an estimate of 39 MiB),
//! and single points whose critical path is tracked with its steps (`ring` at 256 ranks
//! held 25 MB in the tracker for a timeline of 16 MiB).
//!
//! One test in its own binary, so that no other test's allocations share the count.

use allreduce_sim::estimate;
use allreduce_sim::results::Point;

#[path = "common/counting.rs"]
mod counting;

/// Counted as the allocator may hold both blocks while it copies.
#[global_allocator]
static ALLOC: counting::Counting<true> = counting::Counting;

#[test]
fn a_point_holds_no_more_than_its_estimate() {
    let hierarchy = "ranks: 256\ntopology: { kind: hierarchical, levels: [ { size: 16, alpha: 0.5us, bandwidth: \
                     300GB/s }, { size: 16, alpha: 10us, bandwidth: 25Gbps, nics: 1 } ], nics: 2 }";
    let flat = "ranks: 256\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps }, nics: 1 }";
    let torus = "topology: { kind: torus2d, link: { alpha: 1us, bandwidth: 100Gbps }, dims: [8, 24], nics: 2 }";
    // NVSwitch nodes for `nvls_tree`: its GPUs issue their loads on every channel at
    // once (all of them with one loop a channel) and each GPU and switch agent runs two
    // streams a channel.
    let cluster = |nodes: usize, nics: usize| {
        format!(
            "ranks: {}\ntopology: {{ kind: cluster, nodes: {nodes}, gpus_per_node: 8, intra: {{ kind: nvswitch, \
             alpha: 3.4us, bandwidth: 450GB/s }}, nics_per_node: {nics}, inter: {{ alpha: 14us, bandwidth: \
             400Gbps }}, fabric: {{ kind: rail_optimized }} }}",
            nodes * 8
        )
    };
    let (wide, narrow) = (cluster(64, 8), cluster(16, 4));
    let flat200 = "ranks: 200\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps } }";
    let flat1024 = "ranks: 1024\ntopology: { link: { alpha: 1us, bandwidth: 100Gbps } }";
    // (machine, algorithm, size, data mode, the only point of its run: its critical path
    // tracked with its steps).
    let cases = [
        // NVSwitch clusters: one loop a channel; then 32 loops of 4 KiB chunks, where heads
        // (4 of 8 GPUs) and the other GPUs run ahead of the totals by different windows.
        (wide.as_str(), "nvls_tree", "4000004", "off", false),
        (narrow.as_str(), "{ name: nvls_tree, chunk: 4KiB }", "8MiB", "off", false),
        (hierarchy, "naive", "40", "off", false),
        (hierarchy, "naive", "4000", "full", false),
        // Replayed by tiles: each thread copies a tile of every message in flight.
        (hierarchy, "naive", "64KiB", "full", false),
        (hierarchy, "direct", "40", "off", false),
        (hierarchy, "direct", "4096", "off", false),
        (torus, "naive", "40", "off", false),
        (torus, "bcube", "40", "off", false),
        (hierarchy, "all_to_all", "0", "off", false),
        (flat, "pat", "4000004", "off", false),
        (hierarchy, "pat", "40", "off", false),
        (flat, "ring", "4000004", "off", true),
        (flat, "ring_gloo", "40", "off", true),
        (flat200, "nccl_ring_ag", "4000004", "off", true),
        (flat1024, "butterfly_rs", "40", "off", true),
        (flat200, "ring_chunked", "4000004", "off", true),
        (flat1024, "butterfly_rs", "40", "off", false),
        (flat1024, "neighbor_exchange", "40", "off", false),
        (flat1024, "scatter_allgather", "4000004", "off", true),
    ];
    for (machine, algo, size, mode, single) in cases {
        let entry = match algo {
            "all_to_all" => "{ name: all_to_all, collective: barrier }",
            "pat" => "{ name: pat, collective: allgather }",
            "nccl_ring_ag" => "{ name: nccl_ring, collective: allgather }",
            "butterfly_rs" => "{ name: butterfly, collective: reduce_scatter }",
            "neighbor_exchange" => "{ name: neighbor_exchange, collective: allgather }",
            "scatter_allgather" => "{ name: scatter_allgather, collective: broadcast }",
            _ => algo,
        };
        let text = format!(
            "name: m\n{machine}\ncompute: {{ cost_per_byte: 0.01ns }}\ndata: {{ mode: {mode} }}\nalgorithms: \
             [{entry}]\nsizes: [{size}]\n"
        );
        let s = allreduce_sim::scenario::parse_str(&text, "m.yaml").unwrap();
        let pts = allreduce_sim::runner::points(&s);
        assert_eq!(pts.len(), 1);
        let pt: &Point = &pts[0];
        let est = estimate::estimate(&s, pt, single);
        let before = counting::reset_peak();
        let res = if single {
            allreduce_sim::runner::run_point_tracked(&s, pt, true)
        } else {
            allreduce_sim::runner::run_point(&s, pt)
        };
        let held = counting::peak() - before;
        assert!(res.failures.is_empty(), "{algo} {size} on {machine}: {:?}", res.failures);
        assert!(
            held as u64 <= est.memory_bytes(),
            "{algo} at P = {}, {size} B, data {mode}, on {machine}: held {held} bytes, estimated {} ({est:?})",
            pt.ranks,
            est.memory_bytes()
        );
    }
}
