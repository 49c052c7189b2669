//! Command-line interface: `kvtop [console] | demo | sim | check | doctor | rules | config |
//! completions | man` and the actions. The same definition serves `kubectl kvtop` (the binary
//! installed or linked as `kubectl-kvtop`), shell completions and the man page.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

#[cfg(feature = "demo")]
use kvtop_sim::TimedScenario;

/// `kvtop --version`: the package version and the commit it was built from (see build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("KVTOP_BUILD_COMMIT"),
    ")"
);

/// The executable name kubectl looks for on PATH to run `kubectl kvtop`.
pub const KUBECTL_PLUGIN: &str = "kubectl-kvtop";

/// A terminal operations console for vLLM inference fleets.
#[derive(Debug, Parser)]
#[command(name = "kvtop", version = VERSION, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<CliCommand>,
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(flatten)]
    pub past: PastArgs,
}

/// The console on a past window of a Prometheus server: `kvtop --prometheus URL --from TIME`.
#[derive(Debug, Args, Clone, Default)]
pub struct PastArgs {
    /// With --prometheus: open the console on the past window that starts here, replayed
    /// through the live queries and rules (RFC 3339, `now-DURATION` or `-DURATION`).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, long_help = FROM_PAST_HELP)]
    pub from: Option<String>,
    /// With --from: the window's end (as --from, or +DURATION after it; default: now).
    #[arg(
        long,
        value_name = "TIME",
        allow_hyphen_values = true,
        requires = "from"
    )]
    pub to: Option<String>,
    /// With --from: replay this many times faster than it happened (0.1 to 1000).
    #[arg(long, value_name = "N", value_parser = speed, requires = "from")]
    pub speed: Option<f64>,
    /// With --from: the step between the past window's cycles (default: the scrape interval
    /// Prometheus reports, else --interval).
    #[arg(long, value_name = "DURATION", requires = "from")]
    pub step: Option<String>,
}

const FROM_PAST_HELP: &str = "With --prometheus URL: open the console on the past window that \
starts at TIME, as a console running then would have shown it: each step is the live cycle's \
queries read with query_range, the same derivations and rules, fed on a replay clock (--speed) \
that the time cursor keys move through. TIME is RFC 3339 (2026-11-26T03:12:00Z), `now`, or a \
time before now: `now-DURATION` or `-DURATION` (now-30m, -1h).";

/// Flags that apply to every command that reads the config.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// Config file (default: $XDG_CONFIG_HOME/kvtop/config.toml).
    #[arg(long, global = true, value_name = "FILE", env = "KVTOP_CONFIG")]
    pub config: Option<PathBuf>,
    /// A vLLM /metrics URL to scrape (repeatable; replaces the config file's targets).
    #[arg(short = 't', long = "target", global = true, value_name = "URL")]
    pub targets: Vec<String>,
    /// Scrape interval, e.g. 1s, 500ms (minimum 250ms).
    #[arg(short = 'i', long, global = true, value_name = "DURATION")]
    pub interval: Option<String>,
    /// Per-target scrape timeout (default: 80% of the interval).
    #[arg(long, global = true, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Quantile window: 15s, 1m or 5m.
    #[arg(short = 'w', long, global = true, value_name = "WINDOW")]
    pub window: Option<String>,
    /// Colour theme: default, light, high-contrast, mono, or a file in the themes directory.
    #[arg(long, global = true, value_name = "NAME")]
    pub theme: Option<String>,
    /// Largest accepted /metrics body, e.g. 8MiB.
    #[arg(long, global = true, value_name = "SIZE")]
    pub body_limit: Option<String>,
    /// Log level for the log file (error, warn, info, debug, trace).
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Read the fleet (and GPUs) through this Prometheus server, e.g. http://prometheus:9090.
    #[arg(long, global = true, value_name = "URL")]
    pub prometheus: Option<String>,
    /// Console: start with the rows filtered to TEXT (a pod or engine name, as typed after
    /// `/`) and the detail pane enlarged, e.g. one pod's detail from k9s.
    #[arg(long, global = true, value_name = "TEXT")]
    pub focus: Option<String>,
    /// Record what the console (or `check`) ingests to FILE (scrapes, log lines, Kubernetes
    /// updates, rules instants), for `kvtop replay` and `kvtop check --replay`. An existing FILE is rotated to FILE.1, never overwritten.
    #[arg(long, global = true, value_name = "FILE")]
    pub record: Option<PathBuf>,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// Kubernetes discovery flags; any of them turns discovery on.
