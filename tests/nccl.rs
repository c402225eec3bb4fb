//! NCCL's algorithms as NCCL runs them (`nccl_ring`, `nccl_tree`): every point verifies
//! element by element over ranks, channels, chunks and protocols, on flat machines and
//! on a hierarchy of 2 nodes x 4 GPUs; on flat machines the simulated time equals the
//! recurrences of `nccl_ring`'s closed form wherever they claim exactness, and the symmetric
//! cases equal their formula.

mod common;
use allreduce_sim::algos::forms::nccl_ring_symmetric;
use allreduce_sim::algos::{self, Algorithm, Machine, Params, Problem};
use allreduce_sim::collective::Collective;
use allreduce_sim::cost_model::Hockney;
use allreduce_sim::scenario::ParamValue;
use allreduce_sim::sim::engine::SimStats;
use allreduce_sim::topology::{Hierarchical, Level, Link, Topology};
use common::flat;

fn build(id: &str, params: &[(&str, ParamValue)]) -> Box<dyn Algorithm> {
    let params = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    algos::build(id, Params::new(params)).expect("builds")
}

fn int(v: u64) -> ParamValue {
    ParamValue::Int(v)
}

fn s(v: &str) -> ParamValue {
    ParamValue::Str(v.to_string())
}

/// Simulate one point with data and check every element.
fn run(algo: &dyn Algorithm, topo: &dyn Topology, n: usize, c: f64) -> Result<SimStats, String> {
    common::simulate_checked(Collective::Allreduce, algo, topo, n, c, 5)
}

/// Verify, then compare with the closed form if there is one: `Ok(true)` matched,
/// `Ok(false)` none (the bounds must hold the time).
fn point(algo: &dyn Algorithm, topo: &dyn Topology, n: usize, c: f64) -> Result<bool, String> {
    let stats = run(algo, topo, n, c)?;
    common::meets_form(algo, topo, n, c, stats.time)
}

fn two_by_four(nics: u32) -> Hierarchical {
    let level = |size, alpha, bandwidth| Level { size, link: Link { alpha, bandwidth }, nics: None };
    Hierarchical::new(vec![level(4, 0.7e-6, 150e9), level(2, 5e-6, 12.5e9)], nics).unwrap()
}

/// Sizes (elements): empty, fewer than P, uneven, a whole number of chunks and loops.
const SIZES: &[usize] = &[0, 3, 37, 96, 1000, 4096];

