//! PURE. Prometheus HTTP API answers (`/api/v1/query`, `/api/v1/query_range`) decoded from
//! their JSON, borrowing label names and values from the body where they need no unescaping.
//!
//! Errors keep Prometheus' own words: `{"status":"error","errorType":"bad_data","error":"…"}`
//! with HTTP 400 becomes `HTTP 400 bad_data: …`; a body that is not an API answer (a proxy's
//! HTML page) says so.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use kvtop_core::fleet::ScrapeError;

/// One series of an answer: its labels and its value (instant) or values (range).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Item<'a> {
    #[serde(borrow)]
    metric: Labels<'a>,
    #[serde(default, borrow)]
    value: Option<(f64, Text<'a>)>,
    #[serde(default, borrow)]
    values: Vec<(f64, Text<'a>)>,
}

impl<'a> Item<'a> {
    /// A label's value; `None` when absent (Prometheus never sends empty labels).
    pub fn label(&self, name: &str) -> Option<&str> {
        self.metric
            .0
            .iter()
            .find(|(n, _)| n.0 == name)
            .map(|(_, v)| v.0.as_ref())
    }

    /// Every label, in the answer's order.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.metric
            .0
            .iter()
            .map(|(n, v)| (n.0.as_ref(), v.0.as_ref()))
    }

    /// The instant value, `None` when absent or not a number (`NaN`).
    pub fn sample(&self) -> Option<f64> {
        self.value.as_ref().and_then(|(_, v)| parse_value(&v.0))
    }

    /// The points of a range answer: time and value (`None` for `NaN`).
    pub fn points(&self) -> impl Iterator<Item = (f64, Option<f64>)> + '_ {
        self.values.iter().map(|(t, v)| (*t, parse_value(&v.0)))
    }

    /// How many points a range answer's series has.
    pub fn point_count(&self) -> usize {
        self.values.len()
    }

    /// The time of the range answer's point at `index`.
    pub fn point_time(&self, index: usize) -> Option<f64> {
        self.values.get(index).map(|(t, _)| *t)
    }

    /// The value of the range answer's point at `index` (`None` when absent or `NaN`).
    pub fn point_value(&self, index: usize) -> Option<f64> {
        self.values.get(index).and_then(|(_, v)| parse_value(&v.0))
    }

    /// The point at `index` of a range answer as the series an instant query at its time
    /// answers with: a range answer split per time reads like the instant answers of a cycle.
    pub fn instant_at(&self, index: usize) -> Option<Item<'a>> {
        let value = self.values.get(index)?.clone();
        Some(Item {
            metric: self.metric.clone(),
            value: Some(value),
            values: Vec::new(),
        })
    }
}

/// A decoded answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer<'a> {
    pub series: Vec<Item<'a>>,
    /// Warnings Prometheus attached (e.g. a partial answer from a remote store).
    pub warnings: Vec<String>,
}

/// A sample value as Prometheus writes it (`"0.5"`, `"NaN"`, `"+Inf"`); `None` for `NaN` or
/// anything unparsable.
pub(crate) fn parse_value(text: &str) -> Option<f64> {
    let value = match text {
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        _ => text.parse::<f64>().ok()?,
    };
    (!value.is_nan()).then_some(value)
}

