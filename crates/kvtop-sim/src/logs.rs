//! PURE. The simulated engines' logs: vLLM's own line formats (start-up, the periodic
//! throughput line, speculative decoding statistics, the out-of-memory tracebacks and shutdown)
//! and a bounded per-pod buffer that readers page through with a cursor.
//!
//! This is the one implementation of vLLM's lines: the engines write them ([`super::pod`]), and
//! the simulated Kubernetes API serves those same lines as `pods/log`, adding from here only
//! what the engine process cannot write itself (the runs of a container that crashes during
//! start-up, the start-up of a container whose engine is not up yet).
//!
//! Lines carry the simulated time they were written at and the container instance (restart
//! count) that wrote them, so a Kubernetes API can serve `previous=true` and `sinceSeconds`.

use std::collections::VecDeque;
use std::fmt::Write as _;

use super::buckets::SimVersion;
use super::fleet::EngineSpec;
use super::gpu::GpuSpec;

/// Lines kept per pod: about 40 minutes of throughput lines every 10 s, some 60 KiB, so a
/// simulated fleet of 1,000 engines keeps its logs in tens of MiB.
pub(crate) const LOG_CAPACITY: usize = 256;
/// vLLM V1 writes its throughput line every 10 s (`VLLM_LOG_STATS_INTERVAL`), V0 every 5 s.
pub(crate) fn stats_interval(version: SimVersion) -> f64 {
    match version {
        SimVersion::V1 => 10.0,
        SimVersion::V0 => 5.0,
    }
}

/// One log line.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// Position in the pod's log since the simulator started (the cursor of the next line is
    /// one more).
    pub seq: u64,
    /// Simulated time it was written, seconds since the Unix epoch.
    pub at: f64,
    /// Which container instance wrote it: 0 for the first, then one more per restart.
    pub container: u32,
    pub text: String,
}

/// A pod's recent log lines, oldest first, bounded by [`LOG_CAPACITY`].
#[derive(Debug, Clone, Default)]
pub(crate) struct PodLog {
    lines: VecDeque<LogLine>,
    next_seq: u64,
}

impl PodLog {
    /// Append a line written at `at` by container instance `container`.
    pub fn push(&mut self, at: f64, container: u32, text: String) {
        if self.lines.len() >= LOG_CAPACITY {
            self.lines.pop_front();
        }
        self.lines.push_back(LogLine {
            seq: self.next_seq,
            at,
            container,
            text,
        });
        self.next_seq += 1;
    }

    /// Lines from cursor `cursor` on (a cursor older than the buffer starts at its oldest
    /// line), and the cursor to ask with next time.
    pub fn since(&self, cursor: u64) -> (Vec<LogLine>, u64) {
        let first = self.lines.front().map_or(self.next_seq, |l| l.seq);
        let skip = cursor.saturating_sub(first) as usize;
        let lines = self.lines.iter().skip(skip).cloned().collect();
        (lines, self.next_seq)
    }

    /// The last `n` lines, oldest first.
    pub fn tail(&self, n: usize) -> Vec<LogLine> {
        let skip = self.lines.len().saturating_sub(n);
        self.lines.iter().skip(skip).cloned().collect()
    }

    /// The cursor after the newest line.
    pub fn cursor(&self) -> u64 {
        self.next_seq
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lines.len()
    }
}

/// Figures of one throughput line, over the interval since the previous one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatsLine {
    pub prompt_tps: f64,
    pub generation_tps: f64,
    pub running: usize,
    pub waiting: usize,
    /// KV cache usage, 0..1.
    pub kv_usage: f64,
    /// Prefix cache hit rate over the interval, 0..1.
    pub prefix_hit: f64,
}

/// Speculative decoding figures over the interval since the previous throughput line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SpecLine {
    pub drafts: u64,
    pub draft_tokens: u64,
    pub accepted_tokens: u64,
    pub interval_s: f64,
    pub num_speculative_tokens: u32,
}

/// `INFO 08-12 10:15:32 [loggers.py:123] ` — level, date and time (UTC) and source as vLLM's
/// logger writes them (V0 without the brackets).
fn prefix(out: &mut String, level: &str, at: f64, version: SimVersion, source: &str) {
    let time = kvtop_core::clock::utc_datetime(at);
    let _ = write!(out, "{level} {} ", time.strftime("%m-%d %H:%M:%S"));
    match version {
        SimVersion::V1 => {
            let _ = write!(out, "[{source}] ");
        }
        SimVersion::V0 => {
            let _ = write!(out, "{source}] ");
        }
    }
}

