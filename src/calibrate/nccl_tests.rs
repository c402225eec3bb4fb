//! nccl-tests output (`all_reduce_perf`, `reduce_scatter_perf`, `all_gather_perf`,
//! `broadcast_perf`, `reduce_perf`), as the benchmark prints it, noise included.
//!
//! One file may hold several runs (a job that ran several tests, one after the other):
//! a run starts at `# Collective test starting`, `# nThread` or `# Using devices` once
//! the previous one has data rows. What is read:
//! - the device list (`#  Rank  3 Group  0 Pid ... on HOST device 3 [...] NAME`): P is
//!   the number of ranks, the nodes the distinct hosts, hence GPUs per node;
//! - the NCCL version (`nccl-library=22602` of newer nccl-tests, or NCCL's own
//!   `NCCL version 2.8.4+cuda11.2` INFO line);
//! - NCCL environment settings anywhere outside the data rows (`NCCL_ALGO=Ring` on a
//!   command line or in an environment dump, NCCL's `NCCL_ALGO set by environment to
//!   Ring` INFO line);
//! - the column header (`size count type redop [root] time algbw busbw #wrong|error
//!   time ...`): the first `time` is out-of-place, the second in-place;
//! - the data rows. Rows of 0 bytes (what all_gather prints below P elements) measure
//!   nothing and are dropped.
//!
//! Skipped: UCX and other warnings, NCCL INFO lines, markdown fences, a rank prefix
//! such as srun's `0: `. A row that starts like data (two whole numbers) but does not
//! fit the header is an error naming its line.

use std::collections::BTreeMap;

use super::log::{Bench, LogError, Run, Sample};
use crate::collective::Collective;

/// The collective an nccl-tests binary measures.
pub fn collective_of_test(name: &str) -> Option<Collective> {
    Some(match name {
        "all_reduce_perf" => Collective::Allreduce,
        "reduce_scatter_perf" => Collective::ReduceScatter,
        "all_gather_perf" => Collective::Allgather,
        "broadcast_perf" => Collective::Broadcast,
        "reduce_perf" => Collective::Reduce,
        _ => return None,
    })
}

/// The nccl-tests binaries we read, for messages.
pub const TESTS: &str = "all_reduce_perf, reduce_scatter_perf, all_gather_perf, broadcast_perf, reduce_perf";

/// The columns of a data row, by position.
#[derive(Clone, Debug, PartialEq)]
struct Columns {
    count: usize,
    size: usize,
    elems: usize,
    dtype: usize,
    redop: usize,
    root: Option<usize>,
    time: usize,
    in_place: Option<usize>,
    wrong: Option<usize>,
    /// The `#wrong` columns (out-of-place, in-place): counts of wrong elements. Old
    /// nccl-tests' `error` column is the largest error's size (`2e-07`), not a count.
    wrong_counts: Vec<usize>,
    line: usize,
}

impl Columns {
    /// The columns named by a header row's tokens (after its `#`).
    fn from_header(tokens: &[&str], line: usize) -> Option<Columns> {
        let find = |name: &str| tokens.iter().position(|t| *t == name);
        let size = find("size")?;
        // The columns headed by one of `names`, in order.
        let all = |names: &[&str]| -> Vec<usize> {
            tokens.iter().enumerate().filter(|(_, t)| names.contains(t)).map(|(i, _)| i).collect()
        };
        let times = all(&["time"]);
        let wrong = all(&["#wrong", "error"]);
        Some(Columns {
            count: tokens.len(),
            size,
            elems: find("count")?,
            dtype: find("type")?,
            redop: find("redop")?,
            root: find("root"),
            time: *times.first()?,
            in_place: times.get(1).copied(),
            wrong: wrong.first().copied(),
            wrong_counts: all(&["#wrong"]),
            line,
        })
    }