#[derive(Debug, Args, Clone, Default)]
pub struct KubeArgs {
    /// Discover vLLM pods through the Kubernetes API (kubeconfig or in-cluster).
    #[arg(long = "kube", global = true)]
    pub kube: bool,
    /// Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to watch (repeatable: several clusters in one view).
    #[arg(long = "context", global = true, value_name = "NAME")]
    pub contexts: Vec<String>,
    /// Namespace to watch (default: the context's).
    #[arg(short = 'n', long, global = true, value_name = "NS")]
    pub namespace: Option<String>,
    /// Watch every namespace.
    #[arg(short = 'A', long, global = true)]
    pub all_namespaces: bool,
    /// Label selector of the vLLM pods (repeatable: a pod matching any is watched).
    #[arg(short = 'l', long = "selector", global = true, value_name = "SELECTOR")]
    pub selectors: Vec<String>,
    /// Refuse every change to the cluster: the console offers no action, and the action
    /// commands send nothing but reads (also `read_only = true` under
    /// `[kubernetes.context.NAME]`). Does not by itself turn discovery on.
    #[arg(long, global = true)]
    pub read_only: bool,
}

impl KubeArgs {
    /// The flags as config overrides.
    pub fn overrides(&self) -> crate::config::KubeOverrides {
        crate::config::KubeOverrides {
            enable: self.kube,
            kubeconfig: self.kubeconfig.clone(),
            contexts: self.contexts.clone(),
            namespace: self.namespace.clone(),
            all_namespaces: self.all_namespaces,
            selectors: self.selectors.clone(),
            read_only: self.read_only,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum CliCommand {
    /// The live console (the default when no command is given).
    Console,
    /// The console on a simulated fleet served in-process: no GPU, no cluster needed.
    #[cfg(feature = "demo")]
    Demo(DemoArgs),
    /// Serve a simulated fleet over HTTP on 127.0.0.1 and print its URLs.
    #[cfg(feature = "demo")]
    Sim(SimArgs),
    /// Observe the fleet (the targets, or with --kube a cluster's vLLM and SGLang pods) for a
    /// while, evaluate the troubleshooting rules, print the findings and exit 0 (healthy),
    /// 1 (warnings), 2 (critical) or 3 (nothing could be scraped).
    Check(CheckArgs),
    /// The console on a recording made with --record: the same views and rules, at its
    /// time; the time cursor keys move through what was replayed.
    Replay(ReplayArgs),
    /// The troubleshooting rules.
    Rules {
        #[command(subcommand)]
        action: RulesAction,
    },
    /// Drain a vLLM pod: remove its routing label, wait for in-flight requests, evict it.
    Drain(ActionArgs),
    /// Put a drained pod back into routing (the labels its drain removed, recorded on the pod).
    Undrain(ActionArgs),
    /// Restart a pod by deleting it (its controller recreates it).
    Restart(ActionArgs),
    /// Restart a Deployment's pods one at a time (like `kubectl rollout restart`).
    RolloutRestart(ActionArgs),
    /// Mark a node unschedulable.
    Cordon(ActionArgs),
    /// Mark a node schedulable again.
    Uncordon(ActionArgs),
    /// Cordon a node and evict every pod on it that no DaemonSet owns.
    DrainNode(ActionArgs),
    /// Show, create or check the config file.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Check in one run everything kvtop needs (config, rules, each context and its RBAC,
    /// discovery, every engine's metrics, Prometheus) and print a verdict and a fix for each.
    /// Exit code 0 when everything needed is there, 1 when something is missing.
    Doctor(DoctorArgs),
    /// Print the shell completion script (e.g. `source <(kvtop completions bash)`).
    Completions {
        /// The shell: bash, zsh, fish (also elvish, powershell).
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write one page per command into a directory.
    Man {
        /// Write kvtop.1 and kvtop-COMMAND.1 for every command into this directory.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
}

/// Output format of `kvtop doctor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DoctorOutput {
    /// A table: verdict, check, what was found and the fix.
    Text,
    /// `{"ok": …, "checks": [{"area", "check", "verdict", "detail", "fix"}]}`.
    Json,
}

#[derive(Debug, Args, Clone)]
pub struct DoctorArgs {
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = DoctorOutput::Text)]
    pub output: DoctorOutput,
    /// Rules file merged over the built-in rules (default: rules.toml beside the config
    /// file, if it exists).
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
}

/// vLLM exposition dialect the simulator speaks.
#[cfg(feature = "demo")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VllmVersion {
    /// vLLM 0.10 and later (V1 engine).
    V1,
    /// The V0 engine's names and buckets.
    V0,
}

/// Help for `--scenario`, shared by the commands that run the simulator.
#[cfg(feature = "demo")]
const SCENARIO_HELP: &str = "A fault scenario for one engine: NAME@ENGINE[+DELAY], ENGINE an index \
or a pod name, DELAY when it starts (e.g. oom-crashloop@2+30s); repeatable. NAME is one of: \
kv-thrash, low-throughput, stuck-requests, oom-crashloop, high-cpu, spec-decode-poor, \
prefix-miss, circuit-open, empty-worker-trap, queue-buildup, idle, down, kv-pressure, \
gpu-thermal, xid[:CODE], gpu-low-util, healthy. With --scenario, every other engine is healthy.";

/// `kvtop replay FILE`.
#[derive(Debug, Args, Clone)]
pub struct ReplayArgs {
    /// The recording (`--record FILE`).
    pub file: PathBuf,
    /// Replay this many times faster than it was recorded (0.1 to 1000).
    #[arg(long, default_value_t = 1.0, value_parser = speed)]
    pub speed: f64,
    /// Start here (RFC 3339, or +DURATION from the recording's start); what comes before is
    /// read at once, so rates and windows are as they were.
    #[arg(long, value_name = "TIME")]
    pub from: Option<String>,
}

fn speed(text: &str) -> Result<f64, String> {
    let speed: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if (0.1..=1000.0).contains(&speed) {
        Ok(speed)
    } else {
        Err("must be between 0.1 and 1000".into())
    }
}

#[cfg(feature = "demo")]
#[derive(Debug, Args, Clone)]
pub struct DemoArgs {
    /// Number of simulated engines.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub engines: u32,
    #[arg(long, value_enum, default_value_t = VllmVersion::V1)]
    pub vllm_version: VllmVersion,
    /// Random seed of the traffic model.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Replaces the demo's scripted story (see `kvtop demo --help`).
    #[arg(long = "scenario", value_name = "NAME@ENGINE[+DELAY]", long_help = SCENARIO_HELP)]
    pub scenarios: Vec<TimedScenario>,
    /// Scrape the simulated engines directly, without the simulated Kubernetes API (no pod
    /// state, Deployments or actions).
    #[arg(long)]
    pub no_kube: bool,
}

#[cfg(feature = "demo")]
#[derive(Debug, Args, Clone)]
pub struct SimArgs {
    /// Number of simulated engines.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub engines: u32,
    /// First port; engine i listens on port-base + i (default: free ports chosen by the system).
    #[arg(long, value_name = "PORT")]
    pub port_base: Option<u16>,
    #[arg(long, value_enum, default_value_t = VllmVersion::V1)]
    pub vllm_version: VllmVersion,
    /// Random seed of the traffic model.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// GPUs per simulated node: engine i runs on node i / N (with --kube, fewer per node
    /// gives several nodes to cordon and drain).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub gpus_per_node: u16,
    /// Simulated seconds per wall-clock second (above 0, below 10000).
    #[arg(long, default_value_t = 1.0, value_parser = time_scale)]
    pub time_scale: f64,
    #[arg(long = "scenario", value_name = "NAME@ENGINE[+DELAY]", long_help = SCENARIO_HELP)]
    pub scenarios: Vec<TimedScenario>,
    /// With --kube (serve a simulated Kubernetes API for the fleet): where to write its
    /// kubeconfig (default: sim-kubeconfig.yaml in kvtop's state directory).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig_out: Option<PathBuf>,
    /// With --kube: the name of the simulated cluster, its user and its context in the
    /// kubeconfig, so that several simulated clusters can be merged (`KUBECONFIG=a:b`).
    #[arg(long, value_name = "NAME", default_value = "kvtop-sim", value_parser = kubeconfig_name)]
    pub context_name: String,
}

/// Output format of `kvtop check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckOutput {
    /// Findings as text.
    Text,
    /// k8sgpt-like JSON (`status`, `problems`, `results`).
    Json,
    /// An incident snapshot to paste into a ticket.
    Markdown,
}

