//! `run --baseline REPORT.json`: a regression gate for CI. The run's points are compared
//! with the same points of a saved JSON report, field by field, and the gate fails when
//! any moved by more than a relative tolerance, or when a point is on one side only.
//!
//! A point is identified by what the report says ran there: collective, algorithm label
//! (parameters included), ranks and bytes; where a report holds two rows with the same
//! identity (a selector and the algorithm it names are different labels, so this is
//! rare), the n-th of one side meets the n-th of the other. The compared fields are the
//! ones a cost-model change moves: `time_s`, `closed_form_s`, `messages`, `verified`,
//! and whether the point ran at all (`not_applicable`).
//!
//! Both sides are read from their JSON form, the current run's through the same
//! serialiser that writes `--format json`, so a baseline written by that run compares
//! equal to the last bit. Only the fields above are required of a baseline: reports
//! written by older or newer versions, with fields added or dropped, still compare.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::report::Report;

/// The default `--tolerance`: the simulator is deterministic, so anything beyond the last
/// few bits of a float is a change.
pub const DEFAULT_TOLERANCE: f64 = 1e-9;

/// The largest baseline file read, bytes: a report of a big sweep is a few MiB.
pub const MAX_BASELINE_BYTES: u64 = 256 << 20;

/// What identifies a point across two reports.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    /// The collective (`allreduce` where a report predates the field).
    pub collective: String,
    /// The algorithm's label, with its parameters.
    pub algorithm: String,
    /// P.
    pub ranks: u64,
    /// S, bytes per rank.
    pub bytes: u64,
    /// 0 for the first row with this identity in its report, 1 for the second, ...
    pub occurrence: usize,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} P={} S={}", self.collective, self.algorithm, self.ranks, self.bytes)?;
        if self.occurrence > 0 {
            write!(f, " #{}", self.occurrence + 1)?;
        }
        Ok(())
    }
}

/// The compared fields of one point.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    key: Key,
    time_s: Option<f64>,
    closed_form_s: Option<f64>,
    messages: Option<u64>,
    verified: Option<bool>,
    not_applicable: Option<String>,
    /// The point's own checks that failed in this run (empty for a baseline row).
    failures: Vec<String>,
}

/// A saved report's points, read for comparison.
#[derive(Clone, Debug)]
pub struct Baseline {
    /// The file, for messages.
    pub name: String,
    rows: Vec<Row>,
}

impl Baseline {
    /// Points in the baseline.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the baseline has no point.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// Read the baseline report at `path`. Every error names the file and says what a
/// baseline is (the caller treats it as bad input).
pub fn load(path: &Path) -> Result<Baseline, String> {
    use std::io::Read;
    let name = path.display().to_string();
    let cannot = |e: std::io::Error| format!("--baseline {name}: cannot read it: {e}");
    // A FIFO would block the open itself: look at what the path is first.
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if meta.is_dir() {
        return Err(format!("--baseline {name}: it is a directory; give a report written by `run --format json`"));
    }
    if !meta.is_file() {
        return Err(format!(
            "--baseline {name}: it is {}, not a regular file; give a report written by `run --format json`",
            crate::files::kind(&meta)
        ));
    }
    let f = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    f.take(MAX_BASELINE_BYTES + 1).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > MAX_BASELINE_BYTES {
        return Err(format!("--baseline {name}: larger than {} MiB; is it a report?", MAX_BASELINE_BYTES >> 20));
    }
    let text = crate::files::utf8_text(bytes)
        .map_err(|e| format!("--baseline {name}:{e}; give a report written by `run --format json --output FILE`"))?;
    parse(&text, &name)
}

/// Read a baseline report from `text`; `name` names it in messages.
pub fn parse(text: &str, name: &str) -> Result<Baseline, String> {
    let hint = "give a report written by `run SCENARIO --format json --output FILE`";
    crate::files::check_json(text).map_err(|e| {
        format!("--baseline {name}:{}:{}: not JSON ({}); {hint}", e.line(), e.column(), strip_position(&e))
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        format!("--baseline {name}:{}:{}: not JSON ({}); {hint}", e.line(), e.column(), strip_position(&e))
    })?;
    let results = value
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("--baseline {name}: no \"results\" list, so not an allreduce-sim report; {hint}"))?;
    let rows = rows_of(results).map_err(|(i, why)| format!("--baseline {name}: results[{i}]: {why}; {hint}"))?;
    Ok(Baseline { name: name.to_string(), rows })
}

