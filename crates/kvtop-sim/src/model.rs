//! PURE. Traffic model of one vLLM engine: Poisson arrivals, lognormal prompt and output
//! lengths, a paged KV cache, FCFS admission into a continuous batch, chunked prefill, decode,
//! recompute preemption when the KV cache runs out, prefix-cache hits, client aborts, and the
//! counters and histograms vLLM would export. Deterministic for a seed; time is passed in.
//!
//! Work is organised in sub-steps of at most [`MAX_SUBSTEP_S`] simulated seconds. Inside a
//! sub-step the batch is advanced in a few phases of constant composition (a phase ends when the
//! oldest prefill completes or a request arrives at an idle engine), and each phase is computed
//! in aggregate: every decoding request gains the same number of tokens and equal observations
//! are recorded once with a weight. The cost is O(batch size) per phase, independent of the
//! number of engine steps simulated.

use std::collections::VecDeque;

use super::buckets::{self, SimVersion};
use super::histogram::SimHistogram;
use super::params::EngineParams;
use super::sampling::Sampler;

/// Longest sub-step, simulated seconds.
pub(crate) const MAX_SUBSTEP_S: f64 = 0.1;
/// Most sub-steps per [`EngineModel::advance`] call; a longer interval uses longer sub-steps.
pub(crate) const MAX_SUBSTEPS_PER_ADVANCE: f64 = 2_000.0;
/// Most phases per sub-step; the last phase then runs to the end of the sub-step.
const MAX_PHASES_PER_SUBSTEP: usize = 12;
/// Most arrivals generated in one call; beyond it the surplus is turned away in bulk.
const MAX_ARRIVALS_PER_CALL: usize = 20_000;
/// Window over which V0's average throughput gauges are computed, seconds.
const THROUGHPUT_WINDOW_S: f64 = 5.0;
/// Time constant of the smoothed GPU activity, seconds.
const ACTIVITY_TAU_S: f64 = 1.0;
/// Token gaps spread around the step time (sampling, scheduling, interleaved prefill): a
/// quarter of the tokens at each of these multiples of it, the rest at the step time itself.
const TOKEN_GAP_SPREAD: [f64; 2] = [0.85, 1.3];
/// Times closer than this are the same instant.
const EPSILON_S: f64 = 1e-9;

/// Why a request finished (`finished_reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FinishReason {
    /// The model produced an end-of-sequence token.
    Stop,
    /// `max_tokens` was reached.
    Length,
    /// The client went away (cancelled, timed out in the queue, or was turned away).
    Abort,
}

/// Cumulative counters of one engine process. They only grow until [`EngineModel::restart`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EngineCounters {
    pub preemptions: u64,
    /// Prompt tokens of requests that produced their first token.
    pub prompt_tokens: u64,
    pub generation_tokens: u64,
    /// Prompt tokens looked up in the prefix cache (every scheduling, recomputes included).
    pub prefix_queries: u64,
    /// Of those, tokens found in the cache.
    pub prefix_hits: u64,
    pub finished_stop: u64,
    pub finished_length: u64,
    pub finished_abort: u64,
    /// CPU seconds of the serving process.
    pub cpu_seconds: f64,
    /// Speculative decoding: draft steps, tokens proposed, tokens accepted (0 without it).
    pub spec_drafts: u64,
    pub spec_draft_tokens: u64,
    pub spec_accepted_tokens: u64,
    /// HTTP answers of the API server: completions served (2xx), requests turned away (4xx:
    /// 429 when the queue is full, 400 for a request that can never fit).
    pub http_ok: u64,
    pub http_rejected: u64,
}

impl EngineCounters {
    #[cfg(test)]
    /// Finished requests over every reason.
    pub(crate) fn finished_total(&self) -> u64 {
        self.finished_stop + self.finished_length + self.finished_abort
    }
}

/// The histograms of one engine, bucketed as the engine's metrics dialect does.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineHistograms {
    pub ttft: SimHistogram,
    /// Inter-token latency; V1 0.10 exports the same data as `time_per_output_token_seconds`.
    pub itl: SimHistogram,
    /// Mean time per output token of each finished request (V1 0.11+).
    pub tpot: SimHistogram,
    pub e2e: SimHistogram,
    pub queue: SimHistogram,
    pub prefill: SimHistogram,
    pub decode: SimHistogram,
    pub inference: SimHistogram,
    pub prefill_time_per_token: SimHistogram,
    pub prompt_tokens: SimHistogram,
    pub generation_tokens: SimHistogram,
    pub iteration_tokens: SimHistogram,
    pub max_num_generation_tokens: SimHistogram,
    pub params_n: SimHistogram,
    pub params_max_tokens: SimHistogram,
}

