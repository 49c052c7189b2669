//! The signals that stop a command before it is done (SIGTERM, SIGINT, SIGHUP), and the
//! Kubernetes connection that must not outlive them: a credential plugin still running when
//! one arrives is killed rather than left behind.

use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::config::KubernetesConfig;
use crate::sources::kube::{ClusterClient, KubeError, connect_reporting};

/// SIGTERM, SIGINT and SIGHUP while an action runs: it stops, and the attempt is audited as
/// interrupted instead of vanishing with the process.
pub(crate) struct Signals {
    signals: Vec<(Signal, &'static str, u8)>,
}

impl Signals {
    pub(crate) fn listen() -> Signals {
        let wanted = [
            (SignalKind::terminate(), "SIGTERM", 143),
            (SignalKind::interrupt(), "SIGINT", 130),
            (SignalKind::hangup(), "SIGHUP", 129),
        ];
        let signals = wanted
            .into_iter()
            .filter_map(|(kind, name, code)| Some((signal(kind).ok()?, name, code)))
            .collect();
        Signals { signals }
    }

    /// The first signal received: its name and the exit code it gives (128 + its number).
    pub(crate) async fn recv(&mut self) -> (&'static str, u8) {
        let waits = self.signals.iter_mut().map(|(signal, name, code)| {
            Box::pin(async move {
                if signal.recv().await.is_none() {
                    // The signal driver is gone: this signal can no longer arrive.
                    std::future::pending::<()>().await;
                }
                (*name, *code)
            })
        });
        let waits: Vec<_> = waits.collect();
        if waits.is_empty() {
            return std::future::pending().await;
        }
        futures_util::future::select_all(waits).await.0
    }
}

/// Connect to the configured Kubernetes contexts, saying on stderr which context waits on
/// which credential plugin. A SIGTERM, SIGINT or SIGHUP meanwhile ends the process with the
/// signal's exit code once the connection is dropped: a credential plugin it was running is
/// killed with it (`kill_on_drop`), never left running after kvtop.
pub(crate) async fn connect_kube(
    settings: &KubernetesConfig,
) -> Result<Vec<ClusterClient>, KubeError> {
    let mut stop = Signals::listen();
    let stopped = {
        let connect = connect_reporting(settings, &|line| super::err(&format!("kvtop: {line}")));
        tokio::select! {
            connected = connect => return connected,
            signal = stop.recv() => signal,
        }
    };
    let (name, code) = stopped;
    super::err(&format!(
        "kvtop: {name} while connecting to Kubernetes: stopped, nothing was done"
    ));
    std::process::exit(i32::from(code));
}
