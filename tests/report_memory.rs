//! What a run reserves for its report ([`estimate::report_bytes_of`]) is an upper figure
//! of what the report holds once every point has run and it is rendered, measured by a
//! counting allocator, and not many times more: a flat 6 KiB a point was too little for
//! points with many seeds (`repeat:`) or with the flow model's list of links, and more
//! than twice what CSV rows of small points keep, which refused sweeps that fitted.
//!
//! One test in its own binary, so that no other test's allocations share the count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use allreduce_sim::estimate::{self, ReportForm};
use allreduce_sim::report::{Csv, Exporter, Json, Table};

/// The system allocator, counting the bytes held now and the most held since reset.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Counted as its growth only: the report's text grows by doubling, and glibc
            // moves a block that large by remapping its pages (`mremap`), which never
            // holds both (small blocks it copies are a few KB).
            let now = HELD.fetch_add(new_size, Ordering::Relaxed) + new_size - layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
            HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

#[test]
fn the_report_holds_no_more_than_its_reservation() {
    let sizes = |n: usize| (1..=n).map(|i| (64 * i).to_string()).collect::<Vec<_>>().join(", ");
    let flat = |p: usize| format!("ranks: {p}\ntopology: {{ link: {{ alpha: 1us, bandwidth: 100Gbps }} }}");
    let flow = |p: usize| format!("{}\nnetwork: {{ model: flow }}", flat(p));
    let seeds = "noise: { skew: { dist: exponential, scale: 10us } }\nrepeat: 2000";
    // (machine, algorithms, points, extra lines).
    let cases = [
        (flat(2), "[ring, star]", 1500, ""),
        (flat(64), "[ring]", 60, ""),
        (flat(65), "[ring, binomial_tree]", 200, ""),
        (flat(2), "[ring]", 40, seeds),
        (flow(32), "[direct]", 30, ""),
        (flow(96), "[ring]", 30, ""),
    ];
    for (machine, algorithms, points, extra) in cases {
        let per_algo = points / algorithms.split(',').count();
        let text = format!(
            "name: reserved\n{machine}\ndata: {{ mode: off }}\nalgorithms: {algorithms}\nsizes: [{}]\n{extra}\n",
            sizes(per_algo)
        );
        let s = allreduce_sim::scenario::parse_str(&text, "r.yaml").unwrap();
        for (form, exporters) in [
            (ReportForm::Json, vec![&Json as &dyn Exporter]),
            (ReportForm::Text, vec![&Csv as &dyn Exporter, &Table as &dyn Exporter]),
        ] {
            for exporter in exporters {
                let plans = estimate::plan(&s, None);
                let reserved = estimate::report_bytes_of(&s, &plans, form);
                let before = HELD.load(Ordering::Relaxed);
                let opts = allreduce_sim::runner::RunOptions { shard: None, progress: false, memory_limit: None };
                let report = allreduce_sim::runner::run_planned(&s, plans, &opts);
                // What the report holds, then the most it holds with its text.
                PEAK.store(HELD.load(Ordering::Relaxed), Ordering::Relaxed);
                eprintln!("DEBUG report {} ", HELD.load(Ordering::Relaxed) - before);
                let text = exporter.render(&report);
                let held = (PEAK.load(Ordering::Relaxed) - before) as u64;
                assert!(!text.is_empty());
                eprintln!(
                    "DEBUG text {} peak {held} reserved {reserved} {form:?} {}",
                    text.len(),
                    report.results.len()
                );
                drop(text);
                let n = report.results.len() as u64;
                assert!(report.results.iter().all(|r| r.failures.is_empty()), "{machine} {algorithms}");
                drop(report);
                assert!(
                    held <= reserved,
                    "{machine} {algorithms} {extra}, {form:?}: {n} points held {held} bytes ({} a point), \
                     reserved {reserved}",
                    held / n
                );
                // Not a figure for the worst case only: within three times what is held.
                assert!(
                    reserved <= 3 * held,
                    "{machine} {algorithms} {extra}, {form:?}: {n} points held {held} bytes ({} a point), \
                     reserved {reserved}",
                    held / n
                );
            }
        }
    }
}