impl EngineHistograms {
    fn new(version: SimVersion, max_model_len: u32) -> Self {
        let (ttft, itl, e2e) = match version {
            SimVersion::V1 => (
                buckets::V1_TTFT,
                buckets::V1_ITL,
                buckets::V1_REQUEST_LATENCY,
            ),
            SimVersion::V0 => (buckets::V0_TTFT, buckets::V0_TPOT, buckets::V0_E2E),
        };
        let tokens = buckets::one_two_five(f64::from(max_model_len));
        Self {
            ttft: SimHistogram::new(ttft),
            itl: SimHistogram::new(itl),
            tpot: SimHistogram::new(buckets::V1_ITL),
            e2e: SimHistogram::new(e2e),
            queue: SimHistogram::new(buckets::V1_REQUEST_LATENCY),
            prefill: SimHistogram::new(buckets::V1_REQUEST_LATENCY),
            decode: SimHistogram::new(buckets::V1_REQUEST_LATENCY),
            inference: SimHistogram::new(buckets::V1_REQUEST_LATENCY),
            prefill_time_per_token: SimHistogram::new(buckets::V1_PREFILL_PER_TOKEN),
            prompt_tokens: SimHistogram::new(tokens.clone()),
            generation_tokens: SimHistogram::new(tokens.clone()),
            iteration_tokens: SimHistogram::new(buckets::V1_ITERATION_TOKENS),
            max_num_generation_tokens: SimHistogram::new(tokens.clone()),
            params_n: SimHistogram::new(buckets::PARAMS_N),
            params_max_tokens: SimHistogram::new(tokens),
        }
    }
}

/// One request inside the engine.
#[derive(Debug, Clone)]
struct Request {
    arrived: f64,
    prompt: u32,
    max_tokens: u32,
    /// Tokens to generate before finishing with `reason`.
    target: u32,
    reason: FinishReason,
    generated: u32,
    /// Tokens still to compute before decoding (re)starts.
    to_prefill: u32,
    /// KV blocks held.
    blocks: u32,
    scheduled_at: Option<f64>,
    first_token_at: Option<f64>,
    finished_at: Option<f64>,
}

/// What one phase of engine steps looks like.
#[derive(Debug, Clone, Copy)]
struct StepPlan {
    decoding: usize,
    /// Prompt tokens computed per step.
    prefill_chunk: u32,
    /// Seconds per step; 0 when idle.
    step_s: f64,
}

/// Average prompt and generation throughput over the last completed window (V0 gauges).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct ThroughputWindow {
    started_at: f64,
    prompt_at_start: u64,
    generation_at_start: u64,
    prompt_tps: f64,
    generation_tps: f64,
}

/// Everything that a process restart wipes.
#[derive(Debug, Clone)]
struct ProcessState {
    started_at: f64,
    clock: f64,
    next_arrival_at: f64,
    waiting: VecDeque<Request>,
    running: Vec<Request>,
    blocks_used: u64,
    /// Fractional engine steps carried to the next phase.
    step_carry: f64,
    /// Fractional prefill tokens carried to the next phase.
    prefill_carry: f64,
    counters: EngineCounters,
    histograms: EngineHistograms,
    busy_seconds: f64,
    activity: f64,
    throughput: ThroughputWindow,
    /// Fractional draft steps carried to the next decode (speculative decoding).
    spec_carry: f64,
}

/// Simulated vLLM engine.
#[derive(Debug, Clone)]
pub struct EngineModel {
    params: EngineParams,
    sampler: Sampler,
    state: ProcessState,
}

impl EngineModel {
    /// A freshly started engine process at simulated time `now` (seconds since the Unix epoch).
    pub fn new(params: EngineParams, seed: u64, now: f64) -> Self {
        let mut sampler = Sampler::new(seed);
        let state = ProcessState::new(&params, &mut sampler, now);
        Self {
            params,
            sampler,
            state,
        }
    }

    /// Kill the process and start a new one at `now`: every request is lost, counters and
    /// histograms start again from zero, and the start time is `now`.
    pub fn restart(&mut self, now: f64) {
        self.state = ProcessState::new(&self.params, &mut self.sampler, now);
    }

    /// Replace the engine's parameters from now on, keeping its process state (requests,
    /// counters, histograms): a change of traffic or of behaviour without a restart. The
    /// metrics dialect stays the one the process started with.
    pub(crate) fn set_params(&mut self, params: EngineParams) {
        let version = self.params.version;
        let rate_changed = params.traffic.arrival_rate != self.params.traffic.arrival_rate;
        self.params = EngineParams { version, ..params };
        if rate_changed {
            let rate = self.params.traffic.arrival_rate;
            self.state.next_arrival_at = self.state.clock + self.sampler.exponential(rate);
        }
    }

    /// Change the arrival rate from now on (0 stops new traffic, as when drained).
    pub fn set_arrival_rate(&mut self, rate: f64) {
        self.params.traffic.arrival_rate = rate.max(0.0);
        self.state.next_arrival_at =
            self.state.clock + self.sampler.exponential(self.params.traffic.arrival_rate);
    }

