//! Plain-HTTP scrapes over one HTTP/1.1 connection kept per target, on hyper directly.
//!
//! A target scraped every second over `http://` needs one thing of a client: the same GET on
//! the same connection. reqwest wraps that in layers a scrape does not use (a redirect policy
//! that parses the URL again, a retry policy that copies the request, a connection pool keyed
//! by host, a response that carries its own copy of the URL): at 1,000 engines they cost about
//! as much as mapping the payloads. So a target whose URL is `http://` with an IP address is
//! scraped here, on a connection of its own:
//! - the connection is made when there is none or the endpoint closed it, and kept after a
//!   response read to its end; a request that never reached a kept connection (the endpoint
//!   closed it while idle, as uvicorn does after 5 s) is sent again once on a new one;
//! - the caller bounds the whole scrape in time; a scrape cut short drops its connection;
//! - a redirect is not followed here: the caller hands the scrape to reqwest, which follows
//!   redirects as the console always has (at most 5, the Authorization header kept to the
//!   first host), and that target's later scrapes go the same way.
//!
//! Host names (which need resolving, with fallback between addresses), `https://` and URLs with
//! user info stay on reqwest.

use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::header::{HOST, USER_AGENT};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Uri};
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use kvtop_core::fleet::ScrapeError;
use tokio::net::TcpStream;

use super::scrape::{RawBody, find_io_error, io_error, read_body, root_cause};

/// The GET of one plain-HTTP target and the connection it is sent on.
pub(crate) struct PlainScrape {
    ip: IpAddr,
    port: u16,
    /// Origin form: path and query.
    path: Uri,
    /// Host, User-Agent and the scrape's own headers (Accept, Accept-Encoding, Authorization).
    headers: HeaderMap,
    /// The kept connection, taken out while a scrape uses it.
    connection: Mutex<Option<SendRequest<Empty<Bytes>>>>,
    /// The target answered with a redirect: reqwest scrapes it from then on.
    redirects: AtomicBool,
}

/// What one plain GET gave.
pub(crate) enum Fetched {
    Body(RawBody),
    /// A redirect (3xx with a Location): for reqwest to follow.
    Redirect,
}

impl PlainScrape {
    /// The plain GET of `url` with `headers` (the ones every scrape sends), or `None` when the
    /// URL needs more than one connection to an address (see the module's notes).
    pub(crate) fn new(url: &reqwest::Url, headers: &HeaderMap, user_agent: &str) -> Option<Self> {
        if url.scheme() != "http" || !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        // An IPv6 address is written in brackets; a name does not parse as an address.
        let host = url.host_str()?;
        let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
        let ip: IpAddr = bare.unwrap_or(host).parse().ok()?;
        let port = url.port_or_known_default()?;
        let path = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let path = Uri::try_from(path).ok()?;
        // As a client library writes it: the port only when it is not the scheme's.
        let authority = match url.port() {
            Some(port) => format!("{}:{port}", url.host_str()?),
            None => url.host_str()?.to_owned(),
        };
        let mut all = HeaderMap::with_capacity(headers.len() + 2);
        all.insert(HOST, HeaderValue::try_from(authority).ok()?);
        all.insert(USER_AGENT, HeaderValue::try_from(user_agent).ok()?);
        for (name, value) in headers {
            all.append(name, value.clone());
        }
        Some(PlainScrape {
            ip,
            port,
            path,
            headers: all,
            connection: Mutex::new(None),
            redirects: AtomicBool::new(false),
        })
    }

    /// Whether the target redirected once: then reqwest scrapes it.
    pub(crate) fn redirects(&self) -> bool {
        self.redirects.load(Ordering::Relaxed)
    }

