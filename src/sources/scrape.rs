//! Scrape workers: one tokio task per target, all targets concurrently each interval.
//!
//! Every scrape is bounded in time (the per-target timeout covers connect, headers and body)
//! and in size (the body cap applies to the decompressed stream, so a gzip bomb stops at the
//! cap). A slow or hung target only ever delays itself.

use std::time::Duration;

use crate::sources::Outbox;
use reqwest::header::{ACCEPT, ACCEPT_ENCODING, AUTHORIZATION, CONTENT_ENCODING, HeaderValue};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use super::decode::decode_payload_within;
use super::plain_http::{Fetched, PlainScrape, http_status};
use kvtop_core::clock::unix_now;
use kvtop_core::engine::PayloadLimits;
use kvtop_core::fleet::{ScrapeError, ScrapePayload, ScrapeReport, TargetId};
use kvtop_core::metrics::gzip::{Gunzip, GunzipError, claimed_len, gunzip_capped};
use std::cell::RefCell;

/// What the Accept header asks for: the plain text format, which every exporter serves.
pub(crate) const ACCEPT_TEXT: &str = "text/plain;version=0.0.4;q=1,*/*;q=0.1";

/// The one content coding asked for (`Accept-Encoding`), as Prometheus asks: [`read_capped`]
/// inflates it.
pub(crate) const GZIP: &str = "gzip";

/// One endpoint to scrape.
#[derive(Clone)]
pub struct ScrapeTarget {
    pub id: TargetId,
    pub url: String,
    pub bearer_token: Option<String>,
}

impl std::fmt::Debug for ScrapeTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScrapeTarget")
            .field("id", &self.id)
            .field("url", &self.url)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// How every target is scraped.
#[derive(Debug, Clone)]
pub struct ScrapeSettings {
    pub interval: Duration,
    /// Bound on one whole scrape (connect, headers and body).
    pub timeout: Duration,
    /// Bound on the decompressed body.
    pub body_limit: usize,
    pub user_agent: String,
    /// Bound on what one payload may hold.
    pub limits: PayloadLimits,
}

/// The HTTP client shared by every worker.
pub fn build_client(settings: &ScrapeSettings) -> Result<reqwest::Client, reqwest::Error> {
    let builder = reqwest::Client::builder();
    // The system's roots are read at the first HTTPS handshake (`tls.rs`); should rustls ever
    // refuse that configuration, reqwest's own (which reads them now) does the same job.
    let builder = match super::tls::scrape_tls_config() {
        Ok(config) => builder.tls_backend_preconfigured(config),
        Err(_) => builder,
    };
    builder
        .user_agent(settings.user_agent.clone())
        .connect_timeout(settings.timeout)
        .redirect(reqwest::redirect::Policy::limited(5))
        .pool_max_idle_per_host(2)
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .no_proxy()
        .build()
}

/// Scrape one target once, within the timeout and the body cap.
pub async fn scrape_once(
    client: &reqwest::Client,
    target: &ScrapeTarget,
    settings: &ScrapeSettings,
) -> Result<ScrapePayload, ScrapeError> {
    PreparedScrape::new(client, target, settings)
        .scrape(client, settings)
        .await
}

/// A target's scrape request, built once (its URL parsed, its headers set) and copied for
/// each scrape: parsing the URL again every second costs more than the copy. A plain-HTTP
/// target is scraped on a connection of its own (`plain_http.rs`).
pub(crate) struct PreparedScrape {
    request: Result<reqwest::Request, ScrapeError>,
    plain: Option<PlainScrape>,
}

impl PreparedScrape {
    pub(crate) fn new(
        client: &reqwest::Client,
        target: &ScrapeTarget,
        settings: &ScrapeSettings,
    ) -> Self {
        let request = scrape_request(client, target);
        let plain = request.as_ref().ok().and_then(|request| {
            PlainScrape::new(request.url(), request.headers(), &settings.user_agent)
        });
        PreparedScrape { request, plain }
    }

