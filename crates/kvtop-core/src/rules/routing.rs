//! The routing explainer: for each model group and a few prompt sizes, how two routers would
//! score each engine and which one each would pick.
//!
//! **Seed router** (T1 "fit score"), for a prompt of P tokens: skip engines that are down and
//! those whose free token budget is below P; `kv_free = 1 − kv_usage`;
//! `throughput = available_tokens / token_budget_max`; `w = 0.95` if P > 2048 else 0.8;
//! `score = kv_free·w + throughput·(1 − w)`; pick the highest. kvtop takes the KV capacity in
//! tokens (`num_gpu_blocks × block_size`) as `token_budget_max` and `(1 − kv_usage) × capacity`
//! as `available_tokens`, so `throughput` equals `kv_free` and the score reduces to `kv_free`:
//! the seed router ranks by free cache alone, and prompt size only matters through the budget
//! filter. That is the "empty worker trap" (T1.P2) made visible.
//!
//! **Gateway API Inference Extension default scorer**: engines that are not down, scored by
//! queue (weight 2), KV cache (weight 2) and prefix cache (weight 3), total = weighted sum
//! (0..7, or 0..4 without prefix). Queue: `waiting` min-max normalised over the group's
//! candidates, `(max − waiting) / (max − min)`, every candidate 1 when all queues are equal.
//! KV: `1 − kv_usage`. Prefix: the real scorer uses each request's prefix match; kvtop has no
//! requests, so it uses the engine's prefix-cache hit ratio as a stand-in, and only when every
//! candidate exports one (else the prefix term is left out for all). Engines with unknown queue
//! or KV usage are not scored. Ties go to the engine listed first.
//!
//! Neither router considers an engine whose pod is out of routing (drained, or a label its
//! Service or pool selects removed): it gets no requests whatever its score.

use super::health::{Health, classify};
use super::input::EngineInput;
use crate::engine::EngineId;
use crate::fleet::TargetId;

/// The prompt sizes the explainer shows, tokens.
pub const PROMPT_SIZES: [u32; 3] = [512, 2048, 8192];

/// Prompts longer than this get the seed router's high cache weight.
pub(crate) const SEED_LONG_PROMPT: u32 = 2048;
/// Seed router weight on free cache for long prompts.
pub(crate) const SEED_WEIGHT_LONG: f64 = 0.95;
/// Seed router weight on free cache otherwise.
pub(crate) const SEED_WEIGHT_SHORT: f64 = 0.8;
/// Inference Extension scorer weights.
pub(crate) const GIE_QUEUE_WEIGHT: f64 = 2.0;
pub(crate) const GIE_KV_WEIGHT: f64 = 2.0;
pub(crate) const GIE_PREFIX_WEIGHT: f64 = 3.0;

/// Why a router does not consider an engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Skip {
    /// Down (not answering scrapes).
    Unhealthy,
    /// Stuck: requests running but no token generated (the stuck-requests rule fires). A router
    /// that sent it work would see it time out.
    Stuck,
    /// Its pod is out of routing (no Service endpoint or pool sends it requests): no router
    /// would pick it.
    Unrouted,
    /// KV usage unknown.
    UnknownKv,
    /// KV capacity unknown (no `cache_config_info`).
    UnknownCapacity,
    /// Queue length unknown.
    UnknownQueue,
    /// Free token budget below the prompt size.
    BudgetTooSmall { available_tokens: f64 },
}

impl Skip {
    /// Short text for a table cell.
    pub fn label(self) -> &'static str {
        match self {
            Skip::Unhealthy => "down",
            Skip::Stuck => "stuck",
            Skip::Unrouted => "unrouted",
            Skip::UnknownKv => "kv ?",
            Skip::UnknownCapacity => "cap ?",
            Skip::UnknownQueue => "queue ?",
            Skip::BudgetTooSmall { .. } => "no room",
        }
    }
}

