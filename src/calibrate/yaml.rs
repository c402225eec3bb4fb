//! A machine file as a YAML tree that keeps its key order: read it, change values at
//! dotted paths (`topology.levels.1.bandwidth`), write it back as YAML, which the
//! scenario parser then reads as it reads any file. [`Yaml::to_text`] writes the tree
//! afresh (the file's comments gone, its own attached to the keys it was given);
//! [`edit_text`] changes values in the file's own text where each stands in one place, so
//! a user's comments and layout survive `calibrate --output`.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// One YAML node, maps in file order.
#[derive(Clone, Debug, PartialEq)]
pub enum Yaml {
    /// `null`, `~` or nothing.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A negative whole number.
    Int(i64),
    /// A whole number.
    UInt(u64),
    /// A number with a fraction or exponent.
    Float(f64),
    /// Any other scalar (`1us`, `ring`).
    Str(String),
    /// A list.
    Seq(Vec<Yaml>),
    /// A mapping, in file order.
    Map(Vec<(String, Yaml)>),
}

struct YamlVisitor;

impl<'de> Visitor<'de> for YamlVisitor {
    type Value = Yaml;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Yaml, E> {
        Ok(Yaml::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Yaml, E> {
        Ok(if v >= 0 { Yaml::UInt(v as u64) } else { Yaml::Int(v) })
    }
    fn visit_u64<E>(self, v: u64) -> Result<Yaml, E> {
        Ok(Yaml::UInt(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Yaml, E> {
        Ok(Yaml::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Yaml, E> {
        Ok(Yaml::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Yaml, E> {
        Ok(Yaml::Str(v))
    }
    fn visit_unit<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }
    fn visit_none<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Yaml, D::Error> {
        Yaml::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Yaml, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = a.next_element::<Yaml>()? {
            v.push(x);
        }
        Ok(Yaml::Seq(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Yaml, A::Error> {
        let mut v: Vec<(String, Yaml)> = Vec::new();
        while let Some(k) = a.next_key::<Yaml>()? {
            let key = match k {
                Yaml::Str(s) => s,
                Yaml::UInt(u) => u.to_string(),
                Yaml::Int(i) => i.to_string(),
                Yaml::Bool(b) => b.to_string(),
                Yaml::Float(f) => format!("{f:?}"),
                _ => return Err(de::Error::custom("a mapping key must be a scalar")),
            };
            let val = a.next_value::<Yaml>()?;
            if v.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom(format!("duplicate key '{key}'")));
            }
            v.push((key, val));
        }
        Ok(Yaml::Map(v))
    }
}

impl<'de> Deserialize<'de> for Yaml {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Yaml, D::Error> {
        d.deserialize_any(YamlVisitor)
    }
}

impl Yaml {
    /// Parse YAML text.
    pub fn parse(text: &str) -> Result<Yaml, String> {
        // Only `true` and `false` are booleans here: a plain `off` (`data: { mode: off }`)
        // stays the word it is, and is written back as written for the scenario parser to
        // read as it read the file (YAML 1.1's yes/no/on/off read as booleans became
        // `false`, which `data.mode` refuses).
        let mut options = serde_saphyr::Options::default();
        options.strict_booleans = true;
        serde_saphyr::from_str_with_options::<Yaml>(text, options).map_err(|e| e.to_string())
    }

    /// The node at a dotted path (`topology.levels.0.alpha`: map keys, list indices).
    pub fn get(&self, path: &str) -> Option<&Yaml> {
        let mut cur = self;
        for seg in path.split('.') {
            cur = match cur {
                Yaml::Map(m) => &m.iter().find(|(k, _)| k == seg)?.1,
                Yaml::Seq(v) => v.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    /// Set the node at a dotted path, creating missing map keys on the way (not list
    /// entries); an error says which part of the path does not fit the tree.
    pub fn set(&mut self, path: &str, value: Yaml) -> Result<(), String> {
        let segs: Vec<&str> = path.split('.').collect();
        let mut cur = self;
        for (i, seg) in segs.iter().enumerate() {
            let last = i + 1 == segs.len();
            if matches!(cur, Yaml::Null) {
                *cur = Yaml::Map(Vec::new());
            }
            cur = match cur {
                Yaml::Map(m) => {
                    let k = match m.iter().position(|(k, _)| k == seg) {
                        Some(k) => k,
                        None => {
                            m.push(((*seg).to_string(), if last { Yaml::Null } else { Yaml::Map(Vec::new()) }));
                            m.len() - 1
                        }
                    };
                    &mut m[k].1
                }
                Yaml::Seq(v) => {
                    let len = v.len();
                    let k = seg.parse::<usize>().ok().filter(|&k| k < len).ok_or_else(|| {
                        format!(
                            "{path}: '{}' has {len} entries; '{seg}' is not an index 0 to {}",
                            segs[..i].join("."),
                            len.saturating_sub(1)
                        )
                    })?;
                    &mut v[k]
                }
                _ => return Err(format!("{path}: '{}' is a single value, not a mapping", segs[..i].join("."))),
            };
        }
        *cur = value;
        Ok(())
    }

    /// Every scalar leaf's dotted path, in file order.
    pub fn leaves(&self) -> Vec<String> {
        fn walk(y: &Yaml, prefix: &str, out: &mut Vec<String>) {
            let join = |k: &str| if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
            match y {
                Yaml::Map(m) => m.iter().for_each(|(k, v)| walk(v, &join(k), out)),
                Yaml::Seq(v) => v.iter().enumerate().for_each(|(i, x)| walk(x, &join(&i.to_string()), out)),
                _ => out.push(prefix.to_string()),
            }
        }
        let mut out = Vec::new();
        walk(self, "", &mut out);
        out
    }

    fn is_scalar(&self) -> bool {
        !matches!(self, Yaml::Seq(_) | Yaml::Map(_))
    }

    /// The YAML text of the tree, with `comments` (by dotted path) after their keys.
    pub fn to_text(&self, comments: &BTreeMap<String, String>) -> String {
        let mut out = String::new();
        match self {
            Yaml::Map(m) => write_map(m, "", 0, comments, &mut out),
            other => {
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
        out
    }
}

/// A scalar as YAML: plain where that reads back as the same string, else quoted.
fn scalar(y: &Yaml) -> String {
    match y {
        Yaml::Null => "null".to_string(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Int(i) => i.to_string(),
        Yaml::UInt(u) => u.to_string(),
        Yaml::Float(f) => format!("{f:?}"),
        Yaml::Str(s) => {
            let plain = !s.is_empty()
                && s.chars().all(|c| c.is_ascii_alphanumeric() || "_.-+/".contains(c))
                && !s.starts_with(['-', '.', '+'])
                && s.parse::<f64>().is_err()
                // Plain `true`, `false` and `null` would read back as a boolean or
                // nothing; a word such as `off` was plain in the file (strict booleans).
                && !matches!(s.as_str(), "true" | "false")
                && !s.eq_ignore_ascii_case("null");
            if plain { s.clone() } else { serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}")) }
        }
        Yaml::Seq(_) | Yaml::Map(_) => String::new(),
    }
}

/// A node on one line (`{ a: 1, b: 2 }`, `[1, 2]`, a scalar), when it is short and flat.
fn flow(y: &Yaml) -> Option<String> {
    let s = match y {
        Yaml::Map(m) if m.iter().all(|(_, v)| v.is_scalar()) => {
            if m.is_empty() {
                "{}".to_string()
            } else {
                let parts: Vec<String> =
                    m.iter().map(|(k, v)| format!("{}: {}", scalar(&Yaml::Str(k.clone())), scalar(v))).collect();
                format!("{{ {} }}", parts.join(", "))
            }
        }
        Yaml::Seq(v) if v.iter().all(Yaml::is_scalar) => {
            format!("[{}]", v.iter().map(scalar).collect::<Vec<_>>().join(", "))
        }
        other if other.is_scalar() => scalar(other),
        _ => return None,
    };
    (s.len() <= 100).then_some(s)
}

/// The comments of `path` and every path under it, for a node written on one line.
fn comments_under(path: &str, comments: &BTreeMap<String, String>) -> Vec<String> {
    comments
        .iter()
        .filter(|(k, _)| *k == path || k.starts_with(&format!("{path}.")))
        .map(|(k, c)| if k == path { c.clone() } else { format!("{}: {c}", &k[path.len() + 1..]) })
        .collect()
}

fn with_comment(line: String, path: &str, comments: &BTreeMap<String, String>) -> String {
    let c = comments_under(path, comments);
    if c.is_empty() { line } else { format!("{line}  # {}", c.join("; ")) }
}

fn write_map(m: &[(String, Yaml)], prefix: &str, indent: usize, comments: &BTreeMap<String, String>, out: &mut String) {
    let pad = " ".repeat(indent);
    for (k, v) in m {
        let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        let key = scalar(&Yaml::Str(k.clone()));
        match flow(v) {
            Some(f) => {
                out.push_str(&with_comment(format!("{pad}{key}: {f}"), &path, comments));
                out.push('\n');
            }
            None => {
                out.push_str(&format!("{pad}{key}:\n"));
                write_node(v, &path, indent + 2, comments, out);
            }
        }
    }
}

fn write_node(y: &Yaml, path: &str, indent: usize, comments: &BTreeMap<String, String>, out: &mut String) {
    let pad = " ".repeat(indent);
    match y {
        Yaml::Map(m) => write_map(m, path, indent, comments, out),
        Yaml::Seq(v) => {
            for (i, x) in v.iter().enumerate() {
                let p = format!("{path}.{i}");
                match flow(x) {
                    Some(f) => {
                        out.push_str(&with_comment(format!("{pad}- {f}"), &p, comments));
                        out.push('\n');
                    }
                    None => {
                        // A block under a dash: the first key on the dash's line.
                        let mut inner = String::new();
                        write_node(x, &p, indent + 2, comments, &mut inner);
                        let inner = inner.strip_prefix(&" ".repeat(indent + 2)).unwrap_or(&inner).to_string();
                        out.push_str(&format!("{pad}- {inner}"));
                    }
                }
            }
        }
        other => {
            out.push_str(&with_comment(format!("{pad}{}", scalar(other)), path, comments));
            out.push('\n');
        }
    }
}

/// Where each scalar value stands in `text`: its dotted path (as [`Yaml::get`] reads it)
/// and its byte range, quotes included. `None` where a path would not name one place:
/// an alias or a merge key (one value read in two places), several documents, a text the
/// parser refuses. A tagged scalar, or one written over several lines, has no span.
fn value_spans(text: &str) -> Option<BTreeMap<String, std::ops::Range<usize>>> {
    use granit_parser::{Event, Parser, ScalarStyle};
    enum Frame {
        Map { path: String, key: Option<String> },
        Seq { path: String, next: usize },
    }
    /// The path of the node that comes next in the innermost collection.
    fn child(frames: &[Frame]) -> Option<String> {
        let join = |p: &str, k: &str| if p.is_empty() { k.to_string() } else { format!("{p}.{k}") };
        match frames.last() {
            None => Some(String::new()),
            Some(Frame::Map { path, key: Some(k) }) => Some(join(path, k)),
            Some(Frame::Map { key: None, .. }) => None,
            Some(Frame::Seq { path, next }) => Some(join(path, &next.to_string())),
        }
    }
    /// A node of the innermost collection is done: a key waits for its value, a value
    /// for the next key.
    fn done(frames: &mut [Frame], scalar: Option<String>) -> Option<()> {
        match frames.last_mut() {
            Some(Frame::Map { key, .. }) => {
                *key = match key.take() {
                    None => Some(scalar?),
                    Some(_) => None,
                };
            }
            Some(Frame::Seq { next, .. }) => *next += 1,
            None => {}
        }
        Some(())
    }
    let mut spans = BTreeMap::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut documents = 0;
    for item in Parser::new_from_str(text) {
        let (event, span) = item.ok()?;
        match event {
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return None;
                }
            }
            Event::Alias(_) | Event::UnresolvedAlias(_) => return None,
            Event::Scalar(value, style, _, tag) => {
                let at_key = matches!(frames.last(), Some(Frame::Map { key: None, .. }));
                if at_key {
                    if value == "<<" {
                        return None;
                    }
                } else {
                    let range = span.byte_range()?;
                    // A block scalar, or one folded over lines, is not one stretch of a
                    // line that a new value can replace: left out, so a change to it
                    // writes the tree afresh.
                    let block = matches!(style, ScalarStyle::Literal | ScalarStyle::Folded);
                    // A tagged value likewise: the tag stands before the span, and a new
                    // value under `!!float` or `!!int` (`!!float 1.2GB/s`) is one the tag
                    // makes the reader refuse.
                    if !block && tag.is_none() && !text.get(range.clone())?.contains(['\n', '\r']) {
                        spans.insert(child(&frames)?, range);
                    }
                }
                done(&mut frames, Some(value.into_owned()))?;
            }
            Event::MappingStart(..) => {
                let path = child(&frames)?;
                frames.push(Frame::Map { path, key: None });
            }
            Event::SequenceStart(..) => {
                let path = child(&frames)?;
                frames.push(Frame::Seq { path, next: 0 });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                frames.pop();
                done(&mut frames, None)?;
            }
            _ => {}
        }
    }
    Some(spans)
}

/// Whether a comment at the end of a line is one [`edit_text`] wrote: each of its parts
/// (`; `-separated, each maybe after a `key: `) says `fitted` or `held`.
fn is_ours(comment: &str) -> bool {
    !comment.is_empty()
        && comment.split("; ").all(|part| {
            let said = |c: &str| c.starts_with("fitted") || c.starts_with("held");
            said(part) || part.split_once(": ").is_some_and(|(k, c)| !k.contains(' ') && said(c))
        })
}

/// `text` with the scalars at `values`' paths replaced and `comments` at the end of their
/// lines; everything else (the file's own comments, layout, quoting, key order) as written.
/// A line's own comment is kept after the new one; one that an earlier `edit_text` wrote is
/// replaced. `None` where a path is not a scalar of the text, is tagged, is written over several lines,
/// or is not one place (an alias, a merge key, several documents, a text the parser refuses):
/// the caller then writes the tree afresh.
pub fn edit_text(text: &str, values: &BTreeMap<String, Yaml>, comments: &BTreeMap<String, String>) -> Option<String> {
    let spans = value_spans(text)?;
    if !values.keys().chain(comments.keys()).all(|p| spans.contains_key(p)) {
        return None;
    }
    let line_of = |at: usize| {
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        // A CRLF file keeps its `\r` after the new comment.
        let end = if text[..end].ends_with('\r') { end - 1 } else { end };
        (start, end)
    };
    // The commented lines (start, end), each with its comments (where, key, text) in file order.
    type Commented<'t> = Vec<(usize, &'t str, &'t str)>;
    let mut lines: BTreeMap<(usize, usize), Commented<'_>> = BTreeMap::new();
    for (path, c) in comments {
        let r = &spans[path];
        let last = path.rsplit('.').next().unwrap_or(path);
        lines.entry(line_of(r.start)).or_default().push((r.start, last, c));
    }
    // Edits as (range, new text), applied from the end so earlier ranges stay put.
    let mut edits: Vec<(std::ops::Range<usize>, String)> =
        values.iter().map(|(p, v)| (spans[p].clone(), flow(v).unwrap_or_else(|| scalar(v)))).collect();
    for ((start, end), mut cs) in lines {
        cs.sort_by_key(|&(at, ..)| at);
        let ours = if cs.len() == 1 {
            cs[0].2.to_string()
        } else {
            cs.iter().map(|(_, k, c)| format!("{k}: {c}")).collect::<Vec<_>>().join("; ")
        };
        // The line's own comment starts at the first `#` after its last value that follows
        // a blank (a plain scalar may hold `#` without one).
        let after = spans.values().filter(|r| r.start >= start && r.end <= end).map(|r| r.end).max().unwrap_or(start);
        let tail = &text[after..end];
        let hash = tail
            .char_indices()
            .find(|&(i, c)| c == '#' && (i == 0 || tail[..i].ends_with([' ', '\t'])))
            .map(|(i, _)| after + i);
        let (code_end, own) = match hash {
            Some(h) => {
                let c = text[h + 1..end].trim();
                let own = match c.split_once("  # ") {
                    Some((first, rest)) if is_ours(first) => rest.trim(),
                    _ if is_ours(c) => "",
                    _ => c,
                };
                (h, own)
            }
            None => (end, ""),
        };
        let code_end = after + text[after..code_end].trim_end().len();
        let mut new = format!("  # {ours}");
        if !own.is_empty() {
            new.push_str(&format!("  # {own}"));
        }
        edits.push((code_end..end, new));
    }
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    let mut out = text.to_string();
    for (r, s) in edits {
        out.replace_range(r, &s);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MACHINE: &str = "name: two nodes\ntopology:\n  kind: hierarchical\n  levels:\n    - { name: nvlink, size: 4, alpha: 1us, bandwidth: 100GB/s }\n    - { name: ib, size: 2, alpha: 5us, bandwidth: 100Gbps }\ncompute: { cost_per_byte: 0.01ns }\nalgorithms: [ring]\nsizes: [1MiB, 4MiB]\n";

    #[test]
    fn round_trip_keeps_order_and_values() {
        let y = Yaml::parse(MACHINE).unwrap();
        let text = y.to_text(&BTreeMap::new());
        assert_eq!(Yaml::parse(&text).unwrap(), y);
        assert!(
            text.starts_with("name: \"two nodes\"\ntopology:\n  kind: hierarchical\n  levels:\n    - { name: nvlink"),
            "{text}"
        );
        assert_eq!(y.get("topology.levels.1.alpha"), Some(&Yaml::Str("5us".into())));
        assert_eq!(y.get("topology.levels.1.size"), Some(&Yaml::UInt(2)));
        assert_eq!(y.get("topology.levels.2.size"), None);
    }

    #[test]
    fn set_creates_keys_and_refuses_bad_paths() {
        let mut y = Yaml::parse(MACHINE).unwrap();
        y.set("topology.levels.0.alpha", Yaml::Str("2us".into())).unwrap();
        y.set("compute.cost_per_byte", Yaml::Str("0.02ns".into())).unwrap();
        y.set("network.model", Yaml::Str("ideal".into())).unwrap();
        assert_eq!(y.get("network.model"), Some(&Yaml::Str("ideal".into())));
        assert_eq!(y.get("topology.levels.0.alpha"), Some(&Yaml::Str("2us".into())));
        let e = y.set("topology.levels.5.alpha", Yaml::Null).unwrap_err();
        assert!(e.contains("has 2 entries"), "{e}");
        let e = y.set("topology.kind.x", Yaml::Null).unwrap_err();
        assert!(e.contains("single value"), "{e}");
        let mut c = BTreeMap::new();
        c.insert("topology.levels.0.alpha".to_string(), "fitted".to_string());
        let text = y.to_text(&c);
        assert!(text.contains("alpha: 2us, bandwidth: 100GB/s }  # alpha: fitted"), "{text}");
        assert_eq!(Yaml::parse(&text).unwrap(), y);
    }

    #[test]
    fn strings_that_read_as_other_things_are_quoted() {
        for s in ["8", "true", "", "a b", "-x", "1e3", "null", "Null"] {
            assert!(scalar(&Yaml::Str(s.into())).starts_with('"'), "{s}");
        }
        assert_eq!(scalar(&Yaml::Str("12.5GB/s".into())), "12.5GB/s");
        // YAML 1.1's words are words here (strict booleans), written back plain for the
        // scenario parser to read as it read the file: `data: { mode: off }` came back as
        // `mode: false`, which it refuses.
        let y = Yaml::parse("data: { mode: off, x: no, y: true }").unwrap();
        assert_eq!(y.get("data.mode"), Some(&Yaml::Str("off".into())));
        assert_eq!(y.get("data.y"), Some(&Yaml::Bool(true)));
        assert_eq!(scalar(&Yaml::Str("off".into())), "off");
        assert_eq!(Yaml::parse(&y.to_text(&BTreeMap::new())).unwrap(), y);
    }

    #[test]
    fn edit_text_keeps_the_files_own_comments_and_layout() {
        let text = "# my cluster, measured 2026-03\nname: 'two nodes'   # quoted on purpose\ntopology:\n  kind: hierarchical\n  levels:\n    - { name: nvlink, size: 4, alpha: 1us, bandwidth: 100GB/s }  # from the vendor\n    - name: ib\n      size: 2\n      alpha: \"5us\"   # switch hop included\n      bandwidth: 100Gbps\nsizes: [1MiB]\n";
        let mut values = BTreeMap::new();
        values.insert("topology.levels.0.alpha".to_string(), Yaml::Str("1.25us".into()));
        values.insert("topology.levels.0.bandwidth".to_string(), Yaml::Str("90GB/s".into()));
        values.insert("topology.levels.1.alpha".to_string(), Yaml::Str("4.5us".into()));
        let mut comments = BTreeMap::new();
        comments.insert("topology.levels.0.alpha".to_string(), "fitted, +-3%".to_string());
        comments.insert("topology.levels.0.bandwidth".to_string(), "fitted, +-1%".to_string());
        comments.insert("topology.levels.1.alpha".to_string(), "fitted, undetermined".to_string());
        comments.insert("topology.levels.1.bandwidth".to_string(), "held: no log uses it".to_string());
        let out = edit_text(text, &values, &comments).unwrap();
        assert_eq!(
            out,
            "# my cluster, measured 2026-03\nname: 'two nodes'   # quoted on purpose\ntopology:\n  kind: hierarchical\n  levels:\n    - { name: nvlink, size: 4, alpha: 1.25us, bandwidth: 90GB/s }  # alpha: fitted, +-3%; bandwidth: fitted, +-1%  # from the vendor\n    - name: ib\n      size: 2\n      alpha: 4.5us  # fitted, undetermined  # switch hop included\n      bandwidth: 100Gbps  # held: no log uses it\nsizes: [1MiB]\n"
        );
        // What the file says is what the tree says, with the new values.
        let mut tree = Yaml::parse(text).unwrap();
        for (p, v) in &values {
            tree.set(p, v.clone()).unwrap();
        }
        assert_eq!(Yaml::parse(&out).unwrap(), tree);
        // Edited again (a calibrated file calibrated anew), its own earlier comments are
        // replaced and the user's kept once.
        values.insert("topology.levels.1.alpha".to_string(), Yaml::Str("4.4us".into()));
        comments.insert("topology.levels.1.alpha".to_string(), "fitted, +-2%".to_string());
        let again = edit_text(&out, &values, &comments).unwrap();
        assert!(again.contains("      alpha: 4.4us  # fitted, +-2%  # switch hop included\n"), "{again}");
        assert!(again.contains("      bandwidth: 100Gbps  # held: no log uses it\n"), "{again}");
        assert!(
            again.contains("bandwidth: 90GB/s }  # alpha: fitted, +-3%; bandwidth: fitted, +-1%  # from the vendor\n"),
            "{again}"
        );
    }

    #[test]
    fn edit_text_gives_up_where_a_path_is_not_one_place() {
        let values = |p: &str| BTreeMap::from([(p.to_string(), Yaml::Str("2us".into()))]);
        let none = BTreeMap::new();
        // A key the file does not have, an alias, a merge key, two documents.
        assert_eq!(edit_text("a: { b: 1us }\n", &values("a.c"), &none), None);
        assert_eq!(edit_text("x: &t 1us\na: { b: *t }\n", &values("x"), &none), None);
        assert_eq!(edit_text("base: &b { alpha: 1us }\nlevel:\n  <<: *b\n", &values("base.alpha"), &none), None);
        assert_eq!(edit_text("a: 1us\n---\na: 2us\n", &values("a"), &none), None);
        assert_eq!(edit_text("a: [1us\n", &values("a.0"), &none), None);
        // A `#` inside a plain scalar is the scalar's, not a comment.
        let out = edit_text("a: 1us\nb: x#y\n", &values("a"), &BTreeMap::from([("b".to_string(), "held".to_string())]));
        assert_eq!(out.as_deref(), Some("a: 2us\nb: x#y  # held\n"));
    }
}
