//! The `allreduce-sim` command: parse the command line, turn it and the scenario file
//! into one validated [`Scenario`], run, export. Exit status: 0 ran and every check
//! held, 1 a check failed, 2 bad input (one message on stderr, never a backtrace).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use allreduce_sim::algos;
use allreduce_sim::report::{Csv, Exporter, Json, Table};
use allreduce_sim::runner;
use allreduce_sim::scenario::{self, Overrides, Scenario};

/// A deterministic discrete-event simulator of allreduce algorithms.
///
/// Write a scenario (a machine, the algorithms, the sizes) in YAML and run it: every
/// algorithm's simulated time, its closed-form prediction, bus bandwidth, memory and
/// the numerical error of the real reductions the engine performed.
#[derive(Parser, Debug)]
#[command(name = "allreduce-sim", version, about, long_about)]
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
    Run {
        /// The scenario file (YAML).
        scenario: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Write the report to FILE instead of standard output.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Algorithms to run instead of the file's, comma-separated (see `list`).
        #[arg(long, value_delimiter = ',', value_name = "A,B")]
        algorithms: Option<Vec<String>>,
        /// Rank counts instead of the file's, comma-separated.
        #[arg(long, value_delimiter = ',', value_name = "N,...")]
        ranks: Option<Vec<usize>>,
        /// Sizes per rank instead of the file's, comma-separated (`4KiB,1MiB,1000`).
        #[arg(long, value_delimiter = ',', value_name = "S,...")]
        sizes: Option<Vec<String>>,
        /// Seed for the data instead of the file's.
        #[arg(long)]
        seed: Option<u64>,
    },
    /// List every algorithm with its source, requirements, parameters and closed form.
    List,
    /// Check a scenario file and print what it resolves to; run nothing.
    Validate {
        /// The scenario file (YAML).
        scenario: PathBuf,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    /// Aligned tables for a person.
    Table,
    /// One JSON object: `scenario` and `results`.
    Json,
    /// One row per result.
    Csv,
}

/// A user error: printed as is, exit status 2.
struct BadInput(String);

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are not errors.
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match execute(cli) {
        Ok(code) => code,
        Err(BadInput(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}

fn load(path: &std::path::Path, overrides: &Overrides) -> Result<Scenario, BadInput> {
    let mut s = scenario::load_file(path).map_err(|e| BadInput(e.to_string()))?;
    overrides.apply(&mut s).map_err(|e| BadInput(e.to_string()))?;
    Ok(s)
}

fn execute(cli: Cli) -> Result<ExitCode, BadInput> {
    match cli.command {
        Command::List => {
            print!("{}", list_text());
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate { scenario } => {
            let s = load(&scenario, &Overrides::default())?;
            let points = runner::points(&s).len();
            println!(
                "{}: ok: '{}', {} algorithm(s) x {} rank count(s) x {} size(s) = {points} point(s)",
                scenario.display(),
                s.name,
                s.algorithms.len(),
                s.ranks.len(),
                s.sizes.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Run { scenario, format, output, algorithms, ranks, sizes, seed } => {
            let overrides = Overrides { algorithms, ranks, sizes, seed };
            let s = load(&scenario, &overrides)?;
            let report = runner::run(&s);
            let exporter: &dyn Exporter = match format {
                Format::Table => &Table,
                Format::Json => &Json,
                Format::Csv => &Csv,
            };
            let text = exporter.render(&report);
            match output {
                Some(path) => std::fs::write(&path, text)
                    .map_err(|e| BadInput(format!("cannot write {}: {e}", path.display())))?,
                None => print!("{text}"),
            }
            let failed = report.results.iter().filter(|r| !r.passed()).count();
            if failed > 0 {
                eprintln!("{failed} of {} point(s) failed a check", report.results.len());
                return Ok(ExitCode::from(1));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn list_text() -> String {
    let mut out = String::new();
    for a in algos::registry() {
        out.push_str(&format!("{}\n  {}\n", a.id, a.summary));
        out.push_str(&format!("  source:      {}\n", a.source));
        out.push_str(&format!("  requires:    {}\n", a.requires));
        out.push_str(&format!("  closed form: {}\n", a.closed_form));
        if !a.params.is_empty() {
            out.push_str(&format!("  parameters:  {}\n", a.params.join("; ")));
        }
        out.push('\n');
    }
    out
}
