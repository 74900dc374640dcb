//! Checks and draws module graph files.
//!
//! ```text
//! cargo run --example graph -- check graphs/synthetic5.graph   # summary, or every error
//! cargo run --example graph -- dot graphs/synthetic5.graph | dot -Tsvg > g.svg
//! cargo run --example graph -- types                            # module types known
//! ```
//!
//! Exit status: 0 when the graph is valid, 1 when it has errors (all of
//! them are printed to stderr, one per line, as `file:line: message`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pathstack::core::graph::ModuleGraph;

#[derive(Parser)]
#[command(about = "Check or draw a pathstack module graph file")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check FILE and print a summary (instances, connections, init order).
    Check {
        /// The graph file.
        file: PathBuf,
    },
    /// Check FILE and print it as Graphviz DOT.
    Dot {
        /// The graph file.
        file: PathBuf,
    },
    /// List the module types a graph may use, with services and parameters.
    Types,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let specs = pathstack::module_specs();
    let (file, render): (PathBuf, fn(&ModuleGraph) -> String) = match cli.command {
        Command::Check { file } => (file, ModuleGraph::summary),
        Command::Dot { file } => (file, ModuleGraph::to_dot),
        Command::Types => {
            for spec in specs.iter() {
                println!("{}: {}", spec.name, spec.doc);
                for s in spec.services {
                    let marker = if s.init_after { "<" } else { "" };
                    println!(
                        "  service {marker}{}: {}, {} connection(s)",
                        s.name, s.ty, s.count
                    );
                }
                for p in spec.params {
                    let req = if p.required { "required" } else { "optional" };
                    println!("  param {} ({req}): {}", p.key, p.doc);
                }
            }
            return ExitCode::SUCCESS;
        }
    };
    match ModuleGraph::from_file(&file, &specs) {
        Ok(graph) => {
            print!("{}", render(&graph));
            ExitCode::SUCCESS
        }
        Err(errors) => {
            eprintln!("{errors}");
            eprintln!(
                "{}: {} error{}",
                file.display(),
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            );
            ExitCode::FAILURE
        }
    }
}
