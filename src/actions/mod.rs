//! Safe actions on Kubernetes: drain, restart and rollout-restart vLLM pods, cordon, uncordon
//! and drain nodes. A pure [`plan`] decides the requests and the guards from the current state;
//! [`execute`] runs them with the real client (RBAC preflight, dry runs, the drain wait);
//! [`audit`] records every attempt.

pub mod audit;
pub mod execute;
pub mod policy;

pub use audit::{AuditLog, AuditRecord, AuditResult};
pub use execute::{ExecError, ExecSettings, Progress, build_plan, execute, preflight};
pub use kvtop_core::actions::plan;
pub use plan::{ActionKind, ApiStep, Guard, Plan, Policy, StepOp};
pub use policy::{PolicyChoices, policy_for};
