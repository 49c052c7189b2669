//! I/O workers: scraping engines' `/metrics` endpoints. Each worker owns its target, sends owned
//! [`kvtop_core::fleet::ScrapeReport`]s to the app loop and never touches the console's state.

pub mod decode;
pub mod kube;
mod outbox;
mod plain_http;
pub mod prometheus;
pub mod scrape;
mod tls;

pub use decode::{decode_payload, decode_payload_within};
pub use outbox::Outbox;
pub use scrape::{ScrapeSettings, ScrapeTarget, Scrapers, build_client, scrape_once};
