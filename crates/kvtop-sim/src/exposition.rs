//! PURE. Renders one engine's `/metrics` body in vLLM's exposition: metric names, `# HELP` and
//! `# TYPE` lines, label names and order, bucket bounds and number formatting as Python's
//! `prometheus_client` writes them. V1 follows the vLLM 0.10 line (with the 0.10.2
//! `inter_token_latency_seconds` beside `time_per_output_token_seconds`); V0 follows a V0
//! engine's capture (`tests/fixtures/v0.4-v0.5-era-metrics.txt`) plus the prefix-cache hit-rate
//! gauge of later V0 releases.

use std::fmt::Write;

use super::buckets::SimVersion;
use super::format::{push_float, push_label_value};
use super::histogram::SimHistogram;
use super::model::{EngineCounters, EngineModel};

/// The V1 `engine` label value (one engine per server; no data parallelism).
const ENGINE_INDEX: &str = "0";

/// Render `engine`'s metrics, serving `model_id`, into `out` (cleared first).
pub fn render(out: &mut String, engine: &EngineModel, model_id: &str) {
    out.clear();
    match engine.params().version {
        SimVersion::V1 => render_v1(out, engine, model_id),
        SimVersion::V0 => render_v0(out, engine, model_id),
    }
}

/// Writes metric families with a fixed label set. Labels are written in name order, as in
/// vLLM's output: `head` holds those sorting before `finished_reason`/`le` (with a trailing
/// comma), `tail` those after.
struct Families<'a> {
    out: &'a mut String,
    head: String,
    tail: String,
    /// V1 exports a `_created` gauge (process start) for every counter and histogram.
    created: Option<f64>,
}

impl Families<'_> {
    fn header(&mut self, name: &str, suffix: &str, help: &str, kind: &str) {
        let _ = writeln!(self.out, "# HELP {name}{suffix} {help}");
        let _ = writeln!(self.out, "# TYPE {name}{suffix} {kind}");
    }

    /// One sample line; `extra` is a label that sorts between `head` and `tail`.
    fn sample(&mut self, name: &str, suffix: &str, extra: Option<(&str, &str)>, value: f64) {
        self.out.push_str(name);
        self.out.push_str(suffix);
        self.out.push('{');
        self.out.push_str(&self.head);
        if let Some((label, v)) = extra {
            self.out.push_str(label);
            self.out.push_str("=\"");
            push_label_value(self.out, v);
            self.out.push_str("\",");
        }
        self.out.push_str(&self.tail);
        self.out.push_str("} ");
        push_float(self.out, value);
        self.out.push('\n');
    }

    fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.header(name, "", help, "gauge");
        self.sample(name, "", None, value);
    }

    fn created(&mut self, name: &str, help: &str, extras: &[Option<(&str, &str)>]) {
        if let Some(at) = self.created {
            self.header(name, "_created", help, "gauge");
            for extra in extras {
                self.sample(name, "_created", *extra, at);
            }
        }
    }

    fn counter(&mut self, name: &str, help: &str, value: f64) {
        self.header(name, "_total", help, "counter");
        self.sample(name, "_total", None, value);
        self.created(name, help, &[None]);
    }

    /// A counter with one extra label; V1 creates every child up front, V0 only those that
    /// were incremented.
    fn counter_by(&mut self, name: &str, help: &str, label: &str, children: &[(&str, f64)]) {
        let eager = self.created.is_some();
        let shown: Vec<(&str, f64)> = children
            .iter()
            .copied()
            .filter(|(_, v)| eager || *v > 0.0)
            .collect();
        self.header(name, "_total", help, "counter");
        for (child, value) in &shown {
            self.sample(name, "_total", Some((label, child)), *value);
        }
        let extras: Vec<Option<(&str, &str)>> = shown
            .iter()
            .map(|(child, _)| Some((label, *child)))
            .collect();
        self.created(name, help, &extras);
    }

    fn histogram(&mut self, name: &str, help: &str, h: &SimHistogram) {
        self.header(name, "", help, "histogram");
        let mut le = String::with_capacity(24);
        for (bound, cumulative) in h
            .bounds()
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(h.cumulative())
        {
            le.clear();
            push_float(&mut le, bound);
            self.sample(name, "_bucket", Some(("le", &le)), cumulative as f64);
        }
        self.sample(name, "_count", None, h.count() as f64);
        self.sample(name, "_sum", None, h.sum());
        self.created(name, help, &[None]);
    }
}

