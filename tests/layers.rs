//! The library's top-level modules import one another in one direction only
//! (docs/contributing.md, 'Layers'): no module reaches, through any chain of
//! `crate::name` paths, back to itself.
//!
//! The scan reads `src/` as text: every `crate::name` (and `crate::{a, b}`) outside a
//! comment is an edge from the module of the file it is in to module `name`. A file's
//! module is the first part of its path under `src/` (`src/sim/engine.rs` is `sim`).
//! `main.rs` and `lib.rs` are not modules of the library and are left out, and so is a
//! file's `#[cfg(test)] mod tests { ... }` block: unit tests are compiled only into the
//! test binary, where a lower module's test may build what a higher one makes (the
//! engine's tests run real algorithms' programs) without the library depending on it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Edges that still close a circle, each with why it remains (none today). The test fails
/// when one of them disappears, so this list stays exactly what is left to cut.
const ALLOWED: &[(&str, &str, &str)] = &[];

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every `crate::name` of `text` outside comments and outside a `#[cfg(test)] mod tests`
/// block.
fn uses(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    // Inside a unit-test module: the depth of its braces still open (0: outside).
    let mut test_depth = 0i64;
    let mut after_cfg_test = false;
    for line in text.lines() {
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        let trimmed = code.trim();
        if test_depth == 0 && after_cfg_test && trimmed.starts_with("mod tests") && trimmed.ends_with('{') {
            test_depth = 1;
            continue;
        }
        if !trimmed.is_empty() {
            after_cfg_test = trimmed == "#[cfg(test)]";
        }
        if test_depth > 0 {
            // Braces inside string and character literals are counted too: a test
            // module with an unbalanced one in a literal would hide the code after it.
            test_depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
            if test_depth <= 0 {
                test_depth = 0;
            }
            continue;
        }
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            // `$crate::` and `other_crate::` are not this crate.
            let before = rest[..i].chars().next_back();
            rest = &rest[i + "crate::".len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let name = ident(item.trim());
                    if !name.is_empty() {
                        out.insert(name);
                    }
                }
            } else {
                let name = ident(rest);
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
    out
}

fn scan(dir: &Path, module: &str, graph: &mut Graph) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            scan(&path, module, graph);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            let edges = graph.entry(module.to_string()).or_default();
            edges.extend(uses(&text).into_iter().filter(|m| m != module));
        }
    }
}

/// The import graph of `src/`: module -> the modules it names.
fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = Graph::new();
    let mut entries: Vec<_> = std::fs::read_dir(&src).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        if stem == "main" || stem == "lib" {
            continue;
        }
        if path.is_dir() {
            scan(&path, &stem, &mut graph);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            let edges = graph.entry(stem.clone()).or_default();
            edges.extend(uses(&text).into_iter().filter(|m| *m != stem));
        }
    }
    // Only edges to modules of the library (`crate::Foo` of a type alias is not one).
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for edges in graph.values_mut() {
        edges.retain(|m| modules.contains(m));
    }
    graph
}

/// The modules `from` reaches (itself included once it is reached through an edge).
fn reach(graph: &Graph, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&str> = graph.get(from).map(|e| e.iter().map(String::as_str).collect()).unwrap_or_default();
    while let Some(m) = stack.pop() {
        if seen.insert(m.to_string()) {
            stack.extend(graph.get(m).into_iter().flatten().map(String::as_str));
        }
    }
    seen
}

/// One circle through `start`, as `a -> b -> ... -> a`.
fn circle(graph: &Graph, start: &str) -> String {
    // Breadth first from `start` back to it, for the shortest circle.
    let mut prev: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_string()]);
    while let Some(m) = queue.pop_front() {
        for n in graph.get(&m).into_iter().flatten() {
            if n == start {
                let mut path = vec![start.to_string(), m.clone()];
                let mut at = m.clone();
                while let Some(p) = prev.get(&at) {
                    path.push(p.clone());
                    at = p.clone();
                }
                path.reverse();
                return path.join(" -> ");
            }
            if !prev.contains_key(n) && n != start {
                prev.insert(n.clone(), m.clone());
                queue.push_back(n.clone());
            }
        }
    }
    String::new()
}

#[test]
fn no_import_circle_between_top_level_modules() {
    let mut graph = graph();
    assert!(graph.len() > 10, "the scan found only {:?}", graph.keys());
    for (from, to, _) in ALLOWED {
        graph.get_mut(*from).map(|e| e.remove(*to));
    }
    let circles: BTreeSet<String> =
        graph.keys().filter(|m| reach(&graph, m).contains(*m)).map(|m| circle(&graph, m)).collect();
    assert!(
        circles.is_empty(),
        "import circles between top-level modules of src/ (cut one edge of each: move the type \
         down a layer, or hand the lower module a function):\n  {}",
        circles.into_iter().collect::<Vec<_>>().join("\n  ")
    );
}

#[test]
fn every_allowed_edge_still_exists_and_still_closes_a_circle() {
    let graph = graph();
    for (from, to, why) in ALLOWED {
        assert!(
            graph.get(*from).is_some_and(|e| e.contains(*to)),
            "{from} -> {to} ({why}) is gone: take it off tests/layers.rs's ALLOWED"
        );
        assert!(
            reach(&graph, to).contains(*from),
            "{from} -> {to} ({why}) closes no circle any more: take it off ALLOWED"
        );
    }
}

#[test]
fn the_scan_sees_uses_and_skips_comments() {
    let text = "use crate::sim::op;\n// crate::runner in a comment\nlet x = crate::{topology, algos::Problem};\n\
                let y = $crate::foo; let z = other_crate::bar;\n";
    let got: Vec<String> = uses(text).into_iter().collect();
    assert_eq!(got, ["algos", "sim", "topology"]);
}

#[test]
fn the_scan_skips_unit_test_modules() {
    let text = "use crate::sim::op;\n#[cfg(test)]\nmod tests {\n    use crate::algos;\n    fn f() {\n        \
                let _ = crate::runner::run;\n    }\n}\nfn g() { crate::topology::x(); }\n";
    let got: Vec<String> = uses(text).into_iter().collect();
    assert_eq!(got, ["sim", "topology"]);
    // A `mod tests` without `#[cfg(test)]` is library code, and so is a cfg'd item that is
    // not the tests module.
    let text = "mod tests {\n    use crate::algos;\n}\n#[cfg(test)]\nfn h() { crate::runner::x(); }\n";
    let got: Vec<String> = uses(text).into_iter().collect();
    assert_eq!(got, ["algos", "runner"]);
}