    /// Scrape once, within the timeout and the body cap.
    pub(crate) async fn scrape(
        &self,
        client: &reqwest::Client,
        settings: &ScrapeSettings,
    ) -> Result<ScrapePayload, ScrapeError> {
        let timed_out = ScrapeError::Timeout {
            after_ms: settings.timeout.as_millis() as u64,
        };
        let fetch = self.fetch(client, settings.body_limit);
        let body = match tokio::time::timeout(settings.timeout, fetch).await {
            // The connect timeout inside the client is the same bound: report it the same way.
            Ok(Err(ScrapeError::Timeout { .. })) | Err(_) => return Err(timed_out),
            Ok(result) => result?,
        };
        let limits = settings.limits;
        if !body.gzipped {
            return decode_off_runtime(body.bytes, limits).await;
        }
        with_inflated(body.bytes, settings.body_limit, move |text| {
            decode_payload_within(text, limits)
        })
        .await
    }

    /// The body as it came: on the target's own connection when it is plain HTTP and has not
    /// redirected, else through reqwest.
    async fn fetch(&self, client: &reqwest::Client, limit: usize) -> Result<RawBody, ScrapeError> {
        let request = self.request.as_ref().map_err(Clone::clone)?;
        if let Some(plain) = self.plain.as_ref().filter(|plain| !plain.redirects()) {
            if let Fetched::Body(body) = plain.fetch(limit).await? {
                return Ok(body);
            }
        }
        // A GET has no body, so it always copies.
        let request = request
            .try_clone()
            .ok_or_else(|| ScrapeError::Other("the scrape request cannot be repeated".into()))?;
        fetch_body(client, request, limit).await
    }
}

/// The GET of `target`'s payload, with its bearer token if it has one.
fn scrape_request(
    client: &reqwest::Client,
    target: &ScrapeTarget,
) -> Result<reqwest::Request, ScrapeError> {
    let mut request = client
        .get(&target.url)
        .header(ACCEPT, HeaderValue::from_static(ACCEPT_TEXT))
        .header(ACCEPT_ENCODING, HeaderValue::from_static(GZIP));
    if let Some(token) = &target.bearer_token {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| ScrapeError::Other("bearer token is not a valid header value".into()))?;
        request = request.header(AUTHORIZATION, value);
    }
    request.build().map_err(classify)
}

/// Bodies up to this size are decoded on the runtime thread that fetched them: the parser is
/// linear (about 0.1 ms for a 111 KB payload), so such a body delays no other target, and the
/// hand-off to the blocking pool and back (two thread wake-ups per scrape) is saved. A vLLM
/// engine's payload is 50-120 KB; anything larger still goes to the blocking pool.
const INLINE_DECODE_MAX: usize = 128 * 1024;

/// Parse and map a body; a large one on the blocking pool (see [`off_runtime`]).
pub(crate) async fn decode_off_runtime(
    body: impl AsRef<[u8]> + Send + 'static,
    limits: PayloadLimits,
) -> Result<ScrapePayload, ScrapeError> {
    let bytes = body.as_ref().len();
    off_runtime(bytes, move || decode_payload_within(body.as_ref(), limits))
        .await
        .and_then(|decoded| decoded)
}

/// Run `decode` over `bytes` of fetched data where it delays nothing else: on the runtime
/// when they are few ([`INLINE_DECODE_MAX`]), else on the blocking pool. The console's
/// runtime has one thread for its event loop and every scrape: an 8 MB payload takes tens of
/// milliseconds to decode (more when hostile), and there that time would delay every other
/// target's scrape and the console's keys and frames.
pub(crate) async fn off_runtime<T: Send + 'static>(
    bytes: usize,
    decode: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ScrapeError> {
    if bytes <= INLINE_DECODE_MAX {
        return Ok(decode());
    }
    tokio::task::spawn_blocking(decode)
        .await
        .map_err(|e| ScrapeError::Other(format!("decoding stopped: {e}")))
}

