//! What a run reserves for its report ([`estimate::report_bytes_of`]) is an upper figure
//! of what the report holds once every point has run and it is rendered, measured by a
//! counting allocator, and not many times more: a flat 6 KiB a point was too little for
//! points with many seeds (`repeat:`) or with the flow model's list of links, and more
//! than twice what CSV rows of small points keep, which refused sweeps that fitted.
//!
//! One test in its own binary, so that no other test's allocations share the count.

use allreduce_sim::estimate::{self, ReportForm};
use allreduce_sim::report::{Csv, Exporter, Json, Table};

#[path = "common/counting.rs"]
mod counting;

/// Counted as its growth only: the report's text grows by doubling, and glibc moves a
/// block that large by remapping its pages, which never holds both (small blocks it
/// copies are a few KB).
#[global_allocator]
static ALLOC: counting::Counting<false> = counting::Counting;

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
                let before = counting::held();
                let opts = allreduce_sim::runner::RunOptions { shard: None, progress: false, memory_limit: None };
                let report = allreduce_sim::runner::run_planned(&s, plans, &opts);
                // What the report holds, then the most it holds with its text.
                counting::reset_peak();
                let text = exporter.render(&report);
                let held = (counting::peak() - before) as u64;
                assert!(!text.is_empty());
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
