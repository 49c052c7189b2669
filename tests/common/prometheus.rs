//! A real Prometheus server (Debian's 2.42) for tests: one data directory per instance,
//! listening on 127.0.0.1 on a port the system picks, stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::find_program;

/// A running Prometheus. Dropping it kills the process (by its own handle) and waits for it.
pub struct PromServer {
    child: Child,
    pub port: u16,
    pub url: String,
    /// The temporary directory holding config, data and log (kept alive with the server).
    dir: tempfile::TempDir,
}

impl Drop for PromServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `promtool tsdb create-blocks-from openmetrics`: an OpenMetrics text into TSDB blocks in `data`.
pub fn backfill_openmetrics(openmetrics: &str, data: &Path) {
    let promtool = find_program("promtool").expect("promtool");
    let dir = data.parent().expect("data dir has a parent");
    let input = dir.join("backfill.om");
    std::fs::write(&input, openmetrics).expect("write OpenMetrics");
    let output = Command::new(promtool)
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&input)
        .arg(data)
        .output()
        .expect("run promtool");
    assert!(
        output.status.success(),
        "promtool failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

impl PromServer {
    /// Start Prometheus with `config` (YAML). `prepare` may fill the data directory first
    /// (e.g. with [`backfill_openmetrics`]). Waits until it listens and is ready.
    pub fn start(config: &str, prepare: impl FnOnce(&Path)) -> PromServer {
        Self::start_with(config, None, prepare)
    }

    /// [`PromServer::start`] with a web config (TLS, basic auth): `--web.config.file`. With
    /// one, readiness is only "it listens" (the probe speaks plain HTTP without credentials).
    pub fn start_with(
        config: &str,
        web_config: Option<&str>,
        prepare: impl FnOnce(&Path),
    ) -> PromServer {
        let prometheus = find_program("prometheus").expect("prometheus");
        let dir = tempfile::tempdir().expect("tempdir");
        let data: PathBuf = dir.path().join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        prepare(&data);
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).expect("write config");
        let log_path = dir.path().join("prometheus.log");
        let log = std::fs::File::create(&log_path).expect("log file");
        let mut command = Command::new(prometheus);
        if let Some(web) = web_config {
            let web_path = dir.path().join("web.yml");
            std::fs::write(&web_path, web).expect("write web config");
            command.arg(format!("--web.config.file={}", web_path.display()));
        }
        let child = command
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            // Backfilled blocks are old: keep them.
            .arg("--storage.tsdb.retention.time=100y")
            .arg("--web.listen-address=127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn prometheus");
        let mut server = PromServer {
            child,
            port: 0,
            url: String::new(),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        let read_log = || std::fs::read_to_string(&log_path).unwrap_or_default();
        server.port = super::wait_listening(
            &mut server.child,
            "prometheus",
            deadline,
            || listening_port(&read_log()),
            read_log,
        );
        server.url = format!("http://127.0.0.1:{}", server.port);
        if web_config.is_none() {
            server.wait_ready(deadline);
        }
        server
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    fn wait_ready(&self, deadline: Instant) {
        use std::io::{Read, Write};
        loop {
            let ready = std::net::TcpStream::connect(("127.0.0.1", self.port))
                .and_then(|mut stream| {
                    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
                    stream.write_all(
                        b"GET /-/ready HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                    )?;
                    let mut answer = String::new();
                    stream.read_to_string(&mut answer)?;
                    Ok(answer.starts_with("HTTP/1.1 200"))
                })
                .unwrap_or(false);
            if ready {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "prometheus not ready:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The port in Prometheus' `msg="Listening on" address=127.0.0.1:PORT` log line.
fn listening_port(log: &str) -> Option<u16> {
    log.lines()
        .filter(|line| line.contains("Listening on"))
        .find_map(|line| {
            let rest = line.split("address=").nth(1)?;
            let addr = rest.split_whitespace().next()?;
            addr.rsplit(':').next()?.parse().ok()
        })
}