async fn fetch_body(
    client: &reqwest::Client,
    request: reqwest::Request,
    limit: usize,
) -> Result<RawBody, ScrapeError> {
    let response = client.execute(request).await.map_err(classify)?;
    let status = response.status();
    if !status.is_success() {
        return Err(http_status(status));
    }
    read_raw(response, limit).await
}

/// Most bytes reserved ahead of the data: `Content-Length` is the endpoint's claim, so a body
/// grows as its bytes arrive past this.
const MAX_RESERVE: usize = 1 << 20;

/// Read a response body up to `limit` bytes, inflated when it came gzip-encoded: past the cap
/// (on the wire or once inflated) the read stops with [`ScrapeError::TooLarge`], so a gzip
/// bomb costs at most `limit` bytes of memory.
pub(crate) async fn read_capped(
    response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, ScrapeError> {
    let body = read_raw(response, limit).await?;
    if !body.gzipped {
        return Ok(body.bytes);
    }
    with_inflated(body.bytes, limit, |text| Ok(text.to_vec())).await
}

/// A response body as it came, up to the cap.
pub(crate) struct RawBody {
    pub(crate) bytes: Vec<u8>,
    /// `Content-Encoding: gzip`.
    pub(crate) gzipped: bool,
}

/// Read a reqwest response's body as it came, up to `limit` bytes.
async fn read_raw(response: reqwest::Response, limit: usize) -> Result<RawBody, ScrapeError> {
    let (parts, body) = http::Response::<reqwest::Body>::from(response).into_parts();
    read_body(&parts.headers, body, limit, classify).await
}

/// Read a body as it came, up to `limit` bytes, with the response's `headers`; `error` names a
/// transport error.
pub(crate) async fn read_body<B: http_body::Body<Data = bytes::Bytes>>(
    headers: &http::HeaderMap,
    body: B,
    limit: usize,
    error: impl Fn(B::Error) -> ScrapeError,
) -> Result<RawBody, ScrapeError> {
    use http_body_util::BodyExt;
    let gzipped = match headers.get(CONTENT_ENCODING) {
        None => false,
        Some(coding) => gzip_coding(coding.as_bytes())?,
    };
    // The Content-Length, when the endpoint sent one.
    let claimed = body.size_hint().exact().unwrap_or(64 * 1024);
    if claimed > limit as u64 {
        return Err(ScrapeError::TooLarge { limit });
    }
    let mut bytes = Vec::with_capacity(
        usize::try_from(claimed).map_or(MAX_RESERVE, |n| n.min(limit).min(MAX_RESERVE)),
    );
    let mut body = std::pin::pin!(body);
    while let Some(frame) = body.frame().await {
        let Ok(chunk) = frame.map_err(&error)?.into_data() else {
            continue; // trailers
        };
        if bytes.len() + chunk.len() > limit {
            return Err(ScrapeError::TooLarge { limit });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(RawBody { bytes, gzipped })
}

/// Whether a `Content-Encoding` is gzip; identity is plain, and any other coding (never asked
/// for) is refused by name rather than parsed as text.
fn gzip_coding(coding: &[u8]) -> Result<bool, ScrapeError> {
    let coding = coding.trim_ascii();
    if coding.eq_ignore_ascii_case(b"gzip") || coding.eq_ignore_ascii_case(b"x-gzip") {
        return Ok(true);
    }
    if coding.is_empty() || coding.eq_ignore_ascii_case(b"identity") {
        return Ok(false);
    }
    let shown = match std::str::from_utf8(coding) {
        Ok(name) if name.len() <= 32 && name.bytes().all(|b| b.is_ascii_graphic()) => {
            format!(" {name}")
        }
        _ => String::new(),
    };
    Err(ScrapeError::Body(format!(
        "unsupported Content-Encoding{shown} (only gzip is asked for)"
    )))
}

thread_local! {
    /// The inflater and buffer of every small gzip body inflated on this thread (the console's
    /// runtime has one): a scrape then makes no large allocation to inflate, where a fresh 46 KB
    /// inflater and 48 KB buffer per scrape, made between the payloads' small allocations, raised
    /// peak heap at 100 engines (benches/README.md, 29 November (9)). The buffer stays within
    /// [`INLINE_DECODE_MAX`].
    static GUNZIP: RefCell<Gunzip> = RefCell::new(Gunzip::new());
}

/// Inflate a gzip body within `limit` and `read` the text: on the runtime with the thread's
/// kept inflater when the trailer says the body is small (as a payload is, see
/// [`INLINE_DECODE_MAX`]) and it keeps its word, else on the blocking pool, so a bomb or a large
/// answer never holds up the other targets.
async fn with_inflated<T: Send + 'static>(
    raw: Vec<u8>,
    limit: usize,
    read: impl FnOnce(&[u8]) -> Result<T, ScrapeError> + Send + 'static,
) -> Result<T, ScrapeError> {
    let gunzip_error = move |error| match error {
        GunzipError::TooLarge => ScrapeError::TooLarge { limit },
        GunzipError::Corrupt(why) => ScrapeError::Body(format!("gzip decoding failed: {why}")),
    };
    let read = if claimed_len(&raw) <= INLINE_DECODE_MAX {
        let inline = GUNZIP.with_borrow_mut(|gunzip| {
            match gunzip.inflate(&raw, limit.min(INLINE_DECODE_MAX)) {
                Ok(text) => Ok(read(text)),
                // It broke its word: inflated again below, without the inline bound.
                Err(GunzipError::TooLarge) if limit > INLINE_DECODE_MAX => Err(read),
                Err(error) => Ok(Err(gunzip_error(error))),
            }
        });
        match inline {
            Ok(result) => return result,
            Err(read) => read,
        }
    } else {
        read
    };
    // Sized past the inline bound, so it runs on the blocking pool.
    off_runtime(INLINE_DECODE_MAX + 1, move || {
        read(&gunzip_capped(&raw, limit).map_err(gunzip_error)?)
    })
    .await?
}

/// Map a transport error onto the reasons the console shows.
pub(crate) fn classify(err: reqwest::Error) -> ScrapeError {
    if err.is_timeout() {
        return ScrapeError::Timeout { after_ms: 0 };
    }
    if err.is_redirect() {
        return ScrapeError::TooManyRedirects;
    }
    if let Some(io) = find_io_error(&err) {
        return io_error(io);
    }
    if err.is_connect() {
        return ScrapeError::Connect(root_cause(&err));
    }
    if err.is_body() || err.is_decode() {
        return ScrapeError::Body(root_cause(&err));
    }
    ScrapeError::Other(root_cause(&err))
}

/// An I/O error under a transport error: refused, reset, or a connection that failed.
pub(crate) fn io_error(io: &std::io::Error) -> ScrapeError {
    match io.kind() {
        std::io::ErrorKind::ConnectionRefused => ScrapeError::Refused,
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::UnexpectedEof => {
            ScrapeError::Body("connection reset".into())
        }
        _ => ScrapeError::Connect(io.to_string()),
    }
}

pub(crate) fn find_io_error<'e>(
    err: &'e (dyn std::error::Error + 'static),
) -> Option<&'e std::io::Error> {
    let mut source: Option<&'e (dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        source = e.source();
    }
    None
}