/// serde_json's message without its own " at line L column C" (we give the position first).
fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// The rows of a report's `results`, each with its occurrence number.
fn rows_of(results: &[Value]) -> Result<Vec<Row>, (usize, String)> {
    let mut rows: Vec<Row> = Vec::with_capacity(results.len());
    // Counted by identity in a map: a report of 100,000 results compares in moments.
    let mut seen: std::collections::BTreeMap<Key, usize> = std::collections::BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        let mut row = row_of(r).map_err(|why| (i, why))?;
        let count = seen.entry(row.key.clone()).or_insert(0);
        row.key.occurrence = *count;
        *count += 1;
        rows.push(row);
    }
    Ok(rows)
}

/// One result object's compared fields.
fn row_of(r: &Value) -> Result<Row, String> {
    let obj = r.as_object().ok_or("not an object")?;
    let text = |field: &str| -> Result<Option<String>, String> {
        match obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("\"{field}\" is {other}, not text")),
        }
    };
    let whole = |field: &str| -> Result<Option<u64>, String> {
        match obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| format!("\"{field}\" is {v}, not a whole number")),
        }
    };
    let number = |field: &str| -> Result<Option<f64>, String> {
        match obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_f64().map(Some).ok_or_else(|| format!("\"{field}\" is {v}, not a number")),
        }
    };
    let algorithm = text("algorithm")?.ok_or("no \"algorithm\"")?;
    let ranks = whole("ranks")?.ok_or("no \"ranks\"")?;
    let bytes = whole("bytes")?.ok_or("no \"bytes\"")?;
    let verified = match obj.get("verified") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => return Err(format!("\"verified\" is {other}, not true, false or null")),
    };
    let failures = match obj.get("failures") {
        Some(Value::Array(items)) => items.iter().map(|f| f.as_str().unwrap_or("?").to_string()).collect(),
        _ => Vec::new(),
    };
    Ok(Row {
        key: Key {
            collective: text("collective")?.unwrap_or_else(|| "allreduce".to_string()),
            algorithm,
            ranks,
            bytes,
            occurrence: 0,
        },
        time_s: number("time_s")?,
        closed_form_s: number("closed_form_s")?,
        messages: whole("messages")?,
        verified,
        not_applicable: text("not_applicable")?,
        failures,
    })
}

/// One field of one point that differs between the baseline and the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Moved {
    /// The report's field name.
    pub field: &'static str,
    /// Its value in the baseline, to the last bit (`null` for none).
    pub baseline: String,
    /// Its value in this run.
    pub now: String,
    /// `|now - baseline| / max(|now|, |baseline|)` for numbers; `None` where it is not a
    /// number on both sides (a flag, a value that appeared or vanished).
    pub rel: Option<f64>,
    /// Whether the change is beyond the tolerance (any change of a non-number is).
    pub beyond: bool,
}

/// How one point compared.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// On both sides; `moved` lists every field that differs at all (empty: identical).
    Compared {
        /// The fields that differ.
        moved: Vec<Moved>,
    },
    /// In the baseline, not in this run.
    MissingFromRun,
    /// In this run, not in the baseline.
    NotInBaseline,
}

/// One point of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// Which point.
    pub key: Key,
    /// What the comparison found.
    pub outcome: Outcome,
    /// The point's own checks that failed in this run (closed form, result), which fail
    /// the run anyway; listed so that the JUnit file shows them.
    pub failures: Vec<String>,
}

impl Case {
    /// Whether this point passes the gate: on both sides with no field beyond the
    /// tolerance. (Its own checks are judged by `run` as always.)
    pub fn passed(&self) -> bool {
        matches!(&self.outcome, Outcome::Compared { moved } if moved.iter().all(|m| !m.beyond))
    }
}

/// The whole comparison, in the run's point order, then the baseline's points the run
/// does not have.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The baseline file.
    pub baseline: String,
    /// The relative tolerance applied.
    pub tolerance: f64,
    /// The scenario's name, for the JUnit suite.
    pub scenario: String,
    /// Every point.
    pub cases: Vec<Case>,
}

/// Check a `--tolerance`: a finite number, at least 0.
pub fn check_tolerance(tolerance: f64) -> Result<(), String> {
    if tolerance.is_finite() && tolerance >= 0.0 {
        Ok(())
    } else {
        Err(format!("--tolerance: {tolerance} is not allowed; give a relative tolerance, a number >= 0 such as 1e-9"))
    }
}