#[derive(Debug, Args, Clone)]
pub struct CheckArgs {
    #[cfg(feature = "demo")]
    #[command(flatten)]
    pub simulated: SimulatedCheckArgs,
    /// How long to observe (default: the longest `for` among the rules that can fire on this
    /// fleet, plus two scrape intervals, at most 5m).
    #[arg(short = 'd', long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = CheckOutput::Text)]
    pub output: CheckOutput,
    /// Rules file merged over the built-in rules (default: rules.toml beside the config
    /// file, if it exists).
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Check a recording instead of live targets: the rules run on its data at its instants.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// With --replay: report from this instant (RFC 3339, e.g. 2026-11-26T03:12:00Z, or +5m
    /// from the recording's start). With --prometheus: replay the past window from this
    /// instant through the same queries and rules as live, and report what fired in it.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, long_help = FROM_HELP)]
    pub from: Option<String>,
    /// With --replay: report until this instant (as --from). With --prometheus: the window's
    /// end (default: now).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, long_help = TO_HELP)]
    pub to: Option<String>,
    /// With --prometheus --from: the step between evaluations of the past window (default:
    /// the engines' scrape interval as Prometheus reports it, else --interval).
    #[arg(long, value_name = "DURATION", requires = "from")]
    pub step: Option<String>,
}

