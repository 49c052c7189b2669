//! The doctor's findings: one row per check with its verdict, what was found and the fix, and
//! their rendering as a table or JSON.

use serde::Serialize;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// What kvtop needs is there.
    Ok,
    /// kvtop works, with less (no logs, no actions, no GPU data).
    Warn,
    /// Something kvtop needs is missing: the exit code says so.
    Fail,
    /// Not checked: it does not apply, or what it depends on failed.
    Skip,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "skip",
        }
    }
}

/// One check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// What part of the set-up: `config`, `kubernetes`, `engines`, `prometheus`.
    pub area: &'static str,
    /// What was checked, e.g. `context prod: reachable`.
    pub check: String,
    pub verdict: Verdict,
    /// What was found (outside text included: rendered through the safe printers).
    pub detail: String,
    /// What to do about it; empty when nothing needs doing.
    pub fix: String,
}

impl Check {
    pub fn new(area: &'static str, check: impl Into<String>, verdict: Verdict) -> Check {
        Check {
            area,
            check: check.into(),
            verdict,
            detail: String::new(),
            fix: String::new(),
        }
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Check {
        self.detail = detail.into();
        self
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = fix.into();
        self
    }
}

/// Every check of one run.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// No check failed.
    pub ok: bool,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn new(checks: Vec<Check>) -> Report {
        Report {
            ok: !checks.iter().any(|c| c.verdict == Verdict::Fail),
            checks,
        }
    }

    /// The table: verdict, check, detail; the fix on the line below a check that has one.
    pub fn render_text(&self) -> String {
        let check_width = self
            .checks
            .iter()
            .map(|c| c.check.chars().count())
            .max()
            .unwrap_or(0)
            .clamp(5, 60);
        let mut out = format!("{:<4}  {:<check_width$}  DETAIL\n", "", "CHECK");
        for check in &self.checks {
            out.push_str(&format!(
                "{:<4}  {:<check_width$}  {}\n",
                check.verdict.label(),
                check.check,
                check.detail
            ));
            if !check.fix.is_empty() {
                out.push_str(&format!(
                    "{:<4}  {:<check_width$}  fix: {}\n",
                    "", "", check.fix
                ));
            }
        }
        let count = |v: Verdict| self.checks.iter().filter(|c| c.verdict == v).count();
        out.push_str(&format!(
            "\n{} ok, {} warnings, {} failed, {} skipped: {}\n",
            count(Verdict::Ok),
            count(Verdict::Warn),
            count(Verdict::Fail),
            count(Verdict::Skip),
            if self.ok {
                "everything kvtop needs is there"
            } else {
                "something kvtop needs is missing (see FAIL)"
            }
        ));
        out
    }

    pub fn render_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
            + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_check_fails_the_report_and_shows_its_fix() {
        let report = Report::new(vec![
            Check::new("config", "config file", Verdict::Ok).detail("defaults"),
            Check::new("kubernetes", "context prod: reachable", Verdict::Fail)
                .detail("connection refused")
                .fix("check the VPN"),
            Check::new("kubernetes", "RBAC: get pods/log", Verdict::Warn),
        ]);
        assert!(!report.ok);
        let text = report.render_text();
        assert!(
            text.contains("FAIL  context prod: reachable  connection refused"),
            "{text}"
        );
        assert!(text.contains("fix: check the VPN"), "{text}");
        assert!(
            text.contains("1 ok, 1 warnings, 1 failed, 0 skipped"),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&report.render_json()).unwrap();
        assert_eq!(json["ok"], false);
        assert_eq!(json["checks"][1]["verdict"], "fail");
        assert_eq!(json["checks"][1]["fix"], "check the VPN");
    }

    #[test]
    fn warnings_and_skips_do_not_fail() {
        let report = Report::new(vec![
            Check::new("prometheus", "DCGM series", Verdict::Warn),
            Check::new("prometheus", "lag", Verdict::Skip),
        ]);
        assert!(report.ok);
    }
}