/// V1 speculative decoding counters (vLLM's `SpecDecodingProm`), with accepted tokens spread
/// over draft positions geometrically (a later position is accepted only after the earlier
/// ones), the remainder on position 0 so the positions sum to the total.
fn render_spec_v1(f: &mut Families<'_>, c: &EngineCounters, k: u32, acceptance: f64) {
    f.counter(
        "vllm:spec_decode_num_drafts",
        "Number of spec decoding drafts.",
        c.spec_drafts as f64,
    );
    f.counter(
        "vllm:spec_decode_num_draft_tokens",
        "Number of draft tokens.",
        c.spec_draft_tokens as f64,
    );
    f.counter(
        "vllm:spec_decode_num_accepted_tokens",
        "Number of accepted tokens.",
        c.spec_accepted_tokens as f64,
    );
    let a = acceptance.clamp(0.0, 1.0);
    let weights: Vec<f64> = (0..k.max(1)).map(|i| a.powi(i as i32)).collect();
    let total: f64 = weights.iter().sum();
    let mut per_pos: Vec<u64> = weights
        .iter()
        .map(|w| (c.spec_accepted_tokens as f64 * w / total).floor() as u64)
        .collect();
    let assigned: u64 = per_pos.iter().sum();
    if let Some(first) = per_pos.first_mut() {
        *first += c.spec_accepted_tokens.saturating_sub(assigned);
    }
    let positions: Vec<String> = (0..per_pos.len()).map(|i| i.to_string()).collect();
    let children: Vec<(&str, f64)> = positions
        .iter()
        .map(String::as_str)
        .zip(per_pos.iter().map(|n| *n as f64))
        .collect();
    f.counter_by(
        "vllm:spec_decode_num_accepted_tokens_per_pos",
        "Accepted tokens per draft position.",
        "position",
        &children,
    );
}

/// V0 speculative decoding metrics: the acceptance and efficiency gauges (lifetime) and the
/// token counters.
fn render_spec_v0(f: &mut Families<'_>, c: &EngineCounters) {
    let drafted = c.spec_draft_tokens as f64;
    let emitted = (c.spec_accepted_tokens + c.spec_drafts) as f64;
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    f.gauge(
        "vllm:spec_decode_draft_acceptance_rate",
        "Speulative token acceptance rate.",
        ratio(c.spec_accepted_tokens as f64, drafted),
    );
    f.gauge(
        "vllm:spec_decode_efficiency",
        "Speculative decoding system efficiency.",
        ratio(emitted, drafted + c.spec_drafts as f64),
    );
    f.counter(
        "vllm:spec_decode_num_accepted_tokens",
        "Number of accepted tokens.",
        c.spec_accepted_tokens as f64,
    );
    f.counter(
        "vllm:spec_decode_num_draft_tokens",
        "Number of draft tokens.",
        drafted,
    );
    f.counter(
        "vllm:spec_decode_num_emitted_tokens",
        "Number of emitted tokens.",
        emitted,
    );
}

/// The preemption and token counters, with the same names and help texts in V0 and V1.
fn render_token_counters(f: &mut Families<'_>, c: &EngineCounters) {
    f.counter(
        "vllm:num_preemptions",
        "Cumulative number of preemption from the engine.",
        c.preemptions as f64,
    );
    f.counter(
        "vllm:prompt_tokens",
        "Number of prefill tokens processed.",
        c.prompt_tokens as f64,
    );
    f.counter(
        "vllm:generation_tokens",
        "Number of generation tokens processed.",
        c.generation_tokens as f64,
    );
}

fn model_label(model_id: &str) -> String {
    let mut s = String::from("model_name=\"");
    push_label_value(&mut s, model_id);
    s.push('"');
    s
}

fn render_process(out: &mut String, engine: &EngineModel) {
    let p = &engine.params().process;
    let in_flight = (engine.running() + engine.waiting()) as f64;
    let rss = p.base_rss_bytes + p.rss_per_request_bytes * in_flight;
    let mut f = Families {
        out,
        head: String::new(),
        tail: String::new(),
        created: None,
    };
    let plain = |f: &mut Families<'_>, name: &str, help: &str, kind: &str, v: f64| {
        f.header(name, "", help, kind);
        f.out.push_str(name);
        f.out.push(' ');
        push_float(f.out, v);
        f.out.push('\n');
    };
    let vms = rss + p.virtual_extra_bytes;
    plain(
        &mut f,
        "process_virtual_memory_bytes",
        "Virtual memory size in bytes.",
        "gauge",
        vms,
    );
    plain(
        &mut f,
        "process_resident_memory_bytes",
        "Resident memory size in bytes.",
        "gauge",
        rss,
    );
    plain(
        &mut f,
        "process_start_time_seconds",
        "Start time of the process since unix epoch in seconds.",
        "gauge",
        engine.started_at(),
    );
    f.header(
        "process_cpu_seconds_total",
        "",
        "Total user and system CPU time spent in seconds.",
        "counter",
    );
    f.out.push_str("process_cpu_seconds_total ");
    push_float(f.out, engine.counters().cpu_seconds);
    f.out.push('\n');
    let fds = p.base_open_fds as f64 + in_flight;
    plain(
        &mut f,
        "process_open_fds",
        "Number of open file descriptors.",
        "gauge",
        fds,
    );
    plain(
        &mut f,
        "process_max_fds",
        "Maximum number of open file descriptors.",
        "gauge",
        p.max_fds as f64,
    );
}

