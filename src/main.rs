//! The `kvtop` binary: parse the command line and hand over to the library.

use std::process::ExitCode;

use kvtop::actions::ActionKind;
use kvtop::cli::{self, CliCommand};
use kvtop::commands;

/// Every command's entry (`commands::*::run`) is `#[inline(never)]`: inlined into this function,
/// all their locals shared one 51 KB frame, and the console kept those stack pages resident for
/// the whole session though only its own command's were used.
fn main() -> ExitCode {
    limit_malloc_arenas();
    let cli = cli::parse_command_line(std::env::args_os().collect());
    match cli.command.unwrap_or(CliCommand::Console) {
        CliCommand::Console if cli.past.from.is_some() => {
            commands::replay_prometheus::run(&cli.past, &cli.global)
        }
        CliCommand::Console => commands::console_cmd::run(&cli.global),
        #[cfg(feature = "demo")]
        CliCommand::Demo(args) => commands::demo::run(args, &cli.global),
        #[cfg(feature = "demo")]
        CliCommand::Sim(args) => commands::sim::run(args, &cli.global),
        CliCommand::Check(args) => commands::check::run(args, &cli.global),
        CliCommand::Replay(args) => commands::replay::run(args, &cli.global),
        CliCommand::Rules { action } => commands::rules_cmd::run(action, &cli.global),
        CliCommand::Drain(args) => {
            commands::action_cmd::run(ActionKind::DrainPod, args, &cli.global)
        }
        CliCommand::Undrain(args) => {
            commands::action_cmd::run(ActionKind::Undrain, args, &cli.global)
        }
        CliCommand::Restart(args) => {
            commands::action_cmd::run(ActionKind::RestartPod, args, &cli.global)
        }
        CliCommand::RolloutRestart(args) => {
            commands::action_cmd::run(ActionKind::RolloutRestart, args, &cli.global)
        }
        CliCommand::Cordon(args) => {
            commands::action_cmd::run(ActionKind::Cordon, args, &cli.global)
        }
        CliCommand::Uncordon(args) => {
            commands::action_cmd::run(ActionKind::Uncordon, args, &cli.global)
        }
        CliCommand::DrainNode(args) => {
            commands::action_cmd::run(ActionKind::DrainNode, args, &cli.global)
        }
        CliCommand::Config { action } => {
            commands::config_cmd::run(action, cli.global.config.as_deref())
        }
        CliCommand::Doctor(args) => commands::doctor::run(args, &cli.global),
        CliCommand::Completions { shell } => commands::shell_docs::completions(shell),
        CliCommand::Man { out_dir } => commands::shell_docs::man(out_dir.as_deref()),
    }
}

/// glibc gives each thread that allocates its own malloc arena (up to eight per core), each
/// keeping freed pages for itself: the runtime's workers and blocking decoders then hold
/// several heaps' worth of slack. Two arenas keep contention low for a console whose threads
/// mostly wait, and its heap near what it holds.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called first thing in main, before
    // any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// The C math functions the binary calls (the simulator's random draws and load curves, a
/// chart's axis steps, tokio's multi-thread scheduler), from the pure-Rust `libm` crate.
/// Defined here, they leave the linker no reason to load glibc's `libm.so.6`, which cost every
/// kvtop process about 0.55 MB of resident pages (code and symbol tables the loader touches at
/// start) for functions a console never calls. `libm` (a port of musl's) is accurate to within
/// one unit in the last place, as glibc is; like every Rust caller, kvtop never reads `errno`
/// after them.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod libm_symbols {
    /// `extern "C" fn NAME(ARGS: f64) -> f64`, each the `libm` crate's function of that name.
    macro_rules! from_libm {
        ($($name:ident($($arg:ident),+);)+) => {$(
            #[unsafe(no_mangle)]
            extern "C" fn $name($($arg: f64),+) -> f64 {
                libm::$name($($arg),+)
            }
        )+};
    }

    from_libm! {
        exp(x);
        log(x);
        log10(x);
        pow(x, y);
        sin(x);
        cos(x);
    }

    /// # Safety
    /// `sin` and `cos` point to writable `f64`s, as C's `sincos` requires of its callers.
    #[unsafe(no_mangle)]
    unsafe extern "C" fn sincos(x: f64, sin: *mut f64, cos: *mut f64) {
        let (s, c) = libm::sincos(x);
        // SAFETY: the caller (code LLVM generated for `sin` and `cos` of one value) passes two
        // valid pointers to f64 slots.
        unsafe {
            sin.write(s);
            cos.write(c);
        }
    }
}
