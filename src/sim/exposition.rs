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
use super::model::EngineModel;

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

fn render_v1(out: &mut String, engine: &EngineModel, model_id: &str) {
    render_process(out, engine);
    out.push_str(PYTHON_INFO);
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
