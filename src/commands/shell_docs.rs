//! `kvtop completions SHELL` and `kvtop man`: generated from the clap definition, so they
//! always list the commands and flags this binary has.
//!
//! Both print text kvtop itself wrote (no outside text), so they go to stdout as they are:
//! a completion script must reach the shell byte for byte.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::Cli;

/// The name completions are registered for: the command users type.
const BIN_NAME: &str = "kvtop";

/// Print the completion script for `shell`.
#[inline(never)] // a command entry: see main.rs
pub fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), BIN_NAME, &mut script);
    write_stdout(&script)
}

/// Print the man page of kvtop (its commands listed), or with `out_dir` write one page per
/// command there (`kvtop.1`, `kvtop-check.1`, …).
#[inline(never)] // a command entry: see main.rs
pub fn man(out_dir: Option<&Path>) -> ExitCode {
    let command = Cli::command();
    match out_dir {
        Some(dir) => {
            let written =
                std::fs::create_dir_all(dir).and_then(|()| clap_mangen::generate_to(command, dir));
            match written {
                Ok(()) => {
                    super::err(&format!("kvtop man: pages written to {}", dir.display()));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    super::err(&format!("kvtop man: {}: {e}", dir.display()));
                    ExitCode::FAILURE
                }
            }
        }
        None => {
            let mut page = Vec::new();
            if let Err(e) = clap_mangen::Man::new(command).render(&mut page) {
                super::err(&format!("kvtop man: {e}"));
                return ExitCode::FAILURE;
            }
            write_stdout(&page)
        }
    }
}

fn write_stdout(bytes: &[u8]) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`| head`) is the reader's choice, not a failure worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            super::err(&format!("kvtop: cannot write to stdout: {e}"));
            ExitCode::FAILURE
        }
    }
}
