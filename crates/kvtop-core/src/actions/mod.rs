//! What a Kubernetes action will do, decided before anything is sent: [`plan`], with the
//! guards read beside the target in [`guards`].

pub mod guards;
pub mod node_drain;
pub mod plan;

pub use plan::{ActionKind, ApiStep, Guard, OnTimeout, Plan, Policy, StepOp};