/// Compare `report` with `baseline`, every field held to relative `tolerance`.
pub fn compare(baseline: &Baseline, report: &Report, tolerance: f64) -> Comparison {
    // As the JSON report writes them (an n/a row's time null, not 0): a run must match
    // its own saved report.
    let current: Vec<Value> = report
        .results
        .iter()
        .map(|r| {
            let mut r = r.clone();
            crate::report::blank_na_times(&mut r);
            serde_json::to_value(&r).unwrap_or(Value::Null)
        })
        .collect();
    // A result the report's own serialiser wrote always has the identifying fields.
    let now = Baseline { name: String::new(), rows: rows_of(&current).unwrap_or_default() };
    compare_reports(baseline, &now, tolerance, &report.scenario.name)
}

/// Compare two reports read with [`parse`]: `current` (whose failed checks are listed)
/// with `baseline`; `scenario` names the JUnit suite.
pub fn compare_reports(baseline: &Baseline, current: &Baseline, tolerance: f64, scenario: &str) -> Comparison {
    let now = current.rows.clone();
    let mut matched = vec![false; baseline.rows.len()];
    let mut cases = Vec::with_capacity(now.len());
    // The first baseline row of each key, as a scan in order would find it.
    let mut index: std::collections::BTreeMap<&Key, usize> = std::collections::BTreeMap::new();
    for (j, b) in baseline.rows.iter().enumerate() {
        index.entry(&b.key).or_insert(j);
    }
    for row in now {
        let outcome = match index.get(&row.key).copied() {
            Some(j) => {
                matched[j] = true;
                Outcome::Compared { moved: differences(&baseline.rows[j], &row, tolerance) }
            }
            None => Outcome::NotInBaseline,
        };
        cases.push(Case { key: row.key, outcome, failures: row.failures });
    }
    for (b, _) in baseline.rows.iter().zip(&matched).filter(|(_, m)| !**m) {
        cases.push(Case { key: b.key.clone(), outcome: Outcome::MissingFromRun, failures: Vec::new() });
    }
    Comparison { baseline: baseline.name.clone(), tolerance, scenario: scenario.to_string(), cases }
}

/// Every compared field that differs between `base` and `now`.
fn differences(base: &Row, now: &Row, tolerance: f64) -> Vec<Moved> {
    let mut out = Vec::new();
    let mut number = |field: &'static str, a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(x), Some(y)) if x == y => {}
        (None, None) => {}
        (Some(x), Some(y)) => {
            let scale = x.abs().max(y.abs());
            let rel = if scale > 0.0 { (y - x).abs() / scale } else { 0.0 };
            // NaN (a non-finite value on one side) is always beyond.
            let beyond = rel.is_nan() || rel > tolerance;
            out.push(Moved { field, baseline: fmt_f64(x), now: fmt_f64(y), rel: Some(rel), beyond });
        }
        (x, y) => out.push(Moved {
            field,
            baseline: x.map_or_else(|| "null".to_string(), fmt_f64),
            now: y.map_or_else(|| "null".to_string(), fmt_f64),
            rel: None,
            beyond: true,
        }),
    };
    number("time_s", base.time_s, now.time_s);
    number("closed_form_s", base.closed_form_s, now.closed_form_s);
    // Counts are compared as numbers so that --tolerance applies to them too.
    number("messages", base.messages.map(|m| m as f64), now.messages.map(|m| m as f64));
    let show = |v: &Option<String>| v.as_ref().map_or_else(|| "null".to_string(), |s| format!("{s:?}"));
    if base.verified != now.verified {
        let flag = |v: Option<bool>| v.map_or_else(|| "null".to_string(), |b| b.to_string());
        out.push(Moved {
            field: "verified",
            baseline: flag(base.verified),
            now: flag(now.verified),
            rel: None,
            beyond: true,
        });
    }
    if base.not_applicable != now.not_applicable {
        out.push(Moved {
            field: "not_applicable",
            baseline: show(&base.not_applicable),
            now: show(&now.not_applicable),
            rel: None,
            beyond: true,
        });
    }
    out
}

/// A float in the shortest text that reads back the same, in scientific notation, so
/// that times line up whatever their magnitude.
fn fmt_f64(x: f64) -> String {
    format!("{x:e}")
}

impl Comparison {
    /// Whether every point passed the gate.
    pub fn passed(&self) -> bool {
        self.cases.iter().all(Case::passed)
    }

