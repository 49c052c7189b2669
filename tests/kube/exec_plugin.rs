//! An exec credential plugin that fails (issue 17): kvtop says which plugin failed, with its
//! exit status and its first stderr line, and never prints the plugin's environment, its
//! arguments or its stdout (where a real plugin may put a token).

use std::os::unix::fs::PermissionsExt;

use crate::actions_cli::setup;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_credential_plugin_is_named_without_its_secrets() {
    let s = setup().await;
    let plugin = s.dir.path().join("fake-auth-plugin");
    std::fs::write(
        &plugin,
        "#!/bin/sh\n\
         read -r answer\n\
         echo '{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"stdout-token-456\"}}'\n\
         echo \"error: login required ($answer)\" >&2\n\
         echo \"second line with $PLUGIN_SECRET\" >&2\n\
         exit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.kubeconfig()).unwrap()).unwrap();
    config["users"][0]["user"] = serde_json::json!({
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": plugin,
            "args": ["--secret-arg=arg-secret-789"],
            "env": [{"name": "PLUGIN_SECRET", "value": "env-secret-123"}],
        }
    });
    std::fs::write(s.kubeconfig(), config.to_string()).unwrap();
    let (code, out, err) = s
        .kvtop(&["cordon", "gpu-node-00", "--confirm", "gpu-node-00"])
        .await;
    assert_ne!(code, 0, "{out}\n{err}");
    let said = format!("{out}\n{err}");
    assert!(
        said.contains(
            "credential plugin fake-auth-plugin exited with status 3: error: login required ()"
        ),
        "{said}"
    );
    for secret in [
        "env-secret-123",
        "arg-secret-789",
        "stdout-token-456",
        "second line",
    ] {
        assert!(!said.contains(secret), "{secret} in:\n{said}");
    }
    assert!(s.mutations().is_empty());
}

/// `s`'s kubeconfig with its user authenticated by the script `body`, written as `name` in
/// the test's directory; `exec_timeout` goes into the config file.
fn use_plugin(s: &crate::actions_cli::Setup, name: &str, body: &str, exec_timeout: &str) {
    let plugin = s.dir.path().join(name);
    std::fs::write(&plugin, body).unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.kubeconfig()).unwrap()).unwrap();
    config["users"][0]["user"] = serde_json::json!({
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": plugin,
            "env": [{"name": "RUNS", "value": s.dir.path().join("runs")}],
        }
    });
    std::fs::write(s.kubeconfig(), config.to_string()).unwrap();
    std::fs::write(
        s.dir.path().join("config.toml"),
        format!("[kubernetes]\napi_timeout = \"2s\"\nexec_timeout = \"{exec_timeout}\"\n"),
    )
    .unwrap();
}

/// How many times the plugin ran (each run appends a line to `$RUNS`).
fn runs(s: &crate::actions_cli::Setup) -> usize {
    std::fs::read_to_string(s.dir.path().join("runs"))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// A plugin that never answers (a login waiting for a browser): kvtop names the context and
/// the plugin while it waits, gives up after `exec_timeout` with an error naming both, and
/// stops the plugin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_credential_plugin_times_out_naming_context_and_plugin() {
    let s = setup().await;
    let pid_file = s.dir.path().join("plugin.pid");
    use_plugin(
        &s,
        "hanging-auth-plugin",
        &format!(
            "#!/bin/sh\necho run >> \"$RUNS\"\necho $$ > {}\nexec sleep 600\n",
            pid_file.display()
        ),
        "4s",
    );
    let started = std::time::Instant::now();
    let (code, out, err) = s
        .kvtop(&["cordon", "gpu-node-00", "--confirm", "gpu-node-00"])
        .await;
    let took = started.elapsed();
    assert_ne!(code, 0, "{out}\n{err}");
    assert!(
        took < std::time::Duration::from_secs(20),
        "took {took:?}\n{err}"
    );
    assert!(
        err.contains("context sim: waiting for the credential plugin hanging-auth-plugin"),
        "{err}"
    );
    assert!(err.contains("(context sim)"), "{err}");
    assert!(
        err.contains("credential plugin hanging-auth-plugin gave no credential within 4s"),
        "{err}"
    );
    assert!(s.mutations().is_empty());
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    crate::actions_cli::eventually("the plugin is stopped", || gone(pid)).await;
}

