//! The `calibrate` command as the binary runs it: read the files, fit, write what was
//! asked. Kept here so the binary only turns its flags into [`Args`].

use std::path::PathBuf;

use super::{Calibration, Machine, Options, Run, read_log};

/// `calibrate`'s flags.
#[derive(Clone, Debug, Default)]
pub struct Args {
    /// The machine file.
    pub machine: PathBuf,
    /// Logs to fit.
    pub logs: Vec<PathBuf>,
    /// Logs to predict only.
    pub hold_out: Vec<PathBuf>,
    /// `--fit` paths.
    pub fit: Option<Vec<String>>,
    /// Write the fitted machine here.
    pub output: Option<PathBuf>,
    /// JSON instead of the table.
    pub json: bool,
    /// Draw the plots into this directory.
    pub plot: Option<PathBuf>,
    /// P for logs that do not say it.
    pub ranks: Option<usize>,
    /// GPUs per node for logs that do not say it.
    pub gpus_per_node: Option<usize>,
    /// `KEY=VALUE` NCCL settings for logs that do not print them.
    pub env: Vec<String>,
    /// Optimiser budget.
    pub patience: Option<usize>,
    /// `--picks`: where NCCL's model picks (`fitted` or `file`).
    pub picks: Option<String>,
    /// `--prior-width`: a factor above 1 ([`super::DEFAULT_PRIOR_WIDTH`] is a start), or `off`; `None`: no prior.
    pub prior_width: Option<String>,
}

/// Run `calibrate`: the text for standard output, or the one message of a bad input.
pub fn execute(a: &Args) -> Result<(String, Calibration), String> {
    // The outputs are checked before the fit: none may name the machine file or a log.
    let mut inputs = vec![a.machine.as_path()];
    inputs.extend(a.logs.iter().chain(&a.hold_out).map(PathBuf::as_path));
    let files = a.output.iter().map(|o| ("--output", o.as_path())).collect();
    let dirs = a.plot.iter().map(|d| ("--plot", d.as_path(), String::new())).collect();
    let output = crate::files::plan(&crate::files::Plan { inputs, files, dirs })?.into_iter().next();
    for (flag, v) in [("--ranks", a.ranks), ("--gpus-per-node", a.gpus_per_node)] {
        if v == Some(0) {
            return Err(format!("{flag} must be at least 1, not 0"));
        }
    }
    // A key named twice was fitted as two parameters of one value: one held, one fitted,
    // listed twice with warnings that contradict each other.
    if let Some(fit) = &a.fit {
        for (i, key) in fit.iter().enumerate() {
            // An empty entry (`--fit ,`) is refused as one where the keys are read, not
            // as " is given twice".
            if !key.is_empty() && fit[..i].contains(key) {
                return Err(format!("--fit: {key} is given twice; name each key once"));
            }
        }
    }
    let machine = Machine::load(&a.machine)?;
    // Also on standard error, before the fit: with `--format json` or `--output` the
    // table's warnings may never be read, and the fitted file keeps the noise.
    if let Some(w) = super::noise_warning(&machine) {
        crate::diag!("warning: {}: {w}", crate::units::escape_controls(&machine.file));
    }
    let mut env = Vec::new();
    for kv in &a.env {
        let read = super::ENV_READ.join(" and ");
        let Some((k, v)) = kv.split_once('=').filter(|(k, v)| !k.is_empty() && !v.is_empty()) else {
            return Err(format!("--env: '{kv}' is not NAME=VALUE with a value (names read: {read})"));
        };
        // calibrate reads what NCCL ran from these two only: any other setting was
        // dropped without a word, and the fit went on as if it had been read.
        if !super::ENV_READ.contains(&k) {
            // NCCL_NET_GDR_LEVEL's values are the GPU-NIC path types the machine file's
            // nic_path takes. NCCL_P2P_LEVEL (the path between GPUs) and NCCL_NET_GDR_READ
            // (a switch) are nothing a machine file describes: the general refusal.
            let path = if k == "NCCL_NET_GDR_LEVEL" {
                "; the path between a GPU and its NIC is the machine file's topology.inter.nic_path (pix, pxb, phb \
                 or sys; docs/gpu-clusters.md, \"The path to the NIC\")"
            } else {
                ""
            };
            return Err(format!(
                "--env {k}: calibrate reads {read} only (what NCCL ran, for a log that does not print it), not \
                 {k}{path}"
            ));
        }
        // A setting given twice kept one value without a word.
        if let Some((_, first)) = env.iter().find(|(name, _): &&(String, String)| name == k) {
            return Err(format!(
                "--env {k}: given twice ({first}, then {v}); NCCL reads one value: give each setting once"
            ));
        }
        env.push((k.to_string(), v.to_string()));
    }
    let opts = Options {
        fit: a.fit.clone(),
        ranks: a.ranks,
        gpus_per_node: a.gpus_per_node,
        env,
        patience: a.patience.unwrap_or(super::DEFAULT_PATIENCE),
        picks: match a.picks.as_deref() {
            None | Some("fitted") => super::Picks::Fitted,
            Some("file") => super::Picks::File,
            Some(v) => return Err(format!("--picks must be fitted or file, not '{v}'")),
        },
        prior_width: match a.prior_width.as_deref().map(str::trim) {
            None | Some("off" | "none") => None,
            Some(v) => match v.parse::<f64>() {
                // Past the fit's own bounds a prior draws nothing, and its factors print in hundreds of digits.
                Ok(w) if w > 1.0 && w <= super::fit::MAX_FACTOR => Some(w),
                _ => {
                    return Err(format!(
                        "--prior-width must be a factor above 1 and at most {:e} (the fit's bounds; 10: a tenfold) \
                         or off, not '{v}'",
                        super::fit::MAX_FACTOR
                    ));
                }
            },
        },
    };
    let read = |paths: &[PathBuf]| -> Result<Vec<Run>, String> {
        let mut out = Vec::new();
        for p in paths {
            out.extend(read_log(p, &opts).map_err(|e| e.to_string())?);
        }
        Ok(out)
    };
    let fit_runs = read(&a.logs)?;
    // A hold-out log that cannot be read names its flag: `--hold-out -` said only "-: cannot read -".
    let hold = read(&a.hold_out).map_err(|e| format!("--hold-out: {e}"))?;
    let c = super::calibrate(&machine, &fit_runs, &hold, &opts)?;
    if let Some(out) = &output {
        out.write_text(&c.fitted_yaml)?;
    }
    let mut text = if a.json {
        crate::units::escape_json_unseen(
            serde_json::to_string_pretty(&c).map_err(|e| format!("cannot write the JSON: {e}"))? + "\n",
        )
    } else {
        super::table(&c)
    };
    if let Some(dir) = &a.plot {
        let files = super::plot::plot(&c, dir).map_err(|e| format!("--plot: {e}"))?;
        if !a.json {
            text.push_str(&format!("\nplots: {} files in {}\n", files.len(), dir.display()));
        }
    }
    Ok((text, c))
}