    /// Points beyond the tolerance, missing from the run, and not in the baseline.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for case in &self.cases {
            match &case.outcome {
                Outcome::Compared { moved } if moved.iter().any(|m| m.beyond) => c.0 += 1,
                Outcome::Compared { .. } => {}
                Outcome::MissingFromRun => c.1 += 1,
                Outcome::NotInBaseline => c.2 += 1,
            }
        }
        c
    }

    /// The summary line, a table of every field that moved (beyond the tolerance or not)
    /// and by how much, and the points found on one side only.
    pub fn render(&self) -> String {
        let (beyond, missing, new) = self.counts();
        let compared = self.cases.iter().filter(|c| matches!(c.outcome, Outcome::Compared { .. })).count();
        let mut out = format!(
            "baseline {}: {compared} point(s) compared, {beyond} moved beyond the relative tolerance {:e}, \
             {missing} missing from this run, {new} not in the baseline: {}\n",
            self.baseline,
            self.tolerance,
            if self.passed() { "passed" } else { "FAILED" }
        );
        let mut rows: Vec<[String; 5]> = Vec::new();
        for case in &self.cases {
            if let Outcome::Compared { moved } = &case.outcome {
                for m in moved {
                    let rel = m.rel.map_or_else(|| "changed".to_string(), |r| format!("{r:.3e}"));
                    let mark = if m.beyond { "  <- beyond" } else { "" };
                    rows.push([
                        case.key.to_string(),
                        m.field.to_string(),
                        m.baseline.clone(),
                        m.now.clone(),
                        format!("{rel}{mark}"),
                    ]);
                }
            }
        }
        if !rows.is_empty() {
            let head = ["point", "field", "baseline", "now", "relative change"].map(String::from);
            let mut width = [0usize; 5];
            for r in std::iter::once(&head).chain(&rows) {
                for (w, cell) in width.iter_mut().zip(r) {
                    *w = (*w).max(cell.chars().count());
                }
            }
            for r in std::iter::once(&head).chain(&rows) {
                let mut line = String::from(" ");
                for (w, cell) in width.iter().zip(r) {
                    let _ = write!(line, " {cell:<w$}");
                }
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        // A point repeated in the baseline (an edited file; a run lists each point once) is
        // not lost from the run: say how often each side holds it.
        fn point(k: &Key) -> (&str, &str, u64, u64) {
            (&k.collective, &k.algorithm, k.ranks, k.bytes)
        }
        let mut held: std::collections::BTreeMap<_, (usize, usize)> = std::collections::BTreeMap::new();
        for case in &self.cases {
            let (base, run) = held.entry(point(&case.key)).or_default();
            match case.outcome {
                Outcome::MissingFromRun => *base += 1,
                Outcome::NotInBaseline => *run += 1,
                Outcome::Compared { .. } => {
                    *base += 1;
                    *run += 1;
                }
            }
        }
        for case in &self.cases {
            match case.outcome {
                Outcome::MissingFromRun => {
                    let (base, run) = held.get(&point(&case.key)).copied().unwrap_or_default();
                    let _ = if run > 0 {
                        writeln!(
                            out,
                            "  in the baseline more often than in this run: {} (the baseline holds this point \
                             {base} times, this run {run})",
                            case.key
                        )
                    } else {
                        writeln!(out, "  missing from this run (in the baseline): {}", case.key)
                    };
                }
                Outcome::NotInBaseline => {
                    let _ = writeln!(out, "  not in the baseline (new in this run): {}", case.key);
                }
                Outcome::Compared { .. } => {}
            }
        }
        out
    }

    /// The comparison as JUnit XML: one test suite, one test case per point (named by
    /// its key), failing where the point moved beyond the tolerance, is on one side
    /// only, or failed one of its own checks in this run.
    pub fn junit(&self) -> String {
        let mut cases = String::new();
        let mut failures = 0;
        for case in &self.cases {
            let mut why: Vec<(&str, String)> = Vec::new();
            match &case.outcome {
                Outcome::Compared { moved } => {
                    let beyond: Vec<String> = moved
                        .iter()
                        .filter(|m| m.beyond)
                        .map(|m| {
                            let rel = m.rel.map_or_else(String::new, |r| format!(" (relative change {r:.3e})"));
                            format!("{}: baseline {}, now {}{rel}", m.field, m.baseline, m.now)
                        })
                        .collect();
                    if !beyond.is_empty() {
                        why.push((
                            "moved",
                            format!("beyond the relative tolerance {:e}: {}", self.tolerance, beyond.join("; ")),
                        ));
                    }
                }
                Outcome::MissingFromRun => {
                    why.push(("missing", format!("in the baseline {}, not in this run", self.baseline)))
                }
                Outcome::NotInBaseline => {
                    why.push(("missing", format!("in this run, not in the baseline {}", self.baseline)))
                }
            }
            for f in &case.failures {
                why.push(("check", f.clone()));
            }
            let name = xml_escape(&case.key.to_string());
            if why.is_empty() {
                let _ = writeln!(cases, "    <testcase name=\"{name}\" classname=\"allreduce-sim.baseline\"/>");
            } else {
                failures += 1;
                let _ = writeln!(cases, "    <testcase name=\"{name}\" classname=\"allreduce-sim.baseline\">");
                for (kind, text) in why {
                    let text = xml_escape(&text);
                    let _ = writeln!(cases, "      <failure type=\"{kind}\" message=\"{text}\">{text}</failure>");
                }
                cases.push_str("    </testcase>\n");
            }
        }
        let n = self.cases.len();
        let suite = xml_escape(&self.scenario);
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites name=\"allreduce-sim\" tests=\"{n}\" failures=\"{failures}\" errors=\"0\">\n  \
             <testsuite name=\"{suite}\" tests=\"{n}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">\n\
             {cases}  </testsuite>\n</testsuites>\n"
        )
    }
}

