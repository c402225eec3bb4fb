//! The `allreduce-sim` command: parse the command line, turn it and the scenario file
//! into one validated [`Scenario`], run, export. Exit status: 0 ran and every check
//! held, 1 a check failed, 2 bad input (one message on stderr, never a backtrace),
//! 3 no point could run (every one not applicable), 130 stopped by Ctrl-C.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use allreduce_sim::algos;
use allreduce_sim::collective::Collective;
use allreduce_sim::estimate;
use allreduce_sim::explain;
use allreduce_sim::files::{self, Output};
use allreduce_sim::plots;
use allreduce_sim::report::{Csv, Exporter, Json, Report, Table};
use allreduce_sim::runner;
use allreduce_sim::scenario::{self, Overrides, ParamValue, Scenario};
use allreduce_sim::select;
use allreduce_sim::shard::{self, Shard};
use allreduce_sim::sim::engine::NoObserver;
use allreduce_sim::timeline::trace;

/// A deterministic discrete-event simulator of allreduce algorithms.
///
/// Write a scenario (a machine, the algorithms, the sizes) in YAML and run it: every
/// algorithm's simulated time, its closed-form prediction, bus bandwidth, memory and
/// the numerical error of the real reductions the engine performed.
#[derive(Parser, Debug)]
#[command(name = "allreduce-sim", version, about, long_about, after_help = EXIT_STATUS)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario and print the report.
    ///
    /// Flags override the file. Several ranks or sizes make a sweep over their product
    /// with every algorithm; points run in parallel and print in a fixed order.
    ///
    /// Points of at most 64 ranks, and a run of a single point, also report the bytes
    /// each rank sent and received, the busiest link and the critical path (the chain of
    /// messages and reductions that set the finishing time): in the JSON, and one line
    /// per point under each table.
    Run(RunArgs),
    /// Run a scenario's sweep with every algorithm and the selectors, and write what a
    /// library reads to follow the winners.
    ///
    /// `ompi-rules`: Open MPI's dynamic rules file (classic format, Open MPI 4.1.4; use it
    /// with `--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename
    /// FILE`). `nccl-tuner`: the CSV of NCCL's example tuner plugin
    /// (`NCCL_TUNER_CONFIG_FILE`). `table`: the winner, runner-up and margin per point, and
    /// what `ompi_fixed` and `nccl_model` pick. `json`: the same as JSON.
    Tune(TuneArgs),
    /// Fit a machine file to a cluster's own benchmark logs (nccl-tests `*_perf`, OSU
    /// `osu_allreduce`), and say how well it predicts them (docs/calibrate.md).
    ///
    /// Every alpha, bandwidth and launch of the topology is fitted (and C where the logs
    /// can tell it from bandwidth), or the dotted paths of --fit; each logged point is
    /// simulated with what NCCL ran there. Prints each value with its uncertainty, the
    /// mean and max error per log, and a warning for every pair the logs cannot tell apart.
    Calibrate(CalibrateArgs),
    /// List every algorithm with its source, requirements, parameters and closed form,
    /// then the selectors.
    List,
    /// Check a scenario file and print what it resolves to; run nothing.
    ///
    /// The flags narrow or change the sweep as they do for `run`, so that the sweep a
    /// `run` would make can be checked first.
    Validate(ValidateArgs),
    /// Draw the plots of a JSON report (from `run --format json --output FILE`).
    ///
    /// SVG and PNG of: time, bus bandwidth and efficiency against size for each rank
    /// count; time against ranks; simulated against closed-form time; the fastest
    /// algorithm over (ranks, size); numerical error against ranks. Charts the report
    /// has no data for (one rank count: no time against ranks) are skipped.
    Plot(PlotArgs),
    /// Join the JSON reports of a sweep's shards (`run --shard I/N --format json`) into
    /// one report in sweep order.
    ///
    /// Every shard 0..N of the same scenario must be given once; shards of different
    /// scenarios (their `scenario` objects differ), duplicates and gaps are refused.
    Merge(MergeArgs),
    /// Show an algorithm's schedule: who sends which elements to whom at each step,
    /// reduce or copy, then its closed form with the numbers filled in and the simulated
    /// time.
    ///
    /// The table comes from the algorithm's own programs run on the engine, on a fully
    /// connected machine (or the --scenario's) with f32 elements. A step is a set of
    /// messages that start at the same instant.
    Explain(ExplainArgs),
}

// The flags of `run` (its help is the variant's).
#[derive(clap::Args, Debug)]
struct RunArgs {
    /// The scenario file (YAML).
    scenario: PathBuf,
    /// Output format [default: that of `--output`'s extension, `.json` or `.csv`; else
    /// table].
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Write the report to FILE instead of standard output (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    sweep: SweepArgs,
    /// Seed for the data instead of the file's.
    #[arg(long, allow_negative_numbers = true, value_parser = seed_arg)]
    seed: Option<u64>,
    /// Also draw the report's plots (SVG and PNG) into DIR, `plots/` without a DIR.
    /// Give the directory with `=` (`--plot=out/`), so the flag never takes the scenario.
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true, default_missing_value = "plots")]
    plot: Option<PathBuf>,
    /// With --plot: measured runs (nccl-tests or OSU logs) to draw beside the simulated
    /// bus bandwidth, one chart per rank count they share with the report
    /// (`..._busbw_vs_size_P8_measured`); a run they share nothing with is noted on stderr.
    #[arg(long, value_name = "LOG", num_args = 1.., requires = "plot")]
    measured: Vec<PathBuf>,
    /// Also draw a Gantt chart of the run into FILE (.png or .svg): every rank's send
    /// and receive ports and compute unit over time. One point only, at most 64 ranks.
    #[arg(long, value_name = "FILE")]
    gantt: Option<PathBuf>,
    /// Run only shard I of N (0-based): the points whose index in sweep order is I
    /// modulo N. The JSON report records the shard; `merge` joins the shards' reports.
    #[arg(long, allow_hyphen_values = true, value_name = "I/N")]
    shard: Option<Shard>,
    /// Also write a Chrome trace of the run to FILE (JSON, opens in
    /// https://ui.perfetto.dev and chrome://tracing): a process per rank with a track
    /// per port's sends and receives and one for the compute unit, an arrow from every
    /// send to its receive. One point only: pick it with --algorithms, --ranks, --sizes.
    /// A recording holds at most 1,000,000 intervals: a point certain to send more
    /// messages is refused before it runs. A selector's point (`auto`, `nccl_model`,
    /// `ompi_fixed`) records its pick: refused before anything runs when none of the
    /// algorithms it chooses from could be recorded; when only some could not (said on
    /// stderr first), the selector runs and a pick among those is refused, naming the
    /// candidates that could be recorded (the pick is never swapped for one). --gantt
    /// alike.
    #[arg(long, value_name = "FILE", conflicts_with = "shard")]
    trace: Option<PathBuf>,
    /// No progress on stderr. (On a terminal a bar, drawn when the sweep has more than
    /// 8 points or takes over a second; otherwise a line every 5 seconds.)
    #[arg(long, short)]
    quiet: bool,
    /// Refuse, before it runs, any point whose estimated memory is above BYTES
    /// (`512MiB`, `2GB`) [default: MemAvailable of /proc/meminfo]; a point the process
    /// cannot reserve that much memory for is refused too.
    #[arg(long, allow_hyphen_values = true, value_name = "BYTES")]
    max_memory: Option<String>,
    /// Compare every point with the same point of a saved JSON report (a regression
    /// gate): a table of what moved on stderr, exit 1 when a point moved beyond
    /// --tolerance or is on one side only.
    #[arg(long, value_name = "REPORT.json", conflicts_with = "shard")]
    baseline: Option<PathBuf>,
    /// The relative tolerance of --baseline.
    #[arg(long, allow_hyphen_values = true, value_name = "REL", default_value_t = allreduce_sim::baseline::DEFAULT_TOLERANCE, requires = "baseline", value_parser = tolerance_arg)]
    tolerance: f64,
    /// Also write the --baseline comparison to FILE as JUnit XML, one test case per point.
    #[arg(long, value_name = "FILE", requires = "baseline")]
    junit: Option<PathBuf>,
}

