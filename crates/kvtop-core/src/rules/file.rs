//! Rules files: the serde model, and merging the built-in file with a user file by id.
//!
//! A user rule whose id is a built-in one overrides only the fields it sets (an empty
//! `clear_when` removes the built-in one, `suggest = "none"` the suggestion); `enabled = false`
//! disables it. A user rule with a new id is added and needs `title`, `severity` and `when`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::error::{Place, RuleError, RulesError};
use super::expr::Expr;
use super::model::{Per, Rule, Scope, Severity, Suggest, Unobservable};
use crate::units::parse_duration;

/// The built-in rules (`config/rules.toml`).
pub const BUILTIN_RULES_TOML: &str = include_str!("../../../../config/rules.toml");

/// How the built-in file is named in errors.
pub const BUILTIN_RULES_NAME: &str = "config/rules.toml (built in)";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    #[serde(default)]
    rule: Vec<Spanned<RuleEntry>>,
    #[serde(default)]
    unobservable: Vec<Unobservable>,
}

/// One `[[rule]]` as written; every field but `id` optional so a user file can override a few.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleEntry {
    id: String,
    enabled: Option<bool>,
    title: Option<String>,
    severity: Option<Severity>,
    when: Option<Spanned<String>>,
    #[serde(rename = "for")]
    hold: Option<Spanned<String>>,
    clear_when: Option<Spanned<String>>,
    cause: Option<String>,
    action: Option<String>,
    suggest: Option<SuggestEntry>,
    source: Option<Sources>,
    per: Option<Per>,
    scope: Option<ScopeEntry>,
    explains: Option<Vec<String>>,
    keep_firing_for: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum SuggestEntry {
    None,
    Drain,
    Restart,
    Cordon,
}

