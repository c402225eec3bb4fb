//! `noise:` and `repeat:` (docs/variability.md): what a late rank costs, that noise off
//! changes nothing, that draws are reproducible, and that bad noise input is located.

use allreduce_sim::report::PointResult;
use allreduce_sim::runner::run;
use allreduce_sim::scenario::parse_str;

fn results(text: &str) -> Vec<PointResult> {
    let s = parse_str(text, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    run(&s).results
}

/// A ring of `p` ranks with dyadic alpha, bandwidth and compute cost, so that every sum
/// of times is exact; `extra` is appended (noise, repeat).
fn ring(p: usize, extra: &str) -> String {
    format!(
        "ranks: {p}\n\
         topology:\n  link: {{ alpha: {alpha:e}, bandwidth: {bw:e} }}\n\
         compute: {{ cost_per_byte: {c:e} }}\n\
         algorithms: [ring]\n\
         sizes: [64KiB, 1MiB]\n{extra}",
        alpha = 2f64.powi(-20),
        bw = 2f64.powi(30),
        c = 2f64.powi(-33),
    )
}

/// One rank late by d delays the ring by exactly d, whichever rank it is and whether d
/// is shorter or longer than a step.
#[test]
fn a_late_rank_delays_the_ring_by_exactly_its_delay() {
    let quiet = results(&ring(8, ""));
    for late in [0, 3, 7] {
        for d in [2f64.powi(-24), 2f64.powi(-14), 2f64.powi(-8)] {
            let mut per_rank = vec!["0".to_string(); 8];
            per_rank[late] = format!("{d:e}");
            let noisy = results(&ring(8, &format!("noise: {{ skew: {{ per_rank: [{}] }} }}\n", per_rank.join(", "))));
            for (q, n) in quiet.iter().zip(&noisy) {
                assert!(n.failures.is_empty(), "{:?}", n.failures);
                assert_eq!(n.time_s, q.time_s + d, "rank {late} late by {d:e}, S = {}", n.bytes);
                assert_eq!(n.noise_free_time_s, Some(q.time_s));
                assert_eq!(n.skew_sensitivity, Some(1.0));
                // The closed form is the noise-free baseline and fails nothing.
                assert_eq!(n.closed_form_kind.as_deref(), Some("baseline"));
                assert_eq!(n.closed_form_s, q.closed_form_s);
            }
        }
    }
}

/// Noise that changes nothing (no rank late) gives the times bit for bit, under both
/// network models.
#[test]
fn quiet_noise_changes_no_time() {
    for model in ["ideal", "flow"] {
        let base = format!(
            "ranks: 8\ntopology: {{ kind: fat_tree, hosts_per_leaf: 4, leaves: 2, spines: 1, \
             link: {{ alpha: 1us, bandwidth: 100Gbps }}, uplink: {{ alpha: 1us, bandwidth: 100Gbps }} }}\n\
             network: {{ model: {model} }}\ncompute: {{ cost_per_byte: 0.05ns }}\n\
             algorithms: [ring, halving_doubling, double_binary_tree]\nsizes: [4KiB, 1MiB]\n"
        );
        let quiet = results(&base);
        let noisy = results(&format!(
            "{base}noise: {{ skew: {{ per_rank: [0, 0] }}, slow_ranks: [{{ rank: 2, factor: 1 }}] }}\n"
        ));
        for (q, n) in quiet.iter().zip(&noisy) {
            assert_eq!(q.time_s.to_bits(), n.time_s.to_bits(), "{model} {}", q.algorithm);
            assert_eq!(q.events, n.events);
            assert_eq!(n.slowdown, Some(1.0));
        }
    }
}

/// `repeat:` runs one seed after another; the same file gives the same numbers, the
/// percentiles are ordered, and only the noise's draws differ between seeds.
#[test]
fn repeat_reports_reproducible_percentiles() {
    let text = ring(16, "noise: { skew: { dist: exponential, scale: 20us, fraction: 0.25 } }\nrepeat: 9\n");
    let a = results(&text);
    let b = results(&text);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.times_s, y.times_s);
        let times = x.times_s.as_ref().expect("repeat gives the times");
        assert_eq!(times.len(), 9);
        assert_eq!(times[0], x.time_s);
        let (p50, p90, p99, max) =
            (x.time_p50_s.unwrap(), x.time_p90_s.unwrap(), x.time_p99_s.unwrap(), x.time_max_s.unwrap());
        assert!(p50 <= p90 && p90 <= p99 && p99 <= max, "{p50} {p90} {p99} {max}");
        assert!(times.iter().all(|&t| t >= x.noise_free_time_s.unwrap()));
        assert!(times.windows(2).any(|w| w[0] != w[1]), "the seeds drew the same skew: {times:?}");
        // Each seed's ring is late by that seed's latest start, exactly.
        assert!(x.slowdown.unwrap() > 1.0);
        assert!((x.skew_sensitivity.unwrap() - 1.0).abs() < 1e-9, "{:?}", x.skew_sensitivity);
    }
    let other_seed = results(&text.replace("ranks: 16", "seed: 5\nranks: 16"));
    assert_ne!(a[0].times_s, other_seed[0].times_s);
}

