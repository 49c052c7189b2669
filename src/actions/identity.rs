//! Who acts, for the audit log: the Kubernetes user the API server authenticates (a
//! SelfSubjectReview, as `kubectl auth whoami` asks), else the kubeconfig's user name, and
//! beside it the local account from the operating system (not `$USER`, which any environment
//! may set).

use std::ffi::CStr;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::{Api, PostParams};

use crate::sources::kube::{ApiCall, ClusterClient};

/// Where the Kubernetes user name comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UserSource {
    /// The API server's answer to a SelfSubjectReview.
    SelfSubjectReview,
    /// The kubeconfig context's user entry (the review was not made or failed).
    Kubeconfig,
    /// Neither is known.
    Unknown,
}

/// The operator, as the audit log records them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The Kubernetes user.
    pub user: String,
    pub source: UserSource,
    /// The local account running kvtop (`None`: the OS has no entry for the uid).
    pub os_user: Option<String>,
}

impl Identity {
    /// Nothing known of the Kubernetes user (no client for the context).
    pub fn unknown() -> Identity {
        Identity {
            user: "unknown".to_owned(),
            source: UserSource::Unknown,
            os_user: os_user(),
        }
    }

    /// Without asking the API server: the kubeconfig's user name and the OS account.
    pub fn local(cluster: &ClusterClient) -> Identity {
        let (user, source) = match &cluster.kubeconfig_user {
            Some(name) => (name.clone(), UserSource::Kubeconfig),
            None => ("unknown".to_owned(), UserSource::Unknown),
        };
        Identity {
            user,
            source,
            os_user: os_user(),
        }
    }
}

/// Ask the API server who we are; fall back to [`Identity::local`] when the review cannot be
/// made (an API server before 1.28, RBAC, a timeout).
pub async fn identify(cluster: &ClusterClient, limit: Duration) -> Identity {
    let local = Identity::local(cluster);
    let api: Api<SelfSubjectReview> = Api::all(cluster.client.clone());
    let answer = ApiCall::new("create", "selfsubjectreviews")
        .context(&cluster.context)
        .run(
            limit,
            api.create(&PostParams::default(), &SelfSubjectReview::default()),
        )
        .await;
    let user = answer
        .ok()
        .and_then(|review| review.status?.user_info?.username)
        .filter(|name| !name.is_empty());
    match user {
        Some(user) => Identity {
            user,
            source: UserSource::SelfSubjectReview,
            ..local
        },
        None => {
            tracing::debug!(context = %cluster.context, "SelfSubjectReview gave no user");
            local
        }
    }
}

/// The name of this process's real user, from the password database.
pub fn os_user() -> Option<String> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let mut entry = std::mem::MaybeUninit::<libc::passwd>::uninit();
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let mut buffer = vec![0 as libc::c_char; 4096];
    // SAFETY: getpwuid_r writes the entry into `entry`, its strings into `buffer` (whose real
    // length we pass), and sets `found` to `entry` or null; all outlive the call.
    let status = unsafe {
        libc::getpwuid_r(
            uid,
            entry.as_mut_ptr(),
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut found,
        )
    };
    if status != 0 || found.is_null() {
        return None;
    }
    // SAFETY: on success `found` points at `entry`, fully written, whose `pw_name` is a
    // NUL-terminated string inside `buffer`, still alive here.
    let name = unsafe { CStr::from_ptr((*found).pw_name) };
    Some(name.to_string_lossy().into_owned()).filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_os_user_is_the_uid_s_entry_not_the_environment() {
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        let expected = passwd.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.get(2)?.parse::<u32>().ok()? == uid).then(|| fields[0].to_owned())
        });
        assert!(expected.is_some(), "no /etc/passwd entry for uid {uid}");
        assert_eq!(os_user(), expected);
    }
}