/// SIGTERM while a plugin runs: kvtop ends at once instead of waiting for the plugin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_does_not_wait_for_a_credential_plugin() {
    let s = setup().await;
    let pid_file = s.dir.path().join("plugin.pid");
    use_plugin(
        &s,
        "hanging-auth-plugin",
        &format!(
            "#!/bin/sh\necho $$ > {}\nexec sleep 600\n",
            pid_file.display()
        ),
        "300s",
    );
    let mut command = s.command(
        &["cordon", "gpu-node-00", "--confirm", "gpu-node-00"],
        &s.audit(),
    );
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut kvtop = command.spawn().unwrap();
    crate::actions_cli::eventually("the plugin runs", || pid_file.exists()).await;
    let sent = std::time::Instant::now();
    // SAFETY: kill(2) on the child's own pid.
    unsafe { libc::kill(kvtop.id() as i32, libc::SIGTERM) };
    let status = tokio::task::spawn_blocking(move || kvtop.wait())
        .await
        .unwrap()
        .unwrap();
    let took = sent.elapsed();
    let pid = std::fs::read_to_string(&pid_file)
        .ok()
        .and_then(|t| t.trim().parse::<i32>().ok())
        .expect("the plugin wrote its pid");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !gone(pid) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let left_running = !gone(pid);
    if left_running {
        // SAFETY: kill(2) on the plugin this test started, left behind by kvtop.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(
        took < std::time::Duration::from_secs(5),
        "kvtop took {took:?} to end after SIGTERM"
    );
    assert!(!left_running, "the credential plugin outlived kvtop");
    assert!(s.mutations().is_empty());
}

/// A plugin that exits 0 but prints no ExecCredential: the error says so without quoting
/// the output (where a real plugin's token would be).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_s_unreadable_output_is_never_printed() {
    let s = setup().await;
    use_plugin(
        &s,
        "chatty-auth-plugin",
        "#!/bin/sh\necho 'token: stdout-secret-222 {'\nexit 0\n",
        "10s",
    );
    let (code, out, err) = s
        .kvtop(&["cordon", "gpu-node-00", "--confirm", "gpu-node-00"])
        .await;
    assert_ne!(code, 0, "{out}\n{err}");
    let said = format!("{out}\n{err}");
    assert!(
        said.contains("the credential plugin chatty-auth-plugin's output is not an ExecCredential"),
        "{said}"
    );
    assert!(!said.contains("stdout-secret-222"), "{said}");
    assert!(s.mutations().is_empty());
}

/// The plugin's token is used, and the plugin runs again when the token is about to expire
/// (here it expires within the refresh margin, so every request asks for a new one); a
/// token without an expiry is kept for the whole run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_token_is_refreshed_when_it_expires() {
    let expiring = setup().await;
    use_plugin(
        &expiring,
        "token-plugin",
        "#!/bin/sh\necho run >> \"$RUNS\"\n\
         soon=$(date -u -d '+30 seconds' +%Y-%m-%dT%H:%M:%SZ)\n\
         echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\
         \"status\":{\"token\":\"t\",\"expirationTimestamp\":\"'$soon'\"}}'\n",
        "10s",
    );
    let (code, out, err) = expiring
        .kvtop(&["cordon", "gpu-node-00", "--confirm", "gpu-node-00"])
        .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!expiring.mutations().is_empty());
    assert!(runs(&expiring) >= 2, "the plugin ran {}", runs(&expiring));

    let lasting = setup().await;
    use_plugin(
        &lasting,
        "token-plugin",
        "#!/bin/sh\necho run >> \"$RUNS\"\n\
         echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\
         \"status\":{\"token\":\"t\"}}'\n",
        "10s",
    );
    let (code, out, err) = lasting
        .kvtop(&["cordon", "gpu-node-00", "--confirm", "gpu-node-00"])
        .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(runs(&lasting), 1);
}