const FROM_HELP: &str = "With --replay FILE: report from this instant: RFC 3339 \
(2026-11-26T03:12:00Z) or +DURATION from the recording's start (+5m).

With --prometheus URL: replay the past window that starts here: every step of it is evaluated as \
a live cycle would have been then (the same queries, read with query_range, the same \
derivations and rules), and the report lists what fired in it with its fire and resolve times. \
TIME is RFC 3339 (2026-11-26T03:12:00Z, or with an offset), `now`, or a time before now: \
`now-DURATION` or `-DURATION` (now-30m, -1h, -1h30m). The rules start a few minutes before \
TIME (the longest `for`, at most 5m) so a condition that already held counts.";

const TO_HELP: &str = "With --replay FILE: report until this instant (as --from).

With --prometheus URL --from TIME: the end of the past window, in the same forms as --from, or \
+DURATION after --from (+30m). Default: now.";

/// The in-process simulated fleet `kvtop check` can observe instead of real targets.
#[cfg(feature = "demo")]
#[derive(Debug, Args, Clone)]
pub struct SimulatedCheckArgs {
    /// Check the demo's simulated fleet, run in-process with its scripted story.
    #[arg(long, conflicts_with = "sim")]
    pub demo: bool,
    /// Check a simulated fleet run in-process: healthy, except the --scenario engines.
    #[arg(long)]
    pub sim: bool,
    #[arg(long = "scenario", value_name = "NAME@ENGINE[+DELAY]", long_help = SCENARIO_HELP)]
    pub scenarios: Vec<TimedScenario>,
    /// Simulated engines (with --sim: 6; with --demo: 8, the story's cast).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub engines: Option<u32>,
    #[arg(long, value_enum, default_value_t = VllmVersion::V1)]
    pub vllm_version: VllmVersion,
    /// Random seed of the simulated traffic.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Run the simulator this many times faster than the wall clock (with --sim or --demo).
    /// The observation then runs on the simulator's clock: rates, windows, `for` durations and
    /// --duration are simulated seconds, only the wait shrinks. Above 0, below 10000.
    #[arg(long, default_value_t = 1.0, value_parser = time_scale)]
    pub time_scale: f64,
}

#[cfg(feature = "demo")]
impl SimulatedCheckArgs {
    /// Whether the check runs on the simulator rather than the configured targets.
    pub(crate) fn requested(&self) -> bool {
        self.sim || self.demo || !self.scenarios.is_empty()
    }
}

/// Flags of the Kubernetes actions (`-n`, `--context`, `--kubeconfig` and `--read-only` are
/// global).
///
/// The plan is printed first; it runs only with `--confirm` naming the target (a `--dry-run`
/// runs without it: nothing changes). Exit codes: 0 done, 1 API error, 2 refused (guard, RBAC,
/// read-only), 4 plan printed, not confirmed, 5 a drain stopped with requests in flight.
#[derive(Debug, Args, Clone)]
pub struct ActionArgs {
    /// The pod, Deployment or node.
    pub target: String,
    /// Send every change as a server-side dry run (`dryRun=All`).
    #[arg(long)]
    pub dry_run: bool,
    /// Run the plan: must equal the target's name. Confirming never overrides a guard.
    #[arg(long, value_name = "NAME")]
    pub confirm: Option<String>,
    /// Act despite a failed guard that may be overridden (min-ready, controller, a
    /// PodDisruptionBudget a delete bypasses); needs --confirm. Audited as `override: true`.
    #[arg(long = "override")]
    pub override_guards: bool,
    /// What a drain does when its wait ends with requests still in flight: `stop` (put
    /// routing back, exit 5) or `evict` anyway.
    #[arg(long, value_enum, default_value_t = OnTimeoutChoice::Stop)]
    pub on_timeout: OnTimeoutChoice,
    /// Fewest ready replicas an action may leave in a Deployment (default: the config's
    /// `kubernetes.min_ready`, 1).
    #[arg(long, value_name = "N")]
    pub min_ready: Option<u32>,
    /// Longest wait for a drained engine to go idle (default 120s, at most the pod's grace
    /// period).
    #[arg(long, value_name = "DURATION")]
    pub drain_timeout: Option<String>,
    /// How long an eviction a PodDisruptionBudget refuses is retried (default 60s).
    #[arg(long, value_name = "DURATION")]
    pub evict_timeout: Option<String>,
    /// drain-node: how many pods are drained at once (default 2).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub parallel: Option<u16>,
    /// Audit log file (default: audit.jsonl in the state directory).
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
}