/// Detours, slow ranks and slow links only ever slow a point, and never make it fail,
/// hang or panic, under either model.
#[test]
fn detours_and_slow_parts_slow_every_algorithm() {
    let algos = "[ring, halving_doubling, double_binary_tree, binomial_tree, direct]";
    let cases = [
        ("ideal", "slow_links: [{ a: 0, b: 1, factor: 0.25 }]"),
        ("flow", "slow_links: [{ a: leaf0, b: spine0, factor: 0.25 }]"),
    ];
    for (model, links) in cases {
        for pattern in ["periodic", "random"] {
            let text = format!(
                "ranks: 8\ntopology: {{ kind: fat_tree, hosts_per_leaf: 4, leaves: 2, spines: 1, \
                 link: {{ alpha: 1us, bandwidth: 100Gbps }}, uplink: {{ alpha: 1us, bandwidth: 100Gbps }} }}\n\
                 network: {{ model: {model} }}\ncompute: {{ cost_per_byte: 0.05ns }}\n\
                 algorithms: {algos}\nsizes: [4KiB, 1MiB]\n\
                 noise:\n  os: {{ interval: 50us, duration: 5us, pattern: {pattern} }}\n  \
                 slow_ranks: [{{ rank: 5, factor: 3 }}]\n  {links}\nrepeat: 3\n"
            );
            let all = results(&text);
            for r in &all {
                assert!(r.failures.is_empty(), "{model} {pattern} {}: {:?}", r.algorithm, r.failures);
                // A delay may fall in slack (a ring step waits on its slowest pair anyway),
                // so a seed may cost nothing; none gains.
                let free = r.noise_free_time_s.unwrap();
                assert!(r.times_s.as_ref().unwrap().iter().all(|&t| t >= free), "{model} {pattern} {}", r.algorithm);
            }
            assert!(all.iter().all(|r| r.slowdown.unwrap() > 1.0 || r.bytes < 1 << 20), "{model} {pattern}");
        }
    }
}

/// Under the flow model a slow physical link slows what crosses it and only that: a
/// ring kept inside one leaf never reaches the spine.
#[test]
fn a_slow_spine_link_slows_only_what_crosses_it() {
    let base = "ranks: 4\ntopology: { kind: fat_tree, hosts_per_leaf: 4, leaves: 2, spines: 1, \
                link: { alpha: 1us, bandwidth: 100Gbps }, uplink: { alpha: 1us, bandwidth: 100Gbps } }\n\
                network: { model: flow }\nalgorithms: [ring]\nsizes: [1MiB]\n";
    let inside = results(&format!("{base}noise: {{ slow_links: [{{ a: leaf0, b: spine0, factor: 0.1 }}] }}\n"));
    assert_eq!(inside[0].slowdown, Some(1.0));
    let host = results(&format!("{base}noise: {{ slow_links: [{{ a: h1, b: leaf0, factor: 0.5 }}] }}\n"));
    assert!(host[0].slowdown.unwrap() > 1.2, "{:?}", host[0].slowdown);
}

/// Bad noise input is an error at its line and column, saying what is allowed.
#[test]
fn bad_noise_is_located() {
    let base = ring(4, "");
    let cases = [
        ("noise:\n  os: { interval: 10us, duration: 10us }\n", 2, "duration"),
        ("noise:\n  slow_ranks: [{ rank: 1, factor: 0.5 }]\n", 2, "faster"),
        ("noise:\n  slow_links: [{ a: leaf0, b: spine0, factor: 0.5 }]\n", 2, "pair of ranks"),
        ("noise:\n  skew: { dist: gamma, scale: 1us }\n", 2, "allowed: exponential, uniform, normal, fixed"),
        ("noise:\n  skew: { dist: uniform }\n", 2, "scale"),
        ("noise:\n  skew: { scale: 1us, fraction: 2 }\n", 2, "from 0 to 1"),
        ("noise:\n  faults: [{ a: leaf0, b: spine0, at: 1ms }]\n", 2, "need network.model: flow"),
        ("noise:\n  jitter: 1us\n", 2, "jitter"),
        ("repeat: 0\n", 1, "repeat"),
    ];
    let first = base.lines().count() as u64;
    for (extra, line, want) in cases {
        let err = parse_str(&format!("{base}{extra}"), "t.yaml").expect_err(extra);
        let (l, _) = err.position().unwrap_or_else(|| panic!("{extra}: no position in {err}"));
        assert_eq!(l, first + line, "{extra}: {err}");
        assert!(err.message().contains(want), "{extra}: {err}");
    }
}

/// `noise.levels` scales the skew: one rank late by `level * d` delays the ring by
/// exactly that much at every level, and `--plot` draws the slowdown against the level.
#[test]
fn noise_levels_scale_the_skew_exactly() {
    let d = 2f64.powi(-14);
    let quiet = results(&ring(8, ""));
    let text = ring(8, &format!("noise:\n  skew: {{ per_rank: [0, 0, {d:e}] }}\n  levels: [0.5, 1, 4]\n"));
    let noisy = results(&text);
    for (q, n) in quiet.iter().zip(&noisy) {
        assert!(n.failures.is_empty(), "{:?}", n.failures);
        let levels = n.noise_levels.as_ref().expect("levels");
        let got: Vec<(f64, Option<f64>)> = levels.iter().map(|l| (l.level, l.time_mean_s)).collect();
        let want: Vec<(f64, Option<f64>)> = [0.5, 1.0, 4.0].iter().map(|&l| (l, Some(q.time_s + l * d))).collect();
        assert_eq!(got, want);
        assert_eq!(levels[1].slowdown, n.slowdown);
    }
    let s = parse_str(&text, "t.yaml").unwrap();
    let dir =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("allreduce_sim_levels_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = allreduce_sim::plots::plot_report(&run(&s), &dir).unwrap();
    assert!(files.iter().any(|f| f.to_string_lossy().contains("slowdown_vs_noise_P8")), "{files:?}");
    std::fs::remove_dir_all(&dir).unwrap();
    let bad = ring(8, "noise:\n  os: { interval: 10us, duration: 4us }\n  levels: [1, 3]\n");
    let err = parse_str(&bad, "t.yaml").unwrap_err();
    assert!(err.message().contains("at 3 an OS detour"), "{err}");
}
