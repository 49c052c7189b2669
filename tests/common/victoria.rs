//! A real VictoriaMetrics (Debian's single-node `victoria-metrics`) for tests: it scrapes with a
//! Prometheus-style config and answers the Prometheus HTTP API. One data directory per
//! instance, 127.0.0.1 on a port the system picks, stopped when dropped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::find_program;

/// A running VictoriaMetrics. Dropping it kills the process and waits for it.
pub struct VmServer {
    child: Child,
    pub port: u16,
    pub url: String,
    dir: tempfile::TempDir,
}

impl Drop for VmServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl VmServer {
    /// Start VictoriaMetrics scraping per `scrape_config` (Prometheus YAML). `latency_offset`
    /// is `-search.latencyOffset`: how long samples stay invisible to queries (30 s by
    /// default; the lag kvtop must show rather than hide).
    pub fn start(scrape_config: &str, latency_offset: Duration) -> VmServer {
        let program = find_program("victoria-metrics").expect("victoria-metrics");
        let dir = tempfile::tempdir().expect("tempdir");
        let config_path = dir.path().join("scrape.yml");
        std::fs::write(&config_path, scrape_config).expect("write config");
        let log = std::fs::File::create(dir.path().join("vm.log")).expect("log file");
        let child = Command::new(program)
            .arg(format!(
                "-storageDataPath={}",
                dir.path().join("data").display()
            ))
            .arg("-httpListenAddr=127.0.0.1:0")
            .arg(format!("-promscrape.config={}", config_path.display()))
            .arg(format!(
                "-search.latencyOffset={}ms",
                latency_offset.as_millis()
            ))
            .arg("-retentionPeriod=100y")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn victoria-metrics");
        let mut server = VmServer {
            child,
            port: 0,
            url: String::new(),
            dir,
        };
        // It logs `http://127.0.0.1:0/`, not the port it got: read its listening socket.
        let deadline = Instant::now() + Duration::from_secs(20);
        let pid = server.child.id();
        let log_path = server.dir.path().join("vm.log");
        server.port = super::wait_listening(
            &mut server.child,
            "victoria-metrics",
            deadline,
            || listening_ports(pid).first().copied(),
            || std::fs::read_to_string(&log_path).unwrap_or_default(),
        );
        server.url = format!("http://127.0.0.1:{}", server.port);
        server
    }

    /// Import samples in Prometheus' text format with millisecond timestamps
    /// (`/api/v1/import/prometheus`) and flush them to storage; they become searchable within
    /// a second or two.
    pub async fn import(&self, text: String) {
        let http = reqwest::Client::new();
        let imported = http
            .post(format!("{}/api/v1/import/prometheus", self.url))
            .body(text)
            .send()
            .await
            .expect("import");
        assert!(imported.status().is_success(), "{:?}", imported.status());
        let flushed = http
            .get(format!("{}/internal/force_flush", self.url))
            .send()
            .await
            .expect("flush");
        assert!(flushed.status().is_success(), "{:?}", flushed.status());
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("vm.log")).unwrap_or_default()
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }
}

/// The TCP ports process `pid` listens on, from its socket descriptors and `/proc/net/tcp`.
pub fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let text = target.to_string_lossy().into_owned();
            Some(text.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // local_address is HEXIP:HEXPORT, st 0A is LISTEN, the inode is column 9.
            let (local, state, inode) = (cols.get(1)?, cols.get(3)?, cols.get(9)?);
            if *state != "0A" || !inodes.iter().any(|i| i == inode) {
                return None;
            }
            u16::from_str_radix(local.rsplit(':').next()?, 16).ok()
        })
        .collect()
}
