//! RBAC of the simulated cluster: configurable denials, applied both to real requests (403) and
//! to SelfSubjectAccessReviews (`allowed: false`), so a preflight and the request agree.

use serde_json::{Value, json};

use super::Cluster;
use crate::kube::kinds::{Kind, REVIEWS, SUBRESOURCES};
use crate::kube::status::ApiError;

/// A verb on a resource the simulated user may not use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// `get`, `list`, `watch`, `patch`, `delete`, `create`, … or `*`.
    pub verb: String,
    /// `pods`, `pods/eviction`, `pods/log`, `nodes`, `deployments`, … or `*`.
    pub resource: String,
    /// Only in this namespace (`None`: everywhere).
    pub namespace: Option<String>,
}

impl Denial {
    /// Deny `verb` on `resource` everywhere.
    pub fn new(verb: &str, resource: &str) -> Denial {
        Denial {
            verb: verb.to_owned(),
            resource: resource.to_owned(),
            namespace: None,
        }
    }

    fn covers(&self, request: &AccessRequest) -> bool {
        let resource = match &request.subresource {
            Some(sub) => format!("{}/{sub}", request.resource),
            None => request.resource.clone(),
        };
        (self.verb == "*" || self.verb == request.verb)
            && (self.resource == "*" || self.resource == resource)
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| request.namespace.as_ref() == Some(ns))
    }
}

/// What a request asks to do, in RBAC terms.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct AccessRequest {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl Cluster {
    /// Deny a verb on a resource from now on.
    pub fn deny(&mut self, denial: Denial) {
        self.denials.push(denial);
    }

    /// Lift every denial.
    pub fn clear_denials(&mut self) {
        self.denials.clear();
    }

    /// Whether the request is allowed.
    pub fn allowed(&self, request: &AccessRequest) -> bool {
        !self.denials.iter().any(|d| d.covers(request))
    }

    /// `Ok` when allowed, else the API server's 403.
    pub(crate) fn authorize(&self, request: &AccessRequest) -> Result<(), ApiError> {
        if self.allowed(request) {
            return Ok(());
        }
        let resource = match &request.subresource {
            Some(sub) => format!("{}/{sub}", request.resource),
            None => request.resource.clone(),
        };
        Err(ApiError::forbidden(
            &self.cfg.user,
            &request.verb,
            &resource,
            &request.group,
            request.namespace.as_deref(),
            request.name.as_deref(),
        ))
    }

    /// Answer a SelfSubjectAccessReview body.
    pub(crate) fn access_review(&self, body: &Value) -> Result<Value, ApiError> {
        let spec = body
            .get("spec")
            .ok_or_else(|| ApiError::bad_request("SelfSubjectAccessReview without spec"))?;
        let (allowed, status) = if let Some(attrs) = spec.get("resourceAttributes") {
            let text = |k: &str| attrs.get(k).and_then(Value::as_str).map(str::to_owned);
            let request = AccessRequest {
                verb: text("verb").unwrap_or_default(),
                group: text("group").unwrap_or_default(),
                resource: text("resource").unwrap_or_default(),
                subresource: text("subresource").filter(|s| !s.is_empty()),
                namespace: text("namespace").filter(|s| !s.is_empty()),
                name: text("name").filter(|s| !s.is_empty()),
            };
            let allowed = self.allowed(&request);
            let reason = if allowed {
                "RBAC: allowed by the simulated cluster role"
            } else {
                "RBAC: denied by the simulated cluster's configured denials"
            };
            (allowed, json!({"allowed": allowed, "reason": reason}))
        } else if spec.get("nonResourceAttributes").is_some() {
            (true, json!({"allowed": true}))
        } else {
            return Err(ApiError::invalid(
                "SelfSubjectAccessReview",
                "",
                "spec: exactly one of resourceAttributes or nonResourceAttributes must be set",
            ));
        };
        let mut review = json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "metadata": {"creationTimestamp": null},
            "spec": spec,
            "status": status,
        });
        if !allowed {
            review["status"]["denied"] = true.into();
        }
        Ok(review)
    }
}

impl Cluster {
    /// Answer a SelfSubjectRulesReview: for each served resource, the verbs the simulated
    /// user may use in `spec.namespace` (the kind's verbs less the configured denials).
    pub(crate) fn rules_review(&self, body: &Value) -> Result<Value, ApiError> {
        let namespace = body["spec"]["namespace"]
            .as_str()
            .filter(|ns| !ns.is_empty())
            .map(str::to_owned);
        let mut rules = Vec::new();
        let mut rule = |group: &str, resource: &str, sub: Option<&str>, verbs: &[&str]| {
            let allowed: Vec<&str> = verbs
                .iter()
                .copied()
                .filter(|verb| {
                    self.allowed(&AccessRequest {
                        verb: (*verb).to_owned(),
                        group: group.to_owned(),
                        resource: resource.to_owned(),
                        subresource: sub.map(str::to_owned),
                        namespace: namespace.clone(),
                        name: None,
                    })
                })
                .collect();
            if !allowed.is_empty() {
                let name = match sub {
                    Some(sub) => format!("{resource}/{sub}"),
                    None => resource.to_owned(),
                };
                rules.push(json!({"verbs": allowed, "apiGroups": [group], "resources": [name]}));
            }
        };
        for kind in Kind::ALL {
            let info = kind.info();
            rule(info.group, info.plural, None, info.verbs);
            for sub in SUBRESOURCES.iter().filter(|s| s.parent == kind) {
                rule(info.group, info.plural, Some(sub.name), sub.verbs);
            }
        }
        for review in REVIEWS {
            rule(review.group, review.plural, None, &["create"]);
        }
        Ok(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectRulesReview",
            "metadata": {"creationTimestamp": null},
            "spec": body["spec"].clone(),
            "status": {
                "resourceRules": rules,
                "nonResourceRules": [{
                    "verbs": ["get"],
                    "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz", "/version", "/version/"],
                }],
                "incomplete": false,
            },
        }))
    }

    /// Answer a SelfSubjectReview (`kubectl auth whoami`): who the API takes the caller for.
    pub(crate) fn identity_review(&self, now: f64) -> Value {
        json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "SelfSubjectReview",
            "metadata": {"creationTimestamp": crate::kube::objects::time(now)},
            "status": {"userInfo": {"username": self.cfg.user, "groups": ["system:authenticated"]}},
        })
    }
}
