//! The data plane's phases on one point, in GB/s beside this machine's `memcpy`: ring,
//! P = 64, 16 MiB of random f32 per rank, every element of every rank generated, moved,
//! reduced and checked (`validation/simgrid/speed/ring_p64_16MiB.yaml`, the point of
//! `validation/simgrid/speed.sh`).
//!
//! Run: `cargo bench --bench data_plane [-- REPS]`. Prints a Markdown table (the README's
//! "The data plane, phase by phase"): for each phase the CPU time it took (all threads;
//! the median of REPS runs, 5 by default), the bytes it handles and their rate per core,
//! then the wall time of the whole run and, for comparison, `memcpy` of 4 KiB and 256 KiB
//! (within the cache) and 256 MiB (memory to memory), one thread.
//!
//! The phases interleave tile by tile, so each is timed with the wall clock inside the
//! thread, which on a machine other work shares counts the time a thread waited for a
//! core too. The table splits the process's CPU time (user + system, `/proc/self/stat`,
//! in 10 ms ticks) over the phases in the proportion of those thread times: the waits fall
//! on the phases as evenly as the work does. The load average is printed with it.

use std::time::{Duration, Instant};

use allreduce_sim::algos::{self, Params, Problem};
use allreduce_sim::collective::Collective;
use allreduce_sim::sim::data::{DataConfig, Dtype, Init, Phases, ReduceOp, verify_log};
use allreduce_sim::sim::engine::NoObserver;
use allreduce_sim::sim::{Network, simulate_logged};
use allreduce_sim::topology::{FullyConnected, Link};

const RANKS: usize = 64;
const ELEMS: usize = 4 << 20;

/// User + system CPU time of the whole process so far, seconds (`/proc/self/stat`, in
/// ticks of 1/100 s: Linux's fixed `USER_HZ`); 0 where it cannot be read.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    f.get(11).zip(f.get(12)).map_or(0.0, |(u, s)| (u + s) as f64 / 100.0)
}

/// Median of `xs` (the lower middle one for an even count).
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[(xs.len() - 1) / 2]
}

/// `memcpy` of `bytes`, `times` times, in GB/s (bytes copied per second), the median of 9.
fn memcpy_rate(bytes: usize, times: usize) -> f64 {
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    dst.copy_from_slice(&src);
    median(
        (0..9)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..times {
                    dst.copy_from_slice(std::hint::black_box(&src));
                }
                std::hint::black_box(&dst);
                (bytes * times) as f64 / t.elapsed().as_secs_f64() / 1e9
            })
            .collect(),
    )
}

fn main() {
    let reps: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(5);
    let algo = algos::build("ring", Params::default()).expect("ring exists");
    let topo = FullyConnected { ranks: RANKS, link: Link { alpha: 1e-6, bandwidth: 12.5e9 }, nics: 1 };
    let p = Problem { ranks: RANKS, elems: ELEMS, elem_bytes: 4 };
    let cfg = DataConfig { dtype: Dtype::F32, op: ReduceOp::Sum, init: Init::Random, seed: 1 };
    let expect = Collective::Allreduce.expectations(RANKS, ELEMS);
    let depth = algo.reduction_depth(&p, &topo);

    let mut runs: Vec<(f64, f64, Phases, f64)> = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        let (_, log) =
            simulate_logged(algo.as_ref(), &topo, p, 0.0, Network::IDEAL, &mut NoObserver).expect("ring runs");
        let sim = t.elapsed().as_secs_f64();
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let (v, phases) = verify_log(cfg, &log, depth, &expect).expect("ring's log is index preserving");
        let (wall, cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        assert!(v.verified, "the ring's result must verify");
        runs.push((sim, wall, phases, cpu));
    }
    // A phase's share of the threads' time, times the process's CPU time, per run.
    let total = |p: &Phases| (p.generate + p.reference + p.replay + p.check).as_secs_f64().max(1e-12);
    let secs =
        |f: fn(&Phases) -> Duration| median(runs.iter().map(|r| f(&r.2).as_secs_f64() / total(&r.2) * r.3).collect());
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
    println!("| phase | CPU time | bytes | GB/s per core | what |");
    println!("| --- | ---: | ---: | ---: | --- |");
    for (name, t, bytes, what) in rows {
        println!("| {name} | {:.3} s | {:.2} GB | {:.1} | {what} |", t, bytes / 1e9, bytes / t / 1e9);
    }
    let sim = median(runs.iter().map(|r| r.0).collect());
    let wall = median(runs.iter().map(|r| r.1).collect());
    let cpu = median(runs.iter().map(|r| r.3).collect());
    println!("\nevent loop (logging the data operations): {sim:.3} s wall");
    println!(
        "generate + reference + replay + check: {wall:.3} s wall, {cpu:.2} s CPU, {} threads",
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