const PYTHON_INFO: &str = "# HELP python_info Python platform information\n\
# TYPE python_info gauge\n\
python_info{implementation=\"CPython\",major=\"3\",minor=\"12\",patchlevel=\"11\",version=\"3.12.11\"} 1.0\n";

/// The API server's `http_requests_total` as prometheus-fastapi-instrumentator writes it in
/// vLLM (status codes grouped by class; a child appears with its first request).
fn render_http(out: &mut String, engine: &EngineModel) {
    let c = engine.counters();
    let children: Vec<(&str, u64)> = [("2xx", c.http_ok), ("4xx", c.http_rejected)]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
    let help = "Total number of requests by method, status and handler.";
    let _ = writeln!(out, "# HELP http_requests_total {help}");
    let _ = writeln!(out, "# TYPE http_requests_total counter");
    for (status, n) in &children {
        let _ = write!(
            out,
            "http_requests_total{{handler=\"/v1/completions\",method=\"POST\",status=\"{status}\"}} "
        );
        push_float(out, *n as f64);
        out.push('\n');
    }
    let _ = writeln!(out, "# HELP http_requests_created {help}");
    let _ = writeln!(out, "# TYPE http_requests_created gauge");
    for (status, _) in &children {
        let _ = write!(
            out,
            "http_requests_created{{handler=\"/v1/completions\",method=\"POST\",status=\"{status}\"}} "
        );
        push_float(out, engine.started_at());
        out.push('\n');
    }
}

