//! Display names of the engine rows of one target.

use super::EngineState;

/// Name the rows of one target (all rows of `rows` belong to the target named `target`):
/// - one row: the target's name;
/// - several engines of one model: `target/engine`;
/// - several models: `target:model`, where `model` is the part after the last `/` (the whole
///   name when two models share that part);
/// - both: `target:model/engine`.
pub(crate) fn assign_names(target: &str, rows: &mut [EngineState]) {
    let Some(first) = rows.first() else {
        return;
    };
    let models_vary = rows.iter().any(|r| r.id.model != first.id.model);
    let engines_vary = rows.iter().any(|r| r.id.engine != first.id.engine);
    let shorts_collide = models_vary
        && rows.iter().any(|a| {
            rows.iter().any(|b| {
                a.id.model != b.id.model && short_model(&a.id.model) == short_model(&b.id.model)
            })
        });
    for row in rows.iter_mut() {
        let mut name = target.to_owned();
        if models_vary && !row.id.model.is_empty() {
            name.push(':');
            name.push_str(if shorts_collide {
                &row.id.model
            } else {
                short_model(&row.id.model)
            });
        }
        if engines_vary && !row.id.engine.is_empty() {
            name.push('/');
            name.push_str(&row.id.engine);
        }
        row.name = name;
    }
}

/// The part of a model name after its last `/` (`meta-llama/Llama-3.1-8B` → `Llama-3.1-8B`),
/// or the whole name when that part is empty.
fn short_model(model: &str) -> &str {
    match model.rsplit('/').next() {
        Some(short) if !short.is_empty() => short,
        _ => model,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineId;
    use crate::fleet::{EngineStatus, FleetSettings, History, Signals, TargetId};

    fn row(model: &str, engine: &str) -> EngineState {
        EngineState {
            target: TargetId(0),
            id: EngineId {
                model: model.into(),
                engine: engine.into(),
            },
            name: String::new(),
            status: EngineStatus::Down,
            restarted_at: None,
            last_ok: None,
            latest: None,
            signals: Signals::default(),
            history: History::new(&FleetSettings {
                history_full_secs: 1.0,
                history_total_secs: 1.0,
                ..FleetSettings::default()
            }),
            window: crate::fleet::window::SnapshotWindow::new(),
            counter_resets: None,
        }
    }

    fn names(rows: &[EngineState]) -> Vec<&str> {
        rows.iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn single_engine_takes_the_target_name() {
        let mut rows = [row("meta-llama/Llama-3.1-8B", "0")];
        assign_names("pod-a", &mut rows);
        assert_eq!(names(&rows), ["pod-a"]);
    }

    #[test]
    fn several_engines_of_one_model_get_the_engine_index() {
        let mut rows = [row("m/x", "0"), row("m/x", "1")];
        assign_names("pod-a", &mut rows);
        assert_eq!(names(&rows), ["pod-a/0", "pod-a/1"]);
    }

    #[test]
    fn several_models_get_the_short_model_name() {
        let mut rows = [
            row("meta-llama/Llama-3.1-8B", "0"),
            row("Qwen/Qwen3-0.6B", "0"),
        ];
        assign_names("pod-a", &mut rows);
        assert_eq!(names(&rows), ["pod-a:Llama-3.1-8B", "pod-a:Qwen3-0.6B"]);
    }

    #[test]
    fn models_and_engines_varying_get_both() {
        let mut rows = [row("org/a", "0"), row("org/a", "1"), row("org/b", "0")];
        assign_names("t", &mut rows);
        assert_eq!(names(&rows), ["t:a/0", "t:a/1", "t:b/0"]);
    }

    #[test]
    fn colliding_short_names_fall_back_to_full_names() {
        let mut rows = [row("org1/llama", ""), row("org2/llama", "")];
        assign_names("t", &mut rows);
        assert_eq!(names(&rows), ["t:org1/llama", "t:org2/llama"]);
    }
}