    /// Advance the engine to simulated time `now`; earlier times are ignored.
    pub(crate) fn advance_to(&mut self, now: f64) {
        let dt = now - self.state.clock;
        if dt > 0.0 {
            self.advance(dt);
        }
    }

    /// Advance the engine by `dt` simulated seconds (non-positive or non-finite: no-op).
    pub fn advance(&mut self, dt: f64) {
        if !(dt > 0.0 && dt.is_finite()) {
            return;
        }
        let end = self.state.clock + dt;
        let substep = MAX_SUBSTEP_S.max(dt / MAX_SUBSTEPS_PER_ADVANCE);
        while self.state.clock < end - EPSILON_S {
            let target = (self.state.clock + substep).min(end);
            self.substep(target);
        }
        self.state.clock = end;
    }

    /// The engine's parameters.
    pub fn params(&self) -> &EngineParams {
        &self.params
    }

    /// Current simulated time of the engine.
    pub fn clock(&self) -> f64 {
        self.state.clock
    }

    /// When the current process started.
    pub(crate) fn started_at(&self) -> f64 {
        self.state.started_at
    }

    /// Requests in the running batch.
    pub fn running(&self) -> usize {
        self.state.running.len()
    }

    /// Requests waiting to be scheduled.
    pub fn waiting(&self) -> usize {
        self.state.waiting.len()
    }

    #[cfg(test)]
    /// KV blocks held by running requests.
    pub(crate) fn blocks_used(&self) -> u64 {
        self.state.blocks_used
    }

    /// KV cache usage, 0..1.
    pub fn kv_usage(&self) -> f64 {
        if self.params.num_gpu_blocks == 0 {
            return 0.0;
        }
        (self.state.blocks_used as f64 / f64::from(self.params.num_gpu_blocks)).clamp(0.0, 1.0)
    }

    /// Cumulative counters.
    pub fn counters(&self) -> &EngineCounters {
        &self.state.counters
    }

    /// Cumulative histograms.
    pub fn histograms(&self) -> &EngineHistograms {
        &self.state.histograms
    }

    /// Smoothed GPU utilisation caused by engine steps (0..1, time constant ~1 s).
    pub(crate) fn gpu_activity(&self) -> f64 {
        self.state.activity
    }

    /// V0 `avg_prompt_throughput_toks_per_s` / `avg_generation_throughput_toks_per_s` over the
    /// last completed window.
    pub(crate) fn avg_throughput(&self) -> (f64, f64) {
        (
            self.state.throughput.prompt_tps,
            self.state.throughput.generation_tps,
        )
    }

    /// Lifetime prefix-cache hit rate (V0 gauge `gpu_prefix_cache_hit_rate`), 0 before any query.
    pub(crate) fn prefix_hit_rate(&self) -> f64 {
        let c = &self.state.counters;
        if c.prefix_queries == 0 {
            0.0
        } else {
            c.prefix_hits as f64 / c.prefix_queries as f64
        }
    }

    // ---- simulation -------------------------------------------------------------------

    fn substep(&mut self, end: f64) {
        let mut phases = 0;
        while self.state.clock < end - EPSILON_S {
            let now = self.state.clock;
            self.enqueue_arrivals(now);
            self.expire_waiting(now);
            self.admit(now);
            let plan = self.plan();
            let mut phase_end = end;
            if phases + 1 < MAX_PHASES_PER_SUBSTEP {
                let can_admit = self.state.waiting.is_empty()
                    && self.state.running.len() < self.params.max_num_seqs;
                if can_admit && self.state.next_arrival_at < phase_end {
                    phase_end = self.state.next_arrival_at.max(now + EPSILON_S);
                }
                if let Some(done_in) = self.first_prefill_done_in(&plan) {
                    phase_end = phase_end.min(now + done_in);
                }
            }
            let phase_end = phase_end.min(end);
            self.run_phase(now, phase_end - now, plan);
            self.state.clock = phase_end;
            self.update_throughput_window(phase_end);
            phases += 1;
        }
    }

    /// A new request arriving at `at`.
    fn new_request(&mut self, at: f64) -> Request {
        let t = self.params.traffic;
        let max_len = self.params.max_model_len.max(2);
        let prompt = clamp_tokens(
            self.sampler.lognormal(t.prompt_median, t.prompt_sigma),
            max_len - 1,
        );
        let max_tokens = t.max_tokens.min(max_len - prompt).max(1);
        let natural = clamp_tokens(
            self.sampler.lognormal(t.output_median, t.output_sigma),
            u32::MAX,
        );
        let (mut target, mut reason) = if natural >= max_tokens {
            (max_tokens, FinishReason::Length)
        } else {
            (natural, FinishReason::Stop)
        };
        if self.sampler.chance(t.abort_share) {
            let fraction = self.sampler.uniform();
            target = ((f64::from(target) * fraction).round() as u32).max(1);
            reason = FinishReason::Abort;
        }
        Request {
            arrived: at,
            prompt,
            max_tokens,
            target,
            reason,
            generated: 0,
            to_prefill: 0,
            blocks: 0,
            scheduled_at: None,
            first_token_at: None,
            finished_at: None,
        }
    }

