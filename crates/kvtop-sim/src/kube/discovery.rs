//! API discovery documents, built from the resource catalog ([`super::kinds`]): the legacy
//! form (`APIVersions`, `APIGroupList`, `APIGroup`, `APIResourceList`) and the aggregated form
//! (`apidiscovery.k8s.io` `APIGroupDiscoveryList`) that kubectl 1.26+ asks for first.

use serde_json::{Value, json};

use super::kinds::{Kind, REVIEWS, SUBRESOURCES, group_versions};

/// `GET /api`.
pub(crate) fn api_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]
    })
}

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// The named groups (not core), each with its one version.
fn named_groups() -> Vec<(&'static str, &'static str)> {
    group_versions()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .collect()
}

fn api_group(group: &str, version: &str) -> Value {
    let gv = json!({"groupVersion": group_version(group, version), "version": version});
    json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": [gv.clone()],
        "preferredVersion": gv,
    })
}

/// `GET /apis`.
pub(crate) fn api_group_list() -> Value {
    let groups: Vec<Value> = named_groups()
        .into_iter()
        .map(|(g, v)| {
            let mut group = api_group(g, v);
            if let Some(map) = group.as_object_mut() {
                map.remove("kind");
                map.remove("apiVersion");
            }
            group
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/GROUP`, `None` for a group that is not served.
pub(crate) fn api_group_doc(group: &str) -> Option<Value> {
    named_groups()
        .into_iter()
        .find(|(g, _)| *g == group)
        .map(|(g, v)| api_group(g, v))
}

/// One entry of an `APIResourceList`, for a stored kind, a subresource or a review.
fn legacy_resource(
    name: String,
    singular: &str,
    namespaced: bool,
    kind: &str,
    verbs: &[&str],
) -> Value {
    json!({
        "name": name,
        "singularName": singular,
        "namespaced": namespaced,
        "kind": kind,
        "verbs": verbs,
    })
}

/// `GET /api/v1` or `GET /apis/GROUP/VERSION`, `None` for a group version not served.
pub(crate) fn resource_list(group: &str, version: &str) -> Option<Value> {
    if !group_versions().contains(&(group, version)) {
        return None;
    }
    let mut resources = Vec::new();
    for kind in Kind::ALL {
        let info = kind.info();
        if info.group != group || info.version != version {
            continue;
        }
        let mut entry = legacy_resource(
            info.plural.to_owned(),
            info.singular,
            info.namespaced,
            info.kind,
            info.verbs,
        );
        if !info.short_names.is_empty() {
            entry["shortNames"] = json!(info.short_names);
        }
        if !info.categories.is_empty() {
            entry["categories"] = json!(info.categories);
        }
        resources.push(entry);
        for sub in SUBRESOURCES.iter().filter(|s| s.parent == kind) {
            let mut entry = legacy_resource(
                format!("{}/{}", info.plural, sub.name),
                "",
                info.namespaced,
                sub.kind,
                sub.verbs,
            );
            // A subresource whose body is of another group says so (pods/eviction is a
            // policy/v1 Eviction): kubectl drain looks exactly for this.
            if sub.group != group || sub.version != version {
                entry["group"] = sub.group.into();
                entry["version"] = sub.version.into();
            }
            resources.push(entry);
        }
    }
    for review in REVIEWS
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        resources.push(legacy_resource(
            review.plural.to_owned(),
            review.singular,
            false,
            review.kind,
            &["create"],
        ));
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version(group, version),
        "resources": resources,
    }))
}

/// The aggregated discovery document of core (`/api`, `core: true`) or of every named group
/// (`/apis`), in apidiscovery version `version` (`v2` or `v2beta1`).
pub(crate) fn aggregated(core: bool, version: &str) -> Value {
    let items: Vec<Value> = group_versions()
        .into_iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, v)| {
            let mut metadata = json!({"creationTimestamp": null});
            if !g.is_empty() {
                metadata["name"] = g.into();
            }
            json!({
                "metadata": metadata,
                "versions": [{
                    "version": v,
                    "resources": aggregated_resources(g, v),
                    "freshness": "Current",
                }],
            })
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

fn aggregated_resources(group: &str, version: &str) -> Vec<Value> {
    let scope = |namespaced: bool| if namespaced { "Namespaced" } else { "Cluster" };
    let mut out = Vec::new();
    for kind in Kind::ALL {
        let info = kind.info();
        if info.group != group || info.version != version {
            continue;
        }
        let subresources: Vec<Value> = SUBRESOURCES
            .iter()
            .filter(|s| s.parent == kind)
            .map(|s| {
                json!({
                    "subresource": s.name,
                    "responseKind": {"group": s.group, "version": s.version, "kind": s.kind},
                    "verbs": s.verbs,
                })
            })
            .collect();
        let mut entry = json!({
            "resource": info.plural,
            "responseKind": {"group": info.group, "version": info.version, "kind": info.kind},
            "scope": scope(info.namespaced),
            "singularResource": info.singular,
            "verbs": info.verbs,
        });
        if !info.short_names.is_empty() {
            entry["shortNames"] = json!(info.short_names);
        }
        if !info.categories.is_empty() {
            entry["categories"] = json!(info.categories);
        }
        if !subresources.is_empty() {
            entry["subresources"] = subresources.into();
        }
        out.push(entry);
    }
    for review in REVIEWS
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        out.push(json!({
            "resource": review.plural,
            "responseKind": {"group": review.group, "version": review.version, "kind": review.kind},
            "scope": "Cluster",
            "singularResource": review.singular,
            "verbs": ["create"],
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &Value) -> Vec<String> {
        list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn core_lists_pods_with_the_policy_eviction_subresource() {
        let core = resource_list("", "v1").unwrap();
        assert_eq!(core["groupVersion"], "v1");
        let all = names(&core);
        for want in [
            "pods",
            "pods/log",
            "pods/eviction",
            "pods/proxy",
            "nodes",
            "events",
        ] {
            assert!(all.iter().any(|n| n == want), "{want} in {all:?}");
        }
        let eviction = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "pods/eviction")
            .unwrap();
        assert_eq!(eviction["group"], "policy");
        assert_eq!(eviction["kind"], "Eviction");
        let pods = &core["resources"][0];
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(pods["namespaced"], true);
    }

    #[test]
    fn groups_and_their_versions_agree() {
        let list = api_group_list();
        let groups = list["groups"].as_array().unwrap();
        for group in groups {
            let name = group["name"].as_str().unwrap();
            let version = group["preferredVersion"]["version"].as_str().unwrap();
            assert!(resource_list(name, version).is_some(), "{name}/{version}");
            assert_eq!(api_group_doc(name).unwrap()["name"], name);
        }
        assert!(api_group_doc("batch").is_none());
        assert!(resource_list("apps", "v1beta1").is_none());
        let apps = names(&resource_list("apps", "v1").unwrap());
        assert!(apps.contains(&"deployments/scale".to_owned()));
        let authz = names(&resource_list("authorization.k8s.io", "v1").unwrap());
        assert_eq!(
            authz,
            ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]
        );
    }

    #[test]
    fn aggregated_core_is_one_unnamed_group_and_apis_names_each() {
        let core = aggregated(true, "v2");
        assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2");
        assert_eq!(core["items"].as_array().unwrap().len(), 1);
        assert!(core["items"][0]["metadata"].get("name").is_none());
        let pods = &core["items"][0]["versions"][0]["resources"][0];
        assert_eq!(pods["resource"], "pods");
        assert_eq!(pods["scope"], "Namespaced");
        let eviction = pods["subresources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["subresource"] == "eviction")
            .unwrap();
        assert_eq!(eviction["responseKind"]["group"], "policy");
        let apis = aggregated(false, "v2beta1");
        let named: Vec<&str> = apis["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str())
            .collect();
        assert!(named.contains(&"apps") && named.contains(&"discovery.k8s.io"));
    }
}