// The flags of `tune` (its help is the variant's).
#[derive(clap::Args, Debug)]
struct TuneArgs {
    /// The scenario file (YAML).
    scenario: PathBuf,
    /// What to write.
    #[arg(long, value_enum)]
    emit: Emit,
    /// Write to FILE instead of standard output (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Rank counts instead of the file's, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "N,...", allow_negative_numbers = true, value_parser = rank_arg)]
    ranks: Option<Vec<usize>>,
    /// Sizes per rank instead of the file's, comma-separated (`4KiB,1MiB,1000`).
    #[arg(long, value_delimiter = ',', value_name = "S,...", allow_negative_numbers = true)]
    sizes: Option<Vec<String>>,
    /// No progress on stderr.
    #[arg(long, short)]
    quiet: bool,
}

// The flags of `calibrate` (its help is the variant's).
#[derive(clap::Args, Debug)]
struct CalibrateArgs {
    /// The machine file (a scenario, YAML).
    machine: PathBuf,
    /// Logs to fit.
    #[arg(required = true, value_name = "LOG")]
    logs: Vec<PathBuf>,
    /// Dotted paths of the machine file to fit, comma-separated
    /// (`topology.levels.1.bandwidth,topology.levels.1.alpha`).
    #[arg(long, value_delimiter = ',', value_name = "PATH,...")]
    fit: Option<Vec<String>>,
    /// Logs predicted with the fitted machine, not fitted.
    #[arg(long, num_args = 1.., value_name = "LOG")]
    hold_out: Vec<PathBuf>,
    /// Write the machine file with the fitted values to FILE.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Output format: table or json (every point, measured and simulated).
    #[arg(long, value_enum, default_value_t = CalibrateFormat::Table)]
    format: CalibrateFormat,
    /// Draw measured against simulated time, bus bandwidth and residuals per log into
    /// DIR (`plots/` without a DIR; give it with `=`).
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true, default_missing_value = "plots")]
    plot: Option<PathBuf>,
    /// P, for logs that do not say it (OSU output).
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = rank_arg)]
    ranks: Option<usize>,
    /// GPUs per node, for logs that do not list their devices' hosts.
    #[arg(long, allow_negative_numbers = true, value_name = "G", value_parser = gpus_per_node_arg)]
    gpus_per_node: Option<usize>,
    /// NCCL_ALGO or NCCL_PROTO for logs that do not print it (`--env NCCL_ALGO=Ring`; repeat); other names are refused.
    #[arg(long, value_name = "NCCL_NAME=VALUE")]
    env: Vec<String>,
    /// The optimiser's budget: model evaluations per fitted value (at least 1).
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = patience_arg)]
    patience: Option<usize>,
    /// Where NCCL's model picks for logs that do not force it: at the fitted values
    /// (fitted, the default) or at the machine file's nominal ones (file).
    #[arg(long, value_name = "fitted|file")]
    picks: Option<String>,
    /// How far the fit may draw a value from the machine file's without cost, as a
    /// factor (a log-normal prior of that width; 10 is a start), or `off` (the default).
    #[arg(long, allow_hyphen_values = true, value_name = "W|off")]
    prior_width: Option<String>,
    /// No progress on stderr. (Without it, a line every 5 seconds while it fits: the
    /// model evaluations so far, each a simulation of every logged point, and events
    /// per second.)
    #[arg(long, short)]
    quiet: bool,
}

// The flags of `validate` (its help is the variant's).
#[derive(clap::Args, Debug)]
struct ValidateArgs {
    /// The scenario file (YAML).
    scenario: PathBuf,
    #[command(flatten)]
    sweep: SweepArgs,
}

// The sweep's flags, which `run` and `validate` share: what they narrow, `validate`
// checks as `run` would run it.
#[derive(clap::Args, Debug)]
struct SweepArgs {
    /// The collective every algorithm entry runs instead of the file's: allreduce,
    /// reduce_scatter, allgather, broadcast, reduce or barrier.
    #[arg(long, value_name = "NAME")]
    collective: Option<String>,
    /// Algorithms to run instead of the file's, comma-separated (see `list`).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    algorithms: Option<Vec<String>>,
    /// Rank counts instead of the file's, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "N,...", allow_negative_numbers = true, value_parser = rank_arg)]
    ranks: Option<Vec<usize>>,
    /// Sizes per rank instead of the file's, comma-separated (`4KiB,1MiB,1000`).
    #[arg(long, value_delimiter = ',', value_name = "S,...", allow_negative_numbers = true)]
    sizes: Option<Vec<String>>,
}

impl SweepArgs {
    /// The overrides these flags make, with the data's `seed` (`run --seed`).
    fn overrides(self, seed: Option<u64>) -> Overrides {
        let SweepArgs { collective, algorithms, ranks, sizes } = self;
        Overrides { collective, algorithms, ranks, sizes, seed }
    }
}

// The flags of `plot` (its help is the variant's).
#[derive(clap::Args, Debug)]
struct PlotArgs {
    /// The report (JSON).
    report: PathBuf,
    /// Directory for the plot files, created if missing.
    #[arg(long, value_name = "DIR", default_value = "plots")]
    out: PathBuf,
}

// The flags of `merge` (its help is the variant's).
#[derive(clap::Args, Debug)]
struct MergeArgs {
    /// The shards' JSON reports, in any order.
    #[arg(required = true, value_name = "REPORT.json")]
    reports: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
    /// Write the report to FILE instead of standard output (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

// The flags of `explain` (its help is the variant's).
#[derive(clap::Args, Debug)]
struct ExplainArgs {
    /// Algorithm id (see `list`).
    algorithm: String,
    /// The collective the algorithm implements: allreduce (default), reduce_scatter,
    /// allgather, broadcast, reduce or barrier.
    #[arg(long, value_name = "NAME")]
    collective: Option<String>,
    /// P, 1 to 256 [default: 4, or the --scenario's first rank count].
    #[arg(long, allow_negative_numbers = true, value_parser = explain_ranks_arg)]
    ranks: Option<usize>,
    /// S, bytes per rank (a whole number of f32 elements).
    #[arg(long, allow_hyphen_values = true, default_value = "1KiB")]
    size: String,
    /// Ports per rank.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = nics_arg)]
    nics: u32,
    /// Latency per message.
    #[arg(long, allow_hyphen_values = true, default_value = "1us")]
    alpha: String,
    /// Link bandwidth (`100Gbps` bits, `12.5GB/s` bytes).
    #[arg(long, allow_hyphen_values = true, default_value = "100Gbps")]
    bandwidth: String,
    /// C, time to reduce one byte.
    #[arg(long, allow_hyphen_values = true, default_value = "0.05ns")]
    cost_per_byte: String,
    /// An algorithm parameter, KEY=VALUE (repeat for several), e.g. --param segments=4.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// Take the machine (topology and C) from this scenario file instead of --alpha,
    /// --bandwidth, --nics and --cost-per-byte: for algorithms that need a grid or a
    /// hierarchy.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["alpha", "bandwidth", "nics", "cost_per_byte"])]
    scenario: Option<PathBuf>,
}

/// The exit statuses, for `--help` (docs/scenario.md has the same table).
const EXIT_STATUS: &str = "Exit status: 0 every check held; 1 a check failed at some point; 2 bad input (a \
scenario, flag or file that cannot be used, a point too large for the memory, or a sweep none of whose points \
can run: every one not applicable, the report written with each reason); 3 link faults (noise.faults) left \
messages with no route at every point that failed, and no other check failed (each such point's cut_off says \
who waits for whom); 130 stopped by Ctrl-C (the points \
finished so far are written).

Files: inputs must be regular files. Every output (--output, --trace, --gantt, --junit, --plot) is checked \
before anything runs: none may name an input or another output by any path, and its directory \
must exist. Outputs are written to a temporary file beside the target and renamed over it; a report \
that cannot be written is printed on standard output instead (exit status 2).";

/// No point of the run could run (every one was not applicable): the scenario asks for
/// nothing this simulator can do, which is bad input.
const EXIT_NOTHING_RAN: u8 = 2;
/// Stopped by Ctrl-C.
const EXIT_INTERRUPTED: u8 = 130;

/// `run`'s exit status when link faults cut off every point that failed
/// (docs/variability.md).
const EXIT_CUT_OFF: u8 = 3;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    /// Aligned tables for a person.
    Table,
    /// One JSON object: `scenario` and `results`.
    Json,
    /// One row per result.
    Csv,
}

