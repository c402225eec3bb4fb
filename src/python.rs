//! The Python extension module `allreduce_sim._native` (cargo feature `python`, built by
//! maturin from `pyproject.toml`). It is a thin layer over the library the command line
//! uses: scenarios are parsed, checked and run by the same functions, and reports cross
//! the boundary as the JSON text `run --format json` writes, so Python sees the CLI's
//! numbers to the last bit. The Python package (`python/allreduce_sim/`) wraps it.
//!
//! Nothing panics across the boundary: bad input becomes `ScenarioError` (a `ValueError`)
//! carrying the CLI's message, file, line and column; a panic inside a run becomes a
//! `RuntimeError` naming it.

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::collective::Collective;
use crate::report::{Exporter, Json};
use crate::runner;
use crate::scenario::{self, Overrides, ParamValue, Scenario, ScenarioError};
use crate::shard::Shard;

pyo3::create_exception!(
    _native,
    NativeScenarioError,
    PyValueError,
    "Bad input: the message, file, line and column the command line would print."
);

/// A `ScenarioError` for Python: args are (text, message, file, line, column), the
/// Python subclass turns them into attributes.
fn scenario_error(e: &ScenarioError) -> PyErr {
    let (line, column) = match e.position() {
        Some((l, c)) => (Some(l), Some(c)),
        None => (None, None),
    };
    NativeScenarioError::new_err((e.to_string(), e.message().to_string(), e.origin().map(str::to_string), line, column))
}

/// Bad input that has no place in a file (a flag, an argument).
fn bad_input(text: String) -> PyErr {
    NativeScenarioError::new_err((text.clone(), text, None::<String>, None::<u64>, None::<u64>))
}

/// The scenario: read from `path`, or parsed from `text` named `name`, with the
/// overrides applied as the command line's flags are.
fn load(path: Option<&str>, text: Option<&str>, name: &str, overrides: &Overrides) -> PyResult<Scenario> {
    let mut s = match (path, text) {
        (Some(p), _) => scenario::load_file(std::path::Path::new(p)),
        (None, Some(t)) => scenario::parse_str(t, name),
        (None, None) => return Err(bad_input("give a scenario: a path, YAML text or a dict".to_string())),
    }
    .map_err(|e| scenario_error(&e))?;
    overrides.apply(&mut s).map_err(|e| scenario_error(&e))?;
    Ok(s)
}

/// Run `f` on a thread of its own with the GIL released; meanwhile poll for signals, so
/// that Ctrl-C stops the sweep (points not started are skipped, as in the CLI) and
/// raises `KeyboardInterrupt` once the points under way are done.
fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    runner::STOP.store(false, Ordering::Relaxed);
    let (tx, rx) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        // The stack of a main thread, as the command line runs on (a spawned thread's
        // default is 2 MiB, and a serial run works on this thread).
        let worker = std::thread::Builder::new()
            .name("allreduce-sim".to_string())
            .stack_size(8 << 20)
            .spawn_scoped(scope, move || {
                let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
                let _ = tx.send(());
                out
            })
            .map_err(|e| PyRuntimeError::new_err(format!("allreduce-sim cannot start its thread: {e}")))?;
        let mut signal: Option<PyErr> = None;
        let mut rx = rx;
        loop {
            // The receiver is Send but not Sync: it goes into the GIL-free section and back.
            let (waited, back) = py.detach(move || (rx.recv_timeout(Duration::from_millis(50)), rx));
            rx = back;
            if !matches!(waited, Err(mpsc::RecvTimeoutError::Timeout)) {
                break;
            }
            if signal.is_none()
                && let Err(e) = py.check_signals()
            {
                runner::STOP.store(true, Ordering::Relaxed);
                signal = Some(e);
            }
        }
        let joined = worker.join();
        runner::STOP.store(false, Ordering::Relaxed);
        if let Some(e) = signal {
            return Err(e);
        }
        match joined {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(panic)) | Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".to_string());
                Err(PyRuntimeError::new_err(format!("allreduce-sim failed inside the simulator (a bug): {what}")))
            }
        }
    })
}

