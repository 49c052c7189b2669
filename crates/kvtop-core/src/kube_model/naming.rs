//! Kubernetes object names checked before they reach a request path: a name typed on the
//! command line (`kvtop cordon 'gpu-node-00?dryRun=All'`) must never add a query string, a
//! path segment or a different object to the request kvtop sends and audits.

/// Why a name is not a valid Kubernetes name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} name {shown}: {reason}")]
pub struct NameError {
    pub kind: &'static str,
    /// The name as given, quoted and escaped for display.
    pub shown: String,
    pub reason: &'static str,
}

/// Longest DNS-1123 subdomain (node, pod and Deployment names).
pub const MAX_SUBDOMAIN: usize = 253;
/// Longest DNS-1123 label (namespace names).
pub const MAX_LABEL: usize = 63;

/// A DNS-1123 subdomain: lower-case letters, digits, `-` and `.`, starting and ending with a
/// letter or digit, at most 253 characters. Nodes, pods and Deployments are named so.
pub fn check_subdomain(kind: &'static str, name: &str) -> Result<(), NameError> {
    check(kind, name, MAX_SUBDOMAIN, true)
}

/// A DNS-1123 label: as a subdomain without dots, at most 63 characters. Namespaces are
/// named so.
pub fn check_label(kind: &'static str, name: &str) -> Result<(), NameError> {
    check(kind, name, MAX_LABEL, false)
}

fn check(kind: &'static str, name: &str, max: usize, dots: bool) -> Result<(), NameError> {
    let refuse = |reason| {
        Err(NameError {
            kind,
            shown: format!("\"{}\"", crate::safe_text::line(name)),
            reason,
        })
    };
    if name.is_empty() {
        return refuse("is empty");
    }
    if name.len() > max {
        return refuse(if dots {
            "is longer than 253 characters"
        } else {
            "is longer than 63 characters"
        });
    }
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    let bytes = name.as_bytes();
    if !bytes.iter().all(|&b| allowed(b) || (dots && b == b'.')) {
        return refuse(if dots {
            "may hold only lower-case letters, digits, '-' and '.'"
        } else {
            "may hold only lower-case letters, digits and '-'"
        });
    }
    let alnum = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !alnum(bytes.first()) || !alnum(bytes.last()) {
        return refuse("must start and end with a letter or digit");
    }
    if dots
        && name
            .split('.')
            .any(|part| !alnum(part.as_bytes().first()) || !alnum(part.as_bytes().last()))
    {
        return refuse("each part between dots must start and end with a letter or digit");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_names_pass() {
        for name in [
            "gpu-node-00",
            "ip-10-0-1-17.ec2.internal",
            "vllm-llama-7b-5d9c8-x2x9q",
            "a",
            &"a".repeat(253),
        ] {
            assert_eq!(check_subdomain("node", name), Ok(()), "{name}");
        }
        assert_eq!(check_label("namespace", "llm-serving"), Ok(()));
    }

    #[test]
    fn names_that_would_change_the_request_are_refused() {
        for name in [
            "gpu-node-00?dryRun=All",
            "gpu-node-00/status",
            "../nodes/other",
            "node%2Fother",
            "Node-A",
            "node a",
            "node\u{1b}[2J",
            "-node",
            "node-",
            "node..a",
            "",
            &"a".repeat(254),
        ] {
            assert!(check_subdomain("node", name).is_err(), "{name:?}");
        }
        assert!(check_label("namespace", "a.b").is_err());
        assert!(check_label("namespace", &"a".repeat(64)).is_err());
    }

    #[test]
    fn the_error_names_the_kind_and_shows_the_name_safely() {
        let err = check_subdomain("node", "gpu-node-00?dryRun=All").unwrap_err();
        assert_eq!(
            err.to_string(),
            "node name \"gpu-node-00?dryRun=All\": may hold only lower-case letters, digits, '-' and '.'"
        );
        let err = check_subdomain("pod", "p\u{1b}]52;c;x\u{7}").unwrap_err();
        assert!(!err.to_string().contains('\u{1b}'), "{err}");
    }
}