    /// The layout of a data row of `n` fields when the log has no column header: the two
    /// layouts nccl-tests has printed (before and after its `root` column).
    fn guess(n: usize) -> Option<Columns> {
        let root = match n {
            12 => false,
            13 => true,
            _ => return None,
        };
        let t = if root { 5 } else { 4 };
        Some(Columns {
            count: n,
            size: 0,
            elems: 1,
            dtype: 2,
            redop: 3,
            root: root.then_some(4),
            time: t,
            in_place: Some(t + 4),
            wrong: Some(t + 3),
            // Without a header, `#wrong` cannot be told from an `error` size.
            wrong_counts: Vec::new(),
            line: 0,
        })
    }
}

/// A run being read.
#[derive(Default)]
struct Partial {
    line: usize,
    test: Option<String>,
    hosts: Vec<String>,
    /// The ranks the device list puts on each of `hosts`.
    host_ranks: Vec<usize>,
    ranks: usize,
    devices: Vec<String>,
    /// The rank numbers of the device list, each with its line.
    rank_lines: Vec<(usize, usize)>,
    /// Each listed rank's device number, `None` where a line did not give one.
    device_ids: Vec<Option<usize>>,
    /// Each listed rank's PCI bus, `None` where a line did not give one.
    device_buses: Vec<Option<String>>,
    columns: Option<Columns>,
    samples: Vec<Sample>,
    /// (redop, root, elems, bytes) of the first row: the collective when no test name says it.
    first: Option<(String, i64, u64, u64)>,
    dtype: Option<String>,
    /// Whether anything of a run (header or rows) was seen.
    started: bool,
    /// `nGpus` of the `# nThread T nGpus G ...` line: the GPUs each thread drives.
    gpus_per_thread: Option<usize>,
    /// `maxBytes` of the `# nThread ...` line and that line: nccl-tests times no size
    /// above it.
    max_bytes: Option<(u64, usize)>,
}

/// The element size of an nccl-tests type name.
fn type_bytes(t: &str) -> Option<u64> {
    Some(match t {
        "int8" | "uint8" | "char" | "f8e4m3" | "f8e5m2" | "fp8_e4m3" | "fp8_e5m2" => 1,
        "half" | "bfloat16" | "float16" | "bf16" => 2,
        "int32" | "uint32" | "int" | "float" | "float32" => 4,
        "int64" | "uint64" | "double" | "float64" => 8,
        _ => return None,
    })
}

/// Strip a launcher's rank prefix (`0: `, `[1,0]<stdout>:`) and trailing blanks.
pub(super) fn strip_prefix(line: &str) -> &str {
    let t = line.trim_end();
    let s = t.trim_start();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && s[digits..].starts_with(':') {
        return &s[digits + 1..];
    }
    if s.starts_with('[')
        && let Some(end) = s.find(">:")
        && s[..end].contains("<std")
    {
        return &s[end + 2..];
    }
    t
}