/// From this many points `run` says it is planning them (4,000,000 points took 89 s).
const PLANNING_SAID: usize = 100_000;

/// How `run` is asked for fewer points, for the refusals of a sweep too large to keep.
const RUN_FEWER: &str = "--ranks, --sizes, --algorithms, or --shard and `merge`";

impl Format {
    /// What the report keeps of each point until it is written in this format.
    fn form(self) -> estimate::ReportForm {
        match self {
            Format::Json => estimate::ReportForm::Json,
            Format::Table | Format::Csv => estimate::ReportForm::Text,
        }
    }

    /// The format a file's extension names (`.json`, `.csv`, in any case); a table for
    /// any other file and for standard output.
    fn of_file(path: Option<&std::path::Path>) -> Format {
        let ext = path.and_then(|p| p.extension()).map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("json") => Format::Json,
            Some("csv") => Format::Csv,
            _ => Format::Table,
        }
    }
}

/// What `calibrate` writes: a fit has no rows of one shape for a CSV (its parameters,
/// logs and points are three tables), so `csv` is not offered (nor listed in its help).
#[derive(Clone, Copy, Debug, ValueEnum)]
enum CalibrateFormat {
    /// The fitted values, the errors per log and the warnings.
    Table,
    /// The same with every point, measured and simulated.
    Json,
}

/// What `tune` writes.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Emit {
    /// Open MPI's dynamic rules file (classic text format).
    OmpiRules,
    /// The CSV of NCCL's example tuner plugin.
    NcclTuner,
    /// A table of winners and margins.
    Table,
    /// The same as JSON.
    Json,
}

/// A user error: printed as is, exit status 2.
struct BadInput(String);

/// Memory that runs out ends the process with a message and status 2, not an abort.
#[global_allocator]
static ALLOC: allreduce_sim::process::GuardedAlloc = allreduce_sim::process::GuardedAlloc;

fn main() -> ExitCode {
    // Before any thread starts: see the function's docs (address space under `ulimit -v`).
    allreduce_sim::process::one_allocator_arena();
    allreduce_sim::process::ignore_file_size_signal();
    allreduce_sim::process::end_on_signals();
    // The work runs on a thread whose stack we size: the main thread's is what `ulimit -s`
    // gives, and under 160 KB reading a scenario (the YAML deserializer's frames of 12 to
    // 33 KB) overflowed it (exit 134).
    match allreduce_sim::process::spawn("main-work", WORK_STACK, work) {
        Ok(handle) => handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        Err(e) => {
            allreduce_sim::diag!(
                "error: cannot start a thread ({e}): the process may not map an {} MiB stack or start \
                 another thread; raise the address-space limit (`ulimit -v`) or the process limit (`ulimit -u`)",
                WORK_STACK >> 20
            );
            ExitCode::from(2)
        }
    }
}

/// The stack of the thread that does the work: what Linux gives a main thread by default.
const WORK_STACK: usize = 8 << 20;

/// Most worker threads `RAYON_NUM_THREADS` may ask for: 10,000 took two minutes to start
/// before anything ran (even `list`), and no machine we simulate on has that many cores.
const MAX_WORKERS: usize = 1024;

/// What `main` does, on a thread of [`WORK_STACK`].
fn work() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version are not errors.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            allreduce_sim::diag_text!("{}", parse_error(e));
            return ExitCode::from(2);
        }
    };
    if let Err(e) = start_workers() {
        allreduce_sim::diag!("error: {e}");
        return ExitCode::from(2);
    }
    match execute(cli) {
        Ok(code) => code,
        Err(BadInput(msg)) => {
            // A message may quote the scenario (a snippet of the line, a name).
            allreduce_sim::diag!("error: {}", allreduce_sim::scenario::units::escape_controls(&msg));
            ExitCode::from(2)
        }
    }
}

/// Start rayon's worker threads (as many as `RAYON_NUM_THREADS` or the cores say), or say
/// why they cannot start. Started lazily, the pool panicked at its first use where the
/// threads could not be made (under a `ulimit -v` of 20 MB the estimate of a full-data
/// point asked for the thread count: exit 101). The pool starts once or never, so there
/// is no retry with fewer threads.
fn start_workers() -> Result<(), String> {
    let asked_threads = std::env::var("RAYON_NUM_THREADS").ok().and_then(|t| t.trim().parse::<usize>().ok());
    if let Some(n) = asked_threads
        && n > MAX_WORKERS
    {
        return Err(format!(
            "RAYON_NUM_THREADS={n} asks for more worker threads than allowed: 1 to {MAX_WORKERS}, or 0 for one a core"
        ));
    }
    // A worker's stack is the platform's default (2 MiB), or more if RUST_MIN_STACK asks:
    // rayon takes RUST_MIN_STACK as given, and a stack of 1 to 16,384 bytes overflowed at
    // once (exit 134).
    let asked = allreduce_sim::process::default_stack();
    let stack = asked.clamp(2 << 20, 1 << 30);
    let threads = match asked_threads {
        Some(n) if n > 0 => n,
        _ => std::thread::available_parallelism().map_or(1, usize::from),
    };
    let built = if allreduce_sim::process::room_for_threads(threads, stack) {
        rayon::ThreadPoolBuilder::new().stack_size(stack).build_global().map_err(|e| e.to_string())
    } else {
        Err(format!("no room for {threads} stacks of {} MiB", stack >> 20))
    };
    built.map_err(|e| {
        let smaller = if asked > 2 << 20 {
            format!(", or smaller stacks (RUST_MIN_STACK={asked} asks for {} MiB a thread)", stack >> 20)
        } else {
            String::new()
        };
        format!(
            "cannot start the worker threads ({e}): the process may not map their stacks or start more \
             threads; raise the address-space limit (`ulimit -v`) or the process limit (`ulimit -u`), or \
             ask for fewer threads (RAYON_NUM_THREADS=1){smaller}"
        )
    })
}

/// clap's message for a command line it refuses, with what it quotes of the arguments
/// escaped as every other message is (`unexpected argument '\u{202e}ring'`): clap prints an
/// argument as given, so a right-to-left override turned the line around, and on a
/// terminal an escape sequence reached it. The command is parsed again without styles, so
/// the text holds no escape sequence but the user's own.
fn parse_error(e: clap::Error) -> String {
    use clap::{CommandFactory, builder::styling::Styles};
    let plain = Cli::command().styles(Styles::plain()).color(clap::ColorChoice::Never).try_get_matches();
    let text = match plain {
        Err(p) if p.kind() == e.kind() => p.render().ansi().to_string(),
        _ => e.render().to_string(),
    };
    allreduce_sim::scenario::units::escape_controls(&text).into_owned()
}