/// Decode a response of HTTP status `status`.
pub fn decode_answer(status: u16, body: &[u8]) -> Result<Answer<'_>, ScrapeError> {
    // UTF-8 checked once over the whole body (fast) rather than string by string while
    // decoding; an invalid body still gets the decoder's own error, at its place.
    let decoded = match std::str::from_utf8(body) {
        Ok(text) => serde_json::from_str::<Envelope<'_>>(text),
        Err(_) => serde_json::from_slice::<Envelope<'_>>(body),
    };
    let envelope = match decoded {
        Ok(envelope) => envelope,
        Err(err) => return Err(not_an_answer(status, body, &err)),
    };
    if envelope.status != "success" {
        let message = format!(
            "{}: {}",
            envelope.error_type.as_deref().unwrap_or("error"),
            envelope.error.as_deref().unwrap_or("(no message)")
        );
        return Err(if (200..300).contains(&status) {
            ScrapeError::Other(message)
        } else {
            ScrapeError::Http {
                status,
                reason: Some(message),
            }
        });
    }
    if !(200..300).contains(&status) {
        return Err(http_error(status));
    }
    let Some(data) = envelope.data else {
        return Err(ScrapeError::NotMetrics(
            "a Prometheus answer without data".into(),
        ));
    };
    if !matches!(data.result_type.0.as_ref(), "vector" | "matrix") {
        return Err(ScrapeError::NotMetrics(format!(
            "a Prometheus answer of type {:?}, not a vector or matrix",
            data.result_type.0
        )));
    }
    Ok(Answer {
        series: data.result,
        warnings: envelope.warnings,
    })
}

/// What a body that failed to decode as an API answer was (for the other API endpoints).
pub(crate) fn decode_error(status: u16, body: &[u8], err: &serde_json::Error) -> ScrapeError {
    not_an_answer(status, body, err)
}

/// What a body that failed to decode was.
fn not_an_answer(status: u16, body: &[u8], err: &serde_json::Error) -> ScrapeError {
    if !(200..300).contains(&status) {
        return http_error(status);
    }
    let start = String::from_utf8_lossy(body.get(..64).unwrap_or(body)).to_ascii_lowercase();
    let start = start.trim_start();
    if start.is_empty() {
        ScrapeError::Empty
    } else if start.starts_with('<') {
        ScrapeError::NotMetrics("not a Prometheus API answer: an HTML page".into())
    } else {
        ScrapeError::NotMetrics(format!("not a Prometheus API answer: {err}"))
    }
}

fn http_error(status: u16) -> ScrapeError {
    ScrapeError::Http {
        status,
        reason: reason_phrase(status).map(str::to_owned),
    }
}

/// The reason phrase of the statuses a Prometheus server, or a proxy or gateway in front of
/// it, answers with.
fn reason_phrase(status: u16) -> Option<&'static str> {
    Some(match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => return None,
    })
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    status: Cow<'a, str>,
    #[serde(default, borrow)]
    data: Option<Data<'a>>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(rename = "resultType", borrow)]
    result_type: Text<'a>,
    #[serde(borrow)]
    result: Vec<Item<'a>>,
}