/// NCCL's version from nccl-tests' `nccl-library=22602` (major*10000 + minor*100 +
/// patch since 2.9; major*1000 + minor*100 + patch before).
fn version_of_code(code: u64) -> String {
    if code >= 10000 {
        format!("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100)
    }
}

/// The release `MAJOR.MINOR.PATCH` that `word` (`2.8.4+cuda11.2`, `2.18.3`) names, or
/// `None` when it names none: not three numbers, or a major version of 0, which NCCL never
/// had (its model would be picked by sorting an impossible version).
fn release_of(word: &str) -> Option<String> {
    let v = word.split(['+', '-']).next()?;
    let parts: Vec<&str> = v.split('.').collect();
    let numbers: Vec<u32> = parts.iter().map(|p| p.parse().ok()).collect::<Option<_>>()?;
    (numbers.len() == 3 && numbers[0] >= 1).then(|| v.to_string())
}

/// Every `NCCL_X=value` on a line, and NCCL's `NCCL_X set by environment to value`.
fn env_settings(line: &str, env: &mut BTreeMap<String, String>) {
    if let Some(i) = line.find(" set by environment to ") {
        let before = &line[..i];
        if let Some(name) = before.split_whitespace().last()
            && name.starts_with("NCCL_")
        {
            let value = line[i + " set by environment to ".len()..].trim().trim_end_matches('.');
            if !value.is_empty() {
                env.insert(name.to_string(), value.to_string());
            }
        }
    }
    for tok in line.split(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
        let tok = tok.trim_start_matches("-x").trim_start_matches("--env=");
        if let Some((name, value)) = tok.split_once('=')
            && name.starts_with("NCCL_")
            && name.len() > 5
            && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
            && !value.is_empty()
            && !value.starts_with('$')
        {
            env.insert(name.to_string(), value.to_string());
        }
    }
}

/// Read every run of an nccl-tests log. `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Vec<Run>, LogError> {
    let mut runs = Vec::new();
    let mut cur = Partial::default();
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    // The line each setting of `env` was printed at, for the warning of those not modelled.
    let mut env_lines: BTreeMap<String, usize> = BTreeMap::new();
    // Settings printed after the current run's rows: the next run's (a job's command line
    // `NCCL_PROTO=Simple ./all_reduce_perf` comes before the `# nThread` line that ends the
    // run above). They were applied to the run above, which was read as run with them.
    let mut next: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let mut version: Option<String> = None;
    let mut pending_test: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = strip_prefix(raw);
        let body = line.trim_start();
        if body.is_empty() {
            continue;
        }
        // NCCL's version and environment may be on any line but a data row. A row of
        // digits too large for a count is a data row too, refused by `read_row`, not skipped,
        // and so is one of signed numbers (`-8 -2`).
        let data_like = {
            let mut t = body.split_whitespace();
            let whole = |w: &str| {
                let d = w.strip_prefix(['-', '+']).unwrap_or(w);
                !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())
            };
            matches!((t.next(), t.next()), (Some(a), Some(b)) if whole(a) && whole(b))
        };
        if data_like {
            let row = read_row(body, n, file, &mut cur)?;
            if let Some(s) = row {
                cur.samples.push(s);
            }
            cur.started = true;
            continue;
        }
        let mut seen = BTreeMap::new();
        env_settings(body, &mut seen);
        for (k, v) in seen {
            if cur.samples.is_empty() {
                env_lines.insert(k.clone(), n);
                env.insert(k, v);
            } else {
                next.insert(k, (v, n));
            }
        }
        if let Some(j) = body.find("NCCL version ") {
            let word = body[j + 13..].split_whitespace().next().unwrap_or_default();
            version = Some(release_of(word).ok_or_else(|| {
                LogError::at(
                    file,
                    n,
                    format!(
                        "the NCCL version '{word}' is not a release: NCCL prints MAJOR.MINOR.PATCH from 1.0.0 on \
                         (`NCCL version 2.18.3+cuda12.2`)"
                    ),
                )
            })?);
        }
        if let Some(j) = body.find("nccl-library=") {
            let code: String = body[j + 13..].chars().take_while(|c| !c.is_whitespace()).collect();
            version =
                Some(code.parse::<u64>().ok().map(version_of_code).and_then(|v| release_of(&v)).ok_or_else(|| {
                    LogError::at(
                        file,
                        n,
                        format!(
                            "nccl-library={code} is not an NCCL release: nccl-tests prints the version's code \
                         (22602 for 2.26.2), from 1.0.0 on"
                        ),
                    )
                })?);
        }
        // A test of a collective calibrate does not read (`alltoall_perf`) was read as the
        // one its columns suggest.
        if let Some(t) =
            body.split(|c: char| c.is_whitespace() || c == '/' || c == ',').map(|t| t.trim_end_matches(':')).find(|t| {
                t.len() > 5
                    && t.ends_with("_perf")
                    && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    && collective_of_test(t).is_none()
            })
        {
            return Err(LogError::at(file, n, format!("{t} is not a test calibrate reads; it reads {TESTS}")));
        }
        // The binary's name, wherever it shows (a command line, nccl-tests' own line).
        let test = body
            .split(|c: char| c.is_whitespace() || c == '/')
            .find(|t| collective_of_test(t.trim_end_matches(':')).is_some())
            .map(|t| t.trim_end_matches(':').to_string());
        let Some(comment) = body.strip_prefix('#') else {
            if let Some(t) = test {
                pending_test = Some(t);
            }
            continue;
        };
        let comment = comment.trim();
        let starts_run = comment.starts_with("Collective test starting")
            || comment.starts_with("nThread")
            || comment.starts_with("Using devices");
        if starts_run && !cur.samples.is_empty() {
            runs.push(finish(std::mem::take(&mut cur), file, &env, &env_lines, &version)?);
            for (k, (v, l)) in std::mem::take(&mut next) {
                env_lines.insert(k.clone(), l);
                env.insert(k, v);
            }
        }
        if comment.starts_with("Collective test concluded") {
            continue;
        }
        if let Some(t) = test {
            if cur.samples.is_empty() {
                cur.test = Some(t);
            } else {
                pending_test = Some(t);
            }
        }
        if starts_run || cur.line == 0 {
            if cur.line == 0 {
                cur.line = n;
            }
            if cur.test.is_none() {
                cur.test = pending_test.take();
            }
        }
        let tokens: Vec<&str> = comment.split_whitespace().collect();
        // The units line under the header (`(B) (elements) (us) (GB/s) ...`): the times are
        // read as microseconds, so a line giving them in another unit was read 1000 times off.
        if !tokens.is_empty()
            && tokens.iter().all(|t| t.starts_with('(') && t.ends_with(')'))
            && let Some(u) = tokens.iter().find(|t| {
                matches!(t.trim_matches(['(', ')']), "s" | "sec" | "ms" | "msec" | "ns" | "nsec" | "ps" | "min")
            })
        {
            return Err(LogError::at(
                file,
                n,
                format!(
                    "the units line gives times in {u}; calibrate reads nccl-tests' times as microseconds, `(us)` \
                     as nccl-tests prints them: convert the times, or give the log as nccl-tests wrote it"
                ),
            ));
        }
        if tokens.first() == Some(&"nThread") {
            // `nThread 1 nGpus 4 minBytes ...`: each thread drives nGpus GPUs. nccl-tests
            // prints each of these as a whole number, the first two from 1: a value that is
            // not (`nGpus 0`, `maxBytes x`) was read as absent, and the rows went unchecked.
            let value = |key: &str, least: u64| -> Result<Option<u64>, LogError> {
                let Some(k) = tokens.iter().position(|t| *t == key) else { return Ok(None) };
                let word = tokens.get(k + 1).copied().unwrap_or("");
                match word.parse::<u64>() {
                    Ok(v) if v >= least => Ok(Some(v)),
                    _ => Err(LogError::at(
                        file,
                        n,
                        format!(
                            "`{key} {word}`: nccl-tests prints {key} as a whole number from {least} to {}; \
                             was the log edited?",
                            u64::MAX
                        ),
                    )),
                }
            };
            value("nThread", 1)?;
            let g = value("nGpus", 1)?;
            value("minBytes", 0)?;
            let max = value("maxBytes", 0)?;
            cur.gpus_per_thread = g.and_then(|g| usize::try_from(g).ok());
            cur.max_bytes = max.map(|m| (m, n));
        }
        if tokens.first() == Some(&"Rank") && tokens.len() >= 2 && tokens[1].parse::<usize>().is_ok() {
            // `Rank  0 [Group 0] Pid 123 on HOST device 0 [bus] NAME`.
            let host = tokens.iter().position(|t| *t == "on").and_then(|k| tokens.get(k + 1));
            let Some(host) = host else {
                return Err(LogError::at(file, n, "a device line without its host (`on HOST`)"));
            };
            // A rank listed twice was counted twice: P one too many, a host's GPUs wrong.
            // (Several hosts may each have a device 0, but each rank number is one GPU.)
            let rank: usize = tokens[1].parse().unwrap_or_default();
            if let Some(&(_, first)) = cur.rank_lines.iter().find(|(r, _)| *r == rank) {
                return Err(LogError::at(
                    file,
                    n,
                    format!(
                        "rank {rank} is listed twice in the device list (first at line {first}); nccl-tests lists \
                         each rank once"
                    ),
                ));
            }
            cur.rank_lines.push((rank, n));
            cur.ranks += 1;
            let id = tokens.iter().position(|t| *t == "device").and_then(|k| tokens.get(k + 1)?.parse().ok());
            cur.device_ids.push(id);
            // The bracket after the device number: `[0000:4a:00]`.
            let bus = comment
                .find('[')
                .zip(comment.find(']'))
                .and_then(|(a, b)| (a < b).then(|| crate::topology::pci_bus_key(&comment[a + 1..b])).flatten());
            cur.device_buses.push(bus);
            match cur.hosts.iter().position(|h| h == host) {
                Some(k) => cur.host_ranks[k] += 1,
                None => {
                    cur.hosts.push((*host).to_string());
                    cur.host_ranks.push(1);
                }
            }
            if let Some(k) = comment.find(']') {
                let name = comment[k + 1..].trim().to_string();
                if !name.is_empty() && !cur.devices.contains(&name) {
                    cur.devices.push(name);
                }
            }
            cur.started = true;
            continue;
        }
        if tokens.first() == Some(&"size") {
            if !cur.samples.is_empty() {
                // A second table of the same run: its sizes stay within the run's maxBytes.
                let max_bytes = cur.max_bytes;
                runs.push(finish(std::mem::take(&mut cur), file, &env, &env_lines, &version)?);
                for (k, (v, l)) in std::mem::take(&mut next) {
                    env_lines.insert(k.clone(), l);
                    env.insert(k, v);
                }
                cur.max_bytes = max_bytes;
                cur.line = n;
                cur.test = pending_test.take();
            }
            cur.columns = Some(Columns::from_header(&tokens, n).ok_or_else(|| {
                LogError::at(
                    file,
                    n,
                    "a column header without size, count, type, redop and time columns; expected nccl-tests' \
                     `size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong`",
                )
            })?);
            cur.started = true;
        }
    }
    // Settings after the last run's rows (an epilogue's environment dump) can only be its own.
    for (k, (v, l)) in next {
        env_lines.insert(k.clone(), l);
        env.insert(k, v);
    }
    if !cur.samples.is_empty() {
        runs.push(finish(cur, file, &env, &env_lines, &version)?);
    } else if let Some(columns) = cur.columns.as_ref().filter(|_| runs.is_empty()) {
        return Err(LogError::at(
            file,
            columns.line,
            "a column header but no data rows below it; expected a row per size under it, as nccl-tests writes \
             (`size count type redop root time algbw busbw #wrong ...`)",
        ));
    }
    if runs.is_empty() {
        return Err(LogError::at(
            file,
            0,
            format!(
                "no nccl-tests data rows (lines of `size count type redop [root] time algbw busbw ...`); \
                 expected the output of {TESTS}"
            ),
        ));
    }
    Ok(runs)
}

