//! The audit log: JSON lines appended to `<state_dir>/audit.jsonl` and synced at once: a
//! `started` line before a run sends anything, then one line per outcome, so a killed session
//! still leaves its record. The simulated cluster's actions (`kvtop demo`) go to their own file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::identity::{Identity, UserSource};
use super::plan::{Plan, PodUnit};

/// File name of the audit log in the state directory.
pub(crate) const AUDIT_FILE: &str = "audit.jsonl";
/// File name of the demo's audit log: actions on a simulated cluster never mix with the real
/// log. One file for every demo (appends from several processes stay whole lines).
pub(crate) const DEMO_AUDIT_FILE: &str = "demo-audit.jsonl";

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuditResult {
    /// Written and synced before the first request is sent: a run that dies without its
    /// outcome record (SIGKILL, power loss) still left this one.
    Started,
    /// Every step ran.
    Ok,
    /// A guard, RBAC or read-only mode refused it; nothing was sent.
    Refused,
    /// A step failed.
    Error,
    /// The console quit while it ran; `detail` has the steps done so far.
    Interrupted,
}

/// Who made an attempt, and whether they overrode a failed guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribution {
    pub identity: Identity,
    /// A failed guard was overridden (`--override`, or the console's override).
    pub overridden: bool,
}

/// What a rollback put back after a failure or an interruption.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Rollback {
    /// One line per pod whose routing was put back.
    pub restored: Vec<String>,
    /// One line per pod gone or terminating meanwhile, left as it is.
    pub skipped: Vec<String>,
    /// One line per pod it could not be put back on, with why.
    pub failed: Vec<String>,
}

impl Rollback {
    pub fn is_empty(&self) -> bool {
        self.restored.is_empty() && self.skipped.is_empty() && self.failed.is_empty()
    }

    /// Every line, the failures first.
    pub fn lines(&self) -> Vec<String> {
        self.failed
            .iter()
            .chain(&self.skipped)
            .chain(&self.restored)
            .cloned()
            .collect()
    }
}

/// One line of the audit log.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AuditRecord {
    /// RFC 3339.
    pub time: String,
    /// The Kubernetes user (see `user_source`).
    pub user: String,
    pub user_source: UserSource,
    /// The local account, from the operating system.
    pub os_user: Option<String>,
    /// A failed guard was overridden.
    #[serde(rename = "override")]
    pub overridden: bool,
    pub context: String,
    pub namespace: Option<String>,
    pub action: String,
    pub target: String,
    pub dry_run: bool,
    pub steps: Vec<String>,
    /// A node drain's pods and what the plan did with each (drain, evict, skip and why).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<PodUnit>,
    pub result: AuditResult,
    /// What was done, step by step.
    pub detail: Vec<String>,
    pub error: Option<String>,
    /// The routing put back after a failure or an interruption (`None`: nothing to put back).
    pub rollback: Option<Rollback>,
}

impl AuditRecord {
    /// A record of `who`'s attempt at `plan` at `time`.
    pub fn new(plan: &Plan, who: &Attribution, time: String, result: AuditResult) -> AuditRecord {
        AuditRecord {
            time,
            user: who.identity.user.clone(),
            user_source: who.identity.source,
            os_user: who.identity.os_user.clone(),
            overridden: who.overridden,
            context: plan.context.clone(),
            namespace: plan.namespace.clone(),
            action: plan.kind.name().to_owned(),
            target: plan.target.clone(),
            dry_run: plan.dry_run,
            steps: plan.step_texts(),
            pods: plan.units.clone(),
            result,
            detail: Vec::new(),
            error: None,
            rollback: None,
        }
    }
}

/// Errors writing the audit log.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the audit log {path}: {source}")]
pub struct AuditError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Why there is no audit log to write: the console says so and refuses every run.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuditProblem {
    #[error("no state directory for the audit log")]
    NoStateDirectory,
    #[error(transparent)]
    Unwritable(Arc<AuditError>),
}

