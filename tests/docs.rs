//! The docs keep up with the code: every key and word the scenario parser accepts, every
//! algorithm and parameter of the registry, is named in `docs/scenario.md`, and every
//! field of a result in `docs/report.md`.
//!
//! The keys are not listed here by hand: they are read from the parser's own "unknown key
//! ...; allowed: ..." and "not known; allowed: ..." messages, so a key added to the parser
//! without a line in the docs fails this test.

use allreduce_sim::algos::{self, Params};
use allreduce_sim::collective::Collective;
use allreduce_sim::report::{CORE_FIELDS, LinkReport, LinkUse, PointResult};
use allreduce_sim::scenario::{ParamValue, parse_str};

fn doc(name: &str) -> String {
    let path = format!("{}/docs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// The smallest valid scenario, with `topology` and the rest spliced in.
fn scenario(topology: &str, rest: &str) -> String {
    format!("ranks: 4\ntopology: {topology}\nalgorithms: [ring]\nsizes: [4KiB]\n{rest}")
}

const LINK: &str = "{ alpha: 1us, bandwidth: 100Gbps }";

/// The parser's error message for `text`, which must be refused.
fn error(text: &str) -> String {
    match parse_str(text, "docs.yaml") {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.message().to_string(),
    }
}

/// The words after `allowed: ` in the error for `text`: the first word of each
/// comma-separated item (`link (the default for links)` is `link`).
fn allowed(text: &str) -> Vec<String> {
    let msg = error(text);
    let Some((_, list)) = msg.split_once("allowed: ") else {
        panic!("no 'allowed: ' in the error for:\n{text}\n{msg}");
    };
    let words: Vec<String> = list
        .split(", ")
        .map(|item| item.split([' ', ';', ')']).next().unwrap_or("").to_string())
        .filter(|w| !w.is_empty())
        .collect();
    assert!(!words.is_empty(), "empty list in: {msg}");
    words
}

/// `word` must appear in `text` as `` `word` ``.
fn assert_documented(text: &str, file: &str, what: &str, words: &[String]) {
    let missing: Vec<&String> = words.iter().filter(|w| !text.contains(&format!("`{w}`"))).collect();
    assert!(missing.is_empty(), "{file} does not name these {what}: {missing:?}");
}

/// Every key, and every word of a closed set of values, that the parser accepts.
fn parser_words() -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |what: &str, text: String| out.push((what.to_string(), allowed(&text)));

    // Keys, level by level.
    let top = scenario(&format!("{{ link: {LINK} }}"), "");
    add("top-level keys", format!("{top}bogus: 1\n"));
    add("topology keys", scenario(&format!("{{ link: {LINK}, bogus: 1 }}"), ""));
    add("link keys", scenario("{ link: { alpha: 1us, bandwidth: 1Gbps, bogus: 1 } }", ""));
    add("compute keys", format!("{top}compute: {{ bogus: 1 }}\n"));
    add("host keys", format!("{top}host: {{ bogus: 1 }}\n"));
    add("network keys", format!("{top}network: {{ bogus: 1 }}\n"));
    add("data keys", format!("{top}data: {{ bogus: 1 }}\n"));
    add("check keys", format!("{top}check: {{ bogus: 1 }}\n"));
    add(
        "level keys",
        scenario("{ kind: hierarchical, levels: [{ size: 4, alpha: 1us, bandwidth: 1Gbps, bogus: 1 }] }", ""),
    );
    for (kind, ends) in [("custom", "from: a, to: b"), ("graph", "a: a, b: b")] {
        add(
            &format!("{kind} node keys"),
            scenario(&format!("{{ kind: {kind}, link: {LINK}, nodes: [a, {{ name: b, bogus: 1 }}] }}"), ""),
        );
        add(
            &format!("{kind} link keys"),
            scenario(&format!("{{ kind: {kind}, link: {LINK}, nodes: [a, b], links: [{{ {ends}, bogus: 1 }}] }}"), ""),
        );
    }

    // Every topology kind, and the keys each takes: a key of another kind is refused with
    // the kind's own list.
    let kinds = allowed(&scenario(&format!("{{ kind: bogus, link: {LINK} }}"), ""));
    for kind in &kinds {
        let foreign = if kind == "fat_tree" { "dims: [2, 2]" } else { "hosts_per_leaf: 2" };
        add(&format!("keys of kind {kind}"), scenario(&format!("{{ kind: {kind}, {foreign} }}"), ""));
    }
    add("topology kinds", scenario(&format!("{{ kind: bogus, link: {LINK} }}"), ""));

    // Closed sets of values.
    let values = [
        ("collective", "collective: bogus"),
        ("network.model", "network: { model: bogus }"),
        ("network.sharing", "network: { model: flow, sharing: bogus }"),
        ("data.dtype", "data: { dtype: bogus }"),
        ("data.op", "data: { op: bogus }"),
        ("data.init", "data: { init: bogus }"),
        ("data.mode", "data: { mode: bogus }"),
    ];
    for (what, line) in values {
        add(&format!("{what} values"), format!("{top}{line}\n"));
    }
    add(
        "fat_tree placements",
        scenario(&format!("{{ kind: fat_tree, hosts_per_leaf: 2, leaves: 2, link: {LINK}, placement: bogus }}"), ""),
    );
    add(
        "graph node kinds",
        scenario(&format!("{{ kind: graph, link: {LINK}, nodes: [a, {{ name: b, kind: bogus }}] }}"), ""),
    );
    out
}

#[test]
fn every_scenario_key_and_value_is_in_the_scenario_doc() {
    let text = doc("scenario.md");
    let words = parser_words();
    // A sanity check of the extraction itself, on keys that have long existed.
    let all: Vec<&String> = words.iter().flat_map(|(_, w)| w).collect();
    for key in ["topology", "hosts_per_leaf", "cost_per_byte", "closed_form", "envelope", "placement", "maxmin"] {
        assert!(all.iter().any(|w| *w == key), "the parser's messages no longer list {key}: {words:?}");
    }
    for (what, words) in &words {
        assert_documented(&text, "docs/scenario.md", what, words);
    }
}

#[test]
fn every_algorithm_and_parameter_is_in_the_scenario_doc() {
    let text = doc("scenario.md");
    for c in Collective::ALL {
        assert_documented(&text, "docs/scenario.md", "collectives", &[c.name().to_string()]);
    }
    for (c, info) in Collective::ALL.into_iter().flat_map(|c| algos::registry_of(c).iter().map(move |i| (c, i))) {
        assert_documented(&text, "docs/scenario.md", "algorithm ids", &[info.id.to_string()]);
        for p in info.params {
            let name = p.split(['=', ':']).next().unwrap_or(p).trim();
            assert_documented(&text, "docs/scenario.md", &format!("parameters of {}", info.id), &[name.to_string()]);
            // A parameter with a closed set of values names them when given another.
            let bogus = Params::new(vec![(name.to_string(), ParamValue::Str("bogus".into()))]);
            if let Err(e) = algos::build_for(c, info.id, bogus)
                && let Some((_, rest)) = e.message.split_once("must be one of ")
            {
                let list = rest.split(", not").next().unwrap_or("");
                let values: Vec<String> = list.split(", ").map(str::to_string).collect();
                assert_documented(&text, "docs/scenario.md", &format!("values of {}.{name}", info.id), &values);
            }
        }
    }
}

#[test]
fn every_result_field_is_in_the_report_doc() {
    let text = doc("report.md");
    let fields: Vec<String> = CORE_FIELDS.iter().map(|f| f.to_string()).collect();
    assert_documented(&text, "docs/report.md", "core fields", &fields);

    // Every field a result can have, optional ones filled so that none is left out.
    let link = LinkUse::default();
    let r = PointResult {
        notes: vec![String::new()],
        bytes_sent_per_rank: Some(Vec::new()),
        bytes_received_per_rank: Some(Vec::new()),
        link_bytes_max: Some(0),
        links_used: Some(0),
        network_links: Some(LinkReport { busiest: vec![link.clone()], all: Some(vec![link]), ..LinkReport::default() }),
        ..PointResult::default()
    };
    let json = serde_json::to_value(&r).expect("a result serialises");
    let mut keys: Vec<String> = json.as_object().expect("an object").keys().cloned().collect();
    let links = &json["network_links"];
    keys.extend(links.as_object().expect("an object").keys().cloned());
    keys.extend(links["busiest"][0].as_object().expect("an object").keys().cloned());
    keys.push("critical_path".to_string());
    assert_documented(&text, "docs/report.md", "result fields", &keys);
}

/// Every relative link and image of the README and the docs names a file of the
/// repository, and every plot they show is one `.gitignore` lets through (the folder
/// `plots/` is ignored but for the plots the docs show, so a plot drawn locally but not
/// committed would show here and be missing from a fresh checkout).
#[test]
fn every_linked_file_and_plot_is_in_the_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let ignore = std::fs::read_to_string(root.join(".gitignore")).unwrap();
    let mut pages = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            pages.push(p);
        }
    }
    pages.sort();
    let mut missing = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let dir = page.parent().unwrap();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap();
            if target.is_empty() || target.contains("://") || target.contains(' ') {
                continue;
            }
            let path = dir.join(target);
            let rel = path.canonicalize().ok().and_then(|p| p.strip_prefix(root).ok().map(|p| p.to_path_buf()));
            match rel {
                None => missing.push(format!("{}: {target} does not exist", page.display())),
                Some(rel) if rel.starts_with("plots") && rel.is_file() => {
                    if !ignore.lines().any(|l| l == format!("!/{}", rel.display())) {
                        missing.push(format!("{}: {target} is ignored by .gitignore", page.display()));
                    }
                }
                Some(_) => {}
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// A merge whose conflict was committed unresolved leaves its markers in the text, where
/// neither the compiler (in a doc page) nor a reader notices them: one such block sat in
/// docs/scenario.md for a session.
#[test]
fn no_page_or_source_keeps_a_merge_conflict() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let markers = [format!("{} ", "<".repeat(7)), format!("{} ", ">".repeat(7))];
    let mut files = vec![root.join("README.md")];
    let mut dirs: Vec<_> = ["docs", "src", "tests", "scenarios", "validation", "python", "benches"]
        .iter()
        .map(|d| root.join(d))
        .filter(|d| d.is_dir())
        .collect();
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| ["md", "rs", "yaml", "py", "sh", "toml"].iter().any(|k| x == *k)) {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut found = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else { continue };
        for (n, line) in text.lines().enumerate() {
            if markers.iter().any(|m| line.starts_with(m.as_str())) {
                found.push(format!("{}:{}: {line}", f.display(), n + 1));
            }
        }
    }
    assert!(files.len() > 50, "only {} files read", files.len());
    assert!(found.is_empty(), "unresolved merge conflicts:\n{}", found.join("\n"));
}

