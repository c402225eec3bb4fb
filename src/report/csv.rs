//! `--format csv`: one header row, then one row per result (the columns of docs/report.md).
//!
//! Written by hand after RFC 4180: a field holding a comma, a double quote or a line
//! break is quoted, with its quotes doubled. Rows end in `\n`.

use std::fmt::Write as _;

use super::{CORE_FIELDS, Exporter, PointResult, Report};

/// One row per (algorithm, ranks, bytes).
#[derive(Clone, Copy, Debug, Default)]
pub struct Csv;

/// The columns, in order: the fields every result has, then the others.
pub const COLUMNS: [&str; 40] = columns();

/// The others, after the core fields.
const EXTRA: [&str; 20] = [
    "closed_form_tolerance",
    "not_applicable",
    "failures",
    "no_closed_form",
    "ideal_time_s",
    "links_shared",
    "best_algorithm",
    "runner_up",
    "margin",
    "best_time_s",
    "selected",
    "library_choice",
    "vs_best",
    "predicted_s",
    "max_rel_error",
    "max_ulp_error",
    "reduction_depth",
    "data_mode",
    "protocol",
    "launch_s",
];

const fn columns() -> [&'static str; 40] {
    let mut out = [""; 40];
    let mut i = 0;
    while i < CORE_FIELDS.len() {
        out[i] = CORE_FIELDS[i];
        i += 1;
    }
    while i < out.len() {
        out[i] = EXTRA[i - CORE_FIELDS.len()];
        i += 1;
    }
    out
}

impl Exporter for Csv {
    fn render(&self, report: &Report) -> String {
        let mut out = String::new();
        out.push_str(&COLUMNS.join(","));
        out.push('\n');
        for r in &report.results {
            out.push_str(&row(r).join(","));
            out.push('\n');
        }
        out
    }
}

/// The cells of one result, in [`COLUMNS`] order, already quoted where needed.
fn row(r: &PointResult) -> [String; 40] {
    // An n/a row has no time: empty, not 0 (which would sort as the fastest).
    let na = r.not_applicable.is_some();
    // A run that did not finish has no time either (NaN): empty, as JSON writes null.
    let time = |x: f64| if na || x.is_nan() { String::new() } else { float(x) };
    [
        r.collective.name().to_string(),
        text(&r.algorithm),
        r.ranks.to_string(),
        r.bytes.to_string(),
        time(r.time_s),
        opt_float(r.closed_form_s),
        opt_float(r.closed_form_rel_err),
        time(r.lower_bound_s),
        opt_float(r.efficiency),
        opt_float(r.algbw_bps),
        opt_float(r.busbw_bps),
        r.messages.to_string(),
        r.bytes_sent_max.to_string(),
        r.peak_buffer_bytes.to_string(),
        opt_float(r.max_abs_error),
        opt_float(r.error_bound),
        opt_bool(r.verified),
        opt_bool(r.ranks_bitwise_equal),
        r.events.to_string(),
        float(r.wall_time_s),
        opt_float(r.closed_form_tolerance),
        r.not_applicable.as_deref().map(text).unwrap_or_default(),
        text(&r.failures.join("; ")),
        r.no_closed_form.as_deref().map(text).unwrap_or_default(),
        opt_float(r.ideal_time_s),
        opt_bool(r.links_shared),
        r.best_algorithm.as_deref().map(text).unwrap_or_default(),
        r.runner_up.as_deref().map(text).unwrap_or_default(),
        opt_float(r.margin),
        opt_float(r.best_time_s),
        r.selection.as_ref().map(|s| text(&s.selected)).unwrap_or_default(),
        r.selection.as_ref().and_then(|s| s.library_choice.as_deref()).map(text).unwrap_or_default(),
        opt_float(r.selection.as_ref().and_then(|s| s.vs_best)),
        opt_float(r.selection.as_ref().and_then(|s| s.predicted_s)),
        opt_float(r.max_rel_error),
        opt_float(r.max_ulp_error),
        r.reduction_depth.map(|d| d.to_string()).unwrap_or_default(),
        r.data_mode.as_deref().map(text).unwrap_or_default(),
        r.protocol.as_deref().map(text).unwrap_or_default(),
        opt_float(r.launch_s),
    ]
}

/// Shortest text that parses back to the same `f64`. `{:?}` rather than `{}`: both
/// round-trip, but `{}` never uses an exponent (`1e-300` would be 300 digits long).
/// Non-finite values are `NaN`, `inf`, `-inf`, which spreadsheets and pandas read.
fn float(x: f64) -> String {
    let mut s = String::new();
    let _ = write!(s, "{x:?}");
    s
}

fn opt_float(x: Option<f64>) -> String {
    x.map(float).unwrap_or_default()
}

fn opt_bool(b: Option<bool>) -> String {
    b.map(|b| b.to_string()).unwrap_or_default()
}

