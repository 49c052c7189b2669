//! PURE. Kubernetes label selectors (`app=vllm,tier!=cache,env in (a,b),!legacy`) and field
//! selectors (`metadata.name=x,status.phase!=Failed`): parsing, and matching against labels or
//! against an object's fields.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as K8sLabelSelector;

/// Why a selector string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid selector {selector:?}: {message}")]
pub struct SelectorError {
    pub selector: String,
    pub message: String,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` or `key==value`.
    Equals(String, String),
    /// `key!=value` (also true when the label is absent).
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)` (also true when the label is absent).
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

impl Requirement {
    fn matches<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        match self {
            Requirement::Equals(k, v) => label(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => label(k) != Some(v.as_str()),
            Requirement::In(k, vs) => label(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => !label(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::Exists(k) => label(k).is_some(),
            Requirement::DoesNotExist(k) => label(k).is_none(),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requirement::Equals(k, v) => write!(f, "{k}={v}"),
            Requirement::NotEquals(k, v) => write!(f, "{k}!={v}"),
            Requirement::In(k, vs) => write!(f, "{k} in ({})", vs.join(",")),
            Requirement::NotIn(k, vs) => write!(f, "{k} notin ({})", vs.join(",")),
            Requirement::Exists(k) => write!(f, "{k}"),
            Requirement::DoesNotExist(k) => write!(f, "!{k}"),
        }
    }
}

/// A parsed label selector: every requirement must hold. The empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    pub requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parse the string form used by `kubectl -l` and the `labelSelector` query parameter.
    pub fn parse(text: &str) -> Result<LabelSelector, SelectorError> {
        let error = |message: String| SelectorError {
            selector: text.to_owned(),
            message,
        };
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(error("empty requirement".into()));
            }
            requirements.push(parse_requirement(part).map_err(error)?);
        }
        Ok(LabelSelector { requirements })
    }

    /// The selector of a Kubernetes object (`matchLabels` and `matchExpressions`). An unknown
    /// operator is an error, as the API server would reject it.
    pub(crate) fn from_k8s(selector: &K8sLabelSelector) -> Result<LabelSelector, SelectorError> {
        let mut requirements: Vec<Requirement> = selector
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| Requirement::Equals(k.clone(), v.clone()))
            .collect();
        for expr in selector.match_expressions.iter().flatten() {
            let values = expr.values.clone().unwrap_or_default();
            let key = expr.key.clone();
            requirements.push(match expr.operator.as_str() {
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::DoesNotExist(key),
                other => {
                    return Err(SelectorError {
                        selector: format!("{key} {other}"),
                        message: format!("unknown operator {other:?}"),
                    });
                }
            });
        }
        Ok(LabelSelector { requirements })
    }

    /// True when there are no requirements.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether a set of labels satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let lookup = |k: &str| labels.get(k).map(String::as_str);
        self.requirements.iter().all(|r| r.matches(lookup))
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Split at commas that are not inside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(check_key(key.trim())?));
    }
    if let Some((key, value)) = part.split_once("!=") {
        return Ok(Requirement::NotEquals(
            check_key(key.trim())?,
            check_value(value.trim())?,
        ));
    }
    if let Some((key, value)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return Ok(Requirement::Equals(
            check_key(key.trim())?,
            check_value(value.trim())?,
        ));
    }
    if let Some((key, rest)) = split_set_operator(part, "notin") {
        return Ok(Requirement::NotIn(check_key(key)?, parse_set(rest)?));
    }
    if let Some((key, rest)) = split_set_operator(part, "in") {
        return Ok(Requirement::In(check_key(key)?, parse_set(rest)?));
    }
    Ok(Requirement::Exists(check_key(part)?))
}

/// `key OP (values)` → (key, "(values)") when the word after the key is `op`.
fn split_set_operator<'a>(part: &'a str, op: &str) -> Option<(&'a str, &'a str)> {
    let mut words = part.splitn(2, char::is_whitespace);
    let key = words.next()?.trim();
    let rest = words.next()?.trim_start();
    let after = rest.strip_prefix(op)?;
    after
        .trim_start()
        .starts_with('(')
        .then(|| (key, after.trim()))
}

fn parse_set(text: &str) -> Result<Vec<String>, String> {
    let inner = text
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| format!("expected a set of values in parentheses, got {text:?}"))?;
    inner
        .split(',')
        .map(|v| check_value(v.trim()))
        .collect::<Result<Vec<_>, _>>()
}

fn check_key(key: &str) -> Result<String, String> {
    if key.is_empty() {
        return Err("a label key is empty".into());
    }
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let ok = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !ok {
            return Err(format!("{key:?} has an invalid prefix"));
        }
    }
    if !is_label_name(name) {
        return Err(format!(
            "{key:?} is not a label key (letters, digits, '-', '_', '.'; at most 63)"
        ));
    }
    Ok(key.to_owned())
}