/// The machines of docs/model.md's reduction-depth table at P = 4, 8 and 12, in the
/// order an algorithm is tried on them: flat (fully connected, one NIC), then levels
/// (2 x 2, 4 x 2, 3 x 2 x 2), then the squarest 2-D torus with 2 NICs.
fn depth_machines(p: usize) -> Vec<Box<dyn allreduce_sim::topology::Topology>> {
    let levels = match p {
        4 => "[2, 2]",
        8 => "[4, 2]",
        _ => "[3, 2, 2]",
    };
    let level = |size: &str| format!("{{ size: {size}, alpha: 1us, bandwidth: 100Gbps }}");
    let sizes: Vec<String> = levels.trim_matches(['[', ']']).split(", ").map(level).collect();
    [
        format!("{{ kind: fully_connected, link: {LINK}, nics: 1 }}"),
        format!("{{ kind: hierarchical, levels: [{}], nics: 1 }}", sizes.join(", ")),
        format!("{{ kind: torus2d, link: {LINK}, nics: 2 }}"),
    ]
    .iter()
    .map(|t| {
        let s = parse_str(&scenario(t, "").replace("ranks: 4\n", &format!("ranks: {p}\n")), "depth.yaml").unwrap();
        allreduce_sim::topology::build(&s.topology, p).unwrap()
    })
    .collect()
}

