//! Every collective's algorithms, and the ring family, over the regression matrix (P = 1, 2, 3, non-powers of
//! two; n = 0, n < P, n not divisible by P) on machines of one and two NICs: each point
//! runs through the runner, so its data is checked against what the collective leaves on
//! each rank ([`Collective::expected`]), and its time must equal its closed form.

use allreduce_sim::collective::{Collective, Expect};
use allreduce_sim::report::PointResult;
use allreduce_sim::runner;
use allreduce_sim::scenario::{Overrides, parse_str};
use allreduce_sim::sim::data::{Finals, ReduceOp, Reference, Vectors};

/// Machines: latency-bound, bandwidth-bound with slow compute, two NICs and free compute.
const MACHINES: &[(&str, &str, &str, u32)] = &[
    ("1us", "100Gbps", "0.05ns", 1),
    ("5us", "8Gbps", "1ns", 1),
    ("1us", "100Gbps", "0", 2),
    ("0", "200Gbps", "0.2ns", 1),
];

/// Sizes in f32 elements: empty, fewer than P, not divisible by P, divisible.
const ELEMS: &[usize] = &[0, 1, 2, 7, 13, 24, 60];

fn scenario(coll: Collective, algos: &str, ranks: &str, m: (&str, &str, &str, u32)) -> String {
    scenario_of(coll, algos, ranks, ELEMS, m)
}

/// A scenario of `algos` running `coll` on machine `m`, sizes in elements.
fn scenario_of(coll: Collective, algos: &str, ranks: &str, elems: &[usize], m: (&str, &str, &str, u32)) -> String {
    let sizes: Vec<String> = elems.iter().map(|n| (n * 4).to_string()).collect();
    format!(
        "ranks: {ranks}\ncollective: {coll}\n\
         topology: {{ link: {{ alpha: {}, bandwidth: {} }}, nics: {} }}\n\
         compute: {{ cost_per_byte: {} }}\nalgorithms: {algos}\nsizes: [{}]\n",
        m.0,
        m.1,
        m.3,
        m.2,
        sizes.join(", ")
    )
}