fn check_value(value: &str) -> Result<String, String> {
    if value.is_empty() || is_label_name(value) {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "{value:?} is not a label value (letters, digits, '-', '_', '.'; at most 63)"
        ))
    }
}

/// A label name or value: 1–63 characters, alphanumeric at both ends, `-_.` inside.
fn is_label_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    let alnum = |b: &u8| b.is_ascii_alphanumeric();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// One requirement of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub value: String,
    /// True for `!=`.
    pub negated: bool,
}

/// A parsed field selector (`metadata.name=x,status.phase!=Running`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    pub requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parse the `fieldSelector` query parameter.
    pub fn parse(text: &str) -> Result<FieldSelector, SelectorError> {
        let mut requirements = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, value, negated) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (f, v, false)
            } else {
                return Err(SelectorError {
                    selector: text.to_owned(),
                    message: format!("{part:?} is not field=value or field!=value"),
                });
            };
            requirements.push(FieldRequirement {
                field: field.trim().to_owned(),
                value: value.trim().to_owned(),
                negated,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// Whether an object matches, reading its fields with `field` (which returns `Err(name)` for
    /// a field the object kind does not support).
    pub fn matches(
        &self,
        field: impl Fn(&str) -> Result<Option<String>, ()>,
    ) -> Result<bool, &str> {
        for r in &self.requirements {
            let actual = field(&r.field).map_err(|()| r.field.as_str())?;
            let equal = actual.as_deref().unwrap_or("") == r.value;
            if equal == r.negated {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn parse(text: &str) -> LabelSelector {
        LabelSelector::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_operator_parses_and_matches() {
        let pod = labels(&[("app.kubernetes.io/name", "vllm"), ("model", "llama-8b")]);
        assert!(parse("app.kubernetes.io/name=vllm").matches(&pod));
        assert!(parse("app.kubernetes.io/name==vllm,model=llama-8b").matches(&pod));
        assert!(!parse("app.kubernetes.io/name=vllm,model=qwen-7b").matches(&pod));
        assert!(parse("model!=qwen-7b").matches(&pod));
        assert!(
            parse("tier!=cache").matches(&pod),
            "absent label != anything"
        );
        assert!(parse("model in (qwen-7b, llama-8b)").matches(&pod));
        assert!(!parse("model notin (qwen-7b,llama-8b)").matches(&pod));
        assert!(parse("tier notin (cache)").matches(&pod));
        assert!(parse("model").matches(&pod));
        assert!(!parse("!model").matches(&pod));
        assert!(parse("!kvtop.dev/drained").matches(&pod));
        assert!(parse("").matches(&pod));
        assert!(parse("").is_empty());
    }

    #[test]
    fn commas_inside_sets_do_not_split_requirements() {
        let s = parse("model in (a,b),app=vllm");
        assert_eq!(
            s.requirements,
            vec![
                Requirement::In("model".into(), vec!["a".into(), "b".into()]),
                Requirement::Equals("app".into(), "vllm".into()),
            ]
        );
        assert_eq!(s.to_string(), "model in (a,b),app=vllm");
    }

    #[test]
    fn bad_selectors_are_errors_not_panics() {
        for bad in [
            "a=b,",
            "=x",
            "app=v llm",
            "model in a,b",
            "-bad=x",
            "UPPER/x=y",
            "a=b=c",
        ] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn object_selectors_convert_with_their_expressions() {
        let k8s = K8sLabelSelector {
            match_labels: Some([("app".to_owned(), "vllm".to_owned())].into()),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "model".into(),
                operator: "In".into(),
                values: Some(vec!["llama-8b".into()]),
            }]),
        };
        let s = LabelSelector::from_k8s(&k8s).unwrap_or_default();
        assert!(s.matches(&labels(&[("app", "vllm"), ("model", "llama-8b")])));
        assert!(!s.matches(&labels(&[("app", "vllm"), ("model", "qwen")])));
        let bad = K8sLabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "x".into(),
                operator: "Near".into(),
                values: None,
            }]),
            ..K8sLabelSelector::default()
        };
        assert!(LabelSelector::from_k8s(&bad).is_err());
    }

    #[test]
    fn field_selectors_compare_and_report_unsupported_fields() {
        let f = FieldSelector::parse("metadata.name=a,status.phase!=Failed").unwrap_or_default();
        let fields = |name: &str| match name {
            "metadata.name" => Ok(Some("a".to_owned())),
            "status.phase" => Ok(Some("Running".to_owned())),
            _ => Err(()),
        };
        assert_eq!(f.matches(fields), Ok(true));
        let g = FieldSelector::parse("spec.nodeName=n1").unwrap_or_default();
        assert_eq!(g.matches(fields), Err("spec.nodeName"));
        assert!(FieldSelector::parse("justaword").is_err());
        let h = FieldSelector::parse("status.phase==Pending").unwrap_or_default();
        assert_eq!(h.matches(fields), Ok(false));
    }
}
