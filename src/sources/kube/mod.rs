//! The Kubernetes source: clients per kubeconfig context, pod discovery, pod state, events,
//! logs, Deployments with their HPA and PDB, and scraping pods directly or through the API
//! server's proxy. Everything reaches the console as [`crate::app::Event::Kube`].

pub mod error;

pub use error::{ApiCall, KubeError, KubeErrorKind};
