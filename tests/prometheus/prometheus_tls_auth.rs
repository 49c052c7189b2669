//! The Prometheus client's transport: HTTPS with a custom CA and basic auth against a real
//! Prometheus (its `--web.config.file`), a bearer token, and servers that misbehave (hang,
//! answer HTML) against local stand-ins. Nothing waits longer than the client's timeout.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::bad_server::{BadServer, Behaviour};
use common::prometheus::PromServer;
use kvtop::config::{PrometheusAuth, PrometheusConfig};
use kvtop::sources::prometheus::decode::decode_answer;
use kvtop::sources::prometheus::{ClientSettings, PromClient};
use kvtop_core::fleet::ScrapeError;

/// bcrypt of "kvtop-pw" (cost 10), as Prometheus' web config wants it.
const PASSWORD_HASH: &str = "$2b$10$abcdefghijklmnopqrstuuoKV0TDwaaw0Lm8OMYAG9wzkXBwi0Sbi";

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tls")
        .join(name)
}

/// Prometheus serving HTTPS with the test CA's server certificate, `more` appended to its web
/// config (e.g. basic auth users).
fn https_prometheus(more: &str) -> PromServer {
    let web = format!(
        "tls_server_config:\n  cert_file: {}\n  key_file: {}\n{more}",
        fixture("server.pem").display(),
        fixture("server.key").display()
    );
    PromServer::start_with("global:\n  scrape_interval: 1m\n", Some(&web), |_| {})
}

fn settings(timeout: Duration) -> ClientSettings {
    ClientSettings {
        timeout,
        body_limit: 1024 * 1024,
        user_agent: "kvtop-test".into(),
    }
}

fn client(config: PrometheusConfig, timeout: Duration) -> PromClient {
    PromClient::new(&config, settings(timeout)).expect("client")
}

