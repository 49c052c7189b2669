//! Safe actions on Kubernetes: drain, restart and rollout-restart vLLM pods, cordon, uncordon
//! and drain nodes. A pure [`plan`] decides the requests and the guards from the current state;
//! [`execute`] runs them with the real client (RBAC preflight, dry runs, the drain wait);
//! [`audit`] records every attempt; [`run`] is the one run both the console and the command
//! line drive (progress, one audit record per outcome, interruption), its drain wait reading
//! the engine through [`in_flight`].

pub mod audit;
pub mod error;
pub mod execute;
pub mod identity;
pub mod in_flight;
pub mod incident_audit;
mod node_drain;
pub mod policy;
pub mod run;
mod unrouted;

pub use audit::{Attribution, AuditLog, AuditProblem, AuditRecord, AuditResult, Rollback};
pub use error::{ActionError, Explained, PlanError};
pub use execute::{
    ExecError, ExecSettings, InFlight, Progress, StepError, build_plan, execute, preflight,
    restore_routing,
};
pub use identity::{Identity, UserSource, identify};
pub use in_flight::InFlightProbe;
pub use kvtop_core::actions::plan;
pub use plan::{ActionKind, ApiStep, Guard, OnTimeout, Plan, Policy, StepOp};
pub use policy::{PolicyChoices, policy_for};
pub use run::{Interruption, Run, RunEnd, SharedAudit, StepFailure};