#[test]
fn nccl_ring_verifies_and_meets_its_recurrence_on_flat_machines() {
    let mut multi = 0;
    for np in [1, 2, 3, 4, 5, 8] {
        for nics in [1, 2, 4] {
            let topo = flat(np, nics);
            for channels in [1, 2, 3] {
                for chunk in [8u64, 64, 1000] {
                    for g in [1u64, 2] {
                        if np % g as usize != 0 {
                            continue;
                        }
                        let algo = build(
                            "nccl_ring",
                            &[("channels", int(channels)), ("chunk", int(chunk)), ("gpus_per_node", int(g))],
                        );
                        for &n in SIZES {
                            for c in [0.0, 2e-10] {
                                let at =
                                    format!("P={np} nics={nics} channels={channels} chunk={chunk} g={g} n={n} C={c}");
                                match point(algo.as_ref(), &topo, n, c) {
                                    Ok(true) if channels > 1 => multi += 1,
                                    Ok(true) => {}
                                    // One channel on one NIC always has its recurrence.
                                    Ok(false) if channels == 1 && nics == 1 => panic!("{at}: no closed form"),
                                    Ok(false) => {}
                                    Err(e) => panic!("{at}: {e}"),
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    // Several channels have theirs where there are ports enough and no slice waits.
    assert!(multi > 100, "{multi} multi-channel points exact");
}

/// Every protocol's own chunk (Simple's 2 MiB in two slices): verified, and exact on
/// one channel and one NIC.
#[test]
fn nccl_ring_protocols() {
    let topo = flat(4, 1);
    for proto in ["simple", "ll", "ll128"] {
        let algo = build("nccl_ring", &[("protocol", s(proto))]);
        for n in [5, 1 << 16, (1 << 20) + 12] {
            assert_eq!(point(algo.as_ref(), &topo, n, 1e-10), Ok(true), "{proto} n={n}");
        }
    }
}

/// The recurrence against the symmetric case worked by hand: P = 4, one channel, two
/// whole loops of chunks of 16 elements, C = 0: `2 (P-1) L T(64 B)`.
#[test]
fn nccl_ring_symmetric_by_hand() {
    let topo = flat(4, 1);
    let algo = build("nccl_ring", &[("chunk", int(64))]);
    let n = 2 * 4 * 16;
    let stats = run(algo.as_ref(), &topo, n, 0.0).unwrap();
    let h = Hockney { alpha: 1.5e-6, bandwidth: 12.5e9, c: 0.0, nics: 1 };
    let want = nccl_ring_symmetric(4, 2, 64.0, &h);
    assert!((want - 6.0 * 2.0 * (1.5e-6 + 64.0 / 12.5e9)).abs() < 1e-18);
    assert!((stats.time / want - 1.0).abs() < 1e-12, "{} {want}", stats.time);
}

/// Two nodes of four GPUs (a hierarchy's innermost group is a node): every channel
/// count and protocol verifies; more channels cross the slow level through more ports.
#[test]
fn nccl_ring_on_two_nodes_of_four() {
    for nics in [1, 4] {
        let topo = two_by_four(nics);
        for channels in [1, 2, 4] {
            for chunk in [16u64, 4096] {
                let algo = build("nccl_ring", &[("channels", int(channels)), ("chunk", int(chunk))]);
                for &n in SIZES {
                    run(algo.as_ref(), &topo, n, 1e-10)
                        .unwrap_or_else(|e| panic!("nics={nics} channels={channels} chunk={chunk} n={n}: {e}"));
                }
            }
        }
    }
    // With four ports per GPU, four channels move a large vector faster than one.
    let topo = two_by_four(4);
    let n = 1 << 20;
    let one = run(build("nccl_ring", &[]).as_ref(), &topo, n, 0.0).unwrap().time;
    let four = run(build("nccl_ring", &[("channels", int(4))]).as_ref(), &topo, n, 0.0).unwrap().time;
    assert!(four < one, "{four} {one}");
}

#[test]
fn nccl_ring_refuses_partial_nodes() {
    let topo = flat(6, 1);
    let algo = build("nccl_ring", &[("gpus_per_node", int(4))]);
    let p = Problem { ranks: 6, elems: 100, elem_bytes: 4 };
    let why = algo.applicable(&p, &Machine { topo: &topo, cost_per_byte: 0.0 }).unwrap_err();
    assert!(why.contains("gpus_per_node"), "{why}");
    let bad = algos::build("nccl_ring", Params::new(vec![("protocol".into(), s("fast"))])).unwrap_err();
    assert!(bad.message.contains("simple, ll, ll128"), "{}", bad.message);
}

/// `nccl_tree` verifies on flat machines (one GPU per node, or nodes of 2 and 4 by the
/// parameter) over channels, chunks and sizes.
#[test]
fn nccl_tree_verifies_on_flat_machines() {
    for np in [1, 2, 3, 4, 5, 8, 12] {
        for nics in [1, 4] {
            let topo = flat(np, nics);
            for channels in [1u64, 2, 3, 4] {
                for chunk in [8u64, 100] {
                    for g in [1u64, 2, 4] {
                        if np % g as usize != 0 {
                            continue;
                        }
                        let algo = build(
                            "nccl_tree",
                            &[("channels", int(channels)), ("chunk", int(chunk)), ("gpus_per_node", int(g))],
                        );
                        for &n in SIZES {
                            run(algo.as_ref(), &topo, n, 2e-10).unwrap_or_else(|e| {
                                panic!("P={np} nics={nics} channels={channels} chunk={chunk} g={g} n={n}: {e}")
                            });
                        }
                    }
                }
            }
        }
    }
}

/// Two nodes of four GPUs: every protocol's chunk and channel count verifies; the
/// pipelined tree of many chunks beats one chunk (the whole part up, then down).
#[test]
fn nccl_tree_on_two_nodes_of_four() {
    let topo = two_by_four(2);
    for proto in ["simple", "ll", "ll128"] {
        for channels in [1u64, 2, 4] {
            let algo = build("nccl_tree", &[("protocol", s(proto)), ("channels", int(channels))]);
            for n in [0, 7, 1000, 300_000] {
                run(algo.as_ref(), &topo, n, 1e-10)
                    .unwrap_or_else(|e| panic!("{proto} channels={channels} n={n}: {e}"));
            }
        }
    }
    let n = 1 << 20;
    let whole = run(build("nccl_tree", &[("chunk", int(4 << 20))]).as_ref(), &topo, n, 0.0).unwrap().time;
    let piped = run(build("nccl_tree", &[("chunk", int(64 << 10))]).as_ref(), &topo, n, 0.0).unwrap().time;
    assert!(piped < whole, "{piped} {whole}");
}

/// `explain nccl_ring` on 2 nodes x 4 GPUs: each channel's ring, node by node, entering
/// the nodes at its own GPU, and the schedule's cross-node messages leaving from there.
#[test]
fn explain_shows_the_rings_of_a_small_cluster() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("nccl");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cluster.yaml");
    std::fs::write(
        &path,
        "name: 2 nodes x 4 GPUs
topology:
  kind: hierarchical
  levels:
    - { name: nvlink, size: 4, alpha: 0.7us, bandwidth: 150GB/s }
    - { name: network, size: 2, alpha: 5us, bandwidth: 100Gbps }
  nics: 2
algorithms: [nccl_ring]
sizes: [1KiB]
",
    )
    .unwrap();
    let out = assert_cmd::Command::cargo_bin("allreduce-sim")
        .unwrap()
        .args(["explain", "nccl_ring", "--scenario", path.to_str().unwrap(), "--size", "256"])
        .args(["--param", "channels=2", "--param", "chunk=64"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("4 GPU(s) per node; chunk 64 B"), "{text}");
    assert!(text.contains("channel 0: ring 0 1 2 3 | 4 5 6 7 (back to 0)"), "{text}");
    assert!(text.contains("channel 1: ring 1 2 3 0 | 5 6 7 4 (back to 1)"), "{text}");
    // Channel 0 crosses from GPU 3 to GPU 4, channel 1 from GPU 0 to GPU 5.
    assert!(text.contains("3  -> 4") && text.contains("0  -> 5"), "{text}");
    assert!(text.contains("simulated:"), "{text}");
}