/// Run `algos` of `coll` over the matrix: every point verified and on its closed form
/// (the runner fails a point otherwise), and every closed form present.
fn matrix(coll: Collective, algos: &str) {
    for &m in MACHINES {
        let text = scenario(coll, algos, "[1, 2, 3, 4, 5, 7, 8]", m);
        let s = parse_str(&text, "t.yaml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        let report = runner::run(&s);
        for r in &report.results {
            let what = format!("{coll} {} P={} S={} on {m:?}", r.algorithm, r.ranks, r.bytes);
            assert!(r.not_applicable.is_none(), "{what}: {:?}", r.not_applicable);
            assert!(r.passed(), "{what}: {:?}", r.failures);
            assert_eq!(r.collective, coll);
            assert!(r.closed_form_s.is_some(), "{what}: no closed form");
            if coll.has_data() {
                assert_eq!(r.verified, Some(true), "{what}");
            }
        }
    }
}

#[test]
fn reduce_scatter_matrix() {
    matrix(Collective::ReduceScatter, "[ring]");
}

#[test]
fn allgather_matrix() {
    matrix(Collective::Allgather, "[ring]");
}

/// Recursive halving and doubling, and direct exchange, alone: verified everywhere they
/// run (halving and doubling need P a power of two: `n/a` elsewhere), on their closed
/// forms wherever they have one, which they must where P divides n.
#[test]
fn halving_and_direct_phases() {
    for coll in [Collective::ReduceScatter, Collective::Allgather] {
        for &m in MACHINES {
            let text = scenario(coll, "[halving_doubling, direct]", "[1, 2, 3, 4, 5, 8]", m);
            for r in &runner::run(&parse_str(&text, "t.yaml").unwrap()).results {
                let what = format!("{coll} {} P={} S={} on {m:?}", r.algorithm, r.ranks, r.bytes);
                assert!(r.passed(), "{what}: {:?}", r.failures);
                if r.algorithm == "halving_doubling" && !r.ranks.is_power_of_two() {
                    assert!(r.not_applicable.as_deref().is_some_and(|w| w.contains("power of two")), "{what}");
                    continue;
                }
                assert_eq!(r.verified, Some(true), "{what}");
                // Where P does not divide n, direct's step recurrence may find a port
                // served out of step order (then it has none, as its allreduce).
                let divides = (r.bytes as usize / 4).is_multiple_of(r.ranks);
                if divides {
                    assert!(r.closed_form_s.is_some(), "{what}: no closed form");
                }
            }
        }
    }
}

/// Open MPI's neighbour exchange allgather (even P), butterfly and recursive-halving
/// reduce-scatters (any P) and scatter-allgather broadcast (n >= P): verified, on their closed forms
/// wherever they have one (the runner fails a point otherwise), which they must where P
/// divides n (and, but for neighbour exchange, P is a power of two); `n/a` with the reason
/// where P or n does not suit them. The step recurrence gives most other points a closed form too.
#[test]
fn open_mpi_exchanges() {
    let (mut closed, mut points) = (0, 0);
    for (coll, algo) in [
        (Collective::Allgather, "neighbor_exchange"),
        (Collective::ReduceScatter, "butterfly"),
        (Collective::ReduceScatter, "recursive_halving"),
        (Collective::Broadcast, "scatter_allgather"),
    ] {
        for &m in MACHINES {
            let text = scenario(coll, &format!("[{algo}]"), "[1, 2, 3, 4, 5, 6, 8, 10, 16]", m);
            for r in &runner::run(&parse_str(&text, "t.yaml").unwrap()).results {
                let what = format!("{coll} {algo} P={} S={} on {m:?}", r.ranks, r.bytes);
                assert!(r.passed(), "{what}: {:?}", r.failures);
                let fits = match algo {
                    "scatter_allgather" => r.bytes as usize / 4 >= r.ranks,
                    "neighbor_exchange" => r.ranks % 2 == 0 || r.ranks == 1,
                    _ => true,
                };
                if !fits {
                    let why = r.not_applicable.as_deref().unwrap_or_default();
                    assert!(
                        why.contains("power of two") || why.contains("even") || why.contains("fewer elements"),
                        "{what}: {why}"
                    );
                    continue;
                }
                assert!(r.not_applicable.is_none(), "{what}: {:?}", r.not_applicable);
                assert_eq!(r.verified, Some(true), "{what}");
                // Where blocks differ, a rank that runs ahead may take a port out of
                // step order and the recurrence gives up; where P divides n it may not.
                let pow2_only = algo != "neighbor_exchange";
                if (r.bytes as usize / 4).is_multiple_of(r.ranks) && (!pow2_only || r.ranks.is_power_of_two()) {
                    assert!(r.closed_form_s.is_some(), "{what}: no closed form");
                }
                closed += usize::from(r.closed_form_s.is_some());
                points += 1;
            }
        }
    }
    assert!(closed * 4 >= points * 3, "closed forms at {closed} of {points} points");
}

#[test]
fn broadcast_matrix() {
    matrix(
        Collective::Broadcast,
        "[one_to_all, binomial_tree, chain, binary_tree, knomial, { name: knomial, radix: 2 }, \
         { name: knomial, radix: 3 }]",
    );
}

#[test]
fn reduce_matrix() {
    matrix(Collective::Reduce, "[binomial_tree, chain, all_to_one, binary_tree, in_order_binary_tree]");
}

#[test]
fn barrier_matrix() {
    matrix(Collective::Barrier, "[all_to_all, all_to_one, bruck]");
}

/// Open MPI's recursive-doubling barrier: every point passes its checks (the runner
/// fails a point whose time leaves a closed form it has), and P a power of two has one.
#[test]
fn recursive_doubling_barrier() {
    for &m in MACHINES {
        let text = scenario(Collective::Barrier, "[recursive_doubling]", "[1, 2, 3, 4, 5, 6, 7, 8, 12]", m);
        for r in &runner::run(&parse_str(&text, "t.yaml").unwrap()).results {
            let what = format!("recursive_doubling P={} on {m:?}", r.ranks);
            assert!(r.not_applicable.is_none() && r.passed(), "{what}: {:?}", r.failures);
            assert_eq!(r.closed_form_s.is_some(), r.ranks.is_power_of_two(), "{what}");
        }
    }
}

#[test]
fn segmented_chains_keep_their_closed_forms() {
    for &m in MACHINES {
        for coll in [Collective::Broadcast, Collective::Reduce] {
            let text = scenario_of(coll, "[{ name: chain, segments: 3 }]", "[2, 3, 5]", &[3, 13, 60], m);
            let report = runner::run(&parse_str(&text, "t.yaml").unwrap());
            for r in &report.results {
                assert!(r.passed(), "{coll} {} P={} S={}: {:?}", r.algorithm, r.ranks, r.bytes, r.failures);
                assert!(r.closed_form_s.is_some());
            }
        }
    }
}

#[test]
fn busbw_uses_the_collectives_factor() {
    let m = MACHINES[0];
    for (coll, algo, factor) in [
        (Collective::ReduceScatter, "ring", 3.0 / 4.0),
        (Collective::Allgather, "ring", 3.0 / 4.0),
        (Collective::Broadcast, "binomial_tree", 1.0),
        (Collective::Reduce, "chain", 1.0),
    ] {
        let text = scenario_of(coll, &format!("[{algo}]"), "4", &[1024], m);
        let r = &runner::run(&parse_str(&text, "t.yaml").unwrap()).results[0];
        let (algbw, busbw) = (r.algbw_bps.unwrap(), r.busbw_bps.unwrap());
        assert!((algbw - 4096.0 / r.time_s).abs() <= 1e-6 * algbw);
        assert!((busbw / algbw - factor).abs() < 1e-12, "{coll}: {}", busbw / algbw);
    }
    let text = scenario_of(Collective::Barrier, "[all_to_all]", "4", &[1024], m);
    let r = &runner::run(&parse_str(&text, "t.yaml").unwrap()).results[0];
    // A barrier moves nothing; what it verifies is causality: every rank heard from every rank.
    assert_eq!((r.bytes, r.busbw_bps, r.verified), (0, None, Some(true)), "a barrier moves nothing");
}

#[test]
fn an_algorithm_of_another_collective_is_refused_by_name() {
    let text = scenario(Collective::Broadcast, "[ring]", "4", MACHINES[0]);
    let e = parse_str(&text, "t.yaml").unwrap_err().to_string();
    assert!(e.contains("unknown algorithm 'ring' for broadcast"), "{e}");
    assert!(e.contains("allowed: one_to_all, binomial_tree, chain"), "{e}");
    assert!(e.contains("'ring' is an algorithm of allreduce, reduce_scatter, allgather"), "{e}");
}

#[test]
fn an_entry_may_name_its_own_collective() {
    let text = "ranks: 4\ncollective: broadcast\ntopology: { link: { alpha: 1us, bandwidth: 10Gbps } }\n\
                algorithms: [binomial_tree, { name: binomial_tree, collective: reduce }, \
                { name: ring, collective: allgather }]\nsizes: 4KiB\n";
    let s = parse_str(text, "t.yaml").unwrap();
    let colls: Vec<_> = s.algorithms.iter().map(|a| a.collective).collect();
    assert_eq!(colls, [Collective::Broadcast, Collective::Reduce, Collective::Allgather]);
    let report = runner::run(&s);
    assert!(report.results.iter().all(|r| r.passed()));
    let e = parse_str(&text.replace("collective: reduce", "collective: gather"), "t.yaml").unwrap_err().to_string();
    assert!(e.contains("'gather' is not implemented yet"), "{e}");
}

#[test]
fn the_collective_flag_overrides_every_entry() {
    let text = "ranks: 4\ntopology: { link: { alpha: 1us, bandwidth: 10Gbps } }\n\
                algorithms: [binomial_tree, chain]\nsizes: 4KiB\n";
    let mut s = parse_str(text, "t.yaml").unwrap();
    Overrides { collective: Some("reduce".into()), ..Default::default() }.apply(&mut s).unwrap();
    assert_eq!(s.collective, Collective::Reduce);
    assert!(s.algorithms.iter().all(|a| a.collective == Collective::Reduce));
    let mut s = parse_str(text, "t.yaml").unwrap();
    let e = Overrides { collective: Some("barrier".into()), ..Default::default() }.apply(&mut s).unwrap_err();
    assert!(e.to_string().contains("--collective"), "{e}");
    assert!(e.to_string().contains("allowed: all_to_all, all_to_one"), "{e}");
    let mut s = parse_str(text, "t.yaml").unwrap();
    Overrides { collective: Some("barrier".into()), algorithms: Some(vec!["all_to_one".into()]), ..Default::default() }
        .apply(&mut s)
        .unwrap();
    assert_eq!(s.algorithms[0].name, "all_to_one");
    let mut s = parse_str(text, "t.yaml").unwrap();
    let e = Overrides { collective: Some("alltoall".into()), ..Default::default() }.apply(&mut s).unwrap_err();
    assert!(e.to_string().contains("not implemented yet"), "{e}");
}

/// The check itself: what each expectation accepts and refuses.
#[test]
fn the_check_holds_each_rank_to_its_expectation() {
    let inputs = vec![vec![1.0f32, 2.0, 3.0, 4.0], vec![10.0, 20.0, 30.0, 40.0]];
    let reference = Reference::of(&Vectors::F32(inputs.clone()), ReduceOp::Sum);
    let check = |c: Collective, results: &[Vec<f32>], depth: usize| {
        let finals = Finals { vectors: Vectors::F32(results.to_vec()), lost: Vec::new() };
        reference.check(&finals, depth, &c.expectations(2, 4))
    };
    // Reduce-scatter on 2 ranks: rank 0 owns [0, 2), rank 1 [2, 4); the rest is free.
    let good = vec![vec![11.0, 22.0, -1.0, -1.0], vec![7.0, 7.0, 33.0, 44.0]];
    let v = check(Collective::ReduceScatter, &good, 1);
    assert!(v.verified && v.ranks_bitwise_equal, "{v:?}");
    let bad = vec![vec![11.0, 22.0, 0.0, 0.0], vec![7.0, 7.0, 33.0, 45.0]];
    let v = check(Collective::ReduceScatter, &bad, 1);
    assert_eq!(v.first_violation.map(|f| (f.rank, f.index)), Some((1, 3)));
    // Allgather: every rank holds rank s's block s bit for bit.
    let good = vec![vec![1.0, 2.0, 30.0, 40.0]; 2];
    assert!(check(Collective::Allgather, &good, 1).verified);
    let off = vec![vec![1.0, 2.0, 30.0, 40.0], vec![1.0, 2.0, 30.0, 40.000004]];
    assert!(!check(Collective::Allgather, &off, 1).verified, "an input must arrive bit for bit");
    // Broadcast: the root's vector everywhere.
    assert!(check(Collective::Broadcast, &vec![inputs[0].clone(); 2], 0).verified);
    assert!(!check(Collective::Broadcast, &inputs, 0).verified);
    // Reduce: only the root is held to anything.
    assert!(check(Collective::Reduce, &[vec![11.0, 22.0, 33.0, 44.0], vec![0.0; 4]], 1).verified);
    // Allreduce: ranks that must hold the same thing hold the same bits.
    let sums = vec![11.0, 22.0, 33.0, 44.0];
    let v = check(Collective::Allreduce, &[sums.clone(), sums.clone()], 1);
    assert!(v.verified && v.ranks_bitwise_equal);
    let v = check(Collective::Allreduce, &[sums.clone(), vec![11.0, 22.0, 33.0, 44.000004]], 4);
    // A sum of two is within u |s| in any order, less than an ulp: one ulp off is refused
    // (the bound is also (P - 1) u sum |x_i|, whatever the depth claimed).
    assert!(!v.verified, "one ulp off a sum of two positive terms");
    // With cancellation the bound (u sum |x_i|) spans ulps of the sum: within it, yet not
    // the same bits on both ranks.
    let cancel = Reference::of(&Vectors::F32(vec![vec![100.0f32, 1.0], vec![-99.0, 1.0]]), ReduceOp::Sum);
    let finals = Finals { vectors: Vectors::F32(vec![vec![1.0, 2.0], vec![1.000_000_1, 2.0]]), lost: Vec::new() };
    let v = cancel.check(&finals, 1, &Collective::Allreduce.expectations(2, 2));
    assert!(v.verified && !v.ranks_bitwise_equal, "within the bound but not the same bits: {v:?}");
    // Every expectation names ranges of the vector, none empty.
    assert!(
        Collective::Allgather.expected(0, 5, 3).iter().all(|(r, e)| !r.is_empty() && matches!(e, Expect::InputOf(_)))
    );
}

// ---------------------------------------------------------------------------------------
// The ring family: `ring` with `segments`, Open MPI's `ring_segmented` and
// `bidirectional_ring`, allreduce. Every point is verified and, where it has a closed
// form, on it (the runner fails the point otherwise); the closed form is also required
// wherever the algorithm's docs promise one.

/// More machines: the ring family's closed forms depend on which of T and R is larger.
const RING_MACHINES: &[(&str, &str, &str, u32)] = &[
    ("1us", "100Gbps", "0.05ns", 1),
    ("5us", "8Gbps", "1ns", 1),
    ("1us", "100Gbps", "0", 2),
    ("0", "200Gbps", "0.2ns", 1),
    ("2us", "50Gbps", "0", 1),
    ("1us", "50Gbps", "0.5ns", 2),
];

fn run(algos: &str, ranks: &str, elems: &[usize], m: (&str, &str, &str, u32)) -> Vec<PointResult> {
    let text = scenario_of(Collective::Allreduce, algos, ranks, elems, m);
    let s = parse_str(&text, "t.yaml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    runner::run(&s).results
}

fn check(r: &PointResult, m: (&str, &str, &str, u32), want_closed: bool) {
    let what = format!("{} P={} S={} on {m:?}", r.algorithm, r.ranks, r.bytes);
    assert!(r.passed(), "{what}: {:?}", r.failures);
    if r.not_applicable.is_none() {
        assert_eq!(r.verified, Some(true), "{what}");
        if want_closed {
            assert!(r.closed_form_s.is_some(), "{what}: no closed form");
        }
    }
}

#[test]
fn ring_segments_are_verified_and_exact_where_chunks_divide() {
    for &m in RING_MACHINES {
        let res = run(
            "[ring, { name: ring, segments: 2 }, { name: ring, segments: 3 }]",
            "[1, 2, 3, 4, 5]",
            &[0, 1, 7, 12, 30, 60, 120],
            m,
        );
        for r in &res {
            let segs = if r.algorithm == "ring" {
                1
            } else {
                r.algorithm.trim_end_matches(')').rsplit('=').next().unwrap().parse().unwrap()
            };
            let n = r.bytes as usize / 4;
            check(r, m, n.is_multiple_of(r.ranks * segs));
        }
    }
}

#[test]
fn ring_segments_beyond_a_chunk_are_refused_at_the_point() {
    let res = run("[{ name: ring, segments: 4 }]", "4", &[8], RING_MACHINES[0]);
    let why = res[0].not_applicable.as_deref().unwrap_or_default();
    assert!(why.contains("allowed here: 1 to 2"), "{why}");
}

#[test]
fn ring_segmented_follows_open_mpi() {
    for &m in RING_MACHINES {
        let res = run(
            "[ring_segmented, { name: ring_segmented, segment: 8 }, { name: ring_segmented, segment: 12 }]",
            "[1, 2, 3, 4, 5]",
            &[0, 1, 7, 12, 30, 60, 120],
            m,
        );
        for r in &res {
            check(r, m, false);
        }
    }
    // Open MPI's phase rule, on 3 ranks in segments of 4 elements (rounds of 12): 60
    // elements make 5 phases; a remainder of 4 is at least P but not above half a round
    // (still 5), one of 7 is (6), one of 2 is not even P (5); fewer than 12: the plain ring.
    let seg = allreduce_sim::algos::RingSegmented { segment: 16 };
    assert_eq!([60, 64, 67, 62, 11].map(|n| seg.phases(3, n, 4)), [5, 5, 6, 5, 1]);
}

#[test]
fn ring_segmented_has_its_closed_form_where_phases_divide() {
    for &m in RING_MACHINES {
        // 4 ranks, segments of 2 elements: 24 elements make 3 phases of 2-element pieces.
        for r in &run("[{ name: ring_segmented, segment: 8 }]", "[2, 4]", &[24, 48], m) {
            check(r, m, true);
        }
    }
}

#[test]
fn bidirectional_ring_is_verified_and_exact_where_halves_divide() {
    for &m in RING_MACHINES {
        let res = run("[bidirectional_ring]", "[1, 2, 3, 4, 5, 8]", &[0, 1, 7, 16, 30, 48, 80, 240], m);
        for r in &res {
            let n = r.bytes as usize / 4;
            let contended = m.3 > 1 && m.2 != "0";
            check(r, m, n.is_multiple_of(2 * r.ranks) && !contended);
        }
    }
}

/// Whether every rank has heard, directly or through others, from every rank by the end:
/// what a barrier promises (no rank leaves before all have arrived). A message carries
/// what its sender knew when it issued it; a delivery at the very instant a send is
/// issued counts as known to that send (ties go to delivery first, so the check may
/// accept a schedule that is right only by a tie, never reject a right one).
fn everyone_heard_from_everyone(tl: &allreduce_sim::timeline::Timeline) -> bool {
    let p = tl.ranks;
    let mut knows: Vec<Vec<bool>> = (0..p).map(|r| (0..p).map(|q| q == r).collect()).collect();
    // (time, 0 = delivery / 1 = issue / 2 = delivery of a message issued that instant, index)
    let mut events: Vec<(f64, u8, usize)> = Vec::new();
    for (i, m) in tl.messages.iter().enumerate() {
        events.push((m.issued, 1, i));
        // A message of no duration (alpha = 0, no bytes) arrives after it is issued.
        events.push((m.end, if m.end > m.issued { 0 } else { 2 }, i));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut carried: Vec<Vec<bool>> = vec![Vec::new(); tl.messages.len()];
    for (_, kind, i) in events {
        let m = &tl.messages[i];
        if kind == 1 {
            carried[i] = knows[m.src as usize].clone();
        } else {
            for q in 0..p {
                knows[m.dst as usize][q] |= carried[i][q];
            }
        }
    }
    knows.iter().all(|k| k.iter().all(|&b| b))
}

/// Every barrier algorithm makes every rank hear from every other before it leaves, on
/// every machine where a message takes time (with alpha = 0 a barrier's empty messages
/// all happen at time 0, and time no longer orders cause and effect), at rank counts that
/// are and are not powers of two; and the check itself rejects a chain, where rank 0
/// never hears from anyone.
#[test]
fn barriers_make_everyone_hear_from_everyone() {
    for &m in MACHINES.iter().filter(|m| m.0 != "0") {
        let text = scenario_of(
            Collective::Barrier,
            "[all_to_all, all_to_one, bruck, recursive_doubling]",
            "[2, 3, 4, 5, 7, 8, 12]",
            &[0],
            m,
        );
        let s = parse_str(&text, "t.yaml").unwrap();
        for pt in runner::points(&s) {
            let (r, tl) = runner::run_point_timeline(&s, &pt, false);
            if r.not_applicable.is_some() {
                continue;
            }
            let tl = tl.expect("a small barrier's timeline is recorded");
            assert!(everyone_heard_from_everyone(&tl), "{} P={} on {m:?}", r.algorithm, r.ranks);
        }
    }
    let text = scenario_of(Collective::Broadcast, "[chain]", "4", &[4], MACHINES[0]);
    let s = parse_str(&text, "t.yaml").unwrap();
    let (_, tl) = runner::run_point_timeline(&s, &runner::points(&s)[0], false);
    assert!(!everyone_heard_from_everyone(&tl.unwrap()), "a chain broadcast is no barrier");
}

/// `direct`'s phases alone (the reduce-scatter and allgather collectives' `direct`) have
/// the formula their registry gives where P divides n, as the allreduce's `direct` has:
/// they went through the step recurrence, which at 1,024 ranks spent seconds (8.6 s of
/// a reduce-scatter of 4 KiB) before giving up at its budget and leaving bounds. The
/// formula is checked against the engine on the matrix above; here, that it is there at
/// 1,024 ranks and is the two halves of the allreduce's.
#[test]
fn direct_phases_have_their_formula_at_a_thousand_ranks() {
    use allreduce_sim::algos::{self, Machine, Params, Problem, forms};
    use allreduce_sim::cost_model::Hockney;
    use allreduce_sim::topology::{FullyConnected, Link};
    for nics in [1, 3] {
        let topo = FullyConnected { ranks: 1024, link: Link { alpha: 2e-6, bandwidth: 1.25e10 }, nics };
        let m = Machine { topo: &topo, cost_per_byte: 5e-11 };
        let p = Problem { ranks: 1024, elems: 1024, elem_bytes: 4 };
        let phase = |c: Collective| {
            let algo = algos::build_for(c, "direct", Params::default()).unwrap();
            algo.closed_form(&p, &m)
                .map(|(t, _)| t)
                .unwrap_or_else(|| panic!("{c} direct, {nics} NICs: no closed form"))
        };
        let (rs, ag) = (phase(Collective::ReduceScatter), phase(Collective::Allgather));
        let whole = forms::direct_formula(&p, &Hockney::of(&m).unwrap());
        assert!(((rs + ag) / whole - 1.0).abs() < 1e-12, "{nics} NICs: {rs} + {ag} vs {whole}");
    }
}

/// Where blocks differ by an element, `direct`'s phases alone are held to their own
/// bounds (`forms::direct_phase_bounds`, O(P)), where they were held to those read off
/// their programs, which at 1,024 ranks took 54% of a 2.3 s reduce-scatter and 200 MB:
/// every simulated time falls within them, and the upper is no looser than the
/// program's.
#[test]
fn direct_phases_fall_within_their_bounds() {
    use allreduce_sim::algos::{self, Machine, Params, Problem, forms};
    use allreduce_sim::cost_model::{Hockney, program_bounds};
    use allreduce_sim::sim::engine::NoObserver;
    use allreduce_sim::sim::simulate;
    use allreduce_sim::topology::{FullyConnected, Link};
    let mut checked = 0;
    for (alpha, bandwidth, c) in [(1e-6, 1.25e10, 5e-11), (5e-6, 1e9, 1e-9), (0.0, 2.5e10, 0.0)] {
        for nics in [1, 2, 3] {
            for np in [3usize, 5, 7, 13, 24, 40] {
                for elems in [np + 1, 7 * np - 3, 1000 * np + 1, 1000 * np + np / 2] {
                    let topo = FullyConnected { ranks: np, link: Link { alpha, bandwidth }, nics };
                    let m = Machine { topo: &topo, cost_per_byte: c };
                    let p = Problem { ranks: np, elems, elem_bytes: 4 };
                    for (coll, reduce) in [(Collective::ReduceScatter, true), (Collective::Allgather, false)] {
                        let algo = algos::build_for(coll, "direct", Params::default()).unwrap();
                        let (lo, hi) = forms::direct_phase_bounds(&p, &Hockney::of(&m).unwrap(), reduce);
                        assert_eq!(algo.bounds(&p, &m), Some((lo, hi)));
                        let (stats, _) = simulate(algo.as_ref(), &topo, p, c, None, &mut NoObserver).unwrap();
                        let t = stats.time;
                        let what = format!("{coll} direct P={np} n={elems} k={nics} alpha={alpha}");
                        assert!(t >= lo * (1.0 - 1e-12) && t <= hi * (1.0 + 1e-12), "{what}: {t} outside [{lo}, {hi}]");
                        if let Some((_, program_hi)) = program_bounds(&*algo.prepare(&p, &topo), &p, &topo, c) {
                            assert!(
                                hi <= program_hi * (1.0 + 1e-12),
                                "{what}: upper {hi} past the program's {program_hi}"
                            );
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 3 * 3 * 6 * 4 * 2);
}
