//! OSU micro-benchmarks' `osu_allreduce` output:
//!
//! ```text
//! # OSU MPI Allreduce Latency Test v7.3
//! # Datatype: MPI_FLOAT.
//! # Size       Avg Latency(us)
//! 4                       1.85
//! ```
//!
//! (with `-f`, also min, max latency and iterations). The log does not say how many
//! ranks ran, so `--ranks` gives it. Sizes are the message size per rank in bytes; the
//! average latency is the time.

use std::collections::BTreeMap;

use super::log::{Bench, LogError, Run, Sample};
use super::nccl_tests::strip_prefix;
use crate::collective::Collective;

/// Whether `text` looks like OSU output (its title line, a launcher's rank prefix
/// such as `[1,0]<stdout>:` aside).
pub fn is_osu(text: &str) -> bool {
    text.lines().take(50).any(|l| is_title(strip_prefix(l)) || l.contains("OSU MPI-"))
}

fn is_title(line: &str) -> bool {
    line.trim_start().strip_prefix('#').is_some_and(|c| c.trim_start().starts_with("OSU MPI"))
}

/// Read an `osu_allreduce` log of `ranks` ranks (`None` when the user did not say).
///
/// A file of several runs (each from its `# OSU MPI ... Test` title) gives a run per
/// data type: runs of one type in a row are read as one, their rows repeated
/// measurements, as nccl-tests' are; a run of another type is a run of its own, so each
/// row is checked against its own `# Datatype` line.
pub fn parse(text: &str, file: &str, ranks: Option<usize>) -> Result<Vec<Run>, LogError> {
    let lines: Vec<&str> = text.lines().collect();
    // A title starts a run once rows have been read since the last start: lines before
    // the first title (a launcher's banner) and a title printed twice stay in one run.
    let mut starts = vec![0];
    let mut rows = false;
    for (i, l) in lines.iter().enumerate() {
        let l = strip_prefix(l).trim();
        if is_title(l) && rows {
            starts.push(i);
            rows = false;
        } else if l.split_whitespace().next().is_some_and(|w| w.parse::<u64>().is_ok()) {
            rows = true;
        }
    }
    let mut runs: Vec<Run> = Vec::new();
    for (k, &from) in starts.iter().enumerate() {
        let to = starts.get(k + 1).copied().unwrap_or(lines.len());
        let run = parse_run(&lines[from..to], from, file, ranks)?;
        match runs.last_mut() {
            Some(last) if last.dtype == run.dtype => last.samples.extend(run.samples),
            _ => runs.push(run),
        }
    }
    Ok(runs)
}