    /// Queue every arrival up to `now`. While the clients' in-flight limit is reached, their
    /// would-be arrivals are not sent at all.
    fn enqueue_arrivals(&mut self, now: f64) {
        let rate = self.params.traffic.arrival_rate;
        let max_in_flight = self.params.traffic.max_in_flight;
        let mut generated = 0;
        while self.state.next_arrival_at <= now {
            if self.state.running.len() + self.state.waiting.len() >= max_in_flight {
                self.state.next_arrival_at += self.sampler.exponential(rate);
                continue;
            }
            if generated >= MAX_ARRIVALS_PER_CALL {
                // Too many to model one by one: turn the rest away in bulk.
                let surplus = ((now - self.state.next_arrival_at) * rate).max(0.0).round();
                self.state.counters.finished_abort += surplus as u64;
                self.state.counters.http_rejected += surplus as u64;
                self.state.next_arrival_at = now + self.sampler.exponential(rate);
                break;
            }
            let at = self.state.next_arrival_at;
            let request = self.new_request(at);
            if self.state.waiting.len() >= self.params.traffic.max_waiting {
                self.state.counters.finished_abort += 1;
                self.state.counters.http_rejected += 1;
            } else {
                self.state.waiting.push_back(request);
            }
            self.state.next_arrival_at = at + self.sampler.exponential(rate);
            generated += 1;
        }
    }

    /// Clients that waited longer than their timeout give up.
    fn expire_waiting(&mut self, now: f64) {
        // The queue is in arrival order (preempted requests, put back at the head, arrived
        // before everything still waiting), so expired clients are at the front.
        let timeout = self.params.traffic.client_timeout_s;
        while self
            .state
            .waiting
            .front()
            .is_some_and(|r| now - r.arrived > timeout)
        {
            self.state.waiting.pop_front();
            self.state.counters.finished_abort += 1;
        }
    }

    fn blocks_for(&self, tokens: u32) -> u32 {
        tokens.div_ceil(self.params.block_size.max(1))
    }

    /// FCFS admission while the batch has a free slot and the KV cache has room. A stalled
    /// engine admits nothing more once a request is running (its scheduler is stuck behind
    /// the hung step).
    fn admit(&mut self, now: f64) {
        let capacity = self.params.usable_blocks();
        let watermark =
            (f64::from(self.params.num_gpu_blocks) * self.params.admission_watermark).ceil() as u64;
        while self.state.running.len() < self.params.max_num_seqs {
            if self.params.stalled && !self.state.running.is_empty() {
                break;
            }
            let Some(front) = self.state.waiting.front() else {
                break;
            };
            let tokens = front.prompt + front.generated;
            let need = u64::from(self.blocks_for(tokens.max(1)));
            if need + watermark > capacity {
                // Can never fit: vLLM rejects it.
                self.state.waiting.pop_front();
                self.state.counters.finished_abort += 1;
                self.state.counters.http_rejected += 1;
                continue;
            }
            if self.state.blocks_used + need + watermark > capacity {
                break;
            }
            let Some(mut req) = self.state.waiting.pop_front() else {
                break;
            };
            // Each request's share of cached prompt varies ±10 points around the mean.
            let hit_ratio = self.params.traffic.prefix_hit_ratio + self.sampler.between(-0.1, 0.1);
            let block = self.params.block_size.max(1);
            let cached =
                ((f64::from(req.prompt) * hit_ratio.clamp(0.0, 0.97)) as u32 / block) * block;
            let cached = cached.min(req.prompt.saturating_sub(1));
            self.state.counters.prefix_queries += u64::from(tokens);
            self.state.counters.prefix_hits += u64::from(cached);
            req.to_prefill = (tokens - cached).max(1);
            req.blocks = need as u32;
            req.scheduled_at.get_or_insert(now.max(req.arrived));
            self.state.blocks_used += need;
            self.state.running.push(req);
        }
    }

    fn plan(&self) -> StepPlan {
        let p = &self.params;
        let decoding = self
            .state
            .running
            .iter()
            .filter(|r| r.to_prefill == 0)
            .count();
        let pending: u64 = self
            .state
            .running
            .iter()
            .map(|r| u64::from(r.to_prefill))
            .sum();
        let room = u64::from(p.max_num_batched_tokens)
            .saturating_sub(decoding as u64)
            .max(1);
        let prefill_chunk = pending.min(room) as u32;
        if decoding == 0 && prefill_chunk == 0 {
            return StepPlan {
                decoding,
                prefill_chunk,
                step_s: 0.0,
            };
        }
        let kv_tokens = self.state.blocks_used as f64 * f64::from(p.block_size);
        let step_s = p.perf.step_overhead_s
            + p.perf.per_sequence_s * decoding as f64
            + p.perf.per_prefill_token_s * f64::from(prefill_chunk)
            + p.perf.per_kv_token_s * kv_tokens;
        StepPlan {
            decoding,
            prefill_chunk,
            step_s: step_s.max(1e-6),
        }
    }