/// The overrides from keyword arguments, as the command line's flags.
fn overrides(
    collective: Option<String>,
    algorithms: Option<Vec<String>>,
    ranks: Option<Vec<usize>>,
    sizes: Option<Vec<String>>,
    seed: Option<u64>,
) -> Overrides {
    Overrides { collective, algorithms, ranks, sizes, seed }
}

/// Run a scenario (a file at `path`, or YAML `text` named `name`) and return the JSON
/// report `run --format json` would write. The keyword arguments are `run`'s flags.
#[pyfunction]
#[pyo3(signature = (path=None, text=None, name="<string>", *, collective=None, algorithms=None, ranks=None,
    sizes=None, seed=None, shard=None, max_memory=None, progress=false))]
#[allow(clippy::too_many_arguments)]
fn run_json(
    py: Python<'_>,
    path: Option<&str>,
    text: Option<&str>,
    name: &str,
    collective: Option<String>,
    algorithms: Option<Vec<String>>,
    ranks: Option<Vec<usize>>,
    sizes: Option<Vec<String>>,
    seed: Option<u64>,
    shard: Option<&str>,
    max_memory: Option<&str>,
    progress: bool,
) -> PyResult<String> {
    let s = load(path, text, name, &overrides(collective, algorithms, ranks, sizes, seed))?;
    let shard = match shard {
        Some(t) => Some(t.parse::<Shard>().map_err(|e| bad_input(format!("shard: {e}")))?),
        None => None,
    };
    // Refused as `run` refuses a run whose points cannot fit in memory.
    // The module hands back the report's JSON.
    let form = crate::estimate::ReportForm::Json;
    let fewer = "ranks=, sizes=, algorithms=, or shard= and merge()";
    let (plans, limit) =
        crate::estimate::checked_plan(&s, shard, max_memory, "max_memory", form, fewer).map_err(bad_input)?;
    let limit = crate::estimate::check_reservable(&s, &plans, form, fewer, limit).map_err(bad_input)?;
    let opts = runner::RunOptions { shard, progress, memory_limit: limit };
    let report = detached(py, || runner::run_planned(&s, plans, &opts))?;
    Ok(Json.render(&report))
}

/// Join shard reports (JSON texts, each with a name for messages) into one JSON report in
/// sweep order, as `merge` does.
#[pyfunction]
fn merge_json(inputs: Vec<(String, String)>) -> PyResult<String> {
    let report = crate::shard::merge(&inputs).map_err(|e| bad_input(e.to_string()))?;
    Ok(Json.render(&report))
}

/// A point's label, the estimate in words, its memory in bytes and its events.
type PointEstimate = (String, String, u64, u64);

/// Check a scenario as `validate` does: its name and, per point, its label and the
/// estimated memory and work, as `(label, description, memory_bytes, events)`.
#[pyfunction]
#[pyo3(signature = (path=None, text=None, name="<string>"))]
fn validate(path: Option<&str>, text: Option<&str>, name: &str) -> PyResult<(String, Vec<PointEstimate>)> {
    let s = load(path, text, name, &Overrides::default())?;
    let pts = runner::points(&s);
    let single = pts.len() == 1;
    let rows = pts
        .iter()
        .map(|pt| {
            let est = crate::estimate::estimate(&s, pt, single);
            (crate::estimate::label(&s, pt), crate::estimate::describe(&est), est.memory_bytes(), est.events)
        })
        .collect();
    Ok((s.name, rows))
}

/// Fit a machine to benchmark logs as `calibrate` does: the calibration as JSON (the
/// `--format json` text) and the fitted machine file. A bad machine file or log raises
/// the same message as the command line.
#[pyfunction]
#[pyo3(signature = (machine, logs, hold_out=Vec::new(), *, fit=None, output=None, plot=None, ranks=None,
    gpus_per_node=None, env=Vec::new(), patience=None, picks=None, prior_width=None))]
