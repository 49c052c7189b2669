//! Errors loading rules. Each names the file (and line when known) and the rule id.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::expr::ExprError;

/// An expression of a rule that does not parse: which rule, which field, the column in the
/// expression, what was expected and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    pub rule_id: String,
    /// `when` or `clear_when`.
    pub field: &'static str,
    /// 1-based column in the expression.
    pub position: usize,
    pub expected: String,
    pub found: String,
}

impl RuleError {
    pub(crate) fn new(rule_id: &str, field: &'static str, error: ExprError) -> Self {
        RuleError {
            rule_id: rule_id.to_owned(),
            field,
            position: error.column,
            expected: error.expected,
            found: error.found,
        }
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rule \"{}\": {}, column {}: expected {}, found {}",
            self.rule_id, self.field, self.position, self.expected, self.found
        )
    }
}

impl std::error::Error for RuleError {}

/// Where in a rules file: the file's name and, when known, a 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub line: Option<usize>,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// An error loading or checking a rules file.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("{}: cannot read rules: {source}", .path.display())]
    Read { path: PathBuf, source: io::Error },

    /// Not valid TOML, or a key that is unknown or has the wrong type.
    #[error("{at}: {}{message}", rule_prefix(.rule_id))]
    Syntax {
        at: Place,
        rule_id: Option<String>,
        message: String,
    },

    /// A rule's field is missing or has an invalid value.
    #[error("{at}: rule \"{rule_id}\": {field}: {message}")]
    Field {
        at: Place,
        rule_id: String,
        field: &'static str,
        message: String,
    },

    /// A rule's `when` or `clear_when` does not parse.
    #[error("{at}: {error}")]
    Expression { at: Place, error: Box<RuleError> },

    /// Two rules with one id in the same file.
    #[error("{at}: rule \"{rule_id}\" is defined twice in this file")]
    Duplicate { at: Place, rule_id: String },
}

fn rule_prefix(rule_id: &Option<String>) -> String {
    match rule_id {
        Some(id) => format!("rule \"{id}\": "),
        None => String::new(),
    }
}
