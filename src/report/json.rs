//! `--format json`: the whole [`Report`] as one pretty-printed object (docs/report.md).

use serde::Serialize;

use super::{Exporter, Report};

/// One JSON object: `scenario` (units resolved) and `results`.
///
/// Non-finite floats (a NaN or an infinity from a degenerate point) come out as `null`,
/// which is how `serde_json` writes them, so the output always parses.
#[derive(Clone, Copy, Debug, Default)]
pub struct Json;

impl Exporter for Json {
    fn render(&self, report: &Report) -> String {
        let doc = Document {
            scenario: &report.scenario,
            results: Results(&report.results),
            shard: &report.shard,
            interrupted: report.interrupted,
        };
        // Counted first, then written into a buffer of that size: grown by doubling, the
        // text took up to twice its length, most of what a large report held at its end.
        let mut count = crate::units::ByteCount(0);
        let written = serde_json::to_writer_pretty(&mut count, &doc).and_then(|()| {
            let mut text = Vec::with_capacity(count.0 + 1);
            serde_json::to_writer_pretty(&mut text, &doc).map(|()| text)
        });
        match written {
            Ok(mut text) => {
                text.push(b'\n');
                // serde_json writes UTF-8 only.
                crate::units::escape_json_unseen(String::from_utf8(text).unwrap_or_default())
            }
            // Unreachable for these types (every map key is a string); still valid JSON.
            Err(e) => {
                format!("{{\"error\": {}}}\n", serde_json::Value::String(format!("cannot serialise the report: {e}")))
            }
        }
    }
}

/// The report as its JSON is written: [`Report`]'s fields, each n/a row's times blanked
/// as it is written ([`blank_na_times`]) rather than in a copy of the whole report.
#[derive(Serialize)]
struct Document<'a> {
    scenario: &'a crate::scenario::Scenario,
    results: Results<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: &'a Option<crate::results::Shard>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    interrupted: bool,
}

/// The results, an n/a row written from a blanked copy of itself.
struct Results<'a>(&'a [crate::results::PointResult]);

impl Serialize for Results<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for r in self.0 {
            if r.not_applicable.is_some() {
                let mut blank = r.clone();
                blank_na_times(&mut blank);
                seq.serialize_element(&blank)?;
            } else {
                seq.serialize_element(r)?;
            }
        }
        seq.end()
    }
}

/// An n/a row's times as the JSON report writes them: none (`null`), not 0. `--baseline`
/// compares a run with a saved report through this, so that a run matches its own.
pub(crate) fn blank_na_times(res: &mut crate::results::PointResult) {
    if res.not_applicable.is_some() {
        res.time_s = f64::NAN;
        res.lower_bound_s = f64::NAN;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::CORE_FIELDS;
    use crate::report::fixtures;
    use serde_json::Value;

    fn parse(report: &Report) -> Value {
        let text = Json.render(report);
        assert!(text.ends_with("}\n"), "{text}");
        serde_json::from_str(&text).expect("valid JSON")
    }

    #[test]
    fn has_scenario_and_every_result_with_spec_field_names() {
        let v = parse(&fixtures::report());
        assert_eq!(v["scenario"]["name"], "ring vs butterfly");
        assert_eq!(v["scenario"]["topology"]["kind"], "fully_connected");
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 5);
        let r = &results[0];
        for field in CORE_FIELDS {
            assert!(r.get(field).is_some(), "missing {field}");
        }
        assert_eq!(r["algorithm"], "ring");
        assert_eq!(r["bytes"], 4096);
        assert_eq!(r["time_s"].as_f64(), Some(6.6e-6));
        assert_eq!(r["verified"], true);
    }

    #[test]
    fn none_is_null() {
        let v = parse(&fixtures::report());
        let na = &v["results"][2];
        assert_eq!(na["algorithm"], "mesh_2d");
        assert!(na["closed_form_s"].is_null());
        assert!(na["verified"].is_null());
        assert_eq!(na["not_applicable"], "needs 2 NICs per rank, the topology has 1");
        // No time: a consumer sorting by time must not take it for the fastest.
        assert!(na["time_s"].is_null() && na["lower_bound_s"].is_null(), "{na}");
        assert!(v["results"][0]["time_s"].as_f64().is_some());
    }

    #[test]
    fn non_finite_floats_become_null_and_output_still_parses() {
        let mut report = fixtures::report();
        let r = &mut report.results[0];
        r.time_s = f64::NAN;
        r.efficiency = Some(f64::INFINITY);
        r.algbw_bps = Some(f64::NEG_INFINITY);
        let v = parse(&report);
        assert!(v["results"][0]["time_s"].is_null());
        assert!(v["results"][0]["efficiency"].is_null());
        assert!(v["results"][0]["algbw_Bps"].is_null());
    }

    #[test]
    fn floats_round_trip() {
        let mut report = fixtures::report();
        let x = 0.1 + 0.2; // 0.30000000000000004
        report.results[0].time_s = x;
        let v = parse(&report);
        assert_eq!(v["results"][0]["time_s"].as_f64(), Some(x));
    }

    /// The document is the report's own serialisation, every field and its order, with
    /// only the n/a rows' times blanked; a shard and an interrupted run say so; unseen
    /// characters are escaped.
    #[test]
    fn the_document_is_the_reports_own_with_na_times_blanked() {
        let mut report = fixtures::report();
        report.shard = Some(crate::results::Shard { index: 1, count: 3 });
        report.interrupted = true;
        report.scenario.name = "ring \u{202e}gnir".to_string();
        let mut blanked = report.clone();
        blanked.results.iter_mut().for_each(blank_na_times);
        let mut want = serde_json::to_string_pretty(&blanked).unwrap();
        want.push('\n');
        let want = crate::units::escape_json_unseen(want);
        assert_eq!(Json.render(&report), want);
        assert!(want.contains("\"shard\"") && want.contains("\"interrupted\": true") && want.contains("\\u202e"));
        report.shard = None;
        report.interrupted = false;
        let text = Json.render(&report);
        assert!(!text.contains("\"shard\"") && !text.contains("\"interrupted\""));
    }
}