/// A JSON string, borrowed from the body when it has no escapes.
#[derive(Debug, Clone, PartialEq)]
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// A series' labels, in the answer's order.
#[derive(Debug, Clone, PartialEq, Default)]
struct Labels<'a>(Vec<(Text<'a>, Text<'a>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Labels<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LabelsVisitor;
        impl<'de> Visitor<'de> for LabelsVisitor {
            type Value = Labels<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of label names to values")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut labels = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(pair) = map.next_entry::<Text<'de>, Text<'de>>()? {
                    labels.push(pair);
                }
                Ok(Labels(labels))
            }
        }
        deserializer.deserialize_map(LabelsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_answer_borrows_its_labels_and_reads_special_values() {
        let body = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"pod":"vllm-0","engine":"0"},"value":[1700000010,"0.25"]},
            {"metric":{"pod":"vllm-1","note":"a \"quoted\" value"},"value":[1700000010.5,"NaN"]},
            {"metric":{"pod":"vllm-2"},"value":[1700000010,"+Inf"]}]}}"#;
        let answer = decode_answer(200, body).expect("answer");
        assert_eq!(answer.series.len(), 3);
        let first = &answer.series[0];
        assert_eq!(first.label("pod"), Some("vllm-0"));
        assert_eq!(first.label("engine"), Some("0"));
        assert_eq!(first.label("model_name"), None);
        assert_eq!(first.sample(), Some(0.25));
        assert!(matches!(first.metric.0[0].1.0, Cow::Borrowed(_)));
        assert_eq!(answer.series[1].label("note"), Some("a \"quoted\" value"));
        assert_eq!(answer.series[1].sample(), None);
        assert_eq!(answer.series[2].sample(), Some(f64::INFINITY));
        assert!(answer.warnings.is_empty());
    }

    #[test]
    fn a_matrix_answer_gives_points() {
        let body = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"pod":"a"},"values":[[100,"1"],[101,"NaN"],[102,"3.5"]]}]},
            "warnings":["partial response"]}"#;
        let answer = decode_answer(200, body).expect("answer");
        let points: Vec<(f64, Option<f64>)> = answer.series[0].points().collect();
        assert_eq!(
            points,
            [(100.0, Some(1.0)), (101.0, None), (102.0, Some(3.5))]
        );
        assert_eq!(answer.warnings, ["partial response"]);
    }

    #[test]
    fn a_range_point_reads_as_an_instant_answer_at_its_time() {
        let body = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"pod":"a"},"values":[[100,"1"],[115,"NaN"],[130,"3.5"]]}]}}"#;
        let answer = decode_answer(200, body).expect("answer");
        let series = &answer.series[0];
        assert_eq!(series.point_count(), 3);
        assert_eq!(series.point_time(2), Some(130.0));
        let third = series.instant_at(2).expect("point");
        assert_eq!(third.label("pod"), Some("a"));
        assert_eq!(third.sample(), Some(3.5));
        assert_eq!(third.points().count(), 0);
        assert_eq!(series.instant_at(1).and_then(|i| i.sample()), None);
        assert!(series.instant_at(3).is_none());
        assert_eq!(series.point_time(3), None);
    }

    #[test]
    fn errors_keep_prometheus_words() {
        let body = br#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:16: parse error: unexpected \")\""}"#;
        let err = decode_answer(400, body).expect_err("bad query");
        assert_eq!(
            err.to_string(),
            "HTTP 400 bad_data: invalid parameter \"query\": 1:16: parse error: unexpected \")\""
        );
        assert_eq!(err.short(), "HTTP 400");
        let timeout = br#"{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}"#;
        assert_eq!(
            decode_answer(503, timeout).map(|_| ()),
            Err(ScrapeError::Http {
                status: 503,
                reason: Some("timeout: query timed out in expression evaluation".into())
            })
        );
    }

    #[test]
    fn bodies_that_are_not_answers_say_what_they_are() {
        assert_eq!(
            decode_answer(502, b"<html>Bad Gateway</html>").map(|_| ()),
            Err(ScrapeError::Http {
                status: 502,
                reason: Some("Bad Gateway".into())
            })
        );
        assert_eq!(
            decode_answer(200, b"<!DOCTYPE html><p>login</p>").map(|_| ()),
            Err(ScrapeError::NotMetrics(
                "not a Prometheus API answer: an HTML page".into()
            ))
        );
        assert_eq!(
            decode_answer(200, b"  ").map(|_| ()),
            Err(ScrapeError::Empty)
        );
        let scalar = br#"{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}"#;
        assert!(matches!(
            decode_answer(200, scalar),
            Err(ScrapeError::NotMetrics(_))
        ));
    }

    proptest::proptest! {
        #[test]
        fn any_body_decodes_or_fails_without_panicking(
            status in 100u16..600,
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..256),
        ) {
            let _ = decode_answer(status, &body);
        }

        #[test]
        fn answers_with_any_label_text_keep_it(name in "[a-z_]{1,8}", value in "\\PC{0,16}") {
            let body = serde_json::json!({
                "status": "success",
                "data": {"resultType": "vector", "result": [
                    {"metric": {name.clone(): value.clone()}, "value": [1.5, "2"]}
                ]}
            })
            .to_string();
            let answer = decode_answer(200, body.as_bytes());
            let label = answer.as_ref().ok().and_then(|a| a.series.first()).and_then(|s| s.label(&name));
            proptest::prop_assert_eq!(label, Some(value.as_str()));
        }
    }

    #[test]
    fn values_parse_like_prometheus_writes_them() {
        assert_eq!(parse_value("1e3"), Some(1000.0));
        assert_eq!(parse_value("-Inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_value("NaN"), None);
        assert_eq!(parse_value("x"), None);
    }
}