/// Writes to standard output. A reader that went away (`allreduce-sim list | head`) ends
/// the program quietly with status 0, as `print!` would instead panic on the broken pipe;
/// any other write error is reported and ends it with status 2.
fn write_stdout(text: &str) {
    use std::io::Write;
    // Whatever reached the text (a scenario's name, a log's NCCL setting, a path), no
    // control character reaches the terminal.
    let text = allreduce_sim::scenario::units::escape_controls(text);
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        allreduce_sim::diag!("error: cannot write to standard output: {e}");
        std::process::exit(2);
    }
}

/// `text` with its control characters escaped, for stderr.
fn esc(text: &str) -> std::borrow::Cow<'_, str> {
    allreduce_sim::scenario::units::escape_controls(text)
}

/// A path for a message or a listing, every control character escaped, the line feed
/// and the tab too: a name with a newline would otherwise read as two lines (two files).
fn esc_path(path: &std::path::Path) -> String {
    let mut out = String::new();
    for c in path.display().to_string().chars() {
        if allreduce_sim::scenario::units::is_unseen(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `--ranks` values: whole numbers (clap's own message for `-1` suggests `-- -1`, which
/// would end the options instead).
fn rank_arg(v: &str) -> Result<usize, String> {
    v.trim().parse::<u32>().map(|n| n as usize).map_err(|_| {
        format!("a rank count must be a whole number from 1 to {} (ranks are numbered in 32 bits), not '{v}'", u32::MAX)
    })
}

/// `calibrate --gpus-per-node`: a whole number (0 reaches the check that names the
/// least), said with the range rather than the standard library's `invalid digit found
/// in string`.
fn gpus_per_node_arg(v: &str) -> Result<usize, String> {
    v.trim()
        .parse::<usize>()
        .map_err(|_| format!("GPUs per node must be a whole number from 1 to {}, not '{v}'", usize::MAX))
}

/// `run --tolerance`: a relative tolerance, a finite number >= 0, quoted as written when
/// refused (not `invalid float literal`, nor -9223372036854775808 read back as a float).
fn tolerance_arg(v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(format!("the relative tolerance must be a finite number >= 0 such as 1e-9, not '{v}'")),
    }
}

/// `explain --ranks`: P from 1 to 256 (explain prints every message).
fn explain_ranks_arg(v: &str) -> Result<usize, String> {
    match v.trim().parse::<usize>() {
        Ok(n @ 1..=256) => Ok(n),
        _ => Err(format!("P must be a whole number from 1 to 256 (explain prints every message), not '{v}'")),
    }
}

/// `explain --nics`: ports per rank, 1 to 2^32 - 1 as in a scenario.
fn nics_arg(v: &str) -> Result<u32, String> {
    match v.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("ports per rank must be a whole number from 1 to {}, not '{v}'", u32::MAX)),
    }
}

/// `--patience`: at least one evaluation per fitted value (0 was read as 1 without a word).
fn patience_arg(v: &str) -> Result<usize, String> {
    match v.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "the optimiser's budget must be a whole number of model evaluations per fitted value from 1 to {}, not '{v}'",
            usize::MAX
        )),
    }
}

/// `--seed`: a whole number from 0 to 2^64 - 1.
fn seed_arg(v: &str) -> Result<u64, String> {
    v.trim().parse::<u64>().map_err(|_| format!("the seed must be a whole number from 0 to {}, not '{v}'", u64::MAX))
}

fn load(path: &std::path::Path, overrides: &Overrides) -> Result<Scenario, BadInput> {
    let mut s = scenario::load_file(path).map_err(|e| BadInput(e.to_string()))?;
    overrides.apply(&mut s).map_err(|e| BadInput(e.to_string()))?;
    Ok(s)
}

/// Run the subcommand `cli` names: one function each.
fn execute(cli: Cli) -> Result<ExitCode, BadInput> {
    match cli.command {
        Command::Calibrate(args) => cmd_calibrate(args),
        Command::List => {
            write_stdout(&list_text());
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate(args) => cmd_validate(args),
        Command::Plot(args) => cmd_plot(args),
        Command::Merge(args) => cmd_merge(args),
        Command::Tune(args) => cmd_tune(args),
        Command::Explain(args) => cmd_explain(args),
        Command::Run(args) => cmd_run(args),
    }
}

/// `calibrate`.
fn cmd_calibrate(args: CalibrateArgs) -> Result<ExitCode, BadInput> {
    let CalibrateArgs {
        machine,
        logs,
        fit,
        hold_out,
        output,
        format,
        plot,
        ranks,
        gpus_per_node,
        env,
        patience,
        picks,
        prior_width,
        quiet,
    } = args;
    let args = allreduce_sim::calibrate::cli::Args {
        machine,
        logs,
        hold_out,
        fit,
        output,
        json: matches!(format, CalibrateFormat::Json),
        plot,
        ranks,
        gpus_per_node,
        env,
        patience,
        picks,
        prior_width,
    };
    let progress = (!quiet).then(calibrate_progress).flatten();
    let result = allreduce_sim::calibrate::cli::execute(&args);
    if let Some((stop, handle)) = progress {
        drop(stop);
        let _ = handle.join();
    }
    let (text, _) = result.map_err(BadInput)?;
    write_stdout(&text);
    Ok(ExitCode::SUCCESS)
}

/// `calibrate`'s progress: a line on stderr every [`runner::PROGRESS_EVERY`] (as `run`'s
/// lines), from a thread of its own until the sender is dropped. A fit of logs up to
/// 8 GiB runs for minutes, and its length is not known beforehand (the optimiser stops
/// when it converges), so the line says what was done, not what is left. `None` where the
/// thread cannot start: the fit goes on without the lines.
fn calibrate_progress() -> Option<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)> {
    use allreduce_sim::calibrate::EVALUATIONS;
    use allreduce_sim::sim::engine::EVENTS_DONE;
    use std::sync::atomic::Ordering::Relaxed;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let handle = allreduce_sim::process::spawn("progress", runner::PROGRESS_STACK, move || {
        let started = std::time::Instant::now();
        let (events0, evaluations0) = (EVENTS_DONE.load(Relaxed), EVALUATIONS.load(Relaxed));
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(runner::PROGRESS_EVERY) {
            let elapsed = started.elapsed().as_secs_f64();
            let events = EVENTS_DONE.load(Relaxed).saturating_sub(events0);
            let speed = if events > 0 {
                format!("{:.3e} events/s", events as f64 / elapsed.max(1e-9))
            } else {
                "events/s not counted yet".to_string()
            };
            let done = EVALUATIONS.load(Relaxed).saturating_sub(evaluations0);
            allreduce_sim::diag!("progress: calibrate: {done} model evaluations, {elapsed:.0}s elapsed, {speed}");
        }
    });
    Some((tx, handle.ok()?))
}

/// `validate`.
fn cmd_validate(args: ValidateArgs) -> Result<ExitCode, BadInput> {
    let ValidateArgs { scenario, sweep } = args;
    let s = load(&scenario, &sweep.overrides(None))?;
    let pts = runner::points(&s);
    let points = pts.len();
    write_stdout(&format!(
        "{}: ok: '{}', {} algorithm(s) x {} rank count(s) x {} size(s) = {points} point(s)\n",
        allreduce_sim::scenario::units::escape_controls(&scenario.display().to_string()),
        allreduce_sim::scenario::units::escape_controls(&s.name),
        s.algorithms.len(),
        s.ranks.len(),
        s.sizes.len()
    ));
    for pt in &pts {
        let est = estimate::estimate(&s, pt, points == 1);
        write_stdout(&format!("  {}: {}\n", estimate::label(&s, pt), estimate::describe(&est)));
    }
    Ok(ExitCode::SUCCESS)
}

