//! PURE. Troubleshooting rules: the rule model and files, the expression language, the
//! evaluator (for-durations, hysteresis) producing [`Finding`]s, engine health with the circuit
//! breaker, and the routing explainer. No clocks, no I/O except [`RuleSet::load`] reading the
//! user's rules file.
//!
//! # Public API
//!
//! **Load rules** — the built-in `config/rules.toml` (embedded), merged with a user file by id
//! (a user rule overrides only the fields it sets; `enabled = false` disables it):
//! ```no_run
//! # use kvtop_core::rules::RuleSet;
//! # fn f(user: Option<&std::path::Path>) -> Result<(), kvtop_core::rules::RulesError> {
//! let rules = RuleSet::load(user)?;           // or RuleSet::builtin(), RuleSet::with_user_text()
//! for rule in rules.rules() { /* rule.id, title, severity, when.text(), for_secs, sources */ }
//! # Ok(()) }
//! ```
//! Errors ([`RulesError`]) name the file, the line and the rule id; an expression error
//! ([`RuleError`]) also the field and the column:
//! `rules.toml:6: rule "T1.1-high-ttft": when, column 10: expected a comparison operator …`.
//!
//! **List / explain** — [`explain::signal_catalogue`] lists every signal (name, unit, origin,
//! description), the open namespaces (`cache.*`, `config.*`, `env.*`, `pod.*`) and the text
//! sources (`log`, `event`, `pod_status`); [`explain::coverage`] tells, for a live fleet, which
//! signals each rule reads that engines do not provide (such a rule cannot fire for them);
//! [`RuleSet::unobservable`] lists table rows deliberately not turned into rules, with reasons.
//!
//! **Evaluate per cycle** — build one [`EngineInput`] per engine (borrowing the fleet state:
//! [`EngineInput::from_state`], then `with_gpu`, `with_logs`, `with_events`,
//! `with_pod_status`, `with_facts`, `with_labels` as those sources arrive) and call
//! [`RuleEngine::evaluate`]`(&inputs, now)` after each ingest:
//! ```no_run
//! # use kvtop_core::rules::{RuleEngine, RuleSet, EngineInput};
//! # fn f(fleet: &kvtop_core::fleet::Fleet, rules: &RuleSet, now: f64) {
//! let mut engine = RuleEngine::new(rules);
//! let inputs: Vec<EngineInput<'_>> = fleet.engines().iter().map(EngineInput::from_state).collect();
//! for finding in engine.evaluate(&inputs, now) {
//!     // finding.title, severity, subject.label(), state (Pending/Firing/Resolved{at}),
//!     // since, evidence[i].describe(), cause, action, suggest, source, frozen
//! }
//! # }
//! ```
//! Findings come firing first, then pending, then resolved (kept [`RESOLVED_KEEP_SECS`]), each
//! by severity then age. [`RuleEngine::counts`] gives header counts, [`RuleEngine::findings_for`]
//! one engine's findings, [`RuleEngine::set_rules`] reloads keeping unchanged rules' state.
//!
//! **Health** — [`RuleEngine::health_of`] / [`RuleEngine::health`] give each engine's
//! [`Health`] (healthy / degraded / down) and circuit [`Breaker`] (opens above 88 % KV usage,
//! closes below 79.2 %), updated every cycle; [`health::classify`] and [`Breaker::step`] are
//! the pure pieces.
//!
//! **Routing explainer** — [`routing::explain_routing`]`(&inputs, &PROMPT_SIZES)` returns, per
//! model group, the seed router's fit score per engine and prompt size and the Gateway API
//! Inference Extension scorer's score, with each router's pick.
//!
//! # Semantics worth knowing
//! - Three-valued logic: a comparison with an unknown operand is unknown; a rule fires only on
//!   true. Signals an engine does not export, GPU signals before GPU data, pod facts before the
//!   Kubernetes work, and text sources without a stream are all unknown.
//! - A rule that reads the engine's own scrape (metrics, `cache.*`) is frozen while the engine
//!   is not up: it neither fires nor clears on stale values (the finding shows `frozen`).
//!   Status, GPU, pod and text rules keep evaluating (a crashed engine's log still speaks).
//! - Without `clear_when`, a firing rule resolves as soon as `when` is not true (false or
//!   unknown); with `clear_when`, only when `clear_when` is true.
//! - Fleet rules (`per = "model"` or `"fleet"`) aggregate over the group's engines; metric
//!   values of engines that are not up are left out, `count(up == 1)` still sees them.

pub mod error;
pub mod eval;
pub mod explain;
pub mod expr;
pub mod file;
pub mod finding;
pub mod health;
pub mod incident;
pub mod input;
mod lexer;
pub mod model;
mod pod_input;
pub mod routing;
pub mod signals;
pub mod silence;
mod timeline;
pub mod truth;

pub use crate::signals::Unit;
/// The units of rule signals, from the signal catalog.
pub use crate::signals::unit as units;
pub use error::{RuleError, RulesError};
pub use eval::RuleEngine;
pub use expr::{CmpOp, Expr, ExprError, Level};
pub use file::{BUILTIN_RULES_TOML, RuleSet};
pub use finding::{Finding, FindingCounts, FindingState, RESOLVED_KEEP_SECS, Subject};
pub use health::{Breaker, EngineHealth, Health, STUCK_RULE};
pub use incident::{Explains, Incident, IncidentKey, IncidentState, Symptom, fold};
pub use input::{EngineInput, GpuSignals};
pub use model::{Per, Rule, Scope, Severity, Suggest, Unobservable};
pub use pod_input::with_pod;
pub use routing::{GroupRouting, PROMPT_SIZES, explain_routing};
pub use silence::{Hush, Silence, Silences};
pub use timeline::Timeline;
pub use truth::{Evidence, Truth};
