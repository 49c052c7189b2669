//! An HTTP/1.1 server on 127.0.0.1 that misbehaves on purpose, one behaviour per listener.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How the server answers every request.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// 200 with this body.
    Ok(Vec<u8>),
    /// 200 with this body gzip-compressed (Content-Encoding: gzip).
    Gzip(Vec<u8>),
    /// This status and a short body.
    Status(u16),
    /// Accept the connection, read the request, never answer.
    Hang,
    /// Send headers, then one body byte per interval, forever.
    Slowloris(Duration),
    /// Send headers and part of the body, then reset the connection.
    ResetMidBody,
    /// Redirect to itself forever.
    RedirectLoop,
    /// 200 with a body of `len` bytes (Content-Length `len`) made of `line` repeated, written in
    /// chunks as the client reads, so a 50 MB body never sits in memory.
    Stream { line: Arc<[u8]>, len: usize },
    /// 200 with these bytes as a gzip-encoded body (already compressed, e.g. [`gzip_bomb`]).
    GzipBytes(Arc<[u8]>),
    /// 200 with this body gzip-compressed if the request's `Accept-Encoding` names gzip, else
    /// 406 (as a server that only sends compressed bodies would).
    GzipIfAsked(Vec<u8>),
    /// 200 with these bytes under this `Content-Encoding`.
    Encoded(&'static str, Vec<u8>),
    /// 200 with the bodies in turn, one per request; the last one is repeated.
    Sequence(Arc<Sequence>),
    /// This body at `/metrics/`, and a 307 to it from `/metrics` (how a Starlette `Mount`
    /// answers, as vLLM's `/metrics` did), counting the redirects.
    MountedWithSlash(Arc<Mounted>),
}

/// What [`Behaviour::MountedWithSlash`] serves, and how often it redirected.
#[derive(Debug)]
pub struct Mounted {
    body: Vec<u8>,
    redirected: AtomicUsize,
}

/// Serve `body` at `/metrics/`, redirecting `/metrics` there.
pub fn mounted_with_slash(body: Vec<u8>) -> (Behaviour, Arc<Mounted>) {
    let mounted = Arc::new(Mounted {
        body,
        redirected: AtomicUsize::new(0),
    });
    (Behaviour::MountedWithSlash(Arc::clone(&mounted)), mounted)
}

impl Mounted {
    /// How many requests were redirected so far.
    pub fn redirected(&self) -> usize {
        self.redirected.load(Ordering::SeqCst)
    }
}

/// Bodies served one per request by [`Behaviour::Sequence`].
#[derive(Debug)]
pub struct Sequence {
    bodies: Vec<Vec<u8>>,
    served: AtomicUsize,
}

/// Serve `bodies` one per request, the last one repeated.
pub fn sequence(bodies: Vec<Vec<u8>>) -> Behaviour {
    Behaviour::Sequence(Arc::new(Sequence {
        bodies,
        served: AtomicUsize::new(0),
    }))
}

impl Sequence {
    /// How many requests were answered so far.
    pub fn served(&self) -> usize {
        self.served.load(Ordering::SeqCst)
    }

    fn next(&self) -> Vec<u8> {
        let n = self.served.fetch_add(1, Ordering::SeqCst);
        let last = self.bodies.len().saturating_sub(1);
        self.bodies.get(n.min(last)).cloned().unwrap_or_default()
    }
}

/// A running misbehaving server. Dropping it stops accepting.
pub struct BadServer {
    pub url: String,
    behaviour: std::sync::Arc<std::sync::Mutex<Behaviour>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for BadServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl BadServer {
    pub async fn start(behaviour: Behaviour) -> BadServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let url = format!("http://{addr}/metrics");
        let shared = std::sync::Arc::new(std::sync::Mutex::new(behaviour));
        let current = std::sync::Arc::clone(&shared);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let behaviour = current.lock().expect("behaviour lock").clone();
                tokio::spawn(async move {
                    let _ = serve(stream, behaviour).await;
                });
            }
        });
        BadServer {
            url,
            behaviour: shared,
            task,
        }
    }

    /// Change how the following requests are answered.
    pub fn set(&self, behaviour: Behaviour) {
        *self.behaviour.lock().expect("behaviour lock") = behaviour;
    }

    /// Stop listening: from now on connections to the URL are refused (answers in progress
    /// finish).
    pub fn stop_listening(&self) {
        self.task.abort();
    }
}