/// `plot`.
fn cmd_plot(args: PlotArgs) -> Result<ExitCode, BadInput> {
    let PlotArgs { report, out } = args;
    let text = files::read_input(&report).map_err(BadInput)?;
    let data = plots::PlotData::from_json(&text, &report.display().to_string()).map_err(BadInput)?;
    let prefix = format!("{}_", plots::slug(&data.name));
    files::plan(&files::Plan { inputs: vec![&report], files: vec![], dirs: vec![("--out", &out, prefix)] })
        .map_err(BadInput)?;
    plots::check_room().map_err(BadInput)?;
    let files = plots::plot_data(&data, &out).map_err(|e| BadInput(format!("--out: {e}")))?;
    if files.is_empty() {
        allreduce_sim::diag!("{}: nothing to plot (no point ran)", esc_path(&report));
    }
    for f in &files {
        write_stdout(&format!("{}\n", esc_path(f)));
    }
    Ok(ExitCode::SUCCESS)
}

/// `merge`.
fn cmd_merge(args: MergeArgs) -> Result<ExitCode, BadInput> {
    let MergeArgs { reports, format, output } = args;
    merge(&reports, format, dash_is_stdout(output).as_deref())
}

/// `tune`.
fn cmd_tune(args: TuneArgs) -> Result<ExitCode, BadInput> {
    let TuneArgs { scenario, emit, output, ranks, sizes, quiet } = args;
    let overrides = Overrides { algorithms: None, ranks, sizes, seed: None, collective: None };
    let s = select::tune::tune_scenario(&load(&scenario, &overrides)?);
    let out = plan_file(&scenario, &[], "--output", dash_is_stdout(output).as_deref())?;
    // What tune keeps of each point is the run's report, as a table's rows would.
    let (form, fewer) = (estimate::ReportForm::Text, "--ranks or --sizes");
    let (plans, memory_limit) =
        estimate::checked_plan(&s, None, None, "--max-memory", form, fewer).map_err(BadInput)?;
    let memory_limit = estimate::check_reservable(&s, &plans, form, fewer, memory_limit).map_err(BadInput)?;
    let report = runner::run_planned(&s, plans, &runner::RunOptions { shard: None, progress: !quiet, memory_limit });
    let tuned = select::tune::summarise(&report);
    let emit = match emit {
        Emit::OmpiRules => select::tune::Emit::OmpiRules,
        Emit::NcclTuner => select::tune::Emit::NcclTuner,
        Emit::Table => select::tune::Emit::Table,
        Emit::Json => select::tune::Emit::Json,
    };
    let text = select::tune::render(&tuned, emit);
    write_or_print(&text, out.as_ref(), "the output")?;
    // tune runs every algorithm of the collective, not only the scenario's: "run the
    // scenario to see them" sent the user to a run where every check held.
    let failures = allreduce_sim::report::failure_lines(&report);
    let hint = if failures.is_empty() { String::new() } else { format!(":\n{}", failures.trim_end()) };
    Ok(checks_status(&report, &hint))
}

/// `explain`.
fn cmd_explain(args: ExplainArgs) -> Result<ExitCode, BadInput> {
    let ExplainArgs { algorithm, collective, ranks, size, nics, alpha, bandwidth, cost_per_byte, params, scenario } =
        args;
    let collective = match collective {
        None => Collective::Allreduce,
        Some(name) => Collective::from_name(&name).ok_or_else(|| {
            BadInput(format!("--collective: '{name}' is not known; allowed: {}", Collective::names()))
        })?,
    };
    // A selector is no schedule: say so rather than calling a listed id unknown.
    if allreduce_sim::selectors::is_selector(&algorithm) {
        return Err(BadInput(format!(
            "'{}' is a selector, which picks an algorithm per point; explain shows one algorithm's schedule: run \
             the scenario to see its pick (the selection column), then explain that algorithm",
            esc(&algorithm)
        )));
    }
    let unit = |flag: &str, r: Result<f64, String>| r.map_err(|e| BadInput(format!("{flag}: {e}")));
    let machine = match &scenario {
        Some(path) => Some(load(path, &Overrides::default())?),
        None => None,
    };
    let params: Vec<(String, ParamValue)> = params.iter().map(|p| parse_param(p)).collect::<Result<_, _>>()?;
    // A key given twice was taken once and the second reported as unknown.
    if let Some((k, _)) = params.iter().enumerate().find_map(|(i, (k, _))| params[..i].iter().find(|(o, _)| o == k)) {
        return Err(BadInput(format!("--param {}: given twice; give each parameter once", esc(k))));
    }
    let mut req = explain::Request {
        collective,
        algorithm,
        params,
        ranks: ranks.or_else(|| machine.as_ref().and_then(|s| s.ranks.first().copied())).unwrap_or(4),
        bytes: scenario::units::parse_size(&size).map_err(|e| BadInput(format!("--size: {e}")))?,
        nics,
        alpha: unit("--alpha", scenario::units::parse_time(&alpha))?,
        bandwidth: unit("--bandwidth", scenario::units::parse_bandwidth(&bandwidth))?,
        cost_per_byte: unit("--cost-per-byte", scenario::units::parse_time(&cost_per_byte))?,
        topology: None,
    };
    // Where the machine's file gives the topology, for a refusal that is the machine's.
    let mut topology_at = None;
    if let Some(s) = machine {
        req.topology = Some(s.topology);
        req.cost_per_byte = s.cost_per_byte;
        topology_at = Some(s.topology_location).filter(|l| !l.is_empty());
    }
    write_stdout(&explain::explain(&req).map_err(|e| {
        match &topology_at {
            // The algorithm does not fit the --scenario's machine: name the machine's line.
            Some(at) if e.starts_with("the scenario's topology") || e.contains(" cannot run here: ") => {
                BadInput(format!("{at}: topology: {e}"))
            }
            _ => BadInput(e),
        }
    })?);
    Ok(ExitCode::SUCCESS)
}