#[allow(clippy::too_many_arguments)]
fn calibrate_json(
    py: Python<'_>,
    machine: &str,
    logs: Vec<String>,
    hold_out: Vec<String>,
    fit: Option<Vec<String>>,
    output: Option<String>,
    plot: Option<String>,
    ranks: Option<usize>,
    gpus_per_node: Option<usize>,
    env: Vec<String>,
    patience: Option<usize>,
    picks: Option<String>,
    prior_width: Option<String>,
) -> PyResult<(String, String)> {
    let args = crate::calibrate::cli::Args {
        machine: machine.into(),
        logs: logs.into_iter().map(Into::into).collect(),
        hold_out: hold_out.into_iter().map(Into::into).collect(),
        fit,
        output: output.map(Into::into),
        json: true,
        plot: plot.map(Into::into),
        ranks,
        gpus_per_node,
        env,
        patience,
        picks,
        prior_width,
    };
    let (text, c) = detached(py, || crate::calibrate::cli::execute(&args))?.map_err(bad_input)?;
    Ok((text, c.fitted_yaml))
}

/// Every algorithm of every collective, then the selectors, as dicts.
#[pyfunction]
fn list_algorithms(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let mut out = Vec::new();
    for c in Collective::ALL {
        for a in crate::algos::registry_of(c) {
            let d = PyDict::new(py);
            d.set_item("collective", c.name())?;
            d.set_item("id", a.id)?;
            d.set_item("kind", "algorithm")?;
            d.set_item("summary", a.summary)?;
            d.set_item("source", a.source)?;
            d.set_item("requires", a.requires)?;
            d.set_item("closed_form", a.closed_form)?;
            d.set_item("params", a.params.to_vec())?;
            out.push(d);
        }
    }
    for sel in &crate::select::SELECTORS {
        let d = PyDict::new(py);
        d.set_item("collective", None::<&str>)?;
        d.set_item("id", sel.id)?;
        d.set_item("kind", "selector")?;
        d.set_item("summary", sel.summary)?;
        d.set_item("source", sel.source)?;
        d.set_item("covers", sel.covers)?;
        d.set_item("params", sel.params.to_vec())?;
        out.push(d);
    }
    Ok(out)
}

/// `explain`: an algorithm's schedule step by step, its closed form with the numbers
/// filled in and the simulated time, as text.
#[pyfunction]
#[pyo3(signature = (algorithm, *, collective=None, ranks=None, size="1KiB", nics=1, alpha="1us",
    bandwidth="100Gbps", cost_per_byte="0.05ns", params=Vec::new(), scenario_path=None))]
#[allow(clippy::too_many_arguments)]
fn explain(
    algorithm: String,
    collective: Option<&str>,
    ranks: Option<usize>,
    size: &str,
    nics: u32,
    alpha: &str,
    bandwidth: &str,
    cost_per_byte: &str,
    params: Vec<(String, String)>,
    scenario_path: Option<&str>,
) -> PyResult<String> {
    let collective = match collective {
        None => Collective::Allreduce,
        Some(name) => Collective::from_name(name)
            .ok_or_else(|| bad_input(format!("collective: '{name}' is not known; allowed: {}", Collective::names())))?,
    };
    let machine = match scenario_path {
        Some(p) => Some(load(Some(p), None, p, &Overrides::default())?),
        None => None,
    };
    let unit = |what: &str, r: Result<f64, String>| r.map_err(|e| bad_input(format!("{what}: {e}")));
    let params = params
        .into_iter()
        .map(|(k, v)| {
            let value = if let Ok(i) = v.parse::<u64>() {
                ParamValue::Int(i)
            } else if let Ok(f) = v.parse::<f64>() {
                ParamValue::Float(f)
            } else {
                ParamValue::Str(v)
            };
            (k, value)
        })
        .collect();
    let mut req = crate::explain::Request {
        collective,
        algorithm,
        params,
        ranks: ranks.or_else(|| machine.as_ref().and_then(|s| s.ranks.first().copied())).unwrap_or(4),
        bytes: scenario::units::parse_size(size).map_err(|e| bad_input(format!("size: {e}")))?,
        nics,
        alpha: unit("alpha", scenario::units::parse_time(alpha))?,
        bandwidth: unit("bandwidth", scenario::units::parse_bandwidth(bandwidth))?,
        cost_per_byte: unit("cost_per_byte", scenario::units::parse_time(cost_per_byte))?,
        topology: None,
    };
    if let Some(s) = machine {
        req.topology = Some(s.topology);
        req.cost_per_byte = s.cost_per_byte;
    }
    crate::explain::explain(&req).map_err(bad_input)
}