/// The seed router's score parts for one engine and prompt size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeedScore {
    pub kv_free: f64,
    pub throughput: f64,
    /// Weight on `kv_free` (0.95 or 0.8).
    pub weight: f64,
    pub score: f64,
}

/// The Inference Extension scorer's parts for one engine (each 0..1, unweighted) and total.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GieScore {
    pub queue: f64,
    pub kv: f64,
    /// `None` when the group's prefix term is left out.
    pub prefix: Option<f64>,
    pub total: f64,
}

/// One engine's row of the routing table.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineRouting {
    pub target: TargetId,
    pub id: EngineId,
    pub name: String,
    pub health: Health,
    /// One per prompt size, in the order of [`GroupRouting::prompts`].
    pub seed: Vec<Result<SeedScore, Skip>>,
    pub gie: Result<GieScore, Skip>,
}

/// One model group's routing table.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRouting {
    pub model: String,
    pub prompts: Vec<u32>,
    pub engines: Vec<EngineRouting>,
    /// The seed router's pick per prompt size (index into `engines`), `None` when it has none.
    pub seed_picks: Vec<Option<usize>>,
    /// The Inference Extension scorer's pick (it does not depend on prompt size here).
    pub gie_pick: Option<usize>,
    /// Whether the prefix term was used.
    pub gie_uses_prefix: bool,
}

