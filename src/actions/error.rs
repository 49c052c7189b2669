//! The errors of actions as the console and the command line report them, typed until the
//! view formats them.

use std::fmt;

use crate::sources::kube::KubeError;

/// An API error as one sentence for the operator, with what to make of the codes whose message
/// does not say it already.
#[derive(Debug, Clone, Copy)]
pub struct Explained<'a>(pub &'a KubeError);

impl fmt::Display for Explained<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hint = match self.0.code() {
            Some(404) => " (it no longer exists)",
            Some(409) => " (it was changed meanwhile: read it again and retry)",
            _ => "",
        };
        write!(f, "{}{hint}", self.0)
    }
}

/// Why a plan could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// Reading the objects the plan is built from failed.
    #[error("{0}")]
    Read(KubeError),
    /// The access reviews of the RBAC preflight could not be made.
    #[error("RBAC preflight: {0}")]
    Preflight(KubeError),
}

/// What the console's action executor could not do, as the menu and the plan screen show it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ActionError {
    #[error("no Kubernetes client for context {0}")]
    NoCluster(String),
    /// An API call failed (reading the plan's objects, an access review).
    #[error("{}", Explained(.0))]
    Api(KubeError),
    #[error("RBAC preflight: {}", Explained(.0))]
    Preflight(KubeError),
}

impl From<PlanError> for ActionError {
    fn from(error: PlanError) -> ActionError {
        match error {
            PlanError::Read(e) => ActionError::Api(e),
            PlanError::Preflight(e) => ActionError::Preflight(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::kube::{ApiCall, KubeErrorKind};

    fn api(code: u16, reason: &str) -> KubeError {
        ApiCall::new("delete", "pods")
            .namespace(Some("llm"))
            .name("vllm-0")
            .error(KubeErrorKind::Api {
                code,
                reason: reason.into(),
                message: String::new(),
            })
    }

    fn explain(error: &KubeError) -> String {
        Explained(error).to_string()
    }

    #[test]
    fn each_failure_reads_as_one_sentence_with_what_it_means() {
        assert_eq!(
            explain(&api(404, "NotFound")),
            "cannot delete pods llm/vllm-0: HTTP 404 NotFound (it no longer exists)"
        );
        assert_eq!(
            explain(&api(409, "Conflict")),
            "cannot delete pods llm/vllm-0: HTTP 409 Conflict (it was changed meanwhile: read it again and retry)"
        );
        assert_eq!(
            explain(&api(401, "Unauthorized")),
            "cannot delete pods llm/vllm-0: HTTP 401 Unauthorized (the credentials were rejected: refresh the kubeconfig's token)"
        );
        assert_eq!(
            explain(&api(500, "")),
            "cannot delete pods llm/vllm-0: HTTP 500 InternalError (API server error)"
        );
        let lost = ApiCall::new("patch", "nodes")
            .name("n1")
            .error(KubeErrorKind::ConnectionLost("reset by peer".into()));
        assert_eq!(
            explain(&lost),
            "cannot patch nodes n1: connection lost (reset by peer)"
        );
    }

    #[test]
    fn the_console_explains_what_the_command_line_states() {
        let gone = api(404, "NotFound");
        let preflight = PlanError::Preflight(gone.clone());
        assert_eq!(
            preflight.to_string(),
            "RBAC preflight: cannot delete pods llm/vllm-0: HTTP 404 NotFound"
        );
        assert_eq!(
            ActionError::from(preflight).to_string(),
            "RBAC preflight: cannot delete pods llm/vllm-0: HTTP 404 NotFound (it no longer exists)"
        );
        assert_eq!(
            ActionError::from(PlanError::Read(gone)).to_string(),
            "cannot delete pods llm/vllm-0: HTTP 404 NotFound (it no longer exists)"
        );
    }
}