/// Draw a JSON report's plots into `out_dir`; the files written.
#[pyfunction]
fn plot_json(py: Python<'_>, report_json: &str, out_dir: &str) -> PyResult<Vec<String>> {
    let data = crate::plots::PlotData::from_json(report_json, "the report").map_err(bad_input)?;
    let dir = std::path::PathBuf::from(out_dir);
    let files = detached(py, || crate::plots::plot_data(&data, &dir))?.map_err(bad_input)?;
    Ok(files.iter().map(|f| f.display().to_string()).collect())
}

/// Compare a JSON report with a baseline report (both texts) as `run --baseline` does:
/// `(passed, table, junit_xml)`.
#[pyfunction]
#[pyo3(signature = (report_json, baseline_json, baseline_name="baseline", tolerance=crate::baseline::DEFAULT_TOLERANCE))]
fn compare_json(
    report_json: &str,
    baseline_json: &str,
    baseline_name: &str,
    tolerance: f64,
) -> PyResult<(bool, String, String)> {
    crate::baseline::check_tolerance(tolerance).map_err(bad_input)?;
    let base = crate::baseline::parse(baseline_json, baseline_name).map_err(bad_input)?;
    let now = crate::baseline::parse(report_json, "the report").map_err(bad_input)?;
    let scenario: serde_json::Value = serde_json::from_str(report_json).unwrap_or_default();
    let name = scenario["scenario"]["name"].as_str().unwrap_or("allreduce-sim");
    let cmp = crate::baseline::compare_reports(&base, &now, tolerance, name);
    Ok((cmp.passed(), cmp.render(), cmp.junit()))
}

/// Every point of a scenario in sweep order, as `(algorithm entry, ranks, bytes)`: what
/// a shard's indices refer to.
#[pyfunction]
#[pyo3(signature = (path=None, text=None, name="<string>", *, collective=None, algorithms=None, ranks=None,
    sizes=None, seed=None))]
#[allow(clippy::too_many_arguments)]
fn points(
    path: Option<&str>,
    text: Option<&str>,
    name: &str,
    collective: Option<String>,
    algorithms: Option<Vec<String>>,
    ranks: Option<Vec<usize>>,
    sizes: Option<Vec<String>>,
    seed: Option<u64>,
) -> PyResult<Vec<(String, usize, u64)>> {
    let s = load(path, text, name, &overrides(collective, algorithms, ranks, sizes, seed))?;
    Ok(runner::points(&s).iter().map(|p| (s.algorithms[p.algo].name.clone(), p.ranks, p.bytes)).collect())
}

/// The native half of the `allreduce_sim` package.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NativeScenarioError", m.py().get_type::<NativeScenarioError>())?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(merge_json, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(list_algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add_function(wrap_pyfunction!(plot_json, m)?)?;
    m.add_function(wrap_pyfunction!(compare_json, m)?)?;
    m.add_function(wrap_pyfunction!(points, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate_json, m)?)?;
    Ok(())
}
