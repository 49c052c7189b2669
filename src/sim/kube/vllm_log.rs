//! PURE. The log lines a vLLM server prints: the start-up sequence, the periodic stats line
//! (`Avg prompt throughput: … Running: N reqs, Waiting: M reqs, GPU KV cache usage: X%, …`), and
//! the out-of-memory crash of an engine whose chunked-prefill budget does not fit. Figures come
//! from the engine's parameters and counters; timestamps are passed in.

use k8s_openapi::jiff::Timestamp;

use crate::sim::SimVersion;
use crate::sim::fleet::ModelSpec;
use crate::sim::params::EngineParams;

/// vLLM release the simulated image carries, per metrics dialect.
pub fn vllm_release(version: SimVersion) -> &'static str {
    match version {
        SimVersion::V1 => "0.10.1.1",
        SimVersion::V0 => "0.6.3",
    }
}

/// `MM-DD HH:MM:SS` in UTC, as vLLM's logger prints it.
fn clock(at: f64) -> String {
    Timestamp::from_millisecond((at * 1000.0) as i64)
        .map(|t| t.strftime("%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

fn info(at: f64, source: &str, message: &str, version: SimVersion) -> String {
    match version {
        SimVersion::V1 => format!("INFO {} [{source}] {message}", clock(at)),
        SimVersion::V0 => format!("INFO {} {source}] {message}", clock(at)),
    }
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The start-up sequence of a server started at `start` and ready at `ready`, with each line's
/// time.
pub fn startup(
    start: f64,
    ready: f64,
    model: &ModelSpec,
    params: &EngineParams,
    port: u16,
    version: SimVersion,
) -> Vec<(f64, String)> {
    let span = (ready - start).max(0.0);
    let at = |share: f64| start + span * share;
    let kv_tokens = params.kv_capacity_tokens();
    let kv_gib = (kv_tokens as f64 * model.kv_bytes_per_token as f64) / GIB;
    let concurrency = kv_tokens as f64 / f64::from(params.max_model_len.max(1));
    let weights_gib = model.weights_mib as f64 / 1024.0;
    let load_secs = span * 0.6;
    let release = vllm_release(version);
    vec![
        (
            at(0.0),
            info(
                at(0.0),
                "__init__.py:241",
                "Automatically detected platform cuda.",
                version,
            ),
        ),
        (
            at(0.02),
            info(
                at(0.02),
                "api_server.py:1805",
                &format!("vLLM API server version {release}"),
                version,
            ),
        ),
        (
            at(0.03),
            info(
                at(0.03),
                "utils.py:326",
                &format!(
                    "non-default args: {{'model': '{}', 'max_model_len': {}, 'max_num_seqs': {}, 'max_num_batched_tokens': {}, 'gpu_memory_utilization': {}, 'port': {port}}}",
                    model.id,
                    params.max_model_len,
                    params.max_num_seqs,
                    params.max_num_batched_tokens,
                    params.gpu_memory_utilization
                ),
                version,
            ),
        ),
        (
            at(0.65),
            info(
                at(0.65),
                "gpu_model_runner.py:1953",
                &format!("Model loading took {weights_gib:.4} GiB and {load_secs:.6} seconds"),
                version,
            ),
        ),
        (
            at(0.8),
            info(
                at(0.8),
                "gpu_worker.py:276",
                &format!("Available KV cache memory: {kv_gib:.2} GiB"),
                version,
            ),
        ),
        (
            at(0.8),
            info(
                at(0.8),
                "kv_cache_utils.py:849",
                &format!("GPU KV cache size: {} tokens", thousands(kv_tokens)),
                version,
            ),
        ),
        (
            at(0.8),
            info(
                at(0.8),
                "kv_cache_utils.py:853",
                &format!(
                    "Maximum concurrency for {} tokens per request: {concurrency:.2}x",
                    thousands(u64::from(params.max_model_len))
                ),
                version,
            ),
        ),
        (
            at(0.99),
            info(
                at(0.99),
                "api_server.py:1880",
                &format!("Starting vLLM API server 0 on http://0.0.0.0:{port}"),
                version,
            ),
        ),
        (at(1.0), "INFO:     Started server process [1]".to_owned()),
        (
            at(1.0),
            "INFO:     Waiting for application startup.".to_owned(),
        ),
        (
            at(1.0),
            "INFO:     Application startup complete.".to_owned(),
        ),
    ]
}

/// What one stats line reports, over the interval since the previous one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatsWindow {
    pub prompt_tps: f64,
    pub generation_tps: f64,
    pub running: usize,
    pub waiting: usize,
    /// 0..1.
    pub kv_usage: f64,
    /// Hits / queries in the interval (0..1); `None` when nothing was looked up.
    pub prefix_hit_rate: Option<f64>,
}

/// The periodic stats line.
pub fn stats(at: f64, s: &StatsWindow, version: SimVersion) -> String {
    let hit = s.prefix_hit_rate.unwrap_or(0.0) * 100.0;
    match version {
        SimVersion::V1 => info(
            at,
            "loggers.py:123",
            &format!(
                "Engine 000: Avg prompt throughput: {:.1} tokens/s, Avg generation throughput: {:.1} tokens/s, Running: {} reqs, Waiting: {} reqs, GPU KV cache usage: {:.1}%, Prefix cache hit rate: {hit:.1}%",
                s.prompt_tps,
                s.generation_tps,
                s.running,
                s.waiting,
                s.kv_usage * 100.0
            ),
            version,
        ),
        SimVersion::V0 => info(
            at,
            "metrics.py:455",
            &format!(
                "Avg prompt throughput: {:.1} tokens/s, Avg generation throughput: {:.1} tokens/s, Running: {} reqs, Swapped: 0 reqs, Pending: {} reqs, GPU KV cache usage: {:.1}%, CPU KV cache usage: 0.0%.",
                s.prompt_tps,
                s.generation_tps,
                s.running,
                s.waiting,
                s.kv_usage * 100.0
            ),
            version,
        ),
    }
}

/// The crash of an engine whose first chunked prefill does not fit: the CUDA allocation of one
/// step's worth of tokens (`max_num_batched_tokens` × KV bytes per token) fails during the
/// profiling run.
pub fn oom_crash(
    at: f64,
    model: &ModelSpec,
    max_num_batched_tokens: u64,
    gpu_total_mib: u64,
) -> Vec<(f64, String)> {
    let tried = (max_num_batched_tokens as f64 * model.kv_bytes_per_token as f64) / GIB;
    let total = gpu_total_mib as f64 / 1024.0;
    let stamp = clock(at);
    [
        format!("ERROR {stamp} [core.py:700] EngineCore failed to start."),
        format!("ERROR {stamp} [core.py:700] Traceback (most recent call last):"),
        "  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py\", line 2501, in profile_run".to_owned(),
        "    hidden_states = self._dummy_run(self.max_num_tokens)".to_owned(),
        format!(
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried:.2} GiB. GPU 0 has a total capacity of {total:.2} GiB."
        ),
        format!("ERROR {stamp} [api_server.py:1530] RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {{}}"),
    ]
    .into_iter()
    .map(|line| (at, line))
    .collect()
}

/// `444224` → `444,224`.
fn thousands(n: u64) -> String {
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
    use crate::sim::fleet::LLAMA_8B;

    #[test]
    fn stats_line_reads_like_vllm_v1() {
        // 2025-01-01T00:00:10Z
        let line = stats(
            1_735_689_610.0,
            &StatsWindow {
                prompt_tps: 1234.56,
                generation_tps: 567.8,
                running: 12,
                waiting: 3,
                kv_usage: 0.234,
                prefix_hit_rate: Some(0.456),
            },
            SimVersion::V1,
        );
        assert_eq!(
            line,
            "INFO 01-01 00:00:10 [loggers.py:123] Engine 000: Avg prompt throughput: 1234.6 tokens/s, \
             Avg generation throughput: 567.8 tokens/s, Running: 12 reqs, Waiting: 3 reqs, \
             GPU KV cache usage: 23.4%, Prefix cache hit rate: 45.6%"
        );
    }

    #[test]
    fn oom_names_the_step_allocation() {
        // 16384 tokens × 128 KiB = 2 GiB.
        let lines = oom_crash(0.0, &LLAMA_8B, 16_384, 81_559);
        assert!(lines.iter().any(|(_, l)| l.starts_with(
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
        )));
    }

    #[test]
    fn startup_figures_follow_the_parameters() {
        let params = EngineParams {
            num_gpu_blocks: 27_763,
            ..EngineParams::default()
        };
        let lines = startup(0.0, 10.0, &LLAMA_8B, &params, 8000, SimVersion::V1);
        let text: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
        // 27763 blocks × 16 tokens = 444,208 tokens; / 32768 = 13.56x.
        assert!(
            text.iter()
                .any(|l| l.ends_with("GPU KV cache size: 444,208 tokens"))
        );
        assert!(
            text.iter()
                .any(|l| l.ends_with("Maximum concurrency for 32,768 tokens per request: 13.56x"))
        );
        assert!(lines.windows(2).all(|w| w[0].0 <= w[1].0), "in time order");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
    }
}