/// Read one data row into a sample (`None` for a row of 0 bytes).
fn read_row(body: &str, n: usize, file: &str, cur: &mut Partial) -> Result<Option<Sample>, LogError> {
    let f: Vec<&str> = body.split_whitespace().collect();
    let cols = match &cur.columns {
        Some(c) => c.clone(),
        None => Columns::guess(f.len()).ok_or_else(|| {
            LogError::at(
                file,
                n,
                format!(
                    "a data row of {} fields and no column header above it; nccl-tests prints 12 (size count type \
                     redop time algbw busbw error time algbw busbw error) or 13 (with root)",
                    f.len()
                ),
            )
        })?,
    };
    if f.len() != cols.count {
        let whence = if cols.line > 0 { format!("the header at line {}", cols.line) } else { "the row layout".into() };
        return Err(LogError::at(file, n, format!("a data row of {} fields; {whence} has {}", f.len(), cols.count)));
    }
    let whole = |i: usize, what: &str| -> Result<u64, LogError> {
        f[i].parse().map_err(|_| {
            LogError::at(file, n, format!("the {what} '{}' is not a whole number from 0 to {}", f[i], u64::MAX))
        })
    };
    let bytes = whole(cols.size, "size in bytes")?;
    // A row past the run's maxBytes is one nccl-tests did not time in that run: an edited
    // log, or rows of another run pasted under this one's header.
    if let Some((max, at)) = cur.max_bytes.filter(|&(max, _)| bytes > max) {
        return Err(LogError::at(
            file,
            n,
            format!(
                "a row of {bytes} bytes is past the run's maxBytes {max} (line {at}); nccl-tests times sizes from \
                 minBytes to maxBytes only, so the log was edited or mixes runs: keep each run's rows under its own \
                 `# nThread ... maxBytes` line"
            ),
        ));
    }
    let elems = whole(cols.elems, "count of elements")?;
    let dtype = f[cols.dtype];
    let Some(esize) = type_bytes(dtype) else {
        return Err(LogError::at(
            file,
            n,
            format!("unknown element type '{dtype}'; expected float, half, bfloat16, double, int32, ..."),
        ));
    };
    if cur.dtype.is_none() {
        cur.dtype = Some(dtype.to_string());
    }
    let time = |k: usize, what: &str| -> Result<Option<f64>, LogError> {
        let t = f[k];
        if t == "N/A" {
            return Ok(None);
        }
        match t.parse::<f64>() {
            // nccl-tests prints two decimals: a time below a thousandth of a microsecond
            // is not one it wrote, and would make every relative error infinite.
            Ok(v) if v.is_finite() && (v == 0.0 || v >= 1e-3) => Ok(Some(v * 1e-6)),
            Ok(v) if v.is_finite() && v > 0.0 => Err(LogError::at(
                file,
                n,
                format!("the {what} time '{t}' is below 0.001 us; nccl-tests prints times in microseconds to 0.01"),
            )),
            _ => Err(LogError::at(file, n, format!("the {what} time '{t}' is not a number of microseconds"))),
        }
    };
    if bytes == 0 {
        return Ok(None);
    }
    if !bytes.is_multiple_of(esize) {
        return Err(LogError::at(
            file,
            n,
            format!("{} is not a whole number of {dtype} elements", crate::units::count_bytes(bytes)),
        ));
    }
    let root: i64 = match cols.root {
        Some(k) => f[k].parse().map_err(|_| LogError::at(file, n, "the root is not a whole number"))?,
        None => -1,
    };
    if cur.first.is_none() {
        cur.first = Some((f[cols.redop].to_string(), root, elems, bytes / esize));
    }
    // nccl-tests prints the count as the size in elements, or (all_gather,
    // reduce_scatter) as that over the ranks: every row of a run has the same ratio.
    let ratio = |elems: u64, whole: u64| (elems > 0 && whole.is_multiple_of(elems)).then(|| whole / elems);
    let first = cur.first.as_ref().map_or(0, |&(_, _, e, w)| ratio(e, w).unwrap_or(0));
    if ratio(elems, bytes / esize).is_none_or(|k| k != first) {
        return Err(LogError::at(
            file,
            n,
            format!(
                "the count {elems} does not match the size {bytes}: {} of {dtype} are {} elements, which \
                 nccl-tests prints as the count, or as the count times the ranks, the same way on every row{}",
                crate::units::count_bytes(bytes),
                bytes / esize,
                if first > 0 { format!(" (the run's first row: {first} times)") } else { String::new() }
            ),
        ));
    }
    let Some(time_s) = time(cols.time, "out-of-place")?.filter(|t| *t > 0.0) else {
        return Err(LogError::at(file, n, "the out-of-place time must be a positive number of microseconds"));
    };
    let in_place_s = match cols.in_place {
        Some(k) => time(k, "in-place")?,
        None => None,
    };
    // nccl-tests found wrong results: the row timed a broken run, not the machine.
    for (k, place) in cols.wrong_counts.iter().zip(["out-of-place", "in-place"]) {
        if f[*k] != "N/A" && f[*k].parse::<u64>() != Ok(0) {
            return Err(LogError::at(
                file,
                n,
                format!(
                    "the {place} #wrong is '{}': nccl-tests counted wrong elements, so this row timed a broken run; \
                     allowed: 0 or N/A (remove the row, or rerun the test)",
                    f[*k]
                ),
            ));
        }
    }
    let wrong = cols.wrong.and_then(|k| f[k].parse::<f64>().ok());
    Ok(Some(Sample { bytes, time_s, in_place_s, wrong, line: n }))
}