/// A text field, quoted if it holds a comma, a double quote or a line break; control
/// characters other than line breaks are escaped (`\u{1b}`), so that a name cannot
/// drive the terminal the CSV is printed on.
fn text(s: &str) -> String {
    let s = crate::units::escape_controls(s);
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.into_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    /// A minimal RFC 4180 reader, to check what we write parses back.
    fn parse(text: &str) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        let mut row = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if quoted {
                match c {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    '"' => quoted = false,
                    c => field.push(c),
                }
            } else {
                match c {
                    '"' => quoted = true,
                    ',' => row.push(std::mem::take(&mut field)),
                    '\n' => {
                        row.push(std::mem::take(&mut field));
                        rows.push(std::mem::take(&mut row));
                    }
                    c => field.push(c),
                }
            }
        }
        assert!(field.is_empty() && row.is_empty(), "missing final newline");
        rows
    }

    #[test]
    fn header_is_spec_columns_then_ours() {
        let text = Csv.render(&fixtures::report());
        let header = text.lines().next().unwrap();
        assert_eq!(
            header,
            "collective,algorithm,ranks,bytes,time_s,closed_form_s,closed_form_rel_err,lower_bound_s,\
             efficiency,algbw_Bps,busbw_Bps,messages,bytes_sent_max,peak_buffer_bytes,\
             max_abs_error,error_bound,verified,ranks_bitwise_equal,events,wall_time_s,\
             closed_form_tolerance,not_applicable,failures,no_closed_form,ideal_time_s,links_shared,\
             best_algorithm,runner_up,margin,best_time_s,selected,library_choice,vs_best,predicted_s,\
             max_rel_error,max_ulp_error,reduction_depth,data_mode,protocol,launch_s"
        );
    }

    #[test]
    fn header_matches_json_field_names() {
        // Every CSV column is a field of the JSON result, or of its selection, spelled the same.
        // With the fields the JSON leaves out when empty set.
        let mut point = fixtures::point("ring", 8, 1.0);
        point.protocol = Some("ll".into());
        point.launch_s = Some(4e-6);
        let json = serde_json::to_value(point).unwrap();
        let selection = serde_json::to_value(crate::results::Selection::default()).unwrap();
        for c in COLUMNS {
            assert!(json.get(c).is_some() || selection.get(c).is_some(), "{c} is not a JSON field");
        }
    }

    #[test]
    fn one_row_per_result_with_every_column() {
        let report = fixtures::report();
        let rows = parse(&Csv.render(&report));
        assert_eq!(rows.len(), 1 + report.results.len());
        for r in &rows {
            assert_eq!(r.len(), COLUMNS.len(), "{r:?}");
        }
        // The n/a row (mesh_2d) has no time.
        let na = rows.iter().find(|r| r[1] == "mesh_2d").unwrap();
        assert_eq!((na[4].as_str(), na[7].as_str()), ("", ""));
        let ring = &rows[1];
        assert_eq!(ring[0], "allreduce");
        assert_eq!(ring[1], "ring");
        assert_eq!(ring[2], "4");
        assert_eq!(ring[3], "4096");
        assert_eq!(ring[4].parse::<f64>().unwrap(), 6.6e-6);
        assert_eq!(ring[16], "true");
        assert_eq!(ring[22], "");
    }

    #[test]
    fn none_is_an_empty_cell_and_reasons_are_quoted() {
        let rows = parse(&Csv.render(&fixtures::report()));
        let na = &rows[3];
        assert_eq!(na[1], "mesh_2d");
        assert_eq!(na[5], ""); // closed_form_s
        assert_eq!(na[16], ""); // verified
        assert_eq!(na[21], "needs 2 NICs per rank, the topology has 1");
        let line = Csv.render(&fixtures::report()).lines().nth(3).unwrap().to_string();
        assert!(line.ends_with(",\"needs 2 NICs per rank, the topology has 1\",,,,,,,,,,,,,,,,,,"), "{line}");
    }

    #[test]
    fn floats_round_trip() {
        for x in [0.1 + 0.2, 1e-300, 6.02e23, f64::MIN_POSITIVE, f64::MAX, -0.0, 1.0] {
            let s = float(x);
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{s}");
            assert!(s.len() < 30, "{s}");
        }
        assert_eq!(float(f64::NAN), "NaN");
        assert_eq!(float(f64::INFINITY), "inf");
    }

    #[test]
    fn quoting_follows_rfc_4180() {
        assert_eq!(text("ring"), "ring");
        assert_eq!(text("ring_segmented(segment=256, k=2)"), "\"ring_segmented(segment=256, k=2)\"");
        assert_eq!(text("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(text("a\nb"), "\"a\nb\"");

        let mut report = fixtures::report();
        report.results[0].algorithm = "odd, \"name\"".to_string();
        report.results[0].failures =
            vec!["closed form missed: 1.2 vs 1.0".to_string(), "rank 3 differs\nat element 7".to_string()];
        let rows = parse(&Csv.render(&report));
        assert_eq!(rows.len(), 6);
        assert_eq!(rows[1][1], "odd, \"name\"");
        assert_eq!(rows[1][22], "closed form missed: 1.2 vs 1.0; rank 3 differs\nat element 7");
    }

    #[test]
    fn empty_report_is_just_the_header() {
        let mut report = fixtures::report();
        report.results.clear();
        assert_eq!(Csv.render(&report), format!("{}\n", COLUMNS.join(",")));
    }
}
