//! `host: { issue, gpus_per_thread }` (docs/gpu-clusters.md, "Host threads"): back-to-back
//! calls issued by one host thread for several GPUs come no faster than one per
//! `min(gpus_per_thread, P) x issue`; the GPUs' own time is kept where it is longer. By
//! hand on a machine whose simulated time is known exactly, the parser's messages, and
//! calibrate reading a log's threads.

use allreduce_sim::calibrate::nccl_tests;
use allreduce_sim::runner::{Point, run_point};
use allreduce_sim::scenario::{Scenario, parse_str};

fn scenario(text: &str) -> Scenario {
    parse_str(text, "host.yaml").unwrap_or_else(|e| panic!("{e}"))
}

fn close(got: f64, want: f64) {
    assert!((got / want - 1.0).abs() < 1e-12, "got {got:e}, want {want:e}");
}

/// Ring on a uniform machine: 2(P-1) steps of 1 us + (S/P) / 1 GB/s each.
fn ring(host: &str, ranks: usize, bytes: u64) -> allreduce_sim::report::PointResult {
    let s = scenario(&format!(
        "ranks: {ranks}\ntopology: {{ link: {{ alpha: 1us, bandwidth: 1GB/s }} }}\nalgorithms: [ring]\n\
         sizes: [{bytes}]\n{host}"
    ));
    let r = run_point(&s, &Point { algo: 0, ranks, bytes });
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    r
}

#[test]
fn the_host_floor_is_the_threads_gpus_times_issue() {
    let host = "host: { issue: 5us, gpus_per_thread: 4 }";
    // 8 bytes: the GPUs take 2(P-1) us plus a few ns; the thread needs 5 us per GPU.
    for (p, gpu_steps) in [(2usize, 2.0), (4, 6.0)] {
        let plain = ring("", p, 8 * p as u64);
        let floored = ring(host, p, 8 * p as u64);
        assert!(plain.time_s < gpu_steps * 1e-6 + 1e-7, "{}", plain.time_s);
        // At P = 2 the thread drives the 2 GPUs that run, not 4.
        close(floored.time_s, p as f64 * 5e-6);
        assert_eq!(floored.host_bound_s, Some(p as f64 * 5e-6));
        assert!(floored.notes.iter().any(|n| n.starts_with("host-bound")), "{:?}", floored.notes);
        // The closed form describes the GPUs and stays theirs.
        close(floored.closed_form_s.unwrap(), plain.time_s);
        // The bandwidths follow the time the call took.
        let bus = floored.busbw_bps.unwrap();
        close(bus, plain.busbw_bps.unwrap() * plain.time_s / floored.time_s);
    }
    // A large call: the GPUs are slower than the thread, nothing changes.
    let plain = ring("", 4, 4_000_000);
    let floored = ring(host, 4, 4_000_000);
    assert_eq!(floored.time_s, plain.time_s);
    assert_eq!(floored.host_bound_s, None);
    assert_eq!(floored.notes, plain.notes);
}

#[test]
fn one_gpu_per_thread_is_the_default_and_issue_zero_changes_nothing() {
    let p = 4;
    let plain = ring("", p, 32);
    close(ring("host: { issue: 20us }", p, 32).time_s, 20e-6);
    assert_eq!(ring("host: { gpus_per_thread: 8 }", p, 32).time_s, plain.time_s);
    assert_eq!(ring("host: { issue: 0us, gpus_per_thread: 8 }", p, 32).host_bound_s, None);
}

/// `repeat:` and `noise:` run the point again on other seeds and without noise: each of
/// those calls is issued by the same threads, so each is floored too, and the mean, the
/// percentiles, the noise-free time and the slowdown are those of the floored calls.
#[test]
fn every_seed_of_a_repeated_or_noisy_point_is_floored() {
    let host = "host: { issue: 50us, gpus_per_thread: 4 }\nrepeat: 5\n\
                noise: { skew: { dist: exponential, scale: 1us }, levels: [0.5, 2] }";
    // 32 bytes on 4 ranks: the GPUs take about 6 us with 1 us of skew, the thread 200 us.
    let r = ring(host, 4, 32);
    let floor = 200e-6;
    close(r.time_s, floor);
    let times = r.times_s.as_ref().expect("repeat gives the times");
    assert_eq!(times.len(), 5);
    for &t in times {
        close(t, floor);
    }
    for t in [r.time_mean_s, r.time_p50_s, r.time_p90_s, r.time_p99_s, r.time_max_s, r.noise_free_time_s] {
        close(t.expect("a statistic"), floor);
    }
    close(r.slowdown.expect("a slowdown"), 1.0);
    for level in r.noise_levels.as_ref().expect("levels") {
        close(level.time_mean_s.expect("a mean"), floor);
    }
}

#[test]
fn a_host_floor_past_the_largest_number_is_refused_where_it_is_written() {
    let text = "ranks: 8\ntopology: { link: { alpha: 1us, bandwidth: 1GB/s } }\nalgorithms: [ring]\nsizes: [8]\n\
                host: { issue: 1e308s, gpus_per_thread: 8 }\n";
    let e = parse_str(text, "host.yaml").unwrap_err().to_string();
    assert!(e.starts_with("host.yaml:5:7: host: issue 1e308 s x 8 GPUs per thread"), "{e}");
    assert!(e.contains("must stay under"), "{e}");
}

#[test]
fn bad_host_keys_are_refused_with_their_place() {
    let base = "ranks: 4\ntopology: { link: { alpha: 1us, bandwidth: 1GB/s } }\nalgorithms: [ring]\nsizes: [8]\n";
    for (host, want) in [
        (
            "host: { issue: 1us, gpus_per_thread: 0 }",
            "host.gpus_per_thread: must be a whole number from 1 to 4294967295",
        ),
        ("host: { gpus_per_thread: 18446744073709551615 }", "from 1 to 4294967295 (the GPUs one host thread drives)"),
        ("host: { gpus_per_thread: 1.5 }", "host.gpus_per_thread"),
        ("host: { issue: -1us }", "host.issue"),
        ("host: { issue: fast }", "host.issue"),
        ("host: { issu: 1us }", "unknown key 'issu'; allowed: issue, gpus_per_thread"),
    ] {
        let e = parse_str(&format!("{base}{host}\n"), "host.yaml").err().unwrap_or_else(|| panic!("{host} accepted"));
        let msg = e.to_string();
        assert!(msg.contains(want), "{host}: {msg}");
        assert!(msg.contains("host.yaml:5"), "{host}: no line in {msg}");
    }
}

#[test]
fn calibrate_reads_the_gpus_each_thread_drove() {
    let log = "# nThread 1 nGpus 4 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 1 iters: 20\n\
               # Using devices\n\
               #  Rank  0 Group  0 Pid 1 on h device 0 [0000:4a:00] NVIDIA L40S\n\
               #  Rank  1 Group  0 Pid 1 on h device 1 [0000:61:00] NVIDIA L40S\n\
               #  Rank  2 Group  0 Pid 1 on h device 2 [0000:ca:00] NVIDIA L40S\n\
               #  Rank  3 Group  0 Pid 1 on h device 3 [0000:e1:00] NVIDIA L40S\n\
               #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
                          8             2     float     sum      -1    17.31    0.00    0.00       0    17.06    0.00    0.00       0\n";
    let runs = nccl_tests::parse(log, "l.txt").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].gpus_per_thread, Some(4));
    let without = log.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(nccl_tests::parse(&without, "l.txt").unwrap()[0].gpus_per_thread, None);
}