/// Read one run: `lines` from the file's line `offset + 1` on.
fn parse_run(lines: &[&str], offset: usize, file: &str, ranks: Option<usize>) -> Result<Run, LogError> {
    let mut samples = Vec::new();
    let mut time_col: Option<usize> = None;
    // With `-f`: the columns of the minimum, the maximum and the iterations.
    let (mut min_col, mut max_col, mut iter_col): (Option<usize>, Option<usize>, Option<usize>) = (None, None, None);
    let mut header_line = 0;
    let mut title: Option<(usize, String)> = None;
    let mut dtype = None;
    for (i, raw) in lines.iter().enumerate() {
        let n = offset + i + 1;
        let line = strip_prefix(raw).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            let c = c.trim();
            if c.starts_with("OSU MPI") {
                title = Some((n, c.to_string()));
            } else if let Some(d) = c.strip_prefix("Datatype:") {
                dtype = Some(d.trim().trim_end_matches('.').to_string());
            } else if c.starts_with("Size") {
                // `Size  Avg Latency(us) [Min Latency(us) Max Latency(us) Iterations]`.
                // Columns are two or more spaces apart, or a tab (a log passed through a
                // spreadsheet); the rows are read by any whitespace.
                let cols: Vec<&str> =
                    c.split('\t').flat_map(|p| p.split("  ")).map(str::trim).filter(|s| !s.is_empty()).collect();
                time_col = cols.iter().position(|s| s.starts_with("Avg Latency"));
                min_col = cols.iter().position(|s| s.starts_with("Min Latency"));
                max_col = cols.iter().position(|s| s.starts_with("Max Latency"));
                iter_col = cols.iter().position(|s| s.starts_with("Iterations"));
                if time_col.is_none() {
                    return Err(LogError::at(file, n, "a Size header without an `Avg Latency(us)` column"));
                }
                header_line = n;
            }
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let Ok(bytes) = f[0].parse::<u64>() else {
            // A number that is not a size (`-8`, past 2^64) is a broken row, not noise.
            let digits = f[0].strip_prefix(['-', '+']).unwrap_or(f[0]);
            if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
                return Err(LogError::at(
                    file,
                    n,
                    format!("the size '{}' is not a whole number of bytes from 0 to {}", f[0], u64::MAX),
                ));
            }
            // Launcher and MPI noise.
            continue;
        };
        let Some(tc) = time_col else {
            return Err(LogError::at(file, n, "a data row before the `# Size  Avg Latency(us)` header"));
        };
        let Some(t) = f.get(tc).and_then(|t| t.parse::<f64>().ok()).filter(|t| t.is_finite() && *t >= 1e-3) else {
            // OSU prints two decimals: below a thousandth of a microsecond is not a time
            // it wrote, and every relative error against it would be infinite.
            return Err(LogError::at(
                file,
                n,
                format!(
                    "expected a positive average latency of at least 0.001 us in field {} (the header at line {header_line})",
                    tc + 1
                ),
            ));
        };
        // Only the average is used, but a row whose other columns cannot be was read as
        // a measurement without a word: OSU wrote neither.
        if let Some(k) = iter_col
            && let Some(v) = f.get(k)
            && v.parse::<u64>().map_or(true, |i| i == 0)
        {
            return Err(LogError::at(
                file,
                n,
                format!(
                    "the iterations '{v}' in field {} are not a whole number of at least 1 (the header at line {header_line})",
                    k + 1
                ),
            ));
        }
        let latency = |k: Option<usize>| k.and_then(|k| f.get(k)?.parse::<f64>().ok());
        if let (Some(lo), Some(hi)) = (latency(min_col), latency(max_col))
            && lo > hi
        {
            return Err(LogError::at(
                file,
                n,
                format!(
                    "the minimum latency {lo} us is above the maximum {hi} us; OSU prints min <= avg <= max (the header \
                     at line {header_line})"
                ),
            ));
        }
        // The average lies between the two, as it did before OSU rounded all three to the
        // same decimals: a row with it outside was read as a measurement without a word.
        let below = latency(min_col).filter(|&lo| t < lo).map(|lo| ("below the row's minimum", lo));
        if let Some((side, v)) = below.or_else(|| latency(max_col).filter(|&hi| t > hi).map(|hi| ("above the row's maximum", hi)))
        {
            return Err(LogError::at(
                file,
                n,
                format!(
                    "the average latency {t} us is {side} {v} us; OSU prints min <= avg <= max (the header at line \
                     {header_line})"
                ),
            ));
        }
        if bytes > 0 {
            samples.push(Sample { bytes, time_s: t * 1e-6, in_place_s: None, wrong: None, line: n });
        }
    }
    let Some((tline, title)) = title else {
        return Err(LogError::at(file, 0, "no `# OSU MPI ... Test` title line: not OSU micro-benchmark output"));
    };
    if !title.contains("Allreduce") {
        return Err(LogError::at(file, tline, format!("'{title}': calibrate reads osu_allreduce only")));
    }
    if samples.is_empty() {
        // A run after others (a benchmark cut off after its header) has a place: the
        // file as a whole does have rows.
        if offset > 0 {
            return Err(LogError::at(
                file,
                tline,
                "this run has no data rows (lines of `SIZE  AVG_LATENCY_US`) before the file ends, where the runs \
                 above have some; remove it, or give the rows it lost",
            ));
        }
        return Err(LogError::at(file, 0, "no data rows (lines of `SIZE  AVG_LATENCY_US`)"));
    }
    let Some(ranks) = ranks else {
        return Err(LogError::at(file, 0, "an OSU log does not say how many ranks ran it: give --ranks N"));
    };
    Ok(Run {
        file: file.to_string(),
        line: tline,
        bench: Bench::Osu,
        test: Some("osu_allreduce".to_string()),
        collective: Collective::Allreduce,
        ranks: Some(ranks),
        nodes: None,
        gpus_per_node: None,
        devices: Vec::new(),
        device_ids: Vec::new(),
        device_buses: Vec::new(),
        gpus_per_thread: None,
        nccl_version: None,
        env: BTreeMap::new(),
        env_given: Default::default(),
        dtype: dtype.map(|d| match d.as_str() {
            "MPI_CHAR" => "int8".to_string(),
            "MPI_INT" => "int32".to_string(),
            "MPI_DOUBLE" => "double".to_string(),
            _ => "float".to_string(),
        }),
        samples,
    })
}