fn render_v1(out: &mut String, engine: &EngineModel, model_id: &str) {
    render_process(out, engine);
    out.push_str(PYTHON_INFO);
    render_http(out, engine);
    let mut f = Families {
        out,
        head: format!("engine=\"{ENGINE_INDEX}\","),
        tail: model_label(model_id),
        created: Some(engine.started_at()),
    };
    let c = *engine.counters();
    let h = engine.histograms();
    let p = engine.params();
    f.gauge(
        "vllm:num_requests_running",
        "Number of requests in model execution batches.",
        engine.running() as f64,
    );
    f.gauge(
        "vllm:num_requests_waiting",
        "Number of requests waiting to be processed.",
        engine.waiting() as f64,
    );
    f.gauge(
        "vllm:gpu_cache_usage_perc",
        "GPU KV-cache usage. 1 means 100 percent usage.",
        engine.kv_usage(),
    );
    f.gauge(
        "vllm:kv_cache_usage_perc",
        "KV-cache usage. 1 means 100 percent usage.",
        engine.kv_usage(),
    );
    f.counter(
        "vllm:prefix_cache_queries",
        "Prefix cache queries, in terms of number of queried tokens.",
        c.prefix_queries as f64,
    );
    f.counter(
        "vllm:prefix_cache_hits",
        "Prefix cache hits, in terms of number of cached tokens.",
        c.prefix_hits as f64,
    );
    render_token_counters(&mut f, &c);
    f.counter_by(
        "vllm:request_success",
        "Count of successfully processed requests.",
        "finished_reason",
        &[
            ("stop", c.finished_stop as f64),
            ("length", c.finished_length as f64),
            ("abort", c.finished_abort as f64),
        ],
    );
    if let Some(spec) = p.spec_decode {
        render_spec_v1(&mut f, &c, spec.num_speculative_tokens, spec.acceptance);
    }
    f.header(
        "vllm:cache_config_info",
        "",
        "Information of the LLMEngine CacheConfig",
        "gauge",
    );
    let mut gmu = String::new();
    push_float(&mut gmu, p.gpu_memory_utilization);
    let _ = writeln!(
        f.out,
        "vllm:cache_config_info{{block_size=\"{}\",cache_dtype=\"auto\",enable_prefix_caching=\"True\",\
         engine=\"{ENGINE_INDEX}\",gpu_memory_utilization=\"{gmu}\",num_cpu_blocks=\"0\",\
         num_gpu_blocks=\"{}\",swap_space=\"4\"}} 1.0",
        p.block_size, p.num_gpu_blocks
    );
    f.histogram(
        "vllm:request_prompt_tokens",
        "Number of prefill tokens processed.",
        &h.prompt_tokens,
    );
    f.histogram(
        "vllm:request_generation_tokens",
        "Number of generation tokens processed.",
        &h.generation_tokens,
    );
    f.histogram(
        "vllm:iteration_tokens_total",
        "Histogram of number of tokens per engine_step.",
        &h.iteration_tokens,
    );
    f.histogram(
        "vllm:request_max_num_generation_tokens",
        "Histogram of maximum number of requested generation tokens.",
        &h.max_num_generation_tokens,
    );
    f.histogram(
        "vllm:request_params_n",
        "Histogram of the n request parameter.",
        &h.params_n,
    );
    f.histogram(
        "vllm:request_params_max_tokens",
        "Histogram of the max_tokens request parameter.",
        &h.params_max_tokens,
    );
    f.histogram(
        "vllm:time_to_first_token_seconds",
        "Histogram of time to first token in seconds.",
        &h.ttft,
    );
    f.histogram(
        "vllm:time_per_output_token_seconds",
        "Histogram of time per output token in seconds.",
        &h.itl,
    );
    f.histogram(
        "vllm:inter_token_latency_seconds",
        "Histogram of inter-token latency in seconds.",
        &h.itl,
    );
    f.histogram(
        "vllm:request_time_per_output_token_seconds",
        "Histogram of time_per_output_token_seconds per request.",
        &h.tpot,
    );
    f.histogram(
        "vllm:time_per_prefill_token_request_seconds",
        "Time spent per token during prefill  phase in seconds",
        &h.prefill_time_per_token,
    );
    f.histogram(
        "vllm:e2e_request_latency_seconds",
        "Histogram of e2e request latency in seconds.",
        &h.e2e,
    );
    f.histogram(
        "vllm:request_queue_time_seconds",
        "Histogram of time spent in WAITING phase for request.",
        &h.queue,
    );
    f.histogram(
        "vllm:request_inference_time_seconds",
        "Histogram of time spent in RUNNING phase for request.",
        &h.inference,
    );
    f.histogram(
        "vllm:request_prefill_time_seconds",
        "Histogram of time spent in PREFILL phase for request.",
        &h.prefill,
    );
    f.histogram(
        "vllm:request_decode_time_seconds",
        "Histogram of time spent in DECODE phase for request.",
        &h.decode,
    );
}

