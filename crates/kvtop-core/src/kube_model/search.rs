//! PURE. What one round of pod discovery searched in a context and what it found, and the
//! words that explain an empty fleet: which contexts, namespaces and selectors were searched,
//! and per context why nothing matched.

use crate::format::printable;

/// How a context's pod list went.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SearchOutcome {
    /// The list answered: `pods` looked at, `engines` of them recognised.
    Listed { pods: usize, engines: usize },
    /// The API server refused the list (HTTP 403), with its message.
    Forbidden(String),
    /// The API server could not be reached or did not answer in time.
    Unreachable(String),
    /// Any other failure, in the error's words.
    Failed(String),
}

/// One context's discovery round.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ContextSearch {
    pub context: String,
    /// `None`: every namespace.
    pub namespace: Option<String>,
    pub selectors: Vec<String>,
    /// Pods running vLLM or SGLang count even when no selector matches (the selectors are
    /// the defaults, not the user's own).
    pub by_workload: bool,
    pub outcome: SearchOutcome,
}

impl ContextSearch {
    /// Engines found (0 when the list failed).
    pub fn engines(&self) -> usize {
        match self.outcome {
            SearchOutcome::Listed { engines, .. } => engines,
            _ => 0,
        }
    }

    fn place(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("namespace {}", printable(ns)),
            None => "any namespace".to_owned(),
        }
    }

    /// `pods labelled a=b or c=d, or running vLLM or SGLang`.
    fn criteria(&self) -> String {
        let labels: Vec<String> = self
            .selectors
            .iter()
            .map(|s| {
                if s.trim().is_empty() {
                    "any labels".to_owned()
                } else {
                    printable(s).into_owned()
                }
            })
            .collect();
        let labelled = format!("pods labelled {}", labels.join(" or "));
        if self.by_workload {
            format!("{labelled}, or whose image or command runs vLLM or SGLang")
        } else {
            labelled
        }
    }

    /// Why this context found nothing (or what it found).
    fn verdict(&self) -> String {
        let context = printable(&self.context);
        match &self.outcome {
            SearchOutcome::Listed { pods: 0, .. } => {
                format!("{context}: no pods in {}", self.place())
            }
            SearchOutcome::Listed { pods, engines: 0 } => {
                let looked = if *pods == 1 {
                    "1 pod".to_owned()
                } else {
                    format!("{pods} pods")
                };
                if self.by_workload {
                    format!(
                        "{context}: {looked} in {}, none running vLLM or SGLang",
                        self.place()
                    )
                } else {
                    format!(
                        "{context}: {looked} in {}, none matching the selectors",
                        self.place()
                    )
                }
            }
            SearchOutcome::Listed { engines, .. } => {
                format!("{context}: {engines} engine pod(s) in {}", self.place())
            }
            SearchOutcome::Forbidden(message) => {
                format!("{context}: forbidden: {}", one_line(message))
            }
            SearchOutcome::Unreachable(message) => {
                format!("{context}: unreachable: {}", one_line(message))
            }
            SearchOutcome::Failed(message) => format!("{context}: {}", one_line(message)),
        }
    }
}

/// `text` on one line with control characters shown as `�` (API text reaches the terminal).
fn one_line(text: &str) -> String {
    printable(text.trim()).into_owned()
}

/// Lines explaining an empty fleet after a discovery round: a title, what was searched, and one
/// line per context. Empty when nothing was searched yet.
pub fn explain_empty(searches: &[ContextSearch]) -> Vec<String> {
    let Some(first) = searches.first() else {
        return Vec::new();
    };
    let mut lines = vec!["no vLLM or SGLang pods found".to_owned()];
    let contexts: Vec<String> = searches
        .iter()
        .map(|s| printable(&s.context).into_owned())
        .collect();
    let word = if contexts.len() == 1 {
        "context"
    } else {
        "contexts"
    };
    lines.push(format!(
        "searched {word} {}: {} in {}",
        contexts.join(", "),
        first.criteria(),
        first.place()
    ));
    lines.extend(searches.iter().map(ContextSearch::verdict));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(context: &str, outcome: SearchOutcome) -> ContextSearch {
        ContextSearch {
            context: context.into(),
            namespace: Some("llm".into()),
            selectors: vec!["app.kubernetes.io/name=vllm".into()],
            by_workload: true,
            outcome,
        }
    }

    #[test]
    fn each_context_says_why_it_found_nothing() {
        let lines = explain_empty(&[
            search(
                "prod",
                SearchOutcome::Listed {
                    pods: 0,
                    engines: 0,
                },
            ),
            search(
                "stage",
                SearchOutcome::Listed {
                    pods: 7,
                    engines: 0,
                },
            ),
            search(
                "edge",
                SearchOutcome::Forbidden(
                    "pods is forbidden: User \"dev\" cannot list resource \"pods\"\x1b[2J".into(),
                ),
            ),
            search(
                "lab",
                SearchOutcome::Unreachable("connection refused".into()),
            ),
        ]);
        assert_eq!(
            lines,
            [
                "no vLLM or SGLang pods found",
                "searched contexts prod, stage, edge, lab: pods labelled \
                 app.kubernetes.io/name=vllm, or whose image or command runs vLLM or SGLang \
                 in namespace llm",
                "prod: no pods in namespace llm",
                "stage: 7 pods in namespace llm, none running vLLM or SGLang",
                "edge: forbidden: pods is forbidden: User \"dev\" cannot list resource \
                 \"pods\"\u{FFFD}[2J",
                "lab: unreachable: connection refused",
            ]
        );
        assert!(explain_empty(&[]).is_empty());
    }

    #[test]
    fn user_selectors_are_said_to_narrow() {
        let mut narrowed = search(
            "prod",
            SearchOutcome::Listed {
                pods: 1,
                engines: 0,
            },
        );
        narrowed.by_workload = false;
        narrowed.namespace = None;
        narrowed.selectors = vec!["team=search".into(), String::new()];
        assert_eq!(
            explain_empty(&[narrowed]),
            [
                "no vLLM or SGLang pods found",
                "searched context prod: pods labelled team=search or any labels in any namespace",
                "prod: 1 pod in any namespace, none matching the selectors",
            ]
        );
    }
}