/// A run from what was read of it.
fn finish(
    p: Partial,
    file: &str,
    env: &BTreeMap<String, String>,
    env_lines: &BTreeMap<String, usize>,
    version: &Option<String>,
) -> Result<Run, LogError> {
    let line = p.samples.first().map_or(p.line, |s| s.line);
    let collective = match p.test.as_deref().and_then(collective_of_test) {
        Some(c) => c,
        // No name: what the first row's columns imply (a reduce-scatter's count is its
        // buffer over P; a rooted test has a root >= 0).
        None => match &p.first {
            Some((redop, root, elems, whole)) => match (redop.as_str(), *root >= 0) {
                ("none", true) => Collective::Broadcast,
                ("none", false) => Collective::Allgather,
                (_, true) => Collective::Reduce,
                (_, false) if elems == whole => Collective::Allreduce,
                _ => Collective::ReduceScatter,
            },
            None => return Err(LogError::at(file, line, "cannot tell which collective this run measured")),
        },
    };
    let ranks = (p.ranks > 0).then_some(p.ranks);
    if let Some((_, _, elems, whole)) = p.first {
        // The ratio of size to count, the same on every row (`read_row`): 1, or the ranks
        // for a collective whose count is a rank's part.
        let k = whole / elems.max(1);
        // (A rank's part: nccl-tests prints the count over the ranks; a log written
        // with the whole buffer's count is read too.)
        let want = match collective {
            Collective::Allgather | Collective::ReduceScatter => ranks.map(|r| r as u64).filter(|_| k != 1),
            _ => Some(1),
        };
        if let Some(want) = want
            && k != want
        {
            return Err(LogError::at(
                file,
                line,
                format!(
                    "the count is the size in elements over {k}, where a {} run of {} ranks prints it over {want}",
                    collective.name(),
                    ranks.map_or("these".to_string(), |r| r.to_string())
                ),
            ));
        }
    }
    // Each thread drives nGpus GPUs, each a rank of the device list: a shorter list is
    // a cut log, read before as a run on fewer ranks (one of two GPUs: P = 1, 100% off).
    if let (Some(r), Some(g)) = (ranks, p.gpus_per_thread)
        && r < g
    {
        return Err(LogError::at(
            file,
            p.line,
            format!("the device list names {r} rank(s), but `nGpus {g}` says a thread drives {g} GPUs, each a rank"),
        ));
    }
    let nodes = (!p.hosts.is_empty()).then_some(p.hosts.len());
    // 3 ranks on one host and 1 on another were read as 2 nodes of 2 GPUs: the count of
    // ranks divided by the count of hosts, not what each host ran.
    if let Some(k) = p.host_ranks.iter().position(|&c| c != p.host_ranks[0]) {
        return Err(LogError::at(
            file,
            p.line,
            format!(
                "the device list puts {} rank(s) on {} but {} on {}: not the same number of GPUs on every node, \
                 which calibrate needs (a machine file's nodes are alike)",
                p.host_ranks[0],
                crate::units::escape_controls(&p.hosts[0]),
                p.host_ranks[k],
                crate::units::escape_controls(&p.hosts[k])
            ),
        ));
    }
    let gpus_per_node = match (ranks, nodes) {
        (Some(r), Some(h)) if r.is_multiple_of(h) => Some(r / h),
        (Some(r), Some(h)) => {
            return Err(LogError::at(
                file,
                p.line,
                format!("{r} ranks on {h} hosts: not the same number of GPUs on every node, which calibrate needs"),
            ));
        }
        _ => None,
    };
    Ok(Run {
        file: file.to_string(),
        line,
        bench: Bench::NcclTests,
        test: p.test,
        collective,
        ranks,
        nodes,
        gpus_per_node,
        devices: p.devices,
        device_ids: p.device_ids.iter().copied().collect::<Option<Vec<usize>>>().unwrap_or_default(),
        device_buses: p.device_buses.into_iter().collect::<Option<Vec<String>>>().unwrap_or_default(),
        nccl_version: version.clone(),
        env: env.clone(),
        env_lines: env_lines.clone(),
        env_given: Default::default(),
        dtype: p.dtype,
        samples: p.samples,
        gpus_per_thread: p.gpus_per_thread,
    })
}
