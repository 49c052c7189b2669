//! The [`Policy`] an action runs under, decided the same way for the command line and the
//! console: the configuration's routing label and `min_ready`, the global `--read-only`, and
//! the context's own `read_only` / `protected`.

use crate::config::KubernetesConfig;
use kvtop_core::actions::plan::{OnTimeout, Policy};
use kvtop_core::kube_model::LabelSelector;

/// What the caller adds to the configuration: flags of the action command, or the console's
/// dry-run toggle.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PolicyChoices {
    /// `--min-ready` (default: the config's `kubernetes.min_ready`).
    pub min_ready: Option<u32>,
    /// Longest drain wait, seconds (`None`: the default 120 s).
    pub drain_timeout_s: Option<f64>,
    /// Send every mutation with `dryRun=All`.
    pub dry_run: bool,
    /// What a drain does when its wait ends with requests in flight.
    pub on_timeout: OnTimeout,
    /// `--parallel`: pods a node drain drains at once (default 2).
    pub parallelism: Option<usize>,
}

/// The policy for an action through `context`.
pub fn policy_for(kube: &KubernetesConfig, context: &str, choices: &PolicyChoices) -> Policy {
    let context_policy = kube.policy_of(context);
    let defaults = Policy::default();
    Policy {
        routing_label: kube.routing_label.clone(),
        min_ready: choices.min_ready.unwrap_or(kube.min_ready),
        read_only: kube.read_only || context_policy.read_only,
        protected: context_policy.protected,
        drain_timeout_s: choices.drain_timeout_s.unwrap_or(defaults.drain_timeout_s),
        dry_run: choices.dry_run,
        on_timeout: choices.on_timeout,
        parallelism: choices.parallelism.unwrap_or(defaults.parallelism),
        // Validated when the configuration was read; a selector that does not parse here
        // only narrows what counts as an engine beside the image and command recognition.
        engine_selectors: kube
            .selectors
            .iter()
            .filter_map(|s| LabelSelector::parse(s).ok())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ContextPolicy;

    #[test]
    fn the_context_s_settings_and_the_global_flag_combine() {
        let mut kube = KubernetesConfig {
            routing_label: Some("serving".into()),
            min_ready: 2,
            ..KubernetesConfig::default()
        };
        kube.context_policies.insert(
            "prod".into(),
            ContextPolicy {
                read_only: false,
                protected: true,
            },
        );
        kube.context_policies.insert(
            "audit".into(),
            ContextPolicy {
                read_only: true,
                protected: false,
            },
        );
        let prod = policy_for(&kube, "prod", &PolicyChoices::default());
        assert_eq!(prod.routing_label.as_deref(), Some("serving"));
        assert_eq!(prod.min_ready, 2);
        assert!(prod.protected && !prod.read_only && !prod.dry_run);
        assert_eq!(prod.drain_timeout_s, 120.0);
        assert!(policy_for(&kube, "audit", &PolicyChoices::default()).read_only);
        let choices = PolicyChoices {
            min_ready: Some(0),
            drain_timeout_s: Some(30.0),
            dry_run: true,
            on_timeout: OnTimeout::Evict,
            parallelism: Some(4),
        };
        let chosen = policy_for(&kube, "dev", &choices);
        assert_eq!((chosen.min_ready, chosen.drain_timeout_s), (0, 30.0));
        assert!(chosen.dry_run && !chosen.protected && !chosen.read_only);
        assert_eq!(chosen.on_timeout, OnTimeout::Evict);
        assert_eq!((chosen.parallelism, prod.parallelism), (4, 2));
        assert_eq!(prod.on_timeout, OnTimeout::Stop);
        kube.read_only = true;
        assert!(policy_for(&kube, "prod", &PolicyChoices::default()).read_only);
    }
}