pub(crate) fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut current = err;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// Most targets whose scrapes start at the same instant: 64 requests at once are nothing for
/// the runtime or the network, and a fleet of 1,000 still spreads over 16 instants a second.
const TARGETS_PER_SLOT: usize = 64;

/// When, within the first interval, each of `targets` targets is first scraped: the targets
/// are dealt round the slots, and the slots are evenly spaced.
fn start_offsets(interval: Duration, targets: usize) -> impl Iterator<Item = Duration> {
    (0..targets).map(move |i| slot_offset(interval, i, targets))
}

/// The offset within the interval of the slot of the `index`th of `targets` targets.
pub(crate) fn slot_offset(interval: Duration, index: usize, targets: usize) -> Duration {
    let slots = targets.div_ceil(TARGETS_PER_SLOT).max(1);
    interval.mul_f64((index % slots) as f64 / slots as f64)
}

/// The first instant not before `now` of the slot at `offset`, with the slots laid on
/// `epoch`: targets started at different times share the slots, and so the wake-ups.
pub(crate) fn next_in_slot(
    epoch: Instant,
    now: Instant,
    interval: Duration,
    offset: Duration,
) -> Instant {
    let first = epoch + offset;
    if now <= first || interval.is_zero() {
        return first.max(now);
    }
    let periods = ((now - first).as_secs_f64() / interval.as_secs_f64()).ceil();
    first + interval.mul_f64(periods)
}