    /// GET the payload, up to `limit` bytes as it comes (inflating is the caller's).
    pub(crate) async fn fetch(&self, limit: usize) -> Result<Fetched, ScrapeError> {
        let (sender, response) = self.send().await?;
        let status = response.status();
        // The redirects reqwest follows.
        let followed = matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308);
        if followed && response.headers().contains_key(http::header::LOCATION) {
            self.redirects.store(true, Ordering::Relaxed);
            return Ok(Fetched::Redirect);
        }
        if !status.is_success() {
            return Err(http_status(status));
        }
        let (parts, body) = response.into_parts();
        let body = read_body(&parts.headers, body, limit, |e| {
            transport_error(e, ScrapeError::Body)
        })
        .await?;
        // Read to its end, so the connection can carry the next scrape unless the endpoint
        // closes it (the next scrape sees that and connects again).
        *self.connection.lock().unwrap_or_else(|e| e.into_inner()) = Some(sender);
        Ok(Fetched::Body(body))
    }

    fn request(&self) -> Request<Empty<Bytes>> {
        let mut request = Request::new(Empty::new());
        *request.uri_mut() = self.path.clone();
        *request.headers_mut() = self.headers.clone();
        request
    }

    /// Send the GET on the kept connection, or on a new one.
    async fn send(&self) -> Result<(SendRequest<Empty<Bytes>>, Response<Incoming>), ScrapeError> {
        let kept = self
            .connection
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .filter(SendRequest::is_ready);
        let reused = kept.is_some();
        let mut sender = match kept {
            Some(sender) => sender,
            None => self.connect().await?,
        };
        match sender.try_send_request(self.request()).await {
            Ok(response) => Ok((sender, response)),
            Err(mut error) => match error.take_message() {
                // It never left: the kept connection had closed. Once more on a new one.
                Some(request) if reused => {
                    let mut sender = self.connect().await?;
                    let response = sender
                        .send_request(request)
                        .await
                        .map_err(|e| transport_error(e, ScrapeError::Other))?;
                    Ok((sender, response))
                }
                _ => Err(transport_error(error.into_error(), ScrapeError::Other)),
            },
        }
    }

    async fn connect(&self) -> Result<SendRequest<Empty<Bytes>>, ScrapeError> {
        let stream = TcpStream::connect((self.ip, self.port))
            .await
            .map_err(|e| io_error(&e))?;
        // Requests are one small write each: sent at once rather than after Nagle's delay.
        stream.set_nodelay(true).map_err(|e| io_error(&e))?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| transport_error(e, ScrapeError::Connect))?;
        // Ends when the connection closes or its sender (this target's scrape) is dropped.
        tokio::spawn(connection);
        Ok(sender)
    }
}

/// A status that is neither success nor a followed redirect.
pub(crate) fn http_status(status: StatusCode) -> ScrapeError {
    ScrapeError::Http {
        status: status.as_u16(),
        reason: status.canonical_reason().map(str::to_owned),
    }
}