    /// Seconds until the oldest request in prefill finishes it, if one is in prefill.
    fn first_prefill_done_in(&self, plan: &StepPlan) -> Option<f64> {
        if plan.prefill_chunk == 0 {
            return None;
        }
        let first = self.state.running.iter().find(|r| r.to_prefill > 0)?;
        let steps = first.to_prefill.div_ceil(plan.prefill_chunk);
        Some(f64::from(steps) * plan.step_s)
    }

    fn run_phase(&mut self, start: f64, duration: f64, plan: StepPlan) {
        if duration <= 0.0 {
            return;
        }
        if self.params.stalled {
            self.run_stalled_phase(duration);
            return;
        }
        let perf = &self.params.perf;
        let busy = plan.step_s > 0.0;
        let occupancy = ((plan.decoding as f64 + f64::from(plan.prefill_chunk))
            / perf.saturating_step_tokens.max(1.0))
        .min(1.0);
        let activity = if busy {
            perf.util_floor + (1.0 - perf.util_floor) * occupancy
        } else {
            0.0
        };
        let cpu_rate = perf.idle_cpu + if busy { perf.busy_cpu } else { 0.0 };
        let smoothing = 1.0 - (-duration / ACTIVITY_TAU_S).exp();
        self.state.activity += (activity - self.state.activity) * smoothing;
        self.state.counters.cpu_seconds += cpu_rate * duration;
        if !busy {
            self.state.step_carry = 0.0;
            self.state.prefill_carry = 0.0;
            return;
        }
        self.state.busy_seconds += duration;

        let steps_exact = duration / plan.step_s;
        self.state.step_carry += steps_exact;
        let steps = self.state.step_carry.floor();
        self.state.step_carry -= steps;
        let steps_u32 = steps as u32;

        let decoded = self.decode(start, duration, plan.step_s, steps_u32);
        self.prefill(start, duration, steps_exact * f64::from(plan.prefill_chunk));

        let h = &mut self.state.histograms;
        h.iteration_tokens.observe_n(
            plan.decoding as f64 + f64::from(plan.prefill_chunk),
            u64::from(steps_u32),
        );
        let quarter = decoded / 4;
        for factor in TOKEN_GAP_SPREAD {
            h.itl.observe_n(plan.step_s * factor, quarter);
        }
        h.itl.observe_n(plan.step_s, decoded - 2 * quarter);

        self.retire_finished();
        self.grow_blocks_and_preempt();
    }

    /// A hung engine: the step never returns, so nothing is computed, the GPU spins in the
    /// collective (fully busy) and the process keeps burning CPU.
    fn run_stalled_phase(&mut self, duration: f64) {
        let perf = &self.params.perf;
        let smoothing = 1.0 - (-duration / ACTIVITY_TAU_S).exp();
        self.state.activity += (1.0 - self.state.activity) * smoothing;
        self.state.counters.cpu_seconds += (perf.idle_cpu + perf.busy_cpu) * duration;
        self.state.step_carry = 0.0;
        self.state.prefill_carry = 0.0;
    }

    /// Speculative decoding tallies for `tokens` generated tokens: each draft step emits its
    /// accepted tokens plus one of the target's, so steps = tokens / (1 + k × acceptance).
    fn count_spec_decode(&mut self, tokens: u64) {
        let Some(spec) = self.params.spec_decode else {
            return;
        };
        self.state.spec_carry += tokens as f64 / spec.tokens_per_draft();
        let drafts = self.state.spec_carry.floor();
        self.state.spec_carry -= drafts;
        let drafts = drafts as u64;
        let c = &mut self.state.counters;
        c.spec_drafts += drafts;
        c.spec_draft_tokens += drafts * u64::from(spec.num_speculative_tokens);
        // Tokens emitted beyond one per draft step were accepted draft tokens.
        c.spec_accepted_tokens += tokens.saturating_sub(drafts);
    }

    /// Every decoding request gains `steps` tokens (fewer if it finishes). Returns the number
    /// of tokens produced.
    fn decode(&mut self, start: f64, duration: f64, step_s: f64, steps: u32) -> u64 {
        if steps == 0 {
            return 0;
        }
        let mut produced = 0u64;
        for req in self.state.running.iter_mut().filter(|r| r.to_prefill == 0) {
            let remaining = req.target.saturating_sub(req.generated);
            let gained = steps.min(remaining);
            req.generated += gained;
            produced += u64::from(gained);
            if req.generated >= req.target && req.finished_at.is_none() {
                req.finished_at = Some(start + (f64::from(remaining) * step_s).min(duration));
            }
        }
        self.state.counters.generation_tokens += produced;
        self.count_spec_decode(produced);
        produced
    }