fn line(level: &str, at: f64, version: SimVersion, source: &str, message: &str) -> String {
    let mut out = String::with_capacity(48 + message.len());
    prefix(&mut out, level, at, version, source);
    out.push_str(message);
    out
}

/// The periodic throughput line. vLLM writes it only when the engine did something in this
/// or the previous interval (`None` otherwise: an idle engine logs at debug level).
pub fn stats(
    version: SimVersion,
    at: f64,
    s: &StatsLine,
    previous: Option<&StatsLine>,
) -> Option<String> {
    let idle = |s: &StatsLine| s.prompt_tps == 0.0 && s.generation_tps == 0.0;
    if idle(s) && previous.is_none_or(idle) {
        return None;
    }
    Some(match version {
        SimVersion::V1 => line(
            "INFO",
            at,
            version,
            "loggers.py:123",
            &format!(
                "Engine 000: Avg prompt throughput: {:.1} tokens/s, Avg generation throughput: \
                 {:.1} tokens/s, Running: {} reqs, Waiting: {} reqs, GPU KV cache usage: {:.1}%, \
                 Prefix cache hit rate: {:.1}%",
                s.prompt_tps,
                s.generation_tps,
                s.running,
                s.waiting,
                s.kv_usage * 100.0,
                s.prefix_hit * 100.0
            ),
        ),
        SimVersion::V0 => line(
            "INFO",
            at,
            version,
            "metrics.py:455",
            &format!(
                "Avg prompt throughput: {:.1} tokens/s, Avg generation throughput: {:.1} tokens/s, \
                 Running: {} reqs, Swapped: 0 reqs, Pending: {} reqs, GPU KV cache usage: {:.1}%, \
                 CPU KV cache usage: 0.0%.",
                s.prompt_tps,
                s.generation_tps,
                s.running,
                s.waiting,
                s.kv_usage * 100.0
            ),
        ),
    })
}

/// V0's separate prefix-cache line, written after each throughput line.
pub(crate) fn prefix_hit_v0(at: f64, hit: f64) -> String {
    line(
        "INFO",
        at,
        SimVersion::V0,
        "metrics.py:471",
        &format!(
            "Prefix cache hit rate: GPU: {:.2}%, CPU: 0.00%",
            hit * 100.0
        ),
    )
}

/// The speculative decoding statistics line that follows the throughput line.
pub(crate) fn spec_decode(version: SimVersion, at: f64, s: &SpecLine) -> String {
    let acceptance = if s.draft_tokens > 0 {
        s.accepted_tokens as f64 / s.draft_tokens as f64
    } else {
        0.0
    };
    let mean_length = if s.drafts > 0 {
        1.0 + s.accepted_tokens as f64 / s.drafts as f64
    } else {
        1.0
    };
    let per_s = |n: u64| {
        if s.interval_s > 0.0 {
            n as f64 / s.interval_s
        } else {
            0.0
        }
    };
    match version {
        SimVersion::V1 => {
            // Position i is accepted only after 0..i were: acceptance^(i+1) of the drafts,
            // normalised so the positions average to the overall acceptance.
            let k = s.num_speculative_tokens.max(1);
            let raw: Vec<f64> = (0..k).map(|i| acceptance.powi(i as i32 + 1)).collect();
            let scale = if raw.iter().sum::<f64>() > 0.0 {
                acceptance * f64::from(k) / raw.iter().sum::<f64>()
            } else {
                0.0
            };
            let positions: Vec<String> = raw.iter().map(|r| format!("{:.3}", r * scale)).collect();
            line(
                "INFO",
                at,
                version,
                "metrics.py:96",
                &format!(
                    "SpecDecoding metrics: Mean acceptance length: {mean_length:.2}, Accepted \
                     throughput: {:.2} tokens/s, Drafted throughput: {:.2} tokens/s, Accepted: {} \
                     tokens, Drafted: {} tokens, Per-position acceptance rate: {}, Avg Draft \
                     acceptance rate: {:.1}%",
                    per_s(s.accepted_tokens),
                    per_s(s.draft_tokens),
                    s.accepted_tokens,
                    s.draft_tokens,
                    positions.join(", "),
                    acceptance * 100.0
                ),
            )
        }
        SimVersion::V0 => line(
            "INFO",
            at,
            version,
            "metrics.py:481",
            &format!(
                "Speculative metrics: Draft acceptance rate: {acceptance:.3}, System efficiency: \
                 {:.3}, Number of speculative tokens: {}, Number of accepted tokens: {}, Number \
                 of draft tokens: {}, Number of emitted tokens: {}.",
                mean_length / f64::from(s.num_speculative_tokens + 1),
                s.num_speculative_tokens,
                s.accepted_tokens,
                s.draft_tokens,
                s.accepted_tokens + s.drafts
            ),
        ),
    }
}