/// `run`.
fn cmd_run(args: RunArgs) -> Result<ExitCode, BadInput> {
    let RunArgs {
        scenario,
        format,
        output,
        sweep,
        seed,
        plot,
        measured,
        gantt,
        shard,
        trace,
        quiet,
        max_memory,
        baseline,
        tolerance,
        junit,
    } = args;
    let s = load(&scenario, &sweep.overrides(seed))?;
    // A bad baseline is refused before anything runs.
    let baseline_path = baseline.clone();
    let baseline = match &baseline {
        Some(path) => {
            allreduce_sim::baseline::check_tolerance(tolerance).map_err(BadInput)?;
            Some(allreduce_sim::baseline::load(path).map_err(BadInput)?)
        }
        None => None,
    };
    if let Some(g) = &gantt {
        plots::check_gantt(&s, g).map_err(BadInput)?;
    }
    // The --measured logs are inputs too: read after the report is written, so an output
    // on one of them destroyed it.
    let mut inputs = vec![Some(scenario.as_path()), baseline_path.as_deref()];
    inputs.extend(measured.iter().map(|m| Some(m.as_path())));
    let output = dash_is_stdout(output);
    let [output, trace, gantt, junit] = plan_run_outputs(&s, &inputs, [output, trace, gantt, junit], plot.as_deref())?;
    // Read before the run, as every other input is: a log that cannot be read was refused
    // only after the sweep, with its plots already drawn.
    let measured = read_measured(&measured, &s).map_err(BadInput)?;
    // A report written to `x.json` without `--format` is JSON, as a user naming the
    // file expects; a table there was read as a broken JSON file.
    let format = format.unwrap_or_else(|| Format::of_file(output.as_ref().map(|o| o.path.as_path())));
    // Every point is built and estimated before any runs: a sweep of millions of points
    // took a minute here with nothing said.
    let points = s.point_count(shard);
    if !quiet && points >= PLANNING_SAID {
        // A sweep refused for its count is refused before it is said to be planned.
        estimate::check_point_count(&s, shard, format.form(), RUN_FEWER).map_err(BadInput)?;
        allreduce_sim::diag!("planning {points} points: each is built and its memory estimated before any runs");
    }
    let (plans, memory_limit) =
        estimate::checked_plan(&s, shard, max_memory.as_deref(), "--max-memory", format.form(), RUN_FEWER)
            .map_err(BadInput)?;
    let recording = if trace.is_some() { Some("--trace") } else { gantt.is_some().then_some("--gantt") };
    let picked = match recording {
        Some(flag) => {
            // A selector's pick is known only once its candidates ran: refuse first what
            // no pick could make recordable, then what the pick cannot.
            let fit = refuse_unrecordable_selector(&s, flag)?;
            let picked = pick_recorded(&s)?;
            refuse_long_recording(picked.as_ref().unwrap_or(&s), flag, picked.as_ref().map(|_| (&s, fit.as_slice())))?;
            picked
        }
        None => None,
    };
    let recorded = picked.as_ref().unwrap_or(&s);
    let memory_limit =
        estimate::check_reservable(&s, &plans, format.form(), RUN_FEWER, memory_limit).map_err(BadInput)?;
    // Ctrl-C: stop between points and write what finished; once the points are done,
    // stop between the files written after the report. A second Ctrl-C ends the process
    // at once (every file is whole or untouched: each is renamed into place).
    static WRITING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    // A SIGINT the caller set to be ignored (`trap '' INT`) stays ignored. The handler's
    // thread takes a stack of RUST_MIN_STACK: where it cannot start, or the handler is
    // not set, the process's own handler stays (Ctrl-C ends it at once, status 130,
    // removing the file being written) rather than a handler nobody reads.
    let handled = !allreduce_sim::process::ignored(libc::SIGINT)
        && allreduce_sim::process::room_for_threads(1, allreduce_sim::process::default_stack());
    let set = handled
        && ctrlc::set_handler(|| {
            if runner::STOP.swap(true, std::sync::atomic::Ordering::Relaxed) {
                allreduce_sim::process::remove_temp();
                std::process::exit(i32::from(EXIT_INTERRUPTED));
            }
            if WRITING.load(std::sync::atomic::Ordering::Relaxed) {
                allreduce_sim::diag!(
                    "interrupted: stopping once the file being written is whole (Ctrl-C again to quit at once)"
                );
            } else {
                allreduce_sim::diag!("interrupted: finishing the points under way (Ctrl-C again to quit at once)");
            }
        })
        .is_ok();
    if handled && !set {
        allreduce_sim::process::end_on_signals();
    }
    let report = match &trace {
        Some(out) => run_traced(recorded, out)?,
        None => runner::run_planned(&s, plans, &runner::RunOptions { shard, progress: !quiet, memory_limit }),
    };
    // Whether the points were stopped, read before the report is written: a Ctrl-C that
    // came while it was written (after every point finished) stops the plots, not the
    // points, and the report holds every point.
    let points_stopped = runner::STOP.load(std::sync::atomic::Ordering::Relaxed);
    WRITING.store(true, std::sync::atomic::Ordering::Relaxed);
    emit(&report, format, output.as_ref())?;
    if points_stopped {
        let all = s.point_count(shard);
        allreduce_sim::diag!(
            "interrupted: the report holds the {} of {all} point(s) that finished",
            report.results.len()
        );
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    if let Some(dir) = &plot {
        let flagged = |e: String| BadInput(format!("--plot: {e}"));
        let mut files = plots::plot_report(&report, dir).map_err(flagged)?;
        if !measured.is_empty() {
            let points = measured_points(&measured, &report);
            files.extend(plots::plot_measured(&report, &points, dir).map_err(flagged)?);
        }
        allreduce_sim::diag!("wrote {} plot file(s) to {}", files.len(), esc_path(dir));
    }
    let stopped = || runner::STOP.load(std::sync::atomic::Ordering::Relaxed);
    if let Some(g) = gantt.as_ref().filter(|_| !stopped()) {
        g.write(|tmp| plots::write_gantt(recorded, tmp, &g.path)).map_err(BadInput)?;
        allreduce_sim::diag!("wrote {}", esc_path(&g.path));
    }
    if stopped() {
        let skipped: Vec<&str> = [
            (plot.is_some(), "the plots not yet drawn"),
            (gantt.is_some(), "--gantt"),
            (baseline.is_some(), "the --baseline comparison"),
        ]
        .into_iter()
        .filter_map(|(given, what)| given.then_some(what))
        .collect();
        allreduce_sim::diag!("interrupted: the report holds every point; skipped: {}", skipped.join(", "));
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    let gate_held = match &baseline {
        Some(b) => gate(b, &report, tolerance, junit.as_ref())?,
        None => true,
    };
    Ok(run_status(&report, shard, gate_held))
}

/// Every file `run` writes (`--output`, `--trace`, `--gantt`, `--junit`, and `--plot`'s
/// directory), checked against its inputs (the scenario, the baseline) and one another
/// before it runs (see allreduce_sim::files).
fn plan_run_outputs(
    s: &Scenario,
    inputs: &[Option<&std::path::Path>],
    files: [Option<PathBuf>; 4],
    plot: Option<&std::path::Path>,
) -> Result<[Option<Output>; 4], BadInput> {
    const FLAGS: [&str; 4] = ["--output", "--trace", "--gantt", "--junit"];
    let named = FLAGS.iter().zip(&files).filter_map(|(flag, p)| p.as_deref().map(|p| (*flag, p))).collect();
    let dirs = plot.iter().map(|d| ("--plot", *d, format!("{}_", plots::slug(&s.name)))).collect();
    let inputs = inputs.iter().flatten().copied().collect();
    let mut outs = files::plan(&files::Plan { inputs, files: named, dirs }).map_err(BadInput)?.into_iter();
    Ok(files.map(|f| f.map(|_| outs.next().expect("planned"))))
}

/// --trace and --gantt record one algorithm: on a selector's point, its pick (said on
/// standard error); `None` when the point is an algorithm's.
fn pick_recorded(s: &Scenario) -> Result<Option<Scenario>, BadInput> {
    let run = |s: &Scenario, pt: &runner::Point| runner::run_point_observed(s, pt, &mut NoObserver);
    Ok(select::pick_single(s, &run).map_err(BadInput)?.map(|(one, note)| {
        allreduce_sim::diag!("{}", esc(&note));
        one
    }))
}

/// `run`'s exit status once the report is written: 1 for a failed check or a baseline
/// gate that did not hold, [`EXIT_NOTHING_RAN`] for a whole sweep of n/a points.
fn run_status(report: &Report, shard: Option<Shard>, gate_held: bool) -> ExitCode {
    let failed = report.results.iter().filter(|r| !r.passed()).count();
    let cut = report.results.iter().filter(|r| r.only_cut_off()).count();
    if failed > 0 && cut == failed && gate_held {
        allreduce_sim::diag!(
            "{cut} of {} point(s) cut off: link faults left messages with no route (each point's cut_off \
             says who waits for whom)",
            report.results.len()
        );
        return ExitCode::from(EXIT_CUT_OFF);
    }
    if failed > 0 {
        allreduce_sim::diag!("{failed} of {} point(s) failed a check", report.results.len());
        return ExitCode::from(1);
    }
    if !gate_held {
        return ExitCode::from(1);
    }
    if !report.results.is_empty() && report.results.iter().all(|r| r.not_applicable.is_some()) {
        // A shard may hold only n/a points while the other shards run theirs.
        let whole = if shard.is_some() { "this shard's" } else { "the sweep's" };
        allreduce_sim::diag!(
            "no point ran: all {} of {whole} point(s) are not applicable (the report gives each \
                 reason); nothing was simulated",
            report.results.len()
        );
        if shard.is_none() {
            return ExitCode::from(EXIT_NOTHING_RAN);
        }
    }
    ExitCode::SUCCESS
}

/// `--output -` of a command that prints its result: standard output, as most tools read
/// `-` (it wrote a file named `-`); `./-` still names that file.
fn dash_is_stdout(output: Option<PathBuf>) -> Option<PathBuf> {
    output.filter(|o| o.as_os_str() != "-")
}

/// Render `report` in `format` to `output`, or to standard output.
fn emit(report: &Report, format: Format, output: Option<&Output>) -> Result<(), BadInput> {
    let exporter: &dyn Exporter = match format {
        Format::Table => &Table,
        Format::Json => &Json,
        Format::Csv => &Csv,
    };
    write_or_print(&exporter.render(report), output, "the report")
}

/// Write `text` to `output`, or print it. A write that fails after the work was done
/// prints `text` on standard output instead, so the work is not lost, and says so.
fn write_or_print(text: &str, output: Option<&Output>, what: &str) -> Result<(), BadInput> {
    match output {
        Some(out) => out.write_text(text).map_err(|e| {
            write_stdout(text);
            BadInput(format!("{e}; {what} was printed on standard output instead"))
        }),
        None => {
            write_stdout(text);
            Ok(())
        }
    }
}

/// Check the one output file of a command that reads `input` (and `more` inputs), before
/// it runs.
fn plan_file(
    input: &std::path::Path,
    more: &[PathBuf],
    flag: &'static str,
    output: Option<&std::path::Path>,
) -> Result<Option<Output>, BadInput> {
    let mut inputs = vec![input];
    inputs.extend(more.iter().map(PathBuf::as_path));
    let planned =
        files::plan(&files::Plan { inputs, files: output.map(|o| (flag, o)).into_iter().collect(), dirs: vec![] })
            .map_err(BadInput)?;
    Ok(planned.into_iter().next())
}

/// `--trace` and `--gantt` record every interval of their point, up to
/// [`allreduce_sim::timeline::MAX_INTERVALS`]: refuse, before simulating, a point whose
/// exact message count is already above that (a point of an algorithm with only an upper
/// bound on its messages is run, and refused after if it overflowed). `picked`: the
/// point is a selector's pick, with the selector's scenario and the candidates that
/// could have been recorded (named in the message).
fn refuse_long_recording(s: &Scenario, flag: &str, picked: Option<(&Scenario, &[String])>) -> Result<(), BadInput> {
    let points = runner::points(s);
    let [pt] = points.as_slice() else { return Ok(()) };
    if !estimate::timeline_overflows(s, pt) {
        return Ok(());
    }
    let planned = estimate::Planned::new(s, pt, true);
    let sends = match planned.messages() {
        (m, true) => format!("{m}"),
        (_, false) => format!("at least {}", planned.messages_at_least()),
    };
    let limit = allreduce_sim::timeline::MAX_INTERVALS;
    let advice = format!("choose fewer ranks (--ranks) or a smaller size (--sizes), or run it without {flag}");
    let Some((selector, fit)) = picked else {
        return Err(BadInput(format!(
            "{flag}: {} sends {sends} messages, more than the {limit} intervals a recording holds; {advice}",
            estimate::label(s, pt),
        )));
    };
    let (entry, ranks, bytes) = (&selector.algorithms[0].name, pt.ranks, pt.bytes);
    let others = if fit.is_empty() {
        String::new()
    } else {
        format!(
            "; of the algorithms it chose from, {} can be recorded: name one in --algorithms to record it",
            some_of(fit)
        )
    };
    Err(BadInput(format!(
        "{flag}: {entry} picks {} at P = {ranks}, S = {}, which sends {sends} messages, more than the {limit} \
         intervals a recording holds{others}; or {advice}",
        planned.row_label(),
        allreduce_sim::units::fmt_bytes(bytes),
    )))
}

/// `--trace` and `--gantt` on a selector's single point record its pick, known only once
/// the candidates ran (`auto` runs them all). Refuse, before anything runs, a point none
/// of whose candidates could be recorded: even the cheapest one's exact message count
/// is above [`allreduce_sim::timeline::MAX_INTERVALS`]. Where some could and some could
/// not, the selector runs and its pick is recorded if it can be (a recording never
/// swaps the pick for another algorithm); a line on standard error says beforehand
/// which candidates could not. The labels of the candidates that may be recorded.
fn refuse_unrecordable_selector(s: &Scenario, flag: &str) -> Result<Vec<String>, BadInput> {
    let points = runner::points(s);
    let [pt] = points.as_slice() else { return Ok(Vec::new()) };
    let candidates = estimate::candidates(s, pt);
    let (over, fit): (Vec<_>, Vec<_>) = candidates.into_iter().partition(|c| c.overflows);
    let fit: Vec<String> = fit.into_iter().map(|c| c.label).collect();
    let limit = allreduce_sim::timeline::MAX_INTERVALS;
    let entry = &s.algorithms[pt.algo].name;
    let at = format!("P = {}, S = {}", pt.ranks, allreduce_sim::units::fmt_bytes(pt.bytes));
    match over.iter().min_by_key(|c| c.messages) {
        None => Ok(fit),
        Some(cheapest) if fit.is_empty() => {
            let what = if over.len() == 1 {
                format!("{entry} picks {} at {at}, which sends", cheapest.label)
            } else {
                format!(
                    "none of the {} algorithms {entry} chooses from at {at} can be recorded: the cheapest, {}, sends",
                    over.len(),
                    cheapest.label
                )
            };
            Err(BadInput(format!(
                "{flag}: {what} {}{} messages, more than the {limit} intervals a recording holds; choose fewer ranks \
                 (--ranks) or a smaller size (--sizes), or run it without {flag}",
                if cheapest.exact { "" } else { "at least " },
                cheapest.messages
            )))
        }
        Some(_) => {
            let labels: Vec<String> = over.iter().map(|c| c.label.clone()).collect();
            allreduce_sim::diag!(
                "{}",
                esc(&format!(
                    "{flag}: {} of the {} algorithms {entry} chooses from at {at} cannot be recorded (more than \
                     {limit} intervals): {}; if it picks one of them, {flag} is refused once the pick is known",
                    over.len(),
                    over.len() + fit.len(),
                    some_of(&labels)
                ))
            );
            Ok(fit)
        }
    }
}

/// Up to five of `labels`, then how many more.
fn some_of(labels: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut out = labels.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if labels.len() > SHOWN {
        out.push_str(&format!(" and {} more", labels.len() - SHOWN));
    }
    out
}

fn list_text() -> String {
    let mut out = String::new();
    for c in Collective::ALL {
        out.push_str(&format!("== {c} ==\n\n"));
        list_collective(&mut out, c);
    }
    out.push_str("== selectors (algorithm ids that choose an algorithm per point) ==\n\n");
    for sel in &select::SELECTORS {
        out.push_str(&format!("{}\n  {}\n", sel.id, sel.summary));
        out.push_str(&format!("  source:      {}\n", sel.source));
        out.push_str(&format!("  covers:      {}\n", sel.covers));
        if !sel.params.is_empty() {
            out.push_str(&format!("  parameters:  {}\n", sel.params.join("; ")));
        }
        out.push('\n');
    }
    out
}

/// The `list` entries of collective `c`'s algorithms.
fn list_collective(out: &mut String, c: Collective) {
    for a in algos::registry_of(c) {
        out.push_str(&format!("{}\n  {}\n", a.id, a.summary));
        out.push_str(&format!("  source:      {}\n", a.source));
        out.push_str(&format!("  requires:    {}\n", a.requires));
        out.push_str(&format!("  closed form: {}\n", a.closed_form));
        if !a.params.is_empty() {
            out.push_str(&format!("  parameters:  {}\n", a.params.join("; ")));
        }
        out.push('\n');
    }
}

/// `run --trace FILE`: run the scenario's single point recording its timeline, write
/// the Chrome trace, return the report.
fn run_traced(s: &Scenario, out: &Output) -> Result<Report, BadInput> {
    let path = &out.path;
    let points = runner::points(s);
    if points.len() != 1 {
        return Err(BadInput(format!(
            "--trace records a single point, but this run is a sweep of {} points \
             ({} algorithm(s) x {} rank count(s) x {} size(s)); pick one with --algorithms, --ranks and --sizes",
            points.len(),
            s.algorithms.len(),
            s.ranks.len(),
            s.sizes.len()
        )));
    }
    let (result, timeline) = runner::run_point_traced(s, &points[0]);
    let Some(timeline) = timeline else {
        let why = match &result.not_applicable {
            Some(why) => format!("{} does not run here: {why}", result.algorithm),
            None => format!("more than {} operations", allreduce_sim::timeline::MAX_INTERVALS),
        };
        return Err(BadInput(format!("--trace: nothing to write for {}: {why}", esc_path(path))));
    };
    let meta = serde_json::json!({
        "tool": "allreduce-sim",
        "scenario": s.name,
        "algorithm": result.algorithm,
        "ranks": result.ranks,
        "bytes": result.bytes,
        "time_s": result.time_s,
    });
    out.write(|tmp| {
        let write = || -> std::io::Result<()> {
            let mut w = std::io::BufWriter::new(std::fs::File::create(tmp)?);
            trace::write_trace(&timeline, meta, &mut w)?;
            std::io::Write::flush(&mut w)
        };
        write().map_err(|e| format!("cannot write {}: {e}", esc_path(path)))
    })
    .map_err(BadInput)?;
    Ok(Report { scenario: s.clone(), results: vec![result], shard: None, interrupted: false })
}

/// `run --baseline`: compare, print the comparison on stderr (stdout may carry the
/// report), write the JUnit file; whether the gate held.
fn gate(
    baseline: &allreduce_sim::baseline::Baseline,
    report: &Report,
    tolerance: f64,
    junit: Option<&Output>,
) -> Result<bool, BadInput> {
    let cmp = allreduce_sim::baseline::compare(baseline, report, tolerance);
    allreduce_sim::diag_text!("{}", esc(&cmp.render()));
    if let Some(out) = junit {
        out.write_text(&cmp.junit()).map_err(BadInput)?;
    }
    Ok(cmp.passed())
}

/// `merge`: read the shards, join them, export.
fn merge(paths: &[PathBuf], format: Format, output: Option<&std::path::Path>) -> Result<ExitCode, BadInput> {
    let out = plan_file(&paths[0], &paths[1..], "--output", output)?;
    let mut inputs = Vec::with_capacity(paths.len());
    for p in paths {
        inputs.push((p.display().to_string(), files::read_input(p).map_err(BadInput)?));
    }
    let report = shard::merge(&inputs).map_err(|e| BadInput(e.to_string()))?;
    emit(&report, format, out.as_ref())?;
    Ok(checks_status(&report, ""))
}

/// The exit status of `merge` and `tune` from their report's checks, as `run` of the
/// whole sweep would exit: 3 where link faults' cut-offs are the only failures, 1 for any
/// other failed check.
fn checks_status(report: &Report, hint: &str) -> ExitCode {
    let failed = report.results.iter().filter(|r| !r.passed()).count();
    let cut = report.results.iter().filter(|r| r.only_cut_off()).count();
    if failed > 0 && cut == failed {
        allreduce_sim::diag!(
            "{cut} of {} point(s) cut off: link faults left messages with no route (each point's cut_off \
             says who waits for whom){hint}",
            report.results.len()
        );
        return ExitCode::from(EXIT_CUT_OFF);
    }
    if failed > 0 {
        allreduce_sim::diag!("{failed} of {} point(s) failed a check{hint}", report.results.len());
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// `--param KEY=VALUE`: a whole number, a number, or text, as in a scenario file.
fn parse_param(text: &str) -> Result<(String, ParamValue), BadInput> {
    let (k, v) = text
        .split_once('=')
        .filter(|(k, _)| !k.trim().is_empty())
        .ok_or_else(|| BadInput(format!("--param '{text}': write KEY=VALUE, e.g. --param segments=4")))?;
    let v = v.trim();
    // An integer past u64 or below 0 stays text, so a refusal quotes it as written
    // (`'99999999999999999999'`, `'-2'`, as a scenario's does), not as the float it reads as.
    let integer = v.strip_prefix(['-', '+']).unwrap_or(v);
    let value = if let Ok(i) = v.parse::<u64>() {
        ParamValue::Int(i)
    } else if !integer.is_empty() && integer.bytes().all(|b| b.is_ascii_digit()) {
        ParamValue::Str(v.to_string())
    } else if let Ok(f) = v.parse::<f64>() {
        ParamValue::Float(f)
    } else {
        ParamValue::Str(v.to_string())
    };
    Ok((k.trim().to_string(), value))
}

/// The measured points of `logs` (`run --measured`) of the collectives `report` ran, as
/// plot points labelled `measured: FILE` (busbw by nccl-tests' factor for the collective).
fn measured_points(logs: &[(PathBuf, Vec<allreduce_sim::calibrate::Run>)], report: &Report) -> Vec<plots::PlotPoint> {
    use allreduce_sim::calibrate;
    let mut out = Vec::new();
    for (path, runs) in logs {
        let stem = path.file_stem().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned());
        for r in runs {
            let Some(p) = r.ranks else { continue };
            // A log the report shares nothing with draws nothing: say so, not silently.
            let held: std::collections::BTreeSet<usize> =
                report.results.iter().filter(|q| q.collective == r.collective).map(|q| q.ranks).collect();
            if held.is_empty() {
                allreduce_sim::diag!(
                    "note: --measured {}:{}: a run of {}, a collective the report does not hold; not drawn",
                    esc_path(path),
                    r.line,
                    r.collective
                );
                continue;
            }
            if !held.contains(&p) {
                let ranks: Vec<String> = held.iter().map(ToString::to_string).collect();
                allreduce_sim::diag!(
                    "note: --measured {}:{}: a run on {p} ranks, where the report's {} points are on {} ranks; not \
                     drawn (a chart is drawn per rank count the two share)",
                    esc_path(path),
                    r.line,
                    r.collective,
                    ranks.join(", ")
                );
            }
            let label = match r.collective {
                Collective::Allreduce => format!("measured: {stem}"),
                c => format!("{c} measured: {stem}"),
            };
            for s in r.samples.iter().filter(|s| s.time_s > 0.0) {
                let busbw = s.bytes as f64 / s.time_s * calibrate::busbw_factor(r.collective, p);
                out.push(plots::PlotPoint {
                    collective: r.collective,
                    algorithm: label.clone(),
                    ranks: p,
                    bytes: s.bytes,
                    time_s: Some(s.time_s),
                    busbw_bps: Some(busbw),
                    ..Default::default()
                });
            }
        }
    }
    out
}

/// The `--measured` logs of a run of `s`, read. An OSU log does not say how many ranks
/// ran it: it is read at the sweep's rank count where the sweep has one.
fn read_measured(logs: &[PathBuf], s: &Scenario) -> Result<Vec<(PathBuf, Vec<allreduce_sim::calibrate::Run>)>, String> {
    use allreduce_sim::calibrate;
    let opts = calibrate::Options { ranks: (s.ranks.len() == 1).then(|| s.ranks[0]), ..Default::default() };
    logs.iter()
        .map(|path| {
            let runs = calibrate::read_log(path, &opts).map_err(|e| {
                // calibrate's own advice names its flag; run's --ranks sets the sweep.
                // The flag first: the log is named by the flag, not by the scenario.
                format!(
                    "--measured {}",
                    e.to_string().replace(
                        "give --ranks N",
                        "--measured reads it at the sweep's rank count, where the sweep has one (--ranks N)",
                    )
                )
            })?;
            Ok((path.clone(), runs))
        })
        .collect()
}