    /// Compute `budget` prompt tokens FCFS; requests that complete their prompt emit their
    /// first token.
    fn prefill(&mut self, start: f64, duration: f64, budget: f64) {
        if budget <= 0.0 {
            return;
        }
        self.state.prefill_carry += budget;
        let mut left = self.state.prefill_carry.floor() as u64;
        let total = left.max(1) as f64;
        let mut consumed = 0u64;
        let mut first_tokens = 0u64;
        for req in self.state.running.iter_mut().filter(|r| r.to_prefill > 0) {
            if left == 0 {
                break;
            }
            let take = u64::from(req.to_prefill).min(left);
            req.to_prefill -= take as u32;
            left -= take;
            consumed += take;
            if req.to_prefill > 0 {
                continue;
            }
            if req.first_token_at.is_none() {
                let at = start + (consumed as f64 / total).min(1.0) * duration;
                let scheduled = req.scheduled_at.unwrap_or(at);
                req.first_token_at = Some(at);
                req.generated = req.generated.max(1);
                first_tokens += 1;
                let h = &mut self.state.histograms;
                h.ttft.observe(at - req.arrived);
                h.prefill_time_per_token
                    .observe((at - scheduled) / f64::from(req.prompt.max(1)));
                self.state.counters.prompt_tokens += u64::from(req.prompt);
                if req.generated >= req.target {
                    req.finished_at = Some(at);
                }
            }
        }
        self.state.counters.generation_tokens += first_tokens;
        // Budget nobody could use is not banked.
        self.state.prefill_carry = if left > 0 {
            0.0
        } else {
            self.state.prefill_carry - consumed as f64
        };
    }

    /// Remove finished requests, free their blocks and record their statistics.
    fn retire_finished(&mut self) {
        if self.state.running.iter().all(|r| r.finished_at.is_none()) {
            return;
        }
        let running = std::mem::take(&mut self.state.running);
        let mut kept = Vec::with_capacity(running.len());
        for req in running {
            match req.finished_at {
                Some(at) => self.record_finished(&req, at),
                None => kept.push(req),
            }
        }
        self.state.running = kept;
    }

    fn record_finished(&mut self, req: &Request, at: f64) {
        self.state.blocks_used = self.state.blocks_used.saturating_sub(u64::from(req.blocks));
        let c = &mut self.state.counters;
        match req.reason {
            FinishReason::Stop => c.finished_stop += 1,
            FinishReason::Length => c.finished_length += 1,
            FinishReason::Abort => {
                c.finished_abort += 1;
                return;
            }
        }
        let scheduled = req.scheduled_at.unwrap_or(req.arrived);
        let first_token = req.first_token_at.unwrap_or(at);
        c.http_ok += 1;
        let h = &mut self.state.histograms;
        h.e2e.observe(at - req.arrived);
        h.queue.observe(scheduled - req.arrived);
        h.prefill.observe(first_token - scheduled);
        h.decode.observe(at - first_token);
        // vLLM's per-request TPOT: decode time over the tokens after the first (0 for one).
        let tpot = if req.generated > 1 {
            (at - first_token) / f64::from(req.generated - 1)
        } else {
            0.0
        };
        h.tpot.observe(tpot);
        h.inference.observe(at - scheduled);
        h.prompt_tokens.observe(f64::from(req.prompt));
        h.generation_tokens.observe(f64::from(req.generated));
        h.max_num_generation_tokens
            .observe(f64::from(req.max_tokens));
        h.params_n.observe(1.0);
        h.params_max_tokens.observe(f64::from(req.max_tokens));
    }

    /// Decoding requests need blocks for their new tokens; when the cache cannot hold them,
    /// the newest requests are preempted (blocks freed, back to the head of the queue, to be
    /// recomputed).
    fn grow_blocks_and_preempt(&mut self) {
        let block = self.params.block_size.max(1);
        let mut used = 0u64;
        for req in &mut self.state.running {
            if req.to_prefill == 0 {
                req.blocks = req.blocks.max((req.prompt + req.generated).div_ceil(block));
            }
            used += u64::from(req.blocks);
        }
        self.state.blocks_used = used;
        let capacity = self.params.usable_blocks();
        while self.state.blocks_used > capacity {
            let Some(mut victim) = self.state.running.pop() else {
                break;
            };
            self.state.blocks_used -= u64::from(victim.blocks);
            victim.blocks = 0;
            victim.to_prefill = 0;
            self.state.counters.preemptions += 1;
            self.state.waiting.push_front(victim);
        }
    }

