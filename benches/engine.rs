//! Engine throughput: ring at P = 256 and 1024 (timing only and with data), butterfly
//! and halving_doubling at P = 16384 and 65536 (timing only), in simulated messages per
//! second; ring's programs alone (ops handed out, nothing run), in ops per second; beside
//! it a yardstick, a bare binary-heap event loop (pop one event, push one) holding as many
//! live events, in events per second. Then the flow model against the ideal model on one machine, a
//! 1024-host fat tree (32 leaves of 32 hosts, 4 spines, 8:1 oversubscribed): ring in host
//! order (little sharing) and strided (every hop through a spine), and halving_doubling,
//! 1 MiB per rank, timing only. Run: `cargo bench --bench engine`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use allreduce_sim::algos::{self, Params, Problem};
use allreduce_sim::sim::data::DataPlane;
use allreduce_sim::sim::data::{Init, ReduceOp, initial_values};
use allreduce_sim::sim::engine::NoObserver;
use allreduce_sim::sim::flow::Sharing;
use allreduce_sim::sim::{Network, Op, simulate, simulate_on};
use allreduce_sim::topology::{FatTree, FullyConnected, Link, RankOrder};
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
    let inputs = || (0..ranks).map(|r| initial_values::<f32>(Init::Random, 1, r, elems)).collect::<Vec<_>>().into();
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

/// Butterfly at P = 16384 and 65536, 4 KiB per rank, timing only.
#[divan::bench(args = [16384, 65536], sample_count = 5)]
fn butterfly_off(b: Bencher, ranks: usize) {
    bench_algo(b, "butterfly", ranks, 1024, false);
}

/// halving_doubling at P = 16384 and 65536, 4 KiB per rank, timing only.
#[divan::bench(args = [16384, 65536], sample_count = 5)]
fn halving_doubling_off(b: Bencher, ranks: usize) {
    bench_algo(b, "halving_doubling", ranks, 1024, false);
}

/// The algorithms that keep many messages outstanding per rank (each rank issues its
/// P - 1 sends and posts its P - 1 receives at once), timing only, 1 MiB per rank: what
/// the matching index and the doubly linked port lists are for (docs/performance.md).
#[divan::bench(args = [256, 1024], sample_count = 3)]
fn direct_off(b: Bencher, ranks: usize) {
    bench_algo(b, "direct", ranks, 262_144, false);
}

#[divan::bench(args = [256, 1024], sample_count = 3)]
fn naive_off(b: Bencher, ranks: usize) {
    bench_algo(b, "naive", ranks, 262_144, false);
}

/// Every allreduce that runs on a fully connected machine, at P = 256 and 1024, 1 MiB,
/// timing only, in messages per second: the cost per message of each beside ring's (the
/// goal is within 3x of ring's everywhere; docs/performance.md has the table).
const EVERY: [&str; 16] = [
    "ring",
    "star",
    "chain",
    "binomial_tree",
    "butterfly",
    "ring_segmented",
    "bidirectional_ring",
    "halving_doubling",
    "double_binary_tree",
    "naive",
    "ring_gloo",
    "ring_chunked",
    "bcube",
    "direct",
    "nccl_ring",
    "nccl_tree",
];

#[divan::bench(args = EVERY, sample_count = 3)]
fn per_message_256(b: Bencher, id: &str) {
    bench_algo(b, id, 256, 262_144, false);
}

#[divan::bench(args = EVERY, sample_count = 3)]
fn per_message_1024(b: Bencher, id: &str) {
    bench_algo(b, id, 1024, 262_144, false);
}

/// Ring's programs alone, no engine: 256 ranks, 1 MiB, each pulled in turn up to and
/// including its next wait, as the engine pulls a rank until it blocks; in ops per second
/// (a ring message is three ops: send, receive, wait). What handing out ops costs, apart
/// from running them.
#[divan::bench(sample_count = 10)]
fn ring_program_pull(b: Bencher) {
    let ranks = 256;
    let algo = algos::build("ring", Params::default()).unwrap();
    let t = topo(ranks);
    let p = Problem { ranks, elems: 262_144, elem_bytes: 4 };
    let programs = || (0..ranks).flat_map(|r| algo.program(r as u32, p, &t)).collect::<Vec<_>>();
    let ops = programs().into_iter().map(|prog| prog.count()).sum::<usize>();
    b.counter(ItemsCount::new(ops)).with_inputs(programs).bench_local_values(|mut programs| {
        let mut live = programs.len();
        while live > 0 {
            live = 0;
            for prog in programs.iter_mut() {
                for op in prog.by_ref() {
                    live += 1;
                    if matches!(black_box(op), Op::Wait(_) | Op::WaitAll) {
                        break;
                    }
                }
            }
        }
        programs
    });
}

/// The yardstick: a bare event loop over `live` events of (time, seq), one pop and
/// one push per event, 1M events per sample.
#[divan::bench(args = [256, 1024, 16384, 65536], sample_count = 10)]
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

/// The 1024-host fat tree of the flow benchmarks.
fn fat_tree(order: RankOrder) -> FatTree {
    let link = Link { alpha: 1e-6, bandwidth: 12.5e9 };
    FatTree::new(32, 32, 4, link, link).unwrap().placed(order, 1024).unwrap()
}

/// Simulate `id` on the fat tree under `net`, timing only, counting messages.
fn bench_net(b: Bencher, id: &str, order: RankOrder, net: Network) {
    let algo = algos::build(id, Params::default()).unwrap();
    let t = fat_tree(order);
    let p = Problem { ranks: 1024, elems: 262_144, elem_bytes: 4 };
    let none = || None::<fn(&[usize]) -> DataPlane>;
    let messages = simulate_on(algo.as_ref(), &t, p, 5e-11, net, none(), &mut NoObserver).unwrap().0.messages;
    b.counter(ItemsCount::new(messages))
        .bench(|| black_box(simulate_on(algo.as_ref(), &t, p, 5e-11, net, none(), &mut NoObserver).unwrap().0.time));
}

const FLOW: Network = Network { model: allreduce_sim::sim::Model::Flow(Sharing::Weighted), envelope: 0 };

/// Ring on the fat tree, host order: ideal, then flow.
#[divan::bench(sample_count = 5)]
fn fat_tree_ring_ideal(b: Bencher) {
    bench_net(b, "ring", RankOrder::HostOrder, Network::IDEAL);
}

#[divan::bench(sample_count = 5)]
fn fat_tree_ring_flow(b: Bencher) {
    bench_net(b, "ring", RankOrder::HostOrder, FLOW);
}

/// Ring on the fat tree, strided: every message crosses a spine, 8 flows per uplink.
#[divan::bench(sample_count = 5)]
fn fat_tree_ring_strided_ideal(b: Bencher) {
    bench_net(b, "ring", RankOrder::Strided, Network::IDEAL);
}

#[divan::bench(sample_count = 5)]
fn fat_tree_ring_strided_flow(b: Bencher) {
    bench_net(b, "ring", RankOrder::Strided, FLOW);
}

/// halving_doubling on the fat tree, host order.
#[divan::bench(sample_count = 10)]
fn fat_tree_halving_doubling_ideal(b: Bencher) {
    bench_net(b, "halving_doubling", RankOrder::HostOrder, Network::IDEAL);
}

#[divan::bench(sample_count = 10)]
fn fat_tree_halving_doubling_flow(b: Bencher) {
    bench_net(b, "halving_doubling", RankOrder::HostOrder, FLOW);
}