/// The running scrape workers. Dropping it stops them.
pub struct Scrapers {
    client: reqwest::Client,
    settings: ScrapeSettings,
    events: Outbox<ScrapeReport>,
    workers: Vec<(TargetId, JoinHandle<()>)>,
}

impl Scrapers {
    /// Start one worker per target. Targets are scraped together in slots of up to
    /// [`TARGETS_PER_SLOT`], and the slots are spread over the interval, so a large fleet is not
    /// scraped in one burst while a small one costs one wake-up of the runtime per interval
    /// rather than one per target (each costs about as much as parsing a payload).
    pub fn start(
        client: reqwest::Client,
        settings: ScrapeSettings,
        targets: Vec<ScrapeTarget>,
        events: Outbox<ScrapeReport>,
    ) -> Self {
        let mut scrapers = Scrapers {
            client,
            settings,
            events,
            workers: Vec::with_capacity(targets.len()),
        };
        let offsets = start_offsets(scrapers.settings.interval, targets.len());
        for (target, offset) in targets.into_iter().zip(offsets) {
            scrapers.spawn(target, offset);
        }
        scrapers
    }

    /// Start scraping one more target now.
    pub fn add(&mut self, target: ScrapeTarget) {
        self.spawn(target, Duration::ZERO);
    }

    /// Stop scraping a target.
    pub fn remove(&mut self, id: TargetId) {
        self.workers.retain(|(worker_id, handle)| {
            if *worker_id == id {
                handle.abort();
                false
            } else {
                true
            }
        });
    }

    pub fn len(&self) -> usize {
        self.workers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    fn spawn(&mut self, target: ScrapeTarget, offset: Duration) {
        let id = target.id;
        let client = self.client.clone();
        let settings = self.settings.clone();
        let events = self.events.clone();
        let handle = tokio::spawn(async move {
            let prepared = PreparedScrape::new(&client, &target, &settings);
            let mut ticker = tokio::time::interval_at(Instant::now() + offset, settings.interval);
            ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                let started = Instant::now();
                let outcome = prepared.scrape(&client, &settings).await;
                let report = ScrapeReport {
                    target: target.id,
                    at: unix_now(),
                    took: started.elapsed().as_secs_f64(),
                    outcome,
                };
                if !events.send(report).await {
                    break; // the console is gone
                }
            }
        });
        self.workers.push((id, handle));
    }
}

