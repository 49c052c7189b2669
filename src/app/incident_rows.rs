//! The rows of the diagnostics view (`x`): each incident, worst first, with its symptoms
//! indented beneath it, then the findings no incident holds (pending ones, and resolved ones of
//! an engine whose other findings still fire). Every row stands for one finding, so the
//! selection stays a [`FindingKey`](super::FindingKey) and Enter, the detail and the evidence
//! work on whichever row is selected.

use std::collections::HashMap;

use super::diagnostics::RulesView;
use kvtop_core::rules::Subject;

/// What a row of the diagnostics list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagRowKind {
    /// An incident's line: its head finding, where, how many findings it folds.
    Incident { incident: usize },
    /// A symptom folded under incident `incident` (its `symptom`th), shown with the finding
    /// of the first engine it fires on.
    Symptom { incident: usize, symptom: usize },
    /// A finding no incident holds.
    Loose,
}

/// One row: what it shows and the position of its finding in [`RulesView::findings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiagRow {
    pub kind: DiagRowKind,
    pub finding: usize,
}

impl DiagRow {
    /// The incident the row belongs to, if any.
    pub fn incident(&self) -> Option<usize> {
        match self.kind {
            DiagRowKind::Incident { incident } | DiagRowKind::Symptom { incident, .. } => {
                Some(incident)
            }
            DiagRowKind::Loose => None,
        }
    }
}

/// The rows of `view`'s last cycle, in the order the list shows them.
pub fn diag_rows(view: &RulesView) -> Vec<DiagRow> {
    let findings = view.findings();
    let index: HashMap<(&str, &Subject), usize> = findings
        .iter()
        .enumerate()
        .map(|(i, f)| ((f.rule_id.as_ref(), f.subject.as_ref()), i))
        .collect();
    let mut covered = vec![false; findings.len()];
    let mut rows = Vec::new();
    for (i, incident) in view.incidents().iter().enumerate() {
        for (rule, subject) in &incident.members {
            if let Some(&at) = index.get(&(rule.as_ref(), subject.as_ref())) {
                if let Some(slot) = covered.get_mut(at) {
                    *slot = true;
                }
            }
        }
        let head = index.get(&(
            incident.head.rule_id.as_ref(),
            incident.head.subject.as_ref(),
        ));
        let Some(&head) = head else {
            continue;
        };
        rows.push(DiagRow {
            kind: DiagRowKind::Incident { incident: i },
            finding: head,
        });
        for (s, symptom) in incident.symptoms.iter().enumerate() {
            let first = incident
                .members
                .iter()
                .filter(|(rule, _)| *rule == symptom.rule_id)
                .find_map(|(rule, subject)| index.get(&(rule.as_ref(), subject.as_ref())));
            if let Some(&at) = first {
                rows.push(DiagRow {
                    kind: DiagRowKind::Symptom {
                        incident: i,
                        symptom: s,
                    },
                    finding: at,
                });
            }
        }
    }
    rows.extend(
        covered
            .iter()
            .enumerate()
            .filter(|(_, covered)| !**covered)
            .map(|(at, _)| DiagRow {
                kind: DiagRowKind::Loose,
                finding: at,
            }),
    );
    rows
}