/// Every allreduce algorithm's reduction depth at P = 4, 8 and 12 in docs/model.md is
/// what the algorithm itself reports (`Algorithm::reduction_depth`, the depth the error
/// bound uses), and every algorithm has its row.
#[test]
fn the_reduction_depth_table_is_the_algorithms_own() {
    let model = doc("model.md");
    let start = model.find("| algorithm | reduction depth | P = 4 | P = 8 | P = 12 |").expect("the depth table");
    let rows: Vec<Vec<String>> = model[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().trim_matches('`').to_string()).collect())
        .collect();
    let machines: Vec<_> = [4, 8, 12].into_iter().map(|p| (p, depth_machines(p))).collect();
    let (mut want, mut ok) = (String::new(), true);
    for info in algos::registry() {
        let algo = algos::build(info.id, Params::default()).unwrap();
        let mut cells = Vec::new();
        for (p, topos) in &machines {
            let prob = algos::Problem { ranks: *p, elems: 1024, elem_bytes: 4 };
            let depth = topos.iter().find_map(|t| {
                let m = algos::Machine { topo: t.as_ref(), cost_per_byte: 1e-11 };
                algo.applicable(&prob, &m).is_ok().then(|| algo.reduction_depth(&prob, t.as_ref()))
            });
            cells.push(depth.map_or("n/a".to_string(), |d| d.to_string()));
        }
        want.push_str(&format!("| `{}` | ... | {} |\n", info.id, cells.join(" | ")));
        let row = rows.iter().find(|r| r[0] == info.id);
        ok &= row.is_some_and(|r| r[2..] == cells[..]);
    }
    assert!(ok, "docs/model.md's depth table should read\n{want}");
    assert_eq!(rows.len(), algos::registry().len(), "a row for every allreduce algorithm, once");
}