impl Drop for Scrapers {
    fn drop(&mut self) {
        for (_, handle) in &self.workers {
            handle.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gzip_is_inflated_and_other_codings_are_named_safely() {
        for gzip in [&b"gzip"[..], b"GZIP", b" x-gzip ", b"X-Gzip"] {
            assert_eq!(gzip_coding(gzip), Ok(true));
        }
        for plain in [&b""[..], b"identity", b" Identity"] {
            assert_eq!(gzip_coding(plain), Ok(false));
        }
        let refused = |coding: &[u8]| match gzip_coding(coding) {
            Err(ScrapeError::Body(why)) => why,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            refused(b"br"),
            "unsupported Content-Encoding br (only gzip is asked for)"
        );
        // Outside text with controls, or long, is not repeated.
        for hostile in [&b"br\x1b]52;c;ZWNobw==\x07"[..], b"\x1b[2J", &[b'z'; 200]] {
            assert_eq!(
                refused(hostile),
                "unsupported Content-Encoding (only gzip is asked for)"
            );
        }
    }

    fn slots_of(targets: usize) -> Vec<(Duration, usize)> {
        let mut slots: Vec<(Duration, usize)> = Vec::new();
        for offset in start_offsets(Duration::from_secs(1), targets) {
            match slots.iter_mut().find(|(at, _)| *at == offset) {
                Some((_, n)) => *n += 1,
                None => slots.push((offset, 1)),
            }
        }
        slots.sort();
        slots
    }

    /// The console's runtime has one thread: a large decode must leave it, a small one need
    /// not pay for the hand-over.
    #[test]
    fn large_decodes_leave_the_runtime_thread_and_small_ones_stay() {
        // As the console's runtime (`commands::setup::runtime`) is built.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .max_blocking_threads(8)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let here = std::thread::current().id();
            let small = off_runtime(INLINE_DECODE_MAX, || std::thread::current().id()).await;
            assert_eq!(small.expect("small decode"), here);
            let large = off_runtime(INLINE_DECODE_MAX + 1, || std::thread::current().id()).await;
            assert_ne!(large.expect("large decode"), here);
            // A decode that panics is an error of that scrape, not of the console.
            let failed = off_runtime(INLINE_DECODE_MAX + 1, || -> u8 { panic!("hostile") }).await;
            assert!(matches!(failed, Err(ScrapeError::Other(_))), "{failed:?}");
        });
    }

    #[test]
    fn a_slot_comes_round_every_interval_from_its_epoch() {
        let epoch = Instant::now();
        let second = Duration::from_secs(1);
        let quarter = Duration::from_millis(250);
        // Before the slot's first instant: that instant.
        assert_eq!(next_in_slot(epoch, epoch, second, quarter), epoch + quarter);
        // Later: the next time round, never earlier than now.
        let now = epoch + Duration::from_millis(2_300);
        assert_eq!(
            next_in_slot(epoch, now, second, quarter),
            epoch + Duration::from_millis(3_250)
        );
        let on_time = epoch + Duration::from_millis(2_250);
        assert_eq!(next_in_slot(epoch, on_time, second, quarter), on_time);
    }

    #[test]
    fn a_small_fleet_is_scraped_at_one_instant() {
        assert_eq!(slots_of(8), [(Duration::ZERO, 8)]);
        assert_eq!(slots_of(64), [(Duration::ZERO, 64)]);
        assert!(slots_of(0).is_empty());
    }

    #[test]
    fn a_large_fleet_is_spread_over_the_interval_in_even_slots() {
        let slots = slots_of(1000);
        assert_eq!(slots.len(), 16);
        assert!(
            slots.iter().all(|(_, n)| (62..=63).contains(n)),
            "{slots:?}"
        );
        assert_eq!(slots.iter().map(|(_, n)| n).sum::<usize>(), 1000);
        assert_eq!(
            slots[1].0,
            Duration::from_millis(62) + Duration::from_micros(500)
        );
        assert!(
            slots
                .last()
                .is_some_and(|(at, _)| *at < Duration::from_secs(1))
        );
        // One more target than a slot holds takes a second slot, half an interval later.
        assert_eq!(
            slots_of(65),
            [(Duration::ZERO, 33), (Duration::from_millis(500), 32)]
        );
    }
}