fn render_v0(out: &mut String, engine: &EngineModel, model_id: &str) {
    out.push_str(PYTHON_INFO);
    render_process(out, engine);
    let p = engine.params();
    let c = *engine.counters();
    let h = engine.histograms();
    let block_size = p.block_size;
    let gmu = {
        let mut s = String::new();
        push_float(&mut s, p.gpu_memory_utilization);
        s
    };
    let _ = write!(
        out,
        "# HELP vllm:cache_config_info information of cache_config\n\
         # TYPE vllm:cache_config_info gauge\n\
         vllm:cache_config_info{{block_size=\"{block_size}\",cache_dtype=\"auto\",\
         cpu_kvcache_space_bytes=\"4294967296\",enable_prefix_caching=\"True\",\
         gpu_memory_utilization=\"{gmu}\",num_cpu_blocks=\"0\",num_gpu_blocks=\"{}\",\
         num_gpu_blocks_override=\"None\",sliding_window=\"None\",swap_space_bytes=\"4294967296\"}} 1.0\n",
        p.num_gpu_blocks
    );
    let mut f = Families {
        out,
        head: String::new(),
        tail: model_label(model_id),
        created: None,
    };
    f.gauge(
        "vllm:num_requests_running",
        "Number of requests currently running on GPU.",
        engine.running() as f64,
    );
    f.gauge(
        "vllm:num_requests_waiting",
        "Number of requests waiting to be processed.",
        engine.waiting() as f64,
    );
    // Preempted requests are recomputed, never swapped, so nothing sits in CPU memory.
    f.gauge(
        "vllm:num_requests_swapped",
        "Number of requests swapped to CPU.",
        0.0,
    );
    f.gauge(
        "vllm:gpu_cache_usage_perc",
        "GPU KV-cache usage. 1 means 100 percent usage.",
        engine.kv_usage(),
    );
    f.gauge(
        "vllm:cpu_cache_usage_perc",
        "CPU KV-cache usage. 1 means 100 percent usage.",
        0.0,
    );
    f.gauge(
        "vllm:gpu_prefix_cache_hit_rate",
        "GPU prefix cache block hit rate.",
        engine.prefix_hit_rate(),
    );
    render_token_counters(&mut f, &c);
    f.histogram(
        "vllm:time_to_first_token_seconds",
        "Histogram of time to first token in seconds.",
        &h.ttft,
    );
    f.histogram(
        "vllm:time_per_output_token_seconds",
        "Histogram of time per output token in seconds.",
        &h.itl,
    );
    f.histogram(
        "vllm:e2e_request_latency_seconds",
        "Histogram of end to end request latency in seconds.",
        &h.e2e,
    );
    f.histogram(
        "vllm:request_prompt_tokens",
        "Number of prefill tokens processed.",
        &h.prompt_tokens,
    );
    f.histogram(
        "vllm:request_generation_tokens",
        "Number of generation tokens processed.",
        &h.generation_tokens,
    );
    // Every simulated request uses best_of = n = 1.
    f.histogram(
        "vllm:request_params_best_of",
        "Histogram of the best_of request parameter.",
        &h.params_n,
    );
    f.histogram(
        "vllm:request_params_n",
        "Histogram of the n request parameter.",
        &h.params_n,
    );
    f.counter_by(
        "vllm:request_success",
        "Count of successfully processed requests.",
        "finished_reason",
        &[
            ("stop", c.finished_stop as f64),
            ("length", c.finished_length as f64),
            ("abort", c.finished_abort as f64),
        ],
    );
    if p.spec_decode.is_some() {
        render_spec_v0(&mut f, &c);
    }
    let (prompt_tps, generation_tps) = engine.avg_throughput();
    f.gauge(
        "vllm:avg_prompt_throughput_toks_per_s",
        "Average prefill throughput in tokens/s.",
        prompt_tps,
    );
    f.gauge(
        "vllm:avg_generation_throughput_toks_per_s",
        "Average generation throughput in tokens/s.",
        generation_tps,
    );
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::fleet::{LLAMA_8B, Scenario, engine_params};
    use crate::gpu::H100_SXM;
    use crate::sampling::Sampler;

    const V1_FIXTURE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/synthetic-v1-3models-prometheus_client.txt"
    ));
    const V0_FIXTURE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/v0.4-v0.5-era-metrics.txt"
    ));
    const MODEL: &str = "meta-llama/Llama-3.1-8B-Instruct";
    /// V1 families we add beyond the fixture (vLLM 0.10.2's new ITL name).
    const V1_EXTRA: &[&str] = &[
        "vllm:inter_token_latency_seconds",
        "vllm:inter_token_latency_seconds_created",
        "vllm:request_time_per_output_token_seconds",
        "vllm:request_time_per_output_token_seconds_created",
    ];

    fn body(version: SimVersion, seconds: f64) -> String {
        let mut s = Sampler::new(1);
        let params = engine_params(&LLAMA_8B, &H100_SXM, Scenario::KvPressure, version, &mut s);
        let mut engine = EngineModel::new(params, 7, 1_800_000_000.0);
        engine.advance(seconds);
        let mut out = String::new();
        render(&mut out, &engine, MODEL);
        out
    }

    /// `# HELP` texts and `# TYPE`s by family name, for names starting with `prefix`.
    fn declared(text: &str, prefix: &str) -> BTreeMap<String, (String, String)> {
        let mut help = BTreeMap::new();
        let mut kind = BTreeMap::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
                help.insert(name.to_owned(), text.to_owned());
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, t) = rest.split_once(' ').unwrap_or((rest, ""));
                kind.insert(name.to_owned(), t.to_owned());
            }
        }
        kind.into_iter()
            .filter(|(n, _)| n.starts_with(prefix))
            .map(|(n, t)| {
                let h = help.get(&n).cloned().unwrap_or_default();
                (n, (h, t))
            })
            .collect()
    }

    /// A sample line: name, labels as (name, value) pairs, value text.
    type Line = (String, Vec<(String, String)>, String);

    /// The sample lines of a body.
    fn samples(text: &str) -> Vec<Line> {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                let (series, value) = l.rsplit_once(' ').unwrap_or((l, ""));
                let (name, labels) = match series.split_once('{') {
                    Some((n, rest)) => (n, rest.trim_end_matches('}')),
                    None => (series, ""),
                };
                let labels = labels
                    .split("\",")
                    .filter(|p| !p.is_empty())
                    .filter_map(|p| p.split_once("=\""))
                    .map(|(k, v)| (k.to_owned(), v.trim_end_matches('"').to_owned()))
                    .collect();
                (name.to_owned(), labels, value.to_owned())
            })
            .collect()
    }

    /// `le` strings of a histogram's buckets for one model, in order.
    fn bounds(text: &str, histogram: &str, model: &str) -> Vec<String> {
        let bucket = format!("{histogram}_bucket");
        samples(text)
            .into_iter()
            .filter(|(n, l, _)| {
                *n == bucket && l.iter().any(|(k, v)| k == "model_name" && v == model)
            })
            .filter_map(|(_, l, _)| l.into_iter().find(|(k, _)| k == "le").map(|(_, v)| v))
            .collect()
    }

    #[test]
    fn v1_families_help_and_types_match_vllm() {
        let ours = declared(&body(SimVersion::V1, 20.0), "vllm:");
        let reference = declared(V1_FIXTURE, "vllm:");
        let our_names: BTreeSet<&String> = ours
            .keys()
            .filter(|n| !V1_EXTRA.contains(&n.as_str()))
            .collect();
        let ref_names: BTreeSet<&String> = reference.keys().collect();
        assert_eq!(our_names, ref_names);
        for (name, decl) in &ours {
            if let Some(expected) = reference.get(name) {
                assert_eq!(decl, expected, "{name}");
            }
        }
        assert_eq!(
            ours.get("vllm:inter_token_latency_seconds"),
            Some(&(
                "Histogram of inter-token latency in seconds.".to_owned(),
                "histogram".to_owned()
            ))
        );
        let our_process = declared(&body(SimVersion::V1, 1.0), "process_");
        let ref_process = declared(V1_FIXTURE, "process_");
        assert_eq!(our_process, ref_process);
    }

    #[test]
    fn v1_bucket_bounds_are_written_like_the_fixture() {
        let ours = body(SimVersion::V1, 20.0);
        for histogram in [
            "vllm:time_to_first_token_seconds",
            "vllm:time_per_output_token_seconds",
            "vllm:e2e_request_latency_seconds",
            "vllm:request_queue_time_seconds",
            "vllm:request_prefill_time_seconds",
            "vllm:request_decode_time_seconds",
            "vllm:request_inference_time_seconds",
            "vllm:iteration_tokens_total",
            "vllm:request_prompt_tokens",
            "vllm:request_generation_tokens",
            "vllm:request_params_n",
            "vllm:time_per_prefill_token_request_seconds",
        ] {
            let expected = bounds(V1_FIXTURE, histogram, MODEL);
            assert!(!expected.is_empty(), "{histogram} missing from the fixture");
            assert_eq!(bounds(&ours, histogram, MODEL), expected, "{histogram}");
        }
        assert_eq!(
            bounds(&ours, "vllm:inter_token_latency_seconds", MODEL),
            bounds(V1_FIXTURE, "vllm:time_per_output_token_seconds", MODEL)
        );
        // Spot checks written out by hand.
        let ttft = bounds(&ours, "vllm:time_to_first_token_seconds", MODEL);
        assert_eq!(ttft.first().map(String::as_str), Some("0.001"));
        assert_eq!(ttft.get(11).map(String::as_str), Some("1.0"));
        assert_eq!(ttft.last().map(String::as_str), Some("+Inf"));
        assert_eq!(ttft.len(), 23);
    }

    #[test]
    fn v1_labels_are_vllms() {
        let ours = body(SimVersion::V1, 20.0);
        for (name, labels, value) in samples(&ours) {
            assert!(
                value.parse::<f64>().is_ok() || value == "+Inf",
                "{name} {value}"
            );
            if !name.starts_with("vllm:") {
                continue;
            }
            let keys: Vec<&str> = labels.iter().map(|(k, _)| k.as_str()).collect();
            if name == "vllm:cache_config_info" {
                let (_, ref_labels, _) = samples(V1_FIXTURE)
                    .into_iter()
                    .find(|(n, _, _)| n == "vllm:cache_config_info")
                    .unwrap_or_default();
                let ref_keys: Vec<&str> = ref_labels.iter().map(|(k, _)| k.as_str()).collect();
                assert_eq!(keys, ref_keys);
                continue;
            }
            let expected: &[&str] = if name.ends_with("_bucket") {
                &["engine", "le", "model_name"]
            } else if name.starts_with("vllm:request_success_") {
                &["engine", "finished_reason", "model_name"]
            } else {
                &["engine", "model_name"]
            };
            assert_eq!(keys, expected, "{name}");
            assert!(labels.contains(&("model_name".to_owned(), MODEL.to_owned())));
            assert!(labels.contains(&("engine".to_owned(), "0".to_owned())));
        }
    }

    #[test]
    fn v1_histogram_series_are_consistent() {
        let ours = body(SimVersion::V1, 45.0);
        let all = samples(&ours);
        for (name, (_, kind)) in declared(&ours, "vllm:") {
            if kind != "histogram" {
                continue;
            }
            let value_of = |suffix: &str| -> Vec<f64> {
                all.iter()
                    .filter(|(n, _, _)| *n == format!("{name}{suffix}"))
                    .filter_map(|(_, _, v)| v.parse().ok())
                    .collect()
            };
            let buckets = value_of("_bucket");
            assert!(
                buckets.windows(2).all(|w| w[0] <= w[1]),
                "{name} not cumulative"
            );
            assert_eq!(buckets.last(), value_of("_count").first(), "{name}");
        }
        let first = |n: &str| {
            all.iter()
                .find(|(name, _, _)| name == n)
                .and_then(|(_, _, v)| v.parse::<f64>().ok())
        };
        assert!(first("vllm:time_to_first_token_seconds_count") > Some(0.0));
        assert!(first("vllm:kv_cache_usage_perc") > Some(0.9));
        assert_eq!(first("vllm:process_start_time_seconds"), None);
        assert_eq!(first("process_start_time_seconds"), Some(1_800_000_000.0));
    }

    #[test]
    fn v1_exports_http_requests_by_status_class_and_the_per_request_tpot() {
        let ours = body(SimVersion::V1, 45.0);
        let all = samples(&ours);
        let http: Vec<(String, f64)> = all
            .iter()
            .filter(|(n, _, _)| n == "http_requests_total")
            .filter_map(|(_, labels, v)| {
                let status = labels.iter().find(|(k, _)| k == "status")?.1.clone();
                Some((status, v.parse().ok()?))
            })
            .collect();
        let value = |n: &str| {
            all.iter()
                .find(|(name, _, _)| name == n)
                .and_then(|(_, _, v)| v.parse::<f64>().ok())
        };
        // Every completion served is a 2xx; the pressured engine also turns requests away.
        let served = all
            .iter()
            .filter(|(n, _, _)| n == "vllm:request_success_total")
            .filter(|(_, l, _)| {
                l.iter()
                    .any(|(k, v)| k == "finished_reason" && v != "abort")
            })
            .filter_map(|(_, _, v)| v.parse::<f64>().ok())
            .sum::<f64>();
        assert!(served > 0.0);
        assert_eq!(http.first(), Some(&("2xx".to_owned(), served)), "{http:?}");
        assert!(
            http.iter().all(|(s, _)| s == "2xx" || s == "4xx"),
            "{http:?}"
        );
        assert_eq!(
            value("vllm:request_time_per_output_token_seconds_count"),
            Some(served)
        );
        assert_eq!(
            bounds(&ours, "vllm:request_time_per_output_token_seconds", MODEL),
            bounds(&ours, "vllm:inter_token_latency_seconds", MODEL)
        );
        // The console reads them.
        let engines = kvtop_core::engine::extract_engines(&kvtop_core::metrics::parse(&ours));
        let engine = engines.first().expect("one engine");
        assert_eq!(
            engine.http_requests_total.first(),
            Some(&("2xx".to_owned(), served))
        );
        assert!(engine.tpot.is_some());
    }

    #[test]
    fn v1_body_is_a_few_tens_of_kilobytes() {
        let len = body(SimVersion::V1, 5.0).len();
        assert!((20_000..80_000).contains(&len), "{len} bytes");
    }

    #[test]
    fn v0_families_help_labels_and_buckets_match_the_capture() {
        let ours_text = body(SimVersion::V0, 30.0);
        let ours = declared(&ours_text, "vllm:");
        let reference = declared(V0_FIXTURE, "vllm:");
        let mut our_names: BTreeSet<&String> = ours.keys().collect();
        assert!(our_names.remove(&"vllm:gpu_prefix_cache_hit_rate".to_owned()));
        assert_eq!(our_names, reference.keys().collect::<BTreeSet<_>>());
        for (name, decl) in &reference {
            assert_eq!(ours.get(name), Some(decl), "{name}");
        }
        let v0_model = "facebook/opt-125m";
        for histogram in [
            "vllm:time_to_first_token_seconds",
            "vllm:time_per_output_token_seconds",
            "vllm:e2e_request_latency_seconds",
            "vllm:request_params_n",
        ] {
            assert_eq!(
                bounds(&ours_text, histogram, MODEL),
                bounds(V0_FIXTURE, histogram, v0_model),
                "{histogram}"
            );
        }
        for (name, labels, _) in samples(&ours_text) {
            if name.starts_with("vllm:") && name != "vllm:cache_config_info" {
                assert!(labels.iter().all(|(k, _)| k != "engine"), "{name}");
                assert!(labels.iter().any(|(k, _)| k == "model_name"), "{name}");
            }
        }
        assert!(!ours_text.contains("_created"));
    }
    #[test]
    fn the_kvtop_parser_reads_every_line_of_both_dialects() {
        use kvtop_core::metrics::{MetricType, parse};
        for version in [SimVersion::V1, SimVersion::V0] {
            let text = body(version, 40.0);
            let expo = parse(&text);
            assert_eq!(expo.malformed, 0, "{version:?}: {:?}", expo.errors);
            let sample_lines = text.lines().filter(|l| !l.starts_with('#')).count();
            assert_eq!(expo.samples.len(), sample_lines, "{version:?}");
            assert_eq!(
                expo.metric_type("vllm:time_to_first_token_seconds"),
                Some(MetricType::Histogram)
            );
            let running = expo
                .samples
                .iter()
                .find(|s| s.name == "vllm:num_requests_running")
                .map(|s| (s.label("model_name").map(|m| m.into_owned()), s.value));
            assert_eq!(running.as_ref().and_then(|r| r.0.as_deref()), Some(MODEL));
            let big = expo
                .samples
                .iter()
                .find(|s| s.name == "process_virtual_memory_bytes")
                .map(|s| s.value);
            // "3.8...e+010" as prometheus_client writes it reads back as a plain number.
            assert!(big > Some(1e10), "{big:?}");
        }
    }
}

