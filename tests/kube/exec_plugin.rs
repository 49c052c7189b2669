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
