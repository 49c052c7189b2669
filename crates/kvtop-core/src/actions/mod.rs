//! What a Kubernetes action will do, decided before anything is sent: [`plan`].

pub mod plan;

pub use plan::{ActionKind, ApiStep, Guard, Plan, Policy, StepOp};
