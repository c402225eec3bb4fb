//! What a benchmark log says: runs of one collective at one rank count, each a list of
//! (size, time) points, and what the header told about the machine.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::collective::Collective;

/// Which benchmark printed a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bench {
    /// NVIDIA's nccl-tests (`all_reduce_perf` and friends).
    NcclTests,
    /// The OSU micro-benchmarks (`osu_allreduce`).
    Osu,
}

/// One measured size of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// S as the benchmark counts it, in bytes: nccl-tests' `size` column (the whole
    /// buffer of P blocks for reduce-scatter and allgather), OSU's `Size`.
    pub bytes: u64,
    /// The measured time, seconds (nccl-tests' out-of-place column, OSU's average).
    pub time_s: f64,
    /// nccl-tests' in-place time, seconds, where it printed one.
    pub in_place_s: Option<f64>,
    /// nccl-tests' `#wrong` count (or `error` of older versions, as a number), where printed.
    pub wrong: Option<f64>,
    /// The line of the log it was read from (1-based).
    pub line: usize,
}

/// One benchmark run: a collective at one rank count over a list of sizes.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// The log file it came from.
    pub file: String,
    /// 1-based line where the run starts in that file.
    pub line: usize,
    /// Which benchmark printed it.
    pub bench: Bench,
    /// The benchmark's name (`all_reduce_perf`, `osu_allreduce`) where the log says it.
    pub test: Option<String>,
    /// The collective measured.
    pub collective: Collective,
    /// P, where known (nccl-tests' device list; `--ranks`).
    pub ranks: Option<usize>,
    /// Distinct hosts of the device list, where known.
    pub nodes: Option<usize>,
    /// GPUs (ranks) per node, where known.
    pub gpus_per_node: Option<usize>,
    /// The device names the header lists, distinct, in order.
    pub devices: Vec<String>,
    /// Each rank's device number on its host (`device 3`), in rank order, where the
    /// header lists every rank's; empty otherwise.
    pub device_ids: Vec<usize>,
    /// Each rank's PCI bus (`0000:4a`, [`crate::topology::pci_bus_key`]), in rank order,
    /// where the header gives every rank's; empty otherwise.
    pub device_buses: Vec<String>,
    /// The NCCL version the log prints (`2.26.2`), where it does.
    pub nccl_version: Option<String>,
    /// NCCL environment variables the log shows (`NCCL_ALGO` -> `Ring`), by name, and
    /// those `--env` supplied where the log shows none.
    pub env: BTreeMap<String, String>,
    /// The line of the log each setting of `env` was printed at (none for `--env`'s).
    #[serde(skip)]
    pub env_lines: BTreeMap<String, usize>,
    /// The names in `env` that came from `--env` rather than from the log.
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub env_given: std::collections::BTreeSet<String>,
    /// The element type (`float`, `half`, ...) the data rows name.
    pub dtype: Option<String>,
    /// The measured points, in log order.
    pub samples: Vec<Sample>,
    /// The GPUs one host thread of the benchmark drove (nccl-tests' `nGpus`), where the
    /// log says it; `calibrate` sets a machine's `host.gpus_per_thread` from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_per_thread: Option<usize>,
}

impl Run {
    /// A short name for tables and chart files, unique among `runs` (which hold this
    /// one): the file's stem; the collective when the file holds several runs; the data
    /// type when several of them are of that collective (an OSU file of one test per
    /// type); their place in the file, from 1, when that still does not tell them apart.
    pub fn label(&self, runs: &[Run]) -> String {
        let stem = std::path::Path::new(&self.file)
            .file_stem()
            .map_or_else(|| self.file.clone(), |s| s.to_string_lossy().into_owned());
        let file: Vec<&Run> = runs.iter().filter(|x| x.file == self.file).collect();
        if file.len() <= 1 {
            return stem;
        }
        let mut label = format!("{stem}:{}", self.collective);
        let same: Vec<&Run> = file.into_iter().filter(|x| x.collective == self.collective).collect();
        if same.len() > 1 {
            if let Some(t) = &self.dtype {
                label = format!("{label}:{t}");
            }
            let twins: Vec<&&Run> = same.iter().filter(|x| x.dtype == self.dtype).collect();
            if twins.len() > 1 {
                let k = twins.iter().position(|x| std::ptr::eq(**x, self)).map_or(0, |k| k + 1);
                label = format!("{label}:{k}");
            }
        }
        label
    }
}

/// A log that cannot be read: the file, the line (1-based, 0 for the file as a whole),
/// and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.text())]
pub struct LogError {
    /// The file.
    pub file: String,
    /// 1-based line, 0 where the problem is the whole file.
    pub line: usize,
    /// What is wrong and what was expected.
    pub message: String,
}

impl LogError {
    /// An error at `line` of `file`.
    pub fn at(file: &str, line: usize, message: impl Into<String>) -> Self {
        LogError { file: file.to_string(), line, message: message.into() }
    }
    fn text(&self) -> String {
        if self.line == 0 {
            format!("{}: {}", self.file, self.message)
        } else {
            format!("{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

/// nccl-tests' bus bandwidth factor of collective `c` at P ranks (`busbw = algbw * f`).
pub fn busbw_factor(c: Collective, p: usize) -> f64 {
    let p = p.max(1) as f64;
    match c {
        Collective::Allreduce => 2.0 * (p - 1.0) / p,
        Collective::ReduceScatter | Collective::Allgather => (p - 1.0) / p,
        _ => 1.0,
    }
}