/// A URL on which nothing listens (connection refused).
pub fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/metrics")
}

/// gzip-compress bytes.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(data).expect("gzip");
    enc.finish().expect("gzip")
}

/// A gzip stream that inflates to `len` zero bytes (about a thousandth of that on the wire).
pub fn gzip_bomb(len: usize) -> Arc<[u8]> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let chunk = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len());
        enc.write_all(&chunk[..n]).expect("gzip");
        left -= n;
    }
    enc.finish().expect("gzip").into()
}

/// The request's head, as read.
async fn read_request(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut buf = [0u8; 4096];
    let mut seen = Vec::new();
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(seen);
        }
        seen.extend_from_slice(&buf[..n]);
        if seen.windows(4).any(|w| w == b"\r\n\r\n") {
            return Ok(seen);
        }
    }
}

/// Whether a request head has an `Accept-Encoding` header naming gzip.
fn asks_for_gzip(head: &[u8]) -> bool {
    String::from_utf8_lossy(head).lines().any(|line| {
        let line = line.to_ascii_lowercase();
        line.strip_prefix("accept-encoding:")
            .is_some_and(|codings| codings.split(',').any(|c| c.trim() == "gzip"))
    })
}

async fn serve(mut stream: TcpStream, behaviour: Behaviour) -> std::io::Result<()> {
    let head = read_request(&mut stream).await?;
    match behaviour {
        Behaviour::Ok(body) => respond(&mut stream, 200, &[], &body).await,
        Behaviour::Gzip(body) => {
            respond(
                &mut stream,
                200,
                &[("Content-Encoding", "gzip")],
                &gzip(&body),
            )
            .await
        }
        Behaviour::Status(code) => respond(&mut stream, code, &[], b"error\n").await,
        Behaviour::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        }
        Behaviour::Slowloris(every) => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000000\r\n\r\n")
                .await?;
            loop {
                stream.write_all(b"#").await?;
                tokio::time::sleep(every).await;
            }
        }
        Behaviour::ResetMidBody => {
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\nvllm:num_requests_running{model_name=\"m\"} 1\n")
                .await?;
            stream.flush().await?;
            let std = stream.into_std()?;
            // SO_LINGER 0 makes close() send RST instead of FIN.
            let socket = socket2_linger_zero(&std);
            drop(std);
            socket
        }
        Behaviour::RedirectLoop => {
            respond(&mut stream, 302, &[("Location", "/metrics")], b"").await
        }
        Behaviour::Stream { line, len } => stream_body(&mut stream, &line, len).await,
        Behaviour::GzipBytes(bytes) => {
            respond(&mut stream, 200, &[("Content-Encoding", "gzip")], &bytes).await
        }
        Behaviour::Sequence(sequence) => respond(&mut stream, 200, &[], &sequence.next()).await,
        Behaviour::GzipIfAsked(body) if asks_for_gzip(&head) => {
            let encoding = [("Content-Encoding", "gzip")];
            respond(&mut stream, 200, &encoding, &gzip(&body)).await
        }
        Behaviour::GzipIfAsked(_) => respond(&mut stream, 406, &[], b"gzip only\n").await,
        Behaviour::Encoded(coding, bytes) => {
            respond(&mut stream, 200, &[("Content-Encoding", coding)], &bytes).await
        }
        Behaviour::MountedWithSlash(mounted) if head.starts_with(b"GET /metrics ") => {
            mounted.redirected.fetch_add(1, Ordering::SeqCst);
            respond(&mut stream, 307, &[("Location", "/metrics/")], b"").await
        }
        Behaviour::MountedWithSlash(mounted) => respond(&mut stream, 200, &[], &mounted.body).await,
    }
}

/// Write `len` bytes of `line` repeated, 64 KiB at a time; stops when the client goes away.
async fn stream_body(stream: &mut TcpStream, line: &[u8], len: usize) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await?;
    let line = if line.is_empty() {
        b"\n".as_slice()
    } else {
        line
    };
    let mut chunk = Vec::with_capacity(64 * 1024 + line.len());
    while chunk.len() < 64 * 1024 {
        chunk.extend_from_slice(line);
    }
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len());
        stream.write_all(&chunk[..n]).await?;
        left -= n;
    }
    stream.shutdown().await
}

fn socket2_linger_zero(stream: &std::net::TcpStream) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid fd and a correctly sized linger struct.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

async fn respond(
    stream: &mut TcpStream,
    code: u16,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {code} X\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}