/// `--on-timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnTimeoutChoice {
    Stop,
    Evict,
}

impl From<OnTimeoutChoice> for kvtop_core::actions::OnTimeout {
    fn from(choice: OnTimeoutChoice) -> Self {
        match choice {
            OnTimeoutChoice::Stop => kvtop_core::actions::OnTimeout::Stop,
            OnTimeoutChoice::Evict => kvtop_core::actions::OnTimeout::Evict,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum RulesAction {
    /// List the rules: id, severity, title, source.
    List {
        /// Also each rule's condition, `for`, the signals it reads, and — for the fleet of
        /// --target (or the config) or of --demo — the engines lacking those signals.
        #[arg(long)]
        explain: bool,
        /// Explain against the demo's simulated fleet.
        #[cfg(feature = "demo")]
        #[arg(long)]
        demo: bool,
        /// Rules file merged over the built-in rules (default: rules.toml beside the config
        /// file, if it exists).
        #[arg(long, value_name = "FILE")]
        rules: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Print the config file path kvtop reads.
    Path,
    /// Write the commented default config file.
    Init {
        /// Where to write it (default: the config path).
        path: Option<PathBuf>,
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Validate a config file and summarise it.
    Check {
        /// The file to check (default: the config path).
        file: Option<PathBuf>,
    },
}

/// A kubeconfig name: letters, digits and `-._@:`, as cluster and context names usually are
/// (kubectl accepts more, but a name that needs quoting in a shell helps nobody).
#[cfg(feature = "demo")]
/// Fastest simulated clock, exclusive: beyond it a scrape interval shrinks below what a
/// scrape takes and the simulator's steps outrun its own scheduler (1e5 hung `check`).
const MAX_TIME_SCALE: f64 = 1e4;

/// `--time-scale`: a finite factor above 0 and below [`MAX_TIME_SCALE`].
fn time_scale(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if value.is_finite() && value > 0.0 && value < MAX_TIME_SCALE {
        Ok(value)
    } else {
        Err(format!(
            "use a factor above 0 and below {MAX_TIME_SCALE:.0} (the simulated seconds per wall-clock second)"
        ))
    }
}

fn kubeconfig_name(name: &str) -> Result<String, String> {
    let valid = !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._@:".contains(c));
    if valid {
        Ok(name.to_owned())
    } else {
        Err("use 1 to 253 letters, digits or -._@:".to_owned())
    }
}

/// Whether kvtop was started as kubectl's plugin: its executable (argv[0]) is named
/// `kubectl-kvtop`, as kubectl runs it for `kubectl kvtop`.
pub fn invoked_as_kubectl_plugin(argv0: Option<&OsStr>) -> bool {
    let Some(argv0) = argv0 else {
        return false;
    };
    let name = std::path::Path::new(argv0)
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy();
    name == KUBECTL_PLUGIN
}

/// The command definition as kubectl's plugin: named `kubectl kvtop` in help and errors.
pub fn kubectl_plugin_command() -> clap::Command {
    Cli::command()
        .name(KUBECTL_PLUGIN)
        .bin_name("kubectl kvtop")
        .about(
            "kvtop as a kubectl plugin: the console (or any kvtop command) on the current \
             context with Kubernetes discovery on",
        )
}

/// Parse the command line. As kubectl's plugin (see [`invoked_as_kubectl_plugin`]) discovery
/// is on, as if `--kube` were given: `kubectl kvtop -n llm` watches that namespace's pods on
/// the current context, and kubectl's `--kubeconfig`, `--context`, `-n`, `-A` and `-l` mean
/// what they mean to kubectl. Exits with clap's message on a bad command line.
pub fn parse_command_line(args: Vec<OsString>) -> Cli {
    if !invoked_as_kubectl_plugin(args.first().map(OsString::as_os_str)) {
        return Cli::parse_from(args);
    }
    let matches = kubectl_plugin_command().get_matches_from(args);
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    cli.global.kube.kube = true;
    cli
}