/// The same problem: the same file failing the same way (an I/O error has no equality of its
/// own).
impl PartialEq for AuditProblem {
    fn eq(&self, other: &AuditProblem) -> bool {
        match (self, other) {
            (AuditProblem::NoStateDirectory, AuditProblem::NoStateDirectory) => true,
            (AuditProblem::Unwritable(a), AuditProblem::Unwritable(b)) => {
                a.path == b.path && a.source.kind() == b.source.kind()
            }
            _ => false,
        }
    }
}

impl From<AuditError> for AuditProblem {
    fn from(error: AuditError) -> AuditProblem {
        AuditProblem::Unwritable(Arc::new(error))
    }
}

/// The audit log, open for appending.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    file: File,
}

impl AuditLog {
    /// Open (creating it and its directory) the log at `path`.
    pub fn open(path: &Path) -> Result<AuditLog, AuditError> {
        let err = |source| AuditError {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(err)?;
        Ok(AuditLog {
            path: path.to_path_buf(),
            file,
        })
    }

    /// The log in kvtop's state directory.
    pub fn default_path() -> Option<PathBuf> {
        crate::config::state_dir().map(|d| d.join(AUDIT_FILE))
    }

    /// The demo's own log in kvtop's state directory (else the temporary directory).
    pub fn demo_path() -> PathBuf {
        crate::config::state_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join(DEMO_AUDIT_FILE)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one record (an [`AuditRecord`], or another kind of line) and flush it.
    pub fn write(&mut self, record: &impl serde::Serialize) -> Result<(), AuditError> {
        let err = |source| AuditError {
            path: self.path.clone(),
            source,
        };
        let mut line = serde_json::to_string(record).map_err(|e| err(std::io::Error::other(e)))?;
        line.push('\n');
        let before = self.file.metadata().map_err(err)?.len();
        let written = self
            .file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .and_then(|()| self.file.sync_data());
        if let Err(error) = written {
            // A full disk takes part of the line: cut it off, so that every line of the log
            // stays a whole record (a device such as /dev/full has no length to cut to).
            if self.file.metadata().is_ok_and(|m| m.is_file()) {
                let _ = self.file.set_len(before);
            }
            return Err(err(error));
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use kvtop_core::actions::plan::{Policy, plan_cordon};

    pub(crate) fn someone() -> Attribution {
        Attribution {
            identity: Identity {
                user: "alice@example.com".into(),
                source: UserSource::SelfSubjectReview,
                os_user: Some("alice".into()),
            },
            overridden: false,
        }
    }

    #[test]
    fn each_write_appends_one_json_line() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("state").join(AUDIT_FILE);
        let plan = plan_cordon("prod", "node-a", true, &Policy::default());
        let mut log = AuditLog::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let ok = AuditRecord::new(
            &plan,
            &someone(),
            "2025-01-01T00:00:00Z".into(),
            AuditResult::Ok,
        );
        log.write(&ok).unwrap_or_else(|e| panic!("{e}"));
        let mut failed = AuditRecord::new(
            &plan,
            &Attribution {
                overridden: true,
                ..someone()
            },
            "2025-01-01T00:00:01Z".into(),
            AuditResult::Error,
        );
        failed.error = Some("cannot patch nodes node-a: HTTP 500".into());
        // A second handle appends after the first.
        let mut again = AuditLog::open(&path).unwrap_or_else(|e| panic!("{e}"));
        again.write(&failed).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_default())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["action"], "cordon");
        assert_eq!(lines[0]["target"], "node-a");
        assert_eq!(lines[0]["result"], "ok");
        assert_eq!(
            lines[0]["steps"][0],
            r#"PATCH /api/v1/nodes/node-a {"spec":{"unschedulable":true}}"#
        );
        assert_eq!(lines[0]["user"], "alice@example.com");
        assert_eq!(lines[0]["user_source"], "self-subject-review");
        assert_eq!(lines[0]["os_user"], "alice");
        assert_eq!(lines[0]["override"], false);
        assert_eq!(lines[1]["override"], true);
        assert_eq!(lines[1]["result"], "error");
        assert_eq!(lines[1]["error"], "cannot patch nodes node-a: HTTP 500");
    }
}