fn basic(password: &str) -> Option<PrometheusAuth> {
    Some(PrometheusAuth::Basic {
        username: "kvtop".into(),
        password: password.into(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_custom_ca_and_basic_auth() {
    if !common::have_program("prometheus") {
        return;
    }
    let auth = format!("basic_auth_users:\n  kvtop: {PASSWORD_HASH}\n");
    let prom = https_prometheus(&auth);
    let url = format!("https://127.0.0.1:{}", prom.port);
    let ca_path = fixture("ca.pem");
    let ca = std::fs::read(&ca_path).expect("CA fixture");
    let trusted = |auth| PrometheusConfig {
        auth,
        ca: Some((ca_path.clone(), ca.clone())),
        ..PrometheusConfig::at(url.clone())
    };
    let timeout = Duration::from_secs(5);

    // Trusted CA and the right password: a real answer (once the TSDB is up; 503 before).
    let good = client(trusted(basic("kvtop-pw")), timeout);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let ok = loop {
        let raw = good.query("vector(42)", None).await.expect("an answer");
        if raw.status != 503 || tokio::time::Instant::now() > deadline {
            break raw;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let answer = decode_answer(ok.status, &ok.body).expect("decoded");
    assert_eq!(answer.series.first().and_then(|s| s.sample()), Some(42.0));

    // A wrong password: Prometheus' 401.
    let denied = client(trusted(basic("wrong")), timeout)
        .query("vector(1)", None)
        .await
        .expect("an HTTP answer");
    let err = decode_answer(denied.status, &denied.body).map(|_| ());
    assert!(
        matches!(err, Err(ScrapeError::Http { status: 401, .. })),
        "{err:?}"
    );

    // The system roots alone do not trust the test CA.
    let untrusted = PrometheusConfig {
        auth: basic("kvtop-pw"),
        ..PrometheusConfig::at(url.clone())
    };
    let err = client(untrusted, timeout).query("vector(1)", None).await;
    assert!(
        matches!(err, Err(ScrapeError::Connect(_) | ScrapeError::Other(_))),
        "{err:?}\n{}",
        prom.log()
    );
}

/// Serve one request with an empty vector answer; the request head comes back on `head`.
async fn recording_server() -> (String, tokio::sync::oneshot::Receiver<String>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let Ok((mut stream, _)) = listener.accept().await else {
            return;
        };
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(buf.get(..n).unwrap_or_default()),
            }
        }
        let body = br#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.write_all(body).await;
        let _ = tx.send(String::from_utf8_lossy(&head).into_owned());
    });
    (url, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_is_sent_and_bad_servers_give_clear_errors() {
    let (base, head) = recording_server().await;
    let config = PrometheusConfig {
        auth: Some(PrometheusAuth::Bearer("tok-123".into())),
        ..PrometheusConfig::at(base)
    };
    let raw = client(config, Duration::from_secs(2))
        .query("up", None)
        .await
        .expect("answer");
    assert!(decode_answer(raw.status, &raw.body).is_ok());
    let request = head.await.unwrap_or_default();
    assert!(
        request.starts_with("GET /api/v1/query?query=up&timeout=2000ms "),
        "{request}"
    );
    assert!(
        request
            .lines()
            .any(|l| l.eq_ignore_ascii_case("authorization: Bearer tok-123")),
        "{request}"
    );

    // A proxy's HTML error page.
    let html = BadServer::start(Behaviour::Status(502)).await;
    let base = html.url.trim_end_matches("/metrics").to_owned();
    let raw = client(PrometheusConfig::at(base), Duration::from_secs(2))
        .query("up", None)
        .await
        .expect("HTTP answer");
    assert!(matches!(
        decode_answer(raw.status, &raw.body),
        Err(ScrapeError::Http { status: 502, .. })
    ));

    // A server that never answers: the client gives up at its timeout.
    let hang = BadServer::start(Behaviour::Hang).await;
    let base = hang.url.trim_end_matches("/metrics").to_owned();
    let err = client(PrometheusConfig::at(base), Duration::from_millis(300))
        .query("up", None)
        .await;
    assert_eq!(err, Err(ScrapeError::Timeout { after_ms: 300 }));
}

/// `kvtop check` against `targets` with the system's root certificates taken from `ca_file`
/// (read by the platform verifier as OpenSSL reads them): exit code and stdout.
fn check_with_roots(targets: &[&str], ca_file: &std::path::Path) -> (Option<i32>, String) {
    let home = tempfile::tempdir().expect("temp home");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kvtop"));
    command.arg("check");
    for target in targets {
        command.args(["--target", target]);
    }
    command
        .args(["--interval", "250ms", "--duration", "1s"])
        .env("SSL_CERT_FILE", ca_file)
        .env("SSL_CERT_DIR", home.path().join("no-such-dir"));
    common::isolate_home(&mut command, home.path());
    let out = command.output().expect("kvtop runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The scrape client reads the system's root certificates at its first HTTPS handshake
/// (`src/sources/tls.rs`), not when it is built: a target whose CA the system trusts is
/// scraped, one it does not trust is refused for its certificate, and a system without any
/// root certificate fails its HTTPS targets only, while plain HTTP targets are still scraped
/// (building the client had failed, so kvtop scraped nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrapes_over_https_are_verified_against_the_system_roots_when_first_needed() {
    if !common::have_program("prometheus") {
        return;
    }
    let prom = https_prometheus("");
    let https = format!("https://127.0.0.1:{}/metrics", prom.port);
    let plain = BadServer::start(Behaviour::Ok(
        b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 1\n"
            .to_vec(),
    ))
    .await;
    let plain_url = plain.url.clone();
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "").expect("write");
    let other_ca = dir.path().join("server-only.pem");
    // A certificate that is not the test CA: the system trusts something, but not this server.
    std::fs::copy(fixture("server.pem"), &other_ca).expect("copy");
    let ca = fixture("ca.pem");

    let runs = tokio::task::spawn_blocking(move || {
        [
            check_with_roots(&[&https], &ca),
            check_with_roots(&[&https], &other_ca),
            check_with_roots(&[&https, &plain_url], &empty),
        ]
    })
    .await
    .expect("checks ran");
    let [
        (trusted_code, trusted),
        (untrusted_code, untrusted),
        (no_roots_code, no_roots),
    ] = runs;

    assert_eq!(trusted_code, Some(0), "{trusted}\n{}", prom.log());
    assert!(trusted.contains("(1 up)"), "{trusted}");
    assert_eq!(untrusted_code, Some(3), "{untrusted}");
    assert!(
        untrusted.contains("invalid peer certificate: UnknownIssuer"),
        "{untrusted}"
    );
    let down = no_roots
        .split("\nNot answering at the end:\n")
        .nth(1)
        .unwrap_or_default();
    assert!(
        down.contains("No CA certificates were loaded"),
        "{no_roots}"
    );
    assert!(no_roots.contains("(1 up)"), "{no_roots}");
    assert_ne!(no_roots_code, Some(3), "{no_roots}");
}
