//! A recording with an action in it: the kv-thrash fixture's records written again by the
//! recorder, with a drain confirmed 60 s in and failing 40 s later (its message carrying a
//! terminal escape, as an API's error text might).

use std::path::{Path, PathBuf};

use kvtop::record::{Recorder, Rotation, open};
use kvtop_core::fleet::Ts;
use kvtop_core::recording::{ActionNote, ActionPhase, Record};

/// Seconds after the recording's start at which the drain is confirmed, and at which it fails.
pub const CONFIRMED: f64 = 60.0;
pub const FAILED: f64 = 100.0;

fn note(phase: ActionPhase) -> ActionNote {
    ActionNote {
        run: 1,
        action: "drain".into(),
        context: "prod".into(),
        namespace: Some("llm".into()),
        target: "vllm-0".into(),
        dry_run: false,
        phase,
    }
}

/// The recording, written to `dir`, and its start time.
pub fn write(dir: &Path) -> (PathBuf, Ts) {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recording-v1-kv-thrash.kvr");
    let recording = open(&fixture).expect("the fixture opens");
    let header = recording.header().clone();
    let start = header.started;
    let path = dir.join("drain.kvr");
    let mut recorder = Recorder::start(&path, header, Rotation::default()).expect("recording");
    let notes = [
        Record::Action {
            at: start + CONFIRMED,
            note: note(ActionPhase::Started {
                steps: vec!["PATCH /api/v1/namespaces/llm/pods/vllm-0".into()],
            }),
        },
        Record::Action {
            at: start + FAILED,
            note: note(ActionPhase::Failed {
                step: 0,
                message: "HTTP 403 \u{1b}]0;pwned\u{7}forbidden".into(),
                done: Vec::new(),
            }),
        },
    ];
    let mut notes = notes.into_iter().peekable();
    for record in recording {
        while let Some(note) = notes.next_if(|n| n.at() <= record.at()) {
            recorder.record(&note);
        }
        recorder.record(&record);
    }
    recorder.finish();
    (path, start)
}