/// Text safe inside an XML attribute or element: the five special characters escaped,
/// and the control characters XML 1.0 cannot carry at all replaced.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report_json(rows: &[(&str, u64, u64, f64, u64)]) -> String {
        let results: Vec<Value> = rows
            .iter()
            .map(|&(a, p, s, t, m)| {
                serde_json::json!({"collective": "allreduce", "algorithm": a, "ranks": p, "bytes": s,
                    "time_s": t, "closed_form_s": t, "messages": m, "verified": true, "failures": []})
            })
            .collect();
        serde_json::json!({"scenario": {}, "results": results}).to_string()
    }

    fn rows(text: &str) -> Vec<Row> {
        parse(text, "t.json").unwrap().rows
    }

    #[test]
    fn identical_rows_have_no_differences_and_a_nudge_is_caught() {
        let a = &rows(&report_json(&[("ring", 4, 4096, 1e-5, 24)]))[0];
        assert!(differences(a, a, 1e-9).is_empty());
        let b = &rows(&report_json(&[("ring", 4, 4096, 1e-5 * (1.0 + 1e-6), 24)]))[0];
        let d = differences(a, b, 1e-9);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d.iter().all(|m| m.beyond && (m.rel.unwrap() - 1e-6).abs() < 1e-9), "{d:?}");
        // Within a looser tolerance it still shows, but does not fail.
        assert!(differences(a, b, 1e-5).iter().all(|m| !m.beyond));
    }

    #[test]
    fn duplicates_pair_by_occurrence() {
        let r = rows(&report_json(&[("ring", 4, 1, 1.0, 1), ("ring", 4, 1, 2.0, 1), ("star", 4, 1, 1.0, 1)]));
        assert_eq!(r.iter().map(|r| r.key.occurrence).collect::<Vec<_>>(), vec![0, 1, 0]);
        assert_eq!(r[1].key.to_string(), "allreduce ring P=4 S=1 #2");
    }

    #[test]
    fn bad_baselines_say_what_is_wrong() {
        assert!(parse("{", "b.json").unwrap_err().starts_with("--baseline b.json:1:1: not JSON"));
        assert!(parse("{\"x\": 1}", "b.json").unwrap_err().contains("no \"results\" list"));
        let e = parse("{\"results\": [{\"algorithm\": \"ring\", \"ranks\": 4}]}", "b.json").unwrap_err();
        assert!(e.contains("results[0]: no \"bytes\""), "{e}");
        let e = parse("{\"results\": [{\"algorithm\": \"ring\", \"ranks\": -4, \"bytes\": 1}]}", "b.json").unwrap_err();
        assert!(e.contains("\"ranks\" is -4, not a whole number"), "{e}");
        assert!(check_tolerance(-1.0).is_err() && check_tolerance(f64::NAN).is_err() && check_tolerance(0.0).is_ok());
    }

    #[test]
    fn xml_escapes_markup() {
        assert_eq!(xml_escape("a<b & \"c\"\n"), "a&lt;b &amp; &quot;c&quot;&#10;");
    }
}