/// vLLM release the simulated image carries, per metrics dialect.
pub(crate) fn vllm_release(version: SimVersion) -> &'static str {
    match version {
        SimVersion::V1 => "0.10.1.1",
        SimVersion::V0 => "0.6.3.post1",
    }
}

/// How long a start takes at full size, seconds: the offsets of [`startup`]'s lines before
/// the API server is up, which a shorter start scales down.
pub(crate) const STARTUP_S: f64 = 41.0;
/// Offset (before ready, at full size) of the first line written after the model is loaded
/// and the profiling run begins: a start that runs out of memory stops before it.
const PROFILING_OFFSET: f64 = -12.0;

/// The lines a starting engine writes, with the time each is written: the process starts at
/// `starting_at` and its API server is up (the last line) at `ready_at`; model loading and
/// profiling take the time between ([`STARTUP_S`] for a normal start).
pub fn startup(
    spec: &EngineSpec,
    gpu: &GpuSpec,
    version: SimVersion,
    starting_at: f64,
    ready_at: f64,
) -> Vec<(f64, String)> {
    let p = &spec.params;
    let model = spec.model.id;
    let kv_tokens = p.kv_capacity_tokens();
    let kv_gib = kv_tokens as f64 * spec.model.kv_bytes_per_token as f64 / (1u64 << 30) as f64;
    let weights_gib = spec.model.weights_mib as f64 / 1024.0;
    let concurrency = kv_tokens as f64 / f64::from(p.max_model_len.max(1));
    let mut args = format!(
        "{{'model': '{model}', 'max_model_len': {}, 'gpu_memory_utilization': {}, \
         'max_num_seqs': {}, 'max_num_batched_tokens': {}, 'enable_prefix_caching': True",
        p.max_model_len, p.gpu_memory_utilization, p.max_num_seqs, p.max_num_batched_tokens
    );
    if let Some(s) = p.spec_decode {
        let _ = write!(
            args,
            ", 'speculative_config': {{'method': 'draft_model', 'num_speculative_tokens': {}}}",
            s.num_speculative_tokens
        );
    }
    args.push('}');
    let (server, core, worker, runner, kv) = match version {
        SimVersion::V1 => (
            "api_server.py:1805",
            "core.py:193",
            "gpu_worker.py:276",
            "gpu_model_runner.py:1892",
            "kv_cache_utils.py:849",
        ),
        SimVersion::V0 => (
            "api_server.py:585",
            "llm_engine.py:431",
            "worker.py:263",
            "model_runner.py:1071",
            "executor_base.py:112",
        ),
    };
    let release = vllm_release(version);
    // Offsets are those of a full-length start; a shorter one is squeezed into its span.
    let scale = ((ready_at - starting_at) / STARTUP_S).clamp(0.0, 1.0);
    let time = |offset: f64| ready_at + offset * scale;
    let info = |offset: f64, source: &str, message: &str| {
        let at = time(offset);
        (at, line("INFO", at, version, source, message))
    };
    let plain = |offset: f64, text: &str| (time(offset), text.to_owned());
    vec![
        info(-41.0, server, &format!("vLLM API server version {release}")),
        info(-41.0, "utils.py:326", &format!("non-default args: {args}")),
        info(-33.0, runner, &format!("Starting to load model {model}...")),
        info(
            -24.0,
            runner,
            &format!("Model loading took {weights_gib:.2} GiB and 8.41 seconds"),
        ),
        info(
            PROFILING_OFFSET,
            worker,
            &format!("Available KV cache memory: {kv_gib:.2} GiB ({})", gpu.name),
        ),
        info(
            -12.0,
            kv,
            &format!("GPU KV cache size: {} tokens", group_thousands(kv_tokens)),
        ),
        info(
            -12.0,
            kv,
            &format!(
                "Maximum concurrency for {} tokens per request: {concurrency:.2}x",
                group_thousands(u64::from(p.max_model_len))
            ),
        ),
        info(
            -2.0,
            core,
            "init engine (profile, create kv cache, warmup model) took 31.62 seconds",
        ),
        info(
            -1.0,
            server,
            "Starting vLLM API server 0 on http://0.0.0.0:8000",
        ),
        plain(-1.0, "INFO:     Started server process [1]"),
        plain(-1.0, "INFO:     Waiting for application startup."),
        plain(0.0, "INFO:     Application startup complete."),
    ]
}