/// The README's table of errors against real GPU clusters quotes
/// `validation/hardware/RESULTS.md`, which `run.sh` regenerates: every mean / max pair in
/// the README's table is a row of RESULTS.md's goals table, so the front page cannot keep
/// figures the script no longer produces.
#[test]
fn the_readmes_hardware_errors_are_the_results_pages() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let results = std::fs::read_to_string(format!("{root}/validation/hardware/RESULTS.md")).unwrap();
    let goals: Vec<(String, String)> = results
        .lines()
        .skip_while(|l| !l.starts_with("## The accuracy goals"))
        .take_while(|l| !l.starts_with("Fit time"))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells.len() >= 5 && cells[2].ends_with('%')).then(|| (cells[2].to_string(), cells[3].to_string()))
        })
        .collect();
    assert!(goals.len() >= 6, "RESULTS.md's goals table not found: {goals:?}");
    let section: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with("### Against real GPU clusters"))
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| ") && l.contains('%'))
        .collect();
    assert!(section.len() >= 4, "the README's hardware table not found");
    for row in section {
        let last = row.trim_end_matches('|').rsplit('|').next().unwrap();
        for pair in last.split(',') {
            let (mean, max) = pair.split_once('/').unwrap_or_else(|| panic!("no mean / max in {row}"));
            let pair = (mean.trim().to_string(), max.trim().to_string());
            assert!(goals.contains(&pair), "README's {pair:?} ({row}) is not in RESULTS.md's goals: {goals:?}");
        }
    }
}
