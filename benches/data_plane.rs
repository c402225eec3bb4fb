//! The data plane's phases on one point, in GB/s beside this machine's `memcpy`: ring,
//! P = 64, 16 MiB of random f32 per rank, every element of every rank generated, moved,
//! reduced and checked (`validation/simgrid/speed/ring_p64_16MiB.yaml`, the point of
//! `validation/simgrid/speed.sh`).
//!
//! Run: `cargo bench --bench data_plane [-- REPS]`. Prints a Markdown table (the README's
//! "The data plane, phase by phase"): for each phase the thread time it took (summed over
//! the threads; the median of REPS runs, 5 by default), the bytes it handles and their
//! rate per thread, then the wall time of the whole check and, for comparison, `memcpy`
//! of 4 KiB and 256 KiB (within the cache) and 256 MiB (memory to memory), one thread.
//! A thread's time is wall-clock time, so on a machine other work shares it counts the
//! time the thread waited for a core too: the load average is printed with the table.

use std::time::{Duration, Instant};

use allreduce_sim::algos::{self, Params, Problem};
use allreduce_sim::collective::Collective;
use allreduce_sim::sim::data::{DataConfig, Dtype, Init, Phases, ReduceOp, verify_log};
use allreduce_sim::sim::engine::NoObserver;
use allreduce_sim::sim::{Network, simulate_logged};
use allreduce_sim::topology::{FullyConnected, Link};

const RANKS: usize = 64;
const ELEMS: usize = 4 << 20;

/// Median of `xs` (the lower middle one for an even count).
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[(xs.len() - 1) / 2]
}

/// `memcpy` of `bytes`, `times` times, in GB/s (bytes copied per second), best of 5.
fn memcpy_rate(bytes: usize, times: usize) -> f64 {
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    dst.copy_from_slice(&src);
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..times {
                dst.copy_from_slice(std::hint::black_box(&src));
            }
            std::hint::black_box(&dst);
            (bytes * times) as f64 / t.elapsed().as_secs_f64() / 1e9
        })
        .fold(0.0, f64::max)
}

fn main() {
    let reps: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(5);
    let algo = algos::build("ring", Params::default()).expect("ring exists");
    let topo = FullyConnected { ranks: RANKS, link: Link { alpha: 1e-6, bandwidth: 12.5e9 }, nics: 1 };
    let p = Problem { ranks: RANKS, elems: ELEMS, elem_bytes: 4 };
    let cfg = DataConfig { dtype: Dtype::F32, op: ReduceOp::Sum, init: Init::Random, seed: 1 };
    let expect = Collective::Allreduce.expectations(RANKS, ELEMS);
    let depth = algo.reduction_depth(&p, &topo);

    let mut runs: Vec<(f64, f64, Phases)> = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        let (_, log) =
            simulate_logged(algo.as_ref(), &topo, p, 0.0, Network::IDEAL, &mut NoObserver).expect("ring runs");
        let sim = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let (v, phases) = verify_log(cfg, &log, depth, &expect).expect("ring's log is index preserving");
        let wall = t.elapsed().as_secs_f64();
        assert!(v.verified, "the ring's result must verify");
        runs.push((sim, wall, phases));
    }
    let secs = |f: fn(&Phases) -> Duration| median(runs.iter().map(|r| f(&r.2).as_secs_f64()).collect());
    let vectors = (RANKS * ELEMS * 4) as f64;
    // Every rank sends (P - 1) / P of its vector twice (reduce-scatter, allgather).
    let moved = 2.0 * vectors * (RANKS - 1) as f64 / RANKS as f64;
    let rows: [(&str, f64, f64, &str); 4] = [
        ("generate", secs(|p| p.generate), vectors, "every rank's inputs written"),
        ("reference", secs(|p| p.reference), vectors, "every input read into the exact sum"),
        ("simulate (replay)", secs(|p| p.replay), moved, "message bytes copied or reduced"),
        ("check", secs(|p| p.check), vectors, "every final value read"),
    ];
    let ph = &runs[0].2;
    println!(
        "ring, P = {RANKS}, 16 MiB of f32 per rank: {} tiles of {} indices; median of {reps} runs\n",
        ph.tiles, ph.tile_elems
    );
    println!("| phase | thread time | bytes | GB/s per thread | what |");
    println!("| --- | ---: | ---: | ---: | --- |");
    for (name, t, bytes, what) in rows {
        println!("| {name} | {:.3} s | {:.2} GB | {:.1} | {what} |", t, bytes / 1e9, bytes / t / 1e9);
    }
    let sim = median(runs.iter().map(|r| r.0).collect());
    let wall = median(runs.iter().map(|r| r.1).collect());
    println!("\nevent loop (logging the {} data operations): {:.3} s wall", 3 * 64 * 63, sim);
    println!(
        "generate + reference + replay + check, all threads: {wall:.3} s wall, {} threads",
        rayon::current_num_threads()
    );
    println!(
        "memcpy, one thread: {:.1} GB/s for 4 KiB (a tile's message), {:.1} GB/s for 256 KiB (a tile), \
         {:.1} GB/s for 256 MiB (memory to memory)",
        memcpy_rate(4 << 10, 1 << 16),
        memcpy_rate(256 << 10, 1024),
        memcpy_rate(256 << 20, 2)
    );
    println!("load average when done: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
}