/// PyTorch's out-of-memory message: an allocation of `tried_gib` that did not fit on `gpu`.
fn cuda_oom(tried_gib: f64, gpu: &GpuSpec) -> String {
    let total_gib = gpu.fb_total_mib as f64 / 1024.0;
    let free_gib = (tried_gib * 0.53).min(total_gib);
    let in_use_gib = total_gib - free_gib;
    format!(
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried_gib:.2} GiB. \
         GPU 0 has a total capacity of {total_gib:.2} GiB of which {free_gib:.2} GiB is free. \
         Process 1 has {in_use_gib:.2} GiB memory in use. Of the allocated memory {:.2} GiB is \
         allocated by PyTorch, and 1.27 GiB is reserved by PyTorch but unallocated.",
        (in_use_gib - 1.27).max(0.0)
    )
}

/// A start that fails in the profiling run: the lines written before it, squeezed into
/// `[starting_at, crashed_at]`, then the traceback of the first forward pass over a step's
/// worth of tokens (`batched_tokens` × the model's KV bytes per token) that does not fit.
pub(crate) fn failed_startup(
    spec: &EngineSpec,
    gpu: &GpuSpec,
    version: SimVersion,
    starting_at: f64,
    crashed_at: f64,
    batched_tokens: u64,
) -> Vec<(f64, String)> {
    // Lay the start out so that the profiling run begins when it crashed.
    let before_profiling = STARTUP_S + PROFILING_OFFSET;
    let scale = ((crashed_at - starting_at) / before_profiling).clamp(0.0, 1.0);
    let ready_at = crashed_at - PROFILING_OFFSET * scale;
    let starting = ready_at - STARTUP_S * scale;
    let mut lines: Vec<(f64, String)> = startup(spec, gpu, version, starting, ready_at)
        .into_iter()
        .filter(|(at, _)| *at < crashed_at)
        .collect();
    let tried_gib =
        batched_tokens as f64 * spec.model.kv_bytes_per_token as f64 / (1u64 << 30) as f64;
    let (core, server) = match version {
        SimVersion::V1 => ("core.py:700", "api_server.py:1530"),
        SimVersion::V0 => ("engine.py:135", "api_server.py:585"),
    };
    let at = crashed_at;
    let err = |source: &str, message: &str| (at, line("ERROR", at, version, source, message));
    lines.extend([
        err(core, "EngineCore failed to start."),
        err(core, "Traceback (most recent call last):"),
        err(
            core,
            "  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py\", \
             line 2501, in profile_run",
        ),
        err(core, "    hidden_states = self._dummy_run(self.max_num_tokens)"),
        err(core, &cuda_oom(tried_gib, gpu)),
        err(
            server,
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core \
             proc(s): {}",
        ),
    ]);
    lines
}

/// What an engine killed by an out-of-memory error while serving writes, in order.
pub(crate) fn out_of_memory(at: f64, version: SimVersion, gpu: &GpuSpec) -> Vec<String> {
    let core = match version {
        SimVersion::V1 => "core.py:710",
        SimVersion::V0 => "engine.py:135",
    };
    let err = |message: &str| line("ERROR", at, version, core, message);
    vec![
        err("EngineCore encountered a fatal error."),
        err("Traceback (most recent call last):"),
        err(
            "  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py\", line 701, \
             in run_engine_core",
        ),
        err("    engine_core.run_busy_loop()"),
        err(
            "  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py\", \
             line 1620, in execute_model",
        ),
        err("    hidden_states = self.model(input_ids=input_ids, positions=positions)"),
        err(&cuda_oom(2.0, gpu)),
        line(
            "ERROR",
            at,
            version,
            "async_llm.py:416",
            "AsyncLLM output_handler failed.",
        ),
        line(
            "ERROR",
            at,
            version,
            "async_llm.py:416",
            "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See \
             stack trace (above) for the root cause.",
        ),
        "INFO:     Shutting down".to_owned(),
        "INFO:     Finished server process [1]".to_owned(),
    ]
}

fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throughput_line_reads_like_vllms() {
        let s = StatsLine {
            prompt_tps: 1234.56,
            generation_tps: 567.84,
            running: 12,
            waiting: 3,
            kv_usage: 0.2345,
            prefix_hit: 0.8766,
        };
        let v1 = stats(SimVersion::V1, 1_723_457_732.0, &s, None).unwrap_or_default();
        assert_eq!(
            v1,
            "INFO 08-12 10:15:32 [loggers.py:123] Engine 000: Avg prompt throughput: 1234.6 \
             tokens/s, Avg generation throughput: 567.8 tokens/s, Running: 12 reqs, Waiting: 3 \
             reqs, GPU KV cache usage: 23.4%, Prefix cache hit rate: 87.7%"
        );
        let v0 = stats(SimVersion::V0, 1_723_457_732.0, &s, None).unwrap_or_default();
        assert!(
            v0.starts_with("INFO 08-12 10:15:32 metrics.py:455] Avg prompt"),
            "{v0}"
        );
        assert!(v0.contains("Pending: 3 reqs"), "{v0}");
    }

    #[test]
    fn an_engine_idle_for_two_intervals_logs_nothing() {
        let idle = StatsLine {
            prompt_tps: 0.0,
            generation_tps: 0.0,
            running: 1,
            waiting: 40,
            kv_usage: 0.01,
            prefix_hit: 0.0,
        };
        let busy = StatsLine {
            generation_tps: 10.0,
            ..idle
        };
        assert!(stats(SimVersion::V1, 0.0, &idle, Some(&busy)).is_some());
        assert!(stats(SimVersion::V1, 0.0, &idle, Some(&idle)).is_none());
        assert!(stats(SimVersion::V1, 0.0, &idle, None).is_none());
    }

    #[test]
    fn the_out_of_memory_traceback_names_the_error() {
        let lines = out_of_memory(
            1_723_457_732.0,
            SimVersion::V1,
            &super::super::gpu::H100_SXM,
        );
        assert!(lines.iter().any(|l| l.contains(
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
        )));
        assert!(
            lines
                .first()
                .is_some_and(|l| l.starts_with("ERROR 08-12 10:15:32 [core.py"))
        );
    }

    #[test]
    fn a_start_that_runs_out_of_memory_stops_at_the_profiling_run() {
        let fleet = super::super::fleet::plan(2, 8, SimVersion::V1, 3);
        let spec = fleet.engines.first().cloned().expect("an engine");
        let gpu = super::super::gpu::H100_SXM;
        // 2024-08-12 10:15:32 UTC; the run crashes 20 s after it starts.
        let start = 1_723_457_732.0;
        let lines = failed_startup(&spec, &gpu, SimVersion::V1, start, start + 20.0, 16_384);
        let texts: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
        // Loaded, never profiled: no KV cache size, no server.
        assert!(texts.iter().any(|l| l.contains("Model loading took")));
        assert!(!texts.iter().any(|l| l.contains("GPU KV cache size")));
        assert!(
            !texts
                .iter()
                .any(|l| l.contains("Application startup complete"))
        );
        // The whole start (29 s at full size before profiling) fits the 20 s run: the first
        // line at the start, the traceback at the crash, stamped with its own time.
        assert_eq!(lines.first().map(|(at, _)| *at), Some(start));
        assert!(lines.windows(2).all(|w| w[0].0 <= w[1].0), "in time order");
        // 16384 tokens × the model's KV bytes per token.
        let tried = 16_384.0 * spec.model.kv_bytes_per_token as f64 / f64::from(1u32 << 30);
        let oom = texts
            .iter()
            .find(|l| l.contains("torch.cuda.OutOfMemoryError"))
            .expect("the traceback");
        assert!(
            oom.contains(&format!("Tried to allocate {tried:.2} GiB")),
            "{oom}"
        );
        assert!(
            oom.starts_with("ERROR 08-12 10:15:52 [core.py:700] "),
            "{oom}"
        );
        assert!(
            texts
                .first()
                .is_some_and(|l| l.starts_with("INFO 08-12 10:15:32 "))
        );
    }

    #[test]
    fn the_buffer_pages_with_a_cursor_and_forgets_the_oldest() {
        let mut log = PodLog::default();
        for i in 0..5 {
            log.push(f64::from(i), 0, format!("line {i}"));
        }
        let (lines, cursor) = log.since(3);
        assert_eq!(
            lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
            ["line 3", "line 4"]
        );
        assert_eq!(cursor, 5);
        assert!(log.since(5).0.is_empty());
        assert_eq!(log.tail(1).first().map(|l| l.seq), Some(4));
        for i in 5..(LOG_CAPACITY as u32 + 10) {
            log.push(f64::from(i), 1, format!("line {i}"));
        }
        assert_eq!(log.len(), LOG_CAPACITY);
        // A cursor older than the buffer starts at the oldest line kept.
        let (lines, _) = log.since(0);
        assert_eq!(lines.first().map(|l| l.seq), Some(10));
        assert_eq!(group_thousands(1_234_567), "1,234,567");
        assert_eq!(group_thousands(999), "999");
    }
}