impl SuggestEntry {
    fn get(self) -> Option<Suggest> {
        match self {
            SuggestEntry::None => None,
            SuggestEntry::Drain => Some(Suggest::Drain),
            SuggestEntry::Restart => Some(Suggest::Restart),
            SuggestEntry::Cordon => Some(Suggest::Cordon),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Sources {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeEntry {
    #[serde(default)]
    models: Vec<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

/// One rules file's text and its name for errors.
#[derive(Debug, Clone, Copy)]
struct Source<'a> {
    name: &'a str,
    text: &'a str,
}

impl Source<'_> {
    fn place(&self, offset: Option<usize>) -> Place {
        Place {
            file: self.name.to_owned(),
            line: offset.map(|o| line_of(self.text, o)),
        }
    }
}

/// A field's value with the file it came from and its byte span there.
#[derive(Debug, Clone)]
struct Located<T> {
    value: T,
    file: usize,
    span: Range<usize>,
}

/// A rule being merged from several files.
#[derive(Debug, Clone)]
struct Draft {
    id: String,
    /// File and span of the first definition.
    file: usize,
    span: Range<usize>,
    enabled: bool,
    title: Option<String>,
    severity: Option<Severity>,
    when: Option<Located<String>>,
    hold: Option<Located<String>>,
    clear_when: Option<Located<String>>,
    cause: Option<String>,
    action: Option<String>,
    suggest: Option<SuggestEntry>,
    sources: Vec<String>,
    per: Option<Per>,
    scope: Option<ScopeEntry>,
    explains: Vec<String>,
    keep_firing_for: Option<Located<String>>,
}

impl Draft {
    fn new(entry: &RuleEntry, file: usize, span: Range<usize>) -> Self {
        let mut draft = Draft {
            id: entry.id.clone(),
            file,
            span,
            enabled: true,
            title: None,
            severity: None,
            when: None,
            hold: None,
            clear_when: None,
            cause: None,
            action: None,
            suggest: None,
            sources: Vec::new(),
            per: None,
            scope: None,
            explains: Vec::new(),
            keep_firing_for: None,
        };
        draft.apply(entry, file);
        draft
    }

    /// Take every field `entry` sets.
    fn apply(&mut self, entry: &RuleEntry, file: usize) {
        let located = |s: &Spanned<String>| Located {
            value: s.get_ref().clone(),
            file,
            span: s.span(),
        };
        if let Some(enabled) = entry.enabled {
            self.enabled = enabled;
        }
        if let Some(title) = &entry.title {
            self.title = Some(title.clone());
        }
        if let Some(severity) = entry.severity {
            self.severity = Some(severity);
        }
        if let Some(when) = &entry.when {
            self.when = Some(located(when));
        }
        if let Some(hold) = &entry.hold {
            self.hold = Some(located(hold));
        }
        if let Some(clear) = &entry.clear_when {
            self.clear_when = Some(located(clear));
        }
        if let Some(cause) = &entry.cause {
            self.cause = Some(cause.clone());
        }
        if let Some(action) = &entry.action {
            self.action = Some(action.clone());
        }
        if let Some(suggest) = entry.suggest {
            self.suggest = Some(suggest);
        }
        match &entry.source {
            Some(Sources::One(one)) => self.sources = vec![one.clone()],
            Some(Sources::Many(many)) => self.sources = many.clone(),
            None => {}
        }
        if let Some(per) = entry.per {
            self.per = Some(per);
        }
        if let Some(scope) = &entry.scope {
            self.scope = Some(scope.clone());
        }
        if let Some(explains) = &entry.explains {
            self.explains = explains.clone();
        }
        if let Some(keep) = &entry.keep_firing_for {
            self.keep_firing_for = Some(located(keep));
        }
    }

    fn compile(self, files: &[Source<'_>]) -> Result<Rule, RulesError> {
        let source = |file: usize| {
            files.get(file).copied().unwrap_or(Source {
                name: "?",
                text: "",
            })
        };
        let home = source(self.file);
        let missing = |field: &'static str| RulesError::Field {
            at: home.place(Some(self.span.start)),
            rule_id: self.id.clone(),
            field,
            message: "missing (a new rule needs title, severity and when)".into(),
        };
        let title = self.title.clone().ok_or_else(|| missing("title"))?;
        let severity = self.severity.ok_or_else(|| missing("severity"))?;
        let when_text = self.when.clone().ok_or_else(|| missing("when"))?;
        let per = self.per.unwrap_or_default();
        let expression = |field: &'static str, located: &Located<String>| {
            Expr::parse(&located.value, per.level()).map_err(|e| RulesError::Expression {
                at: source(located.file).place(Some(located.span.start)),
                error: Box::new(RuleError::new(&self.id, field, e)),
            })
        };
        let when = expression("when", &when_text)?;
        let clear_when = match &self.clear_when {
            Some(located) if located.value.trim().is_empty() => None,
            Some(located) => Some(expression("clear_when", located)?),
            None => None,
        };
        let duration = |field: &'static str, located: &Option<Located<String>>| match located {
            Some(located) => parse_duration(&located.value)
                .map(|d| d.as_secs_f64())
                .map_err(|e| RulesError::Field {
                    at: source(located.file).place(Some(located.span.start)),
                    rule_id: self.id.clone(),
                    field,
                    message: e.to_string(),
                }),
            None => Ok(0.0),
        };
        let for_secs = duration("for", &self.hold)?;
        let keep_firing_for = duration("keep_firing_for", &self.keep_firing_for)?;
        let title_field = |field: &'static str, message: &str| RulesError::Field {
            at: home.place(Some(self.span.start)),
            rule_id: self.id.clone(),
            field,
            message: message.to_owned(),
        };
        if title.trim().is_empty() {
            return Err(title_field("title", "must not be empty"));
        }
        let scope = self.scope.clone().unwrap_or_default();
        if scope.models.iter().any(|m| m.is_empty()) {
            return Err(title_field("scope.models", "patterns must not be empty"));
        }
        Ok(Rule {
            id: self.id,
            title,
            severity,
            when,
            for_secs,
            clear_when,
            cause: self.cause.unwrap_or_default(),
            action: self.action.unwrap_or_default(),
            suggest: self.suggest.and_then(SuggestEntry::get),
            sources: self.sources,
            per,
            scope: Scope {
                models: scope.models,
                labels: scope.labels.into_iter().collect(),
            },
            explains: self.explains,
            keep_firing_for,
        })
    }
}

/// A checked set of rules: the built-in ones, merged with a user file if there is one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RuleSet {
    rules: Vec<Rule>,
    disabled: Vec<String>,
    unobservable: Vec<Unobservable>,
}

impl RuleSet {
    /// The built-in rules alone.
    pub fn builtin() -> Result<RuleSet, RulesError> {
        Self::from_texts(&[(BUILTIN_RULES_NAME, BUILTIN_RULES_TOML)])
    }