    fn update_throughput_window(&mut self, now: f64) {
        let c = self.state.counters;
        let w = &mut self.state.throughput;
        let elapsed = now - w.started_at;
        if elapsed >= THROUGHPUT_WINDOW_S {
            w.prompt_tps = (c.prompt_tokens - w.prompt_at_start) as f64 / elapsed;
            w.generation_tps = (c.generation_tokens - w.generation_at_start) as f64 / elapsed;
            w.started_at = now;
            w.prompt_at_start = c.prompt_tokens;
            w.generation_at_start = c.generation_tokens;
        }
    }
}

impl ProcessState {
    fn new(params: &EngineParams, sampler: &mut Sampler, now: f64) -> Self {
        Self {
            started_at: now,
            clock: now,
            next_arrival_at: now + sampler.exponential(params.traffic.arrival_rate),
            waiting: VecDeque::new(),
            running: Vec::new(),
            blocks_used: 0,
            step_carry: 0.0,
            prefill_carry: 0.0,
            counters: EngineCounters::default(),
            histograms: EngineHistograms::new(params.version, params.max_model_len),
            busy_seconds: 0.0,
            activity: 0.0,
            throughput: ThroughputWindow {
                started_at: now,
                ..ThroughputWindow::default()
            },
            spec_carry: 0.0,
        }
    }
}

