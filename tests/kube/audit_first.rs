//! Audit before acting (issue 17): a `started` line is written and synced before the first
//! mutation, nothing is sent when it cannot be written, and an outcome that cannot be written
//! makes the exit status non-zero.

use std::os::unix::process::CommandExt;

use crate::actions_cli::{Setup, setup};
use crate::common;

const CORDON: [&str; 4] = ["cordon", "gpu-node-00", "--confirm", "gpu-node-00"];
const UNCORDON: [&str; 4] = ["uncordon", "gpu-node-00", "--confirm", "gpu-node-00"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_writes_started_before_its_outcome() {
    let s = setup().await;
    let (code, out, err) = s.kvtop(&CORDON).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let lines = common::kube_sim::audit_all_lines(&s.audit());
    let results: Vec<&str> = lines.iter().filter_map(|l| l["result"].as_str()).collect();
    assert_eq!(results, ["started", "ok"]);
    assert_eq!(lines[0]["target"], "gpu-node-00");
    assert_eq!(lines[0]["steps"], lines[1]["steps"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_under_the_audit_log_sends_nothing() {
    let s = setup().await;
    let command = s.command(&CORDON, std::path::Path::new("/dev/full"));
    let (code, out, err) = Setup::output(command).await;
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("cannot write the audit log /dev/full"),
        "{err}"
    );
    assert!(err.contains("nothing was sent"), "{err}");
    assert!(s.mutations().is_empty(), "{:?}", s.mutations());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_log_that_cannot_be_created_sends_nothing() {
    let s = setup().await;
    // Root ignores permissions: a directory that is a file is unwritable for everyone.
    let file = s.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let command = s.command(&CORDON, &file.join("audit.jsonl"));
    let (code, out, err) = Setup::output(command).await;
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("refusing to act without an audit log"),
        "{err}"
    );
    assert!(s.mutations().is_empty(), "{:?}", s.mutations());
}

/// `command` with writes past `bytes` in any file failing (EFBIG) instead of killing it.
fn file_size_limit(command: &mut std::process::Command, bytes: u64) {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_that_cannot_be_written_exits_non_zero() {
    let s = setup().await;
    // One audited run to learn the size of each record.
    let (code, out, err) = s.kvtop(&CORDON).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let text = std::fs::read_to_string(s.audit()).unwrap();
    let sizes: Vec<u64> = text.lines().map(|l| l.len() as u64 + 1).collect();
    assert_eq!(sizes.len(), 2, "{text}");
    let (code, _, err) = s.kvtop(&UNCORDON).await;
    assert_eq!(code, 0, "{err}");
    // Room for the started line, not for the outcome after it.
    let audit = s.dir.path().join("limited").join("audit.jsonl");
    let mut command = s.command(&CORDON, &audit);
    file_size_limit(&mut command, sizes[0] + sizes[1] / 2);
    let (code, out, err) = Setup::output(command).await;
    assert_eq!(code, 6, "{out}\n{err}");
    assert!(err.contains("NOT in the audit log"), "{err}");
    // Cordon, uncordon, and the cordon that ran unrecorded.
    assert_eq!(s.mutations().len(), 3, "{:?}", s.mutations());
    let lines = common::kube_sim::audit_all_lines(&audit);
    // No torn line after it: the part of the outcome that fitted is cut off again.
    let results: Vec<&str> = lines.iter().filter_map(|l| l["result"].as_str()).collect();
    assert_eq!(results, ["started"]);
}
