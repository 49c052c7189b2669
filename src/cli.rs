//! Command-line interface: `kvtop [console] | demo | sim | config`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A terminal operations console for vLLM inference fleets.
#[derive(Debug, Parser)]
#[command(name = "kvtop", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<CliCommand>,
    #[command(flatten)]
    pub global: GlobalArgs,
}

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
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum CliCommand {
    /// The live console (the default when no command is given).
    Console,
    /// The console on a simulated fleet served in-process: no GPU, no cluster needed.
    Demo(DemoArgs),
    /// Serve a simulated fleet over HTTP on 127.0.0.1 and print its URLs.
    Sim(SimArgs),
    /// Show, create or check the config file.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
}

/// vLLM exposition dialect the simulator speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VllmVersion {
    /// vLLM 0.10 and later (V1 engine).
    V1,
    /// The V0 engine's names and buckets.
    V0,
}

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
}

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
    /// Simulated seconds per wall-clock second.
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
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