/// A hyper error as the console names it: by its I/O cause when it has one (refused, reset),
/// else by its root cause under `otherwise`.
fn transport_error(error: hyper::Error, otherwise: impl Fn(String) -> ScrapeError) -> ScrapeError {
    if let Some(io) = find_io_error(&error) {
        return io_error(io);
    }
    otherwise(root_cause(&error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{ACCEPT, AUTHORIZATION};
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    const BODY: &str = "vllm:num_requests_running{model_name=\"m\"} 1\n";

    /// How the test endpoint treats a connection after each answer.
    #[derive(Clone, Copy)]
    enum After {
        /// Keep it open for more requests (HTTP/1.1's default).
        KeepAlive,
        /// Say `Connection: close` and close it.
        Close,
        /// Keep it open but close it, unannounced, once idle this long (uvicorn's keep-alive
        /// timeout).
        IdleClose(Duration),
        /// Answer with a redirect to `/elsewhere` and keep the connection.
        Redirect,
    }

    /// An HTTP/1.1 endpoint that counts the connections it accepted and keeps the request heads.
    struct Endpoint {
        url: String,
        connections: Arc<AtomicUsize>,
        heads: Arc<Mutex<Vec<String>>>,
    }

    async fn endpoint(after: After) -> Endpoint {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!(
            "http://{}/metrics?x=1",
            listener.local_addr().expect("addr")
        );
        let connections = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (count, seen) = (Arc::clone(&connections), Arc::clone(&heads));
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let seen = Arc::clone(&seen);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    loop {
                        let read = match after {
                            After::IdleClose(idle) => {
                                match tokio::time::timeout(idle, stream.read(&mut buf)).await {
                                    Ok(read) => read,
                                    Err(_) => return, // idle: closed without a word
                                }
                            }
                            _ => stream.read(&mut buf).await,
                        };
                        let Ok(n @ 1..) = read else { return };
                        let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                        seen.lock().expect("heads").push(head);
                        let (status, extra) = match after {
                            After::Close => ("200 OK", "Connection: close\r\n"),
                            After::Redirect => ("302 Found", "Location: /elsewhere\r\n"),
                            _ => ("200 OK", ""),
                        };
                        let answer = format!(
                            "HTTP/1.1 {status}\r\nContent-Length: {}\r\n{extra}\r\n{BODY}",
                            BODY.len()
                        );
                        if stream.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                        if let After::Close = after {
                            let _ = stream.shutdown().await;
                            return;
                        }
                    }
                });
            }
        });
        Endpoint {
            url,
            connections,
            heads,
        }
    }

    fn scrape_of(url: &str) -> PlainScrape {
        let url = reqwest::Url::parse(url).expect("url");
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("text/plain"));
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer t0k"));
        PlainScrape::new(&url, &headers, "kvtop-test/1").expect("a plain target")
    }

    async fn body_of(scrape: &PlainScrape) -> Result<Vec<u8>, ScrapeError> {
        match scrape.fetch(1 << 20).await? {
            Fetched::Body(body) => Ok(body.bytes),
            Fetched::Redirect => Err(ScrapeError::TooManyRedirects),
        }
    }

    /// Three scrapes of one target, `pause` apart, each giving the body; the endpoint, to count
    /// its connections.
    async fn three_scrapes(after: After, pause: Duration) -> Endpoint {
        let endpoint = endpoint(after).await;
        let scrape = scrape_of(&endpoint.url);
        for _ in 0..3 {
            assert_eq!(body_of(&scrape).await.expect("scrape"), BODY.as_bytes());
            tokio::time::sleep(pause).await;
        }
        endpoint
    }

    #[tokio::test]
    async fn one_connection_carries_every_scrape_with_the_headers_a_client_sends() {
        let endpoint = three_scrapes(After::KeepAlive, Duration::ZERO).await;
        assert_eq!(endpoint.connections.load(Ordering::SeqCst), 1);
        let heads = endpoint.heads.lock().expect("heads").clone();
        assert_eq!(heads.len(), 3);
        let port = endpoint
            .url
            .split(':')
            .nth(2)
            .and_then(|p| p.split('/').next());
        let head = heads[0].to_ascii_lowercase();
        assert!(head.starts_with("get /metrics?x=1 http/1.1\r\n"), "{head}");
        assert!(head.contains(&format!("host: 127.0.0.1:{}\r\n", port.unwrap_or("?"))));
        assert!(head.contains("user-agent: kvtop-test/1\r\n"), "{head}");
        assert!(head.contains("authorization: bearer t0k\r\n"), "{head}");
        assert!(head.contains("accept: text/plain\r\n"), "{head}");
    }

    #[tokio::test]
    async fn a_connection_the_endpoint_closes_is_made_again() {
        let endpoint = three_scrapes(After::Close, Duration::ZERO).await;
        assert_eq!(endpoint.connections.load(Ordering::SeqCst), 3);
    }

    /// uvicorn closes a keep-alive connection idle for 5 s without a word: the next scrape
    /// must not fail for it.
    #[tokio::test]
    async fn an_idle_connection_closed_unannounced_costs_no_scrape() {
        let idle = After::IdleClose(Duration::from_millis(50));
        let endpoint = three_scrapes(idle, Duration::from_millis(150)).await;
        assert_eq!(endpoint.connections.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_redirect_is_handed_over_and_remembered() {
        let endpoint = endpoint(After::Redirect).await;
        let scrape = scrape_of(&endpoint.url);
        assert!(!scrape.redirects());
        assert!(matches!(scrape.fetch(1 << 20).await, Ok(Fetched::Redirect)));
        assert!(scrape.redirects());
    }

    #[tokio::test]
    async fn a_body_past_the_cap_is_refused_and_its_connection_dropped() {
        let endpoint = endpoint(After::KeepAlive).await;
        let scrape = scrape_of(&endpoint.url);
        let err = scrape.fetch(8).await.err();
        assert_eq!(err, Some(ScrapeError::TooLarge { limit: 8 }));
        assert_eq!(body_of(&scrape).await.expect("scrape"), BODY.as_bytes());
        assert_eq!(endpoint.connections.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn refused_is_named() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/metrics", listener.local_addr().expect("addr"));
        drop(listener);
        let err = scrape_of(&url).fetch(1 << 20).await.err();
        assert_eq!(err, Some(ScrapeError::Refused));
    }

    #[test]
    fn only_plain_http_to_an_address_is_scraped_here() {
        let plain = |url: &str| {
            let url = reqwest::Url::parse(url).expect("url");
            PlainScrape::new(&url, &HeaderMap::new(), "ua")
        };
        for other in [
            "https://10.0.0.1:8000/metrics",
            "http://vllm.default.svc:8000/metrics",
            "http://localhost:8000/metrics",
            "http://user:pw@10.0.0.1:8000/metrics",
        ] {
            assert!(plain(other).is_none(), "{other}");
        }
        let v6 = plain("http://[::1]:8000/metrics").expect("IPv6 address");
        assert_eq!(v6.ip, "::1".parse::<IpAddr>().expect("ip"));
        assert_eq!(
            v6.headers.get(HOST),
            Some(&HeaderValue::from_static("[::1]:8000"))
        );
        let default_port = plain("http://10.1.2.3/metrics#frag").expect("IPv4 address");
        assert_eq!(default_port.port, 80);
        assert_eq!(default_port.path, "/metrics");
        assert_eq!(
            default_port.headers.get(HOST),
            Some(&HeaderValue::from_static("10.1.2.3"))
        );
    }
}