/// The routing explainer for every model group (engines without a model name are left out),
/// groups in order of first appearance, engines in input order.
pub fn explain_routing(inputs: &[EngineInput<'_>], prompts: &[u32]) -> Vec<GroupRouting> {
    let mut models: Vec<&str> = Vec::new();
    for input in inputs {
        let model = input.id.model.as_str();
        if !model.is_empty() && !models.contains(&model) {
            models.push(model);
        }
    }
    models
        .into_iter()
        .map(|model| {
            let members: Vec<&EngineInput<'_>> =
                inputs.iter().filter(|i| i.id.model == model).collect();
            explain_group(model, &members, prompts)
        })
        .collect()
}

/// The routing table of one group of engines.
pub(crate) fn explain_group(
    model: &str,
    members: &[&EngineInput<'_>],
    prompts: &[u32],
) -> GroupRouting {
    let gie = gie_scores(members);
    let gie_uses_prefix = gie
        .iter()
        .any(|score| score.as_ref().is_ok_and(|s| s.prefix.is_some()));
    let engines: Vec<EngineRouting> = members
        .iter()
        .zip(gie)
        .map(|(input, gie)| EngineRouting {
            target: input.target,
            id: input.id.clone(),
            name: input.name.to_owned(),
            health: health(input),
            seed: prompts.iter().map(|&p| seed_score(input, p)).collect(),
            gie,
        })
        .collect();
    let seed_picks = (0..prompts.len())
        .map(|k| {
            best(
                engines
                    .iter()
                    .map(|e| e.seed.get(k).and_then(|s| s.as_ref().ok()).map(|s| s.score)),
            )
        })
        .collect();
    let gie_pick = best(engines.iter().map(|e| e.gie.ok().map(|g| g.total)));
    GroupRouting {
        model: model.to_owned(),
        prompts: prompts.to_vec(),
        engines,
        seed_picks,
        gie_pick,
        gie_uses_prefix,
    }
}

/// The engine's pod is known to be out of routing (`pod.routed` false); unknown counts as
/// routed, as for engines outside Kubernetes.
fn unrouted(input: &EngineInput<'_>) -> bool {
    input.fact("pod.routed") == Some(0.0)
}

fn health(input: &EngineInput<'_>) -> Health {
    match classify(input.status, input.signals.kv_usage) {
        health @ (Health::Down | Health::Pending) => health,
        _ if input.stalled => Health::Stuck,
        health => health,
    }
}

/// Index of the highest score; the first on ties.
fn best(scores: impl Iterator<Item = Option<f64>>) -> Option<usize> {
    let mut pick: Option<(usize, f64)> = None;
    for (i, score) in scores.enumerate() {
        let Some(score) = score else { continue };
        if pick.is_none_or(|(_, top)| score > top) {
            pick = Some((i, score));
        }
    }
    pick.map(|(i, _)| i)
}

/// The seed router's fit score of one engine for a prompt of `prompt` tokens.
pub fn seed_score(input: &EngineInput<'_>, prompt: u32) -> Result<SeedScore, Skip> {
    match health(input) {
        Health::Down | Health::Pending => return Err(Skip::Unhealthy),
        Health::Stuck => return Err(Skip::Stuck),
        Health::Healthy | Health::Degraded => {}
    }
    if unrouted(input) {
        return Err(Skip::Unrouted);
    }
    let kv = input.signals.kv_usage.ok_or(Skip::UnknownKv)?;
    let capacity = input
        .signals
        .kv_capacity_tokens
        .filter(|c| *c > 0.0)
        .ok_or(Skip::UnknownCapacity)?;
    let kv_free = (1.0 - kv).clamp(0.0, 1.0);
    let available = kv_free * capacity;
    if available < f64::from(prompt) {
        return Err(Skip::BudgetTooSmall {
            available_tokens: available,
        });
    }
    let throughput = available / capacity;
    let weight = if prompt > SEED_LONG_PROMPT {
        SEED_WEIGHT_LONG
    } else {
        SEED_WEIGHT_SHORT
    };
    Ok(SeedScore {
        kv_free,
        throughput,
        weight,
        score: kv_free * weight + throughput * (1.0 - weight),
    })
}

/// Inference Extension scores of a group's engines (same order).
fn gie_scores(members: &[&EngineInput<'_>]) -> Vec<Result<GieScore, Skip>> {
    let candidate = |input: &EngineInput<'_>| -> Result<(f64, f64), Skip> {
        match health(input) {
            Health::Down | Health::Pending => return Err(Skip::Unhealthy),
            Health::Stuck => return Err(Skip::Stuck),
            Health::Healthy | Health::Degraded => {}
        }
        if unrouted(input) {
            return Err(Skip::Unrouted);
        }
        let waiting = input.signals.waiting.ok_or(Skip::UnknownQueue)?;
        let kv = input.signals.kv_usage.ok_or(Skip::UnknownKv)?;
        Ok((waiting, kv))
    };
    let parts: Vec<Result<(f64, f64), Skip>> = members.iter().map(|i| candidate(i)).collect();
    let queues = parts
        .iter()
        .filter_map(|p| p.as_ref().ok().map(|(q, _)| *q));
    let (min, max) = queues.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), q| {
        (lo.min(q), hi.max(q))
    });
    let use_prefix = members
        .iter()
        .zip(&parts)
        .filter(|(_, p)| p.is_ok())
        .all(|(input, _)| input.signals.prefix_hit.is_some())
        && parts.iter().any(Result::is_ok);
    members
        .iter()
        .zip(parts)
        .map(|(input, part)| {
            let (waiting, kv) = part?;
            let queue = if max > min {
                (max - waiting) / (max - min)
            } else {
                1.0
            };
            let kv = (1.0 - kv).clamp(0.0, 1.0);
            let prefix = if use_prefix {
                input.signals.prefix_hit.map(|p| p.clamp(0.0, 1.0))
            } else {
                None
            };
            let total = GIE_QUEUE_WEIGHT * queue
                + GIE_KV_WEIGHT * kv
                + prefix.map_or(0.0, |p| GIE_PREFIX_WEIGHT * p);
            Ok(GieScore {
                queue,
                kv,
                prefix,
                total,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_takes_the_first_of_equal_scores() {
        assert_eq!(best([Some(0.5), None, Some(0.5)].into_iter()), Some(0));
        assert_eq!(best([None, Some(0.1), Some(0.7)].into_iter()), Some(2));
        assert_eq!(best([None, None].into_iter()), None);
    }
}
