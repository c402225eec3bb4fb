//! Engine throughput: ring at P = 256 and 1024 (timing only and with data) and
//! butterfly at P = 16384, in simulated messages per second; beside it a yardstick, a
//! bare binary-heap event loop (pop one event, push one) holding as many live events,
//! in events per second. Run: `cargo bench --bench engine`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use allreduce_sim::algos::{self, Params, Problem};
use allreduce_sim::sim::data::{Init, ReduceOp, initial_values};
use allreduce_sim::sim::engine::NoObserver;
use allreduce_sim::sim::simulate;
use allreduce_sim::topology::{FullyConnected, Link};
use divan::counter::ItemsCount;
use divan::{Bencher, black_box};

fn main() {
    divan::main();
}

fn topo(ranks: usize) -> FullyConnected {
    FullyConnected { ranks, link: Link { alpha: 1e-6, bandwidth: 12.5e9 }, nics: 1 }
}

/// Simulate `id` once, counting messages for the throughput figure.
fn bench_algo(b: Bencher, id: &str, ranks: usize, elems: usize, data: bool) {
    let algo = algos::build(id, Params::default()).unwrap();
    let t = topo(ranks);
    let p = Problem { ranks, elems, elem_bytes: 4 };
    let inputs = || (0..ranks).map(|r| initial_values(Init::Random, 1, r, elems)).collect::<Vec<_>>();
    let messages = simulate(algo.as_ref(), &t, p, 5e-11, None, &mut NoObserver).unwrap().0.messages;
    b.counter(ItemsCount::new(messages))
        .with_inputs(|| data.then(|| (inputs(), ReduceOp::Sum)))
        .bench_values(|input| black_box(simulate(algo.as_ref(), &t, p, 5e-11, input, &mut NoObserver).unwrap().0.time));
}

/// Ring, timing only, 1 MiB per rank.
#[divan::bench(args = [256, 1024], sample_count = 10)]
fn ring_off(b: Bencher, ranks: usize) {
    bench_algo(b, "ring", ranks, 262_144, false);
}

/// Ring with real data: 1 MiB per rank at P = 256, 256 KiB at P = 1024 (1 GiB in all).
#[divan::bench(args = [256, 1024], sample_count = 5)]
fn ring_full(b: Bencher, ranks: usize) {
    bench_algo(b, "ring", ranks, if ranks > 256 { 65_536 } else { 262_144 }, true);
}

/// Butterfly at P = 16384, timing only.
#[divan::bench(args = [16384], sample_count = 5)]
fn butterfly_off(b: Bencher, ranks: usize) {
    bench_algo(b, "butterfly", ranks, 1024, false);
}

/// The yardstick: a bare event loop over `live` events of (time, seq), one pop and
/// one push per event, 1M events per sample.
#[divan::bench(args = [256, 1024, 16384], sample_count = 10)]
fn bare_heap(b: Bencher, live: usize) {
    const EVENTS: u64 = 1 << 20;
    b.counter(ItemsCount::new(EVENTS)).bench(|| {
        let mut heap: BinaryHeap<Reverse<(u64, u64, u32)>> = (0..live as u64).map(|i| Reverse((i, i, 0))).collect();
        let mut seq = live as u64;
        for _ in 0..EVENTS {
            let Reverse((t, _, id)) = heap.pop().unwrap();
            seq += 1;
            heap.push(Reverse((t + 1 + (seq & 7), seq, id)));
        }
        black_box(heap.len())
    });
}