#[cfg(test)]
mod spec_tests {
    use super::*;
    use crate::fleet::{LLAMA_8B, Scenario, engine_params};
    use crate::gpu::H100_SXM;
    use crate::sampling::Sampler;

    fn spec_engine(version: SimVersion) -> EngineModel {
        let mut s = Sampler::new(2);
        let params = engine_params(
            &LLAMA_8B,
            &H100_SXM,
            Scenario::SpecDecodePoor,
            version,
            &mut s,
        );
        let mut engine = EngineModel::new(params, 5, 1_800_000_000.0);
        engine.advance(120.0);
        engine
    }

    #[test]
    fn v1_spec_decode_counters_are_consistent_and_read_back_at_12_percent() {
        let engine = spec_engine(SimVersion::V1);
        let mut out = String::new();
        render(&mut out, &engine, "m");
        let c = engine.counters();
        // Five draft tokens per draft step; each step emits its accepted tokens plus one.
        assert_eq!(c.spec_draft_tokens, 5 * c.spec_drafts);
        assert!(c.spec_drafts > 0);
        let parsed = kvtop_core::metrics::parse(&out);
        let sample = kvtop_core::engine::extract_engines(&parsed)
            .into_iter()
            .next()
            .expect("one engine");
        let accepted = sample.spec_accepted_tokens_total.expect("accepted");
        let drafted = sample.spec_draft_tokens_total.expect("drafted");
        let ratio = accepted / drafted;
        assert!((ratio - 0.12).abs() < 0.01, "{ratio}");
        let per_pos: f64 = parsed
            .samples
            .iter()
            .filter(|s| s.name == "vllm:spec_decode_num_accepted_tokens_per_pos_total")
            .map(|s| s.value)
            .sum();
        assert_eq!(per_pos, accepted);
        assert!(out.contains("# TYPE vllm:spec_decode_num_drafts_total counter"));
    }

    #[test]
    fn v0_spec_decode_exports_the_acceptance_gauge() {
        let engine = spec_engine(SimVersion::V0);
        let mut out = String::new();
        render(&mut out, &engine, "m");
        let parsed = kvtop_core::metrics::parse(&out);
        let sample = kvtop_core::engine::extract_engines(&parsed)
            .into_iter()
            .next()
            .expect("one engine");
        let gauge = sample.spec_acceptance_gauge.expect("gauge");
        assert!((gauge - 0.12).abs() < 0.01, "{gauge}");
        let healthy = {
            let mut s = Sampler::new(2);
            let p = engine_params(
                &LLAMA_8B,
                &H100_SXM,
                Scenario::Healthy,
                SimVersion::V1,
                &mut s,
            );
            let mut e = EngineModel::new(p, 5, 1_800_000_000.0);
            e.advance(10.0);
            let mut out = String::new();
            render(&mut out, &e, "m");
            out
        };
        assert!(!healthy.contains("spec_decode"));
    }
}
