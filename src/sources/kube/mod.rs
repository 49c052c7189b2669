//! The Kubernetes source: clients per kubeconfig context ([`client`]), pod discovery and pod
//! state, events, logs and Deployments ([`discovery`]), and scraping pods directly or through the
//! API server's proxy ([`scrape`]). Everything reaches the console as
//! [`crate::app::Event::Kube`]; the console asks for scrapes with [`PodScrape`].

pub mod client;
pub mod discovery;
pub mod error;
pub mod exec_credential;
pub mod fleet_pods;
pub mod routing;
pub mod scrape;
pub mod update;

pub use client::{ClusterClient, IN_CLUSTER, connect, connect_reporting};
pub use discovery::{Discovery, PREVIOUS_PREFIX};
pub use error::{ApiCall, KubeError, KubeErrorKind, Unreachable};
pub use scrape::{PodScrapers, WorkerOutboxes, scrape_via_proxy};
pub use update::{KubeUpdate, PodScrape};