/// A sampled length rounded to whole tokens in `1..=max`.
fn clamp_tokens(value: f64, max: u32) -> u32 {
    if value.is_finite() {
        value.round().clamp(1.0, f64::from(max.max(1))) as u32
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::{LLAMA_8B, Scenario, engine_params};
    use crate::gpu::H100_SXM;

    const T0: f64 = 1_800_000_000.0;

    fn params(scenario: Scenario) -> EngineParams {
        let mut s = Sampler::new(5);
        engine_params(&LLAMA_8B, &H100_SXM, scenario, SimVersion::V1, &mut s)
    }

    fn all_histograms(h: &EngineHistograms) -> [&SimHistogram; 15] {
        [
            &h.ttft,
            &h.itl,
            &h.tpot,
            &h.e2e,
            &h.queue,
            &h.prefill,
            &h.decode,
            &h.inference,
            &h.prefill_time_per_token,
            &h.prompt_tokens,
            &h.generation_tokens,
            &h.iteration_tokens,
            &h.max_num_generation_tokens,
            &h.params_n,
            &h.params_max_tokens,
        ]
    }

    fn counter_values(m: &EngineModel) -> Vec<f64> {
        let c = m.counters();
        let mut v = vec![
            c.preemptions as f64,
            c.prompt_tokens as f64,
            c.generation_tokens as f64,
            c.prefix_queries as f64,
            c.prefix_hits as f64,
            c.finished_stop as f64,
            c.finished_length as f64,
            c.finished_abort as f64,
            c.cpu_seconds,
        ];
        for h in all_histograms(m.histograms()) {
            v.push(h.count() as f64);
            v.push(h.sum());
            v.extend(h.cumulative().map(|x| x as f64));
        }
        v
    }

    #[test]
    fn counters_never_decrease_and_kv_usage_stays_in_range() {
        for scenario in [Scenario::Healthy, Scenario::KvPressure] {
            let p = params(scenario);
            let capacity = u64::from(p.num_gpu_blocks);
            let mut m = EngineModel::new(p, 11, T0);
            let mut before = counter_values(&m);
            // Irregular intervals, from a fraction of a step to minutes.
            for dt in [
                0.003, 0.05, 0.7, 1.0, 2.5, 0.01, 9.0, 30.0, 0.2, 120.0, 1.0, 45.0,
            ] {
                m.advance(dt);
                let after = counter_values(&m);
                assert_eq!(before.len(), after.len());
                for (i, (b, a)) in before.iter().zip(&after).enumerate() {
                    assert!(a >= b, "{scenario:?}: value {i} fell from {b} to {a}");
                }
                assert!((0.0..=1.0).contains(&m.kv_usage()), "{}", m.kv_usage());
                assert!(m.blocks_used() <= capacity);
                assert!(m.running() <= m.params().max_num_seqs);
                before = after;
            }
        }
    }

    #[test]
    fn pressured_engine_fills_kv_and_preempts_within_30s_while_healthy_stays_low() {
        let mut pressured = EngineModel::new(params(Scenario::KvPressure), 1, T0);
        let mut healthy = EngineModel::new(params(Scenario::Healthy), 1, T0);
        let (mut p_max, mut h_max) = (0.0f64, 0.0f64);
        let mut ttft_early = (0u64, 0.0f64);
        for second in 1..=30 {
            pressured.advance(1.0);
            healthy.advance(1.0);
            p_max = p_max.max(pressured.kv_usage());
            h_max = h_max.max(healthy.kv_usage());
            if second == 10 {
                let t = &pressured.histograms().ttft;
                ttft_early = (t.count(), t.sum());
            }
        }
        assert!(p_max > 0.9, "pressured KV peaked at {p_max}");
        assert!(pressured.counters().preemptions > 0);
        assert!(pressured.waiting() > 0);
        assert!(h_max < 0.6, "healthy KV peaked at {h_max}");
        assert_eq!(healthy.counters().preemptions, 0);
        assert_eq!(healthy.waiting(), 0);
        // Mean TTFT of requests served in seconds 10..30 exceeds that of the first 10 s.
        let t = &pressured.histograms().ttft;
        let early_mean = ttft_early.1 / ttft_early.0.max(1) as f64;
        let late_mean = (t.sum() - ttft_early.1) / (t.count() - ttft_early.0).max(1) as f64;
        assert!(
            late_mean > 2.0 * early_mean,
            "TTFT {early_mean} -> {late_mean}"
        );
    }

    #[test]
    fn histograms_are_cumulative_and_count_equals_the_inf_bucket() {
        let mut m = EngineModel::new(params(Scenario::KvPressure), 3, T0);
        m.advance(90.0);
        for h in all_histograms(m.histograms()) {
            let cumulative: Vec<u64> = h.cumulative().collect();
            assert_eq!(cumulative.len(), h.bounds().len() + 1);
            assert!(
                cumulative.windows(2).all(|w| w[0] <= w[1]),
                "{cumulative:?}"
            );
            assert_eq!(cumulative.last().copied(), Some(h.count()));
        }
        assert!(m.histograms().ttft.count() > 0);
    }

    #[test]
    fn restart_starts_a_new_process_from_zero() {
        let mut m = EngineModel::new(params(Scenario::Healthy), 4, T0);
        m.advance(30.0);
        assert!(m.counters().generation_tokens > 0);
        assert!(m.running() > 0);
        m.restart(T0 + 30.0);
        assert_eq!(*m.counters(), EngineCounters::default());
        assert!(
            all_histograms(m.histograms())
                .iter()
                .all(|h| h.count() == 0)
        );
        assert_eq!((m.running(), m.waiting(), m.blocks_used()), (0, 0, 0));
        assert_eq!(m.started_at(), T0 + 30.0);
        m.advance(10.0);
        assert!(m.counters().generation_tokens > 0);
    }

    #[test]
    fn a_seed_determines_the_run() {
        let run = |seed| {
            let mut m = EngineModel::new(params(Scenario::KvPressure), seed, T0);
            for _ in 0..20 {
                m.advance(1.5);
            }
            m
        };
        let (a, b, c) = (run(9), run(9), run(10));
        assert_eq!(a.counters(), b.counters());
        assert_eq!(a.histograms(), b.histograms());
        assert_eq!(a.blocks_used(), b.blocks_used());
        assert_ne!(a.counters(), c.counters());
    }

    #[test]
    fn light_load_has_short_latencies() {
        let mut p = params(Scenario::Healthy);
        p.traffic.arrival_rate = 0.5;
        let mut m = EngineModel::new(p, 2, T0);
        m.advance(600.0);
        let h = m.histograms();
        let ttft = h.ttft.sum() / h.ttft.count().max(1) as f64;
        let itl = h.itl.sum() / h.itl.count().max(1) as f64;
        // Prompts of ~800 tokens at 25 µs/token ≈ 20 ms plus one 8 ms step.
        assert!(ttft > 0.005 && ttft < 0.1, "TTFT {ttft}");
        // An almost empty batch: 8 ms per step, plus the jitter mean (×1.0375).
        assert!(itl > 0.008 && itl < 0.012, "ITL {itl}");
        // About 0.5 × 600 = 300 arrivals; Poisson spread is ±17 at one sigma.
        let finished = m.counters().finished_total() + m.running() as u64;
        assert!((230..=370).contains(&finished), "{finished}");
    }

    #[test]
    fn one_long_advance_matches_the_arrival_rate() {
        let p = params(Scenario::Healthy);
        let rate = p.traffic.arrival_rate;
        let mut m = EngineModel::new(p, 8, T0);
        m.advance(3_600.0);
        let served = (m.counters().finished_total() + (m.running() + m.waiting()) as u64) as f64;
        let expected = rate * 3_600.0;
        assert!(
            (served / expected - 1.0).abs() < 0.05,
            "{served} vs {expected}"
        );
        assert!(m.kv_usage() < 0.9);
    }

    #[test]
    fn draining_empties_the_engine() {
        let mut m = EngineModel::new(params(Scenario::Healthy), 6, T0);
        m.advance(60.0);
        assert!(m.running() > 0);
        m.set_arrival_rate(0.0);
        let finished = m.counters().finished_total();
        m.advance(300.0);
        assert_eq!((m.running(), m.waiting(), m.blocks_used()), (0, 0, 0));
        assert!(m.counters().finished_total() > finished);
        assert!(m.gpu_activity() < 0.01);
    }
}
