//! NCCL's PAT (`pat`, reduce-scatter and allgather): every point verifies element by
//! element over P, sizes, channels and chunks; the hand-computed times of docs/nccl.md's
//! schedule hold on a flat machine.

use allreduce_sim::report::PointResult;
use allreduce_sim::runner;
use allreduce_sim::scenario::parse_str;

/// Run `algos` of `coll` on a flat machine (alpha 1 us, 10 GB/s, one NIC, C as given).
fn run(coll: &str, algos: &str, ranks: &str, sizes: &str, c: &str) -> Vec<PointResult> {
    let text = format!(
        "ranks: {ranks}\ncollective: {coll}\ntopology: {{ link: {{ alpha: 1us, bandwidth: 10GB/s }}, nics: 1 }}\n\
         compute: {{ cost_per_byte: {c} }}\nalgorithms: {algos}\nsizes: {sizes}\n"
    );
    let s = parse_str(&text, "t.yaml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    runner::run(&s).results
}

#[test]
fn every_point_verifies() {
    for coll in ["reduce_scatter", "allgather"] {
        let results = run(
            coll,
            "[pat, { name: pat, channels: 3 }, { name: pat, chunk: 64 }]",
            "[1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17]",
            "[0, 4, 28, 96, 4000, 65536]",
            "0.1ns",
        );
        for r in &results {
            let what = format!("{coll} {} P={} S={}", r.algorithm, r.ranks, r.bytes);
            assert!(r.not_applicable.is_none(), "{what}: {:?}", r.not_applicable);
            assert!(r.passed(), "{what}: {:?}", r.failures);
            assert_eq!(r.verified, Some(true), "{what}");
        }
    }
}

#[test]
fn each_rank_sends_each_other_block_once_per_chunk() {
    // P = 8, 8 KiB: blocks of 1 KiB, one chunk (64 KiB): P(P-1) messages, (P-1)/P S each.
    for coll in ["reduce_scatter", "allgather"] {
        let r = &run(coll, "[pat]", "8", "[8KiB]", "0")[0];
        assert_eq!(r.messages, 56, "{coll}");
        assert_eq!(r.bytes_sent_max, 7 * 1024, "{coll}");
        // 1 MiB: blocks of 128 KiB in 64 KiB chunks (512 KiB halved while 16 (32) x
        // chunk exceeds the buffer): twice the messages.
        let r = &run(coll, "[pat]", "8", "[1MiB]", "0")[0];
        assert_eq!(r.messages, 112, "{coll}");
    }
}

#[test]
fn hand_computed_times() {
    // T = alpha + S/(P B) per block message, one NIC, C = 0.
    // P = 4 (A = 2, D = 2): each rank sends its leaves x+3 and x+1 to x+1 (out port busy
    // to 2T), receives x+2's and its own block's partials from x-1 (at T and 2T), then
    // sends block x+2 across 2 (2T to 3T) and takes its own block's last partial from
    // x-2 at 3T: 3T, as the ring.
    let s = 4096.0;
    let t4 = 1e-6 + s / 4.0 / 10e9;
    // P = 8, tiny (A = 4, D = 2): four leaves to x+1 (to 4T), two tops across 2 (to 6T),
    // one across 4 (to 7T): 7T; NCCL would pack the four leaves in one message.
    let t8 = 1e-6 + s / 8.0 / 10e9;
    for coll in ["reduce_scatter", "allgather"] {
        let r = &run(coll, "[pat]", "4", "[4096]", "0")[0];
        assert!((r.time_s / (3.0 * t4) - 1.0).abs() < 1e-9, "{coll} P = 4: {} vs {}", r.time_s, 3.0 * t4);
        let r = &run(coll, "[pat]", "8", "[4096]", "0")[0];
        assert!((r.time_s / (7.0 * t8) - 1.0).abs() < 1e-9, "{coll} P = 8: {} vs {}", r.time_s, 7.0 * t8);
    }
}

#[test]
fn nccl_model_runs_pat_with_one_gpu_per_node() {
    // A flat machine is one GPU per node: NCCL's model picks PAT for a small allgather
    // at scale, and the point runs `pat`, not a stand-in.
    let r = &run("allgather", "[nccl_model]", "64", "[4096]", "0")[0];
    let sel = r.selection.as_ref().expect("a selection");
    assert_eq!(sel.library_choice.as_deref(), Some("pat/simple"));
    assert!(sel.selected.starts_with("pat"), "{}", sel.selected);
    assert_eq!(r.verified, Some(true));
}
