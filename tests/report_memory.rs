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
    // A ring of hosts whose names are long, some with characters written as escapes.
    let named = |p: usize, len: usize| {
        let name = |i: usize| {
            format!("\"h{i}{}{}\"", "x".repeat(len), if i.is_multiple_of(2) { "\\u202e\\t\\\"" } else { "" })
        };
        let nodes: Vec<String> = (0..p).map(name).collect();
        let links: Vec<String> = (0..p).map(|i| format!("{{ a: {}, b: {} }}", name(i), name((i + 1) % p))).collect();
        format!(
            "ranks: {p}\ntopology: {{ kind: graph, link: {{ alpha: 1us, bandwidth: 100Gbps }}, nodes: [{}], links: [{}] }}\n\
             network: {{ model: flow }}",
            nodes.join(", "),
            links.join(", ")
        )
    };
    // (machine, algorithms, points, extra lines).
    let cases = [
        (flat(2), "[ring, star]", 1500, ""),
        (flat(64), "[ring]", 60, ""),
        (flat(65), "[ring, binomial_tree]", 200, ""),
        (flat(2), "[ring]", 40, seeds),
        (flow(32), "[direct]", 30, ""),
        (flow(96), "[ring]", 30, ""),
        // A ring lists its 64 links, not the machine's 4,032.
        (flow(64), "[ring]", 30, ""),
        (named(16, 1000), "[direct, ring]", 20, ""),
        (named(96, 1000), "[ring]", 20, ""),
    ];
    for (machine, algorithms, points, extra) in cases {
        let per_algo = points / algorithms.split(',').count();
        let text = format!(
            "name: reserved\n{machine}\ndata: {{ mode: off }}\nalgorithms: {algorithms}\nsizes: [{}]\n{extra}\n",
            sizes(per_algo)
        );
        let s = allreduce_sim::scenario::parse_str(&text, "r.yaml").unwrap();
        // Where names are long a table writes the five busiest links of every point and CSV
        // does not: one reservation serves both, within three times the larger.
        let label = machine.lines().find(|l| l.starts_with("topology")).unwrap_or_default();
        let label = &label[..label.len().min(60)];
        for (form, exporters) in [
            (ReportForm::Json, vec![&Json as &dyn Exporter]),
            (ReportForm::Text, vec![&Csv as &dyn Exporter, &Table as &dyn Exporter]),
        ] {
            let mut most = 0;
            let mut reserved = 0;
            for exporter in exporters {
                let plans = estimate::plan(&s, None);
                reserved = estimate::report_bytes_of(&s, &plans, form);
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
                assert!(report.results.iter().all(|r| r.failures.is_empty()), "{label} {algorithms}");
                drop(report);
                assert!(
                    held <= reserved,
                    "{label} {algorithms} {extra}, {form:?}: {n} points held {held} bytes ({} a point), reserved \
                     {reserved}",
                    held / n
                );
                most = most.max(held);
            }
            // Not a figure for the worst case only: within three times what is held.
            assert!(reserved <= 3 * most, "{label} {algorithms} {extra}, {form:?}: held {most}, reserved {reserved}");
        }
    }
}