    /// The built-in rules merged with the user rules file `user`, if given. A file that is
    /// named but missing is an error.
    pub fn load(user: Option<&Path>) -> Result<RuleSet, RulesError> {
        let Some(path) = user else {
            return Self::builtin();
        };
        let text = std::fs::read_to_string(path).map_err(|source| RulesError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let name = path.display().to_string();
        Self::with_user_text(&name, &text)
    }

    /// The built-in rules merged with a user file's text; `name` names it in errors.
    pub fn with_user_text(name: &str, text: &str) -> Result<RuleSet, RulesError> {
        Self::from_texts(&[(BUILTIN_RULES_NAME, BUILTIN_RULES_TOML), (name, text)])
    }

    /// Rules files merged in order: later files override earlier ones by id.
    pub fn from_texts(files: &[(&str, &str)]) -> Result<RuleSet, RulesError> {
        let sources: Vec<Source<'_>> = files
            .iter()
            .map(|&(name, text)| Source { name, text })
            .collect();
        let mut drafts: Vec<Draft> = Vec::new();
        let mut unobservable = Vec::new();
        for (index, source) in sources.iter().enumerate() {
            let file = parse_file(*source)?;
            let mut seen: Vec<&str> = Vec::new();
            for spanned in &file.rule {
                let entry = spanned.get_ref();
                let span = spanned.span();
                if seen.contains(&entry.id.as_str()) {
                    return Err(RulesError::Duplicate {
                        at: source.place(Some(span.start)),
                        rule_id: entry.id.clone(),
                    });
                }
                seen.push(&entry.id);
                if entry.id.trim().is_empty() {
                    return Err(RulesError::Field {
                        at: source.place(Some(span.start)),
                        rule_id: entry.id.clone(),
                        field: "id",
                        message: "must not be empty".into(),
                    });
                }
                match drafts.iter_mut().find(|d| d.id == entry.id) {
                    Some(draft) => draft.apply(entry, index),
                    None => drafts.push(Draft::new(entry, index, span)),
                }
            }
            unobservable.extend(file.unobservable);
        }
        let mut rules = Vec::new();
        let mut disabled = Vec::new();
        for draft in drafts {
            if draft.enabled {
                rules.push(draft.compile(&sources)?);
            } else {
                disabled.push(draft.id);
            }
        }
        Ok(RuleSet {
            rules,
            disabled,
            unobservable,
        })
    }

    /// The enabled rules, built-in order first, then new user rules in file order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rule with this id, if enabled.
    pub fn get(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }

    /// Ids of rules switched off with `enabled = false`.
    pub fn disabled(&self) -> &[String] {
        &self.disabled
    }

    /// Table rows deliberately not turned into rules, with the reason.
    pub fn unobservable(&self) -> &[Unobservable] {
        &self.unobservable
    }
}

fn parse_file(source: Source<'_>) -> Result<RuleFile, RulesError> {
    toml::from_str::<RuleFile>(source.text).map_err(|e| {
        let offset = e.span().map(|s| s.start);
        RulesError::Syntax {
            at: source.place(offset),
            rule_id: offset.and_then(|o| rule_id_at(source.text, o)),
            message: e.message().trim_end().to_owned(),
        }
    })
}

/// 1-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    let bytes = text.as_bytes();
    let end = offset.min(bytes.len());
    bytes
        .get(..end)
        .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
        + 1
}

/// The id of the `[[rule]]` table around byte `offset`, found by reading the text: the last
/// `[[rule]]` header at or before the offset, then its `id = "…"` line.
fn rule_id_at(text: &str, offset: usize) -> Option<String> {
    let mut header = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if at > offset {
            break;
        }
        let trimmed = line.trim();
        if trimmed.starts_with("[[rule]]") {
            header = Some(at);
        } else if trimmed.starts_with('[') {
            header = None;
        }
        at += line.len();
    }
    let from = header?;
    for line in text.get(from..)?.lines().skip(1) {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            return None;
        }
        if let Some(rest) = trimmed.strip_prefix("id") {
            let value = rest.trim_start().strip_prefix('=')?.trim();
            return Some(value.trim_matches(|c| c == '"' || c == '\'').to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_rules_load() {
        let rules = RuleSet::builtin().unwrap_or_else(|e| panic!("{e}"));
        assert!(rules.rules().len() > 40, "{}", rules.rules().len());
        assert!(rules.disabled().is_empty());
        for rule in rules.rules() {
            assert!(
                rule.title.chars().count() <= 32,
                "{}: title too long",
                rule.id
            );
            assert!(
                !rule.cause.is_empty() && !rule.action.is_empty(),
                "{}",
                rule.id
            );
            assert!(!rule.sources.is_empty(), "{}: no source", rule.id);
        }
    }

    #[test]
    fn rule_ids_are_found_around_an_offset() {
        let text = "[[rule]]\nid = \"a\"\ntitle = 1\n\n[[rule]]\nid = \"b\"\nwhn = \"x\"\n";
        assert_eq!(rule_id_at(text, 20).as_deref(), Some("a"));
        let offset = text.find("whn").expect("in text");
        assert_eq!(rule_id_at(text, offset).as_deref(), Some("b"));
        assert_eq!(rule_id_at("x = 1\n", 2), None);
        assert_eq!(line_of(text, offset), 7);
    }
}
