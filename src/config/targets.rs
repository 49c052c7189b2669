//! Scrape targets: URL checks, default names, and bearer tokens read from a file or the
//! environment. Token values never appear in `Debug` output or error messages.

use std::ffi::OsString;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use kvtop_core::fleet::TargetSpec;

/// A resolved scrape target.
#[derive(Clone, PartialEq, Eq)]
pub struct TargetConfig {
    /// Display name: configured, or `host:port` from the URL.
    pub name: String,
    /// Full URL of the metrics endpoint (`/metrics` added when the URL had no path).
    pub url: String,
    /// Sent as `Authorization: Bearer …`. Never log it.
    pub bearer_token: Option<String>,
}

impl TargetConfig {
    /// The target as the fleet knows it (no credentials).
    pub fn spec(&self) -> TargetSpec {
        TargetSpec {
            name: self.name.clone(),
            url: self.url.clone(),
        }
    }
}

impl fmt::Debug for TargetConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TargetConfig")
            .field("name", &self.name)
            .field("url", &self.url)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// A checked target URL and the name derived from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckedUrl {
    pub url: String,
    pub default_name: String,
    /// The default name followed by the URL's path (`host:port/a/metrics`): the name when
    /// another target on the command line has the same host and port.
    pub name_with_path: String,
}

/// Checks a target URL: http or https, a host, no credentials (they would be shown on screen).
/// A URL without a path gets `/metrics`. The default name is `host:port` (or `host` when the
/// URL has no explicit port).
pub(crate) fn check_url(text: &str) -> Result<CheckedUrl, String> {
    let mut url = reqwest::Url::parse(text.trim())
        .map_err(|e| format!("{text:?} is not a valid URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{text:?}: the scheme must be http or https, not {:?}",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "credentials in the URL would be shown on screen; use bearer_token_file or \
             bearer_token_env instead"
                .to_owned(),
        );
    }
    let host = match url.host_str() {
        Some(host) if !host.is_empty() => host.to_owned(),
        _ => return Err(format!("{text:?} has no host")),
    };
    if url.path() == "/" || url.path().is_empty() {
        url.set_path("/metrics");
    }
    let default_name = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    };
    let name_with_path = format!("{default_name}{}", url.path());
    Ok(CheckedUrl {
        url: url.into(),
        default_name,
        name_with_path,
    })
}

/// Where a bearer token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenSource {
    File(PathBuf),
    Env(String),
}

/// Token files larger than this are surely not a token.
const MAX_TOKEN_FILE_BYTES: u64 = 64 * 1024;

/// Reads a token, trimming surrounding whitespace. Errors name the file or variable, never the
/// token's content.
pub(crate) fn read_token(
    source: &TokenSource,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<String, String> {
    let (token, what) = match source {
        TokenSource::File(path) => (
            read_token_file(path)?,
            format!("token file {}", path.display()),
        ),
        TokenSource::Env(name) => {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(format!("{name:?} is not a valid environment variable name"));
            }
            let value =
                env(name).ok_or_else(|| format!("environment variable {name} is not set"))?;
            let value = value
                .into_string()
                .map_err(|_| format!("environment variable {name} is not valid UTF-8"))?;
            (value, format!("environment variable {name}"))
        }
    };
    let token = token.trim();
    if token.is_empty() {
        return Err(format!("{what} is empty"));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!(
            "{what} holds characters not allowed in an HTTP header (spaces, control or non-ASCII)"
        ));
    }
    Ok(token.to_owned())
}

fn read_token_file(path: &Path) -> Result<String, String> {
    let cannot_read = |e: std::io::Error| format!("cannot read token file {}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(cannot_read)?;
    let mut content = String::new();
    file.take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_string(&mut content)
        .map_err(cannot_read)?;
    if content.len() as u64 > MAX_TOKEN_FILE_BYTES {
        return Err(format!(
            "token file {} is larger than 64KiB; is it the right file?",
            path.display()
        ));
    }
    Ok(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<OsString> {
        None
    }

    #[test]
    fn url_without_path_gets_metrics_and_a_host_port_name() {
        let checked = check_url("http://10.0.0.5:8000").expect("valid");
        assert_eq!(checked.url, "http://10.0.0.5:8000/metrics");
        assert_eq!(checked.default_name, "10.0.0.5:8000");
        let checked = check_url("https://vllm.example.com/custom/metrics?x=1").expect("valid");
        assert_eq!(checked.url, "https://vllm.example.com/custom/metrics?x=1");
        assert_eq!(checked.default_name, "vllm.example.com");
    }

    #[test]
    fn bad_urls_are_rejected_with_a_reason() {
        let err = check_url("ftp://host/metrics").expect_err("scheme");
        assert!(err.contains("http or https"), "{err}");
        let err = check_url("not a url").expect_err("garbage");
        assert!(err.contains("not a valid URL"), "{err}");
        let err = check_url("http://user:secret@host:8000/").expect_err("credentials");
        assert!(!err.contains("secret"), "{err}");
        assert!(err.contains("bearer_token_file"), "{err}");
    }

    #[test]
    fn debug_output_redacts_the_token() {
        let target = TargetConfig {
            name: "a".into(),
            url: "http://a:1/metrics".into(),
            bearer_token: Some("s3cr3t-t0k3n".into()),
        };
        let debug = format!("{target:?}");
        assert!(!debug.contains("s3cr3t"), "{debug}");
        assert!(debug.contains("<redacted>"), "{debug}");
    }

    #[test]
    fn env_token_is_read_through_the_given_lookup() {
        let env = |name: &str| (name == "TOKEN_VAR").then(|| OsString::from("  abc.def-123\n"));
        assert_eq!(
            read_token(&TokenSource::Env("TOKEN_VAR".into()), &env),
            Ok("abc.def-123".to_owned())
        );
        let err = read_token(&TokenSource::Env("OTHER_VAR".into()), &env).expect_err("unset");
        assert_eq!(err, "environment variable OTHER_VAR is not set");
    }

    #[test]
    fn empty_or_invalid_tokens_are_rejected_without_echoing_them() {
        let blank = |_: &str| Some(OsString::from("   "));
        let err = read_token(&TokenSource::Env("V".into()), &blank).expect_err("blank");
        assert_eq!(err, "environment variable V is empty");
        let spaced = |_: &str| Some(OsString::from("abc def"));
        let err = read_token(&TokenSource::Env("V".into()), &spaced).expect_err("space");
        assert!(!err.contains("abc"), "{err}");
        let err = read_token(&TokenSource::Env(String::new()), &no_env).expect_err("no name");
        assert!(
            err.contains("not a valid environment variable name"),
            "{err}"
        );
    }

    #[test]
    fn missing_token_file_is_named() {
        let err = read_token(
            &TokenSource::File(PathBuf::from("/nonexistent/kvtop-token")),
            &no_env,
        )
        .expect_err("missing");
        assert!(err.contains("/nonexistent/kvtop-token"), "{err}");
    }
}
