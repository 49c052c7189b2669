//! PURE. Composition of the simulated fleet: which engines exist, what they serve, where they
//! run, what traffic they get and what is wrong with them. [`scenario_for`] is the one place
//! that decides each engine's [`Scenario`]; [`plan`] turns a size and a seed into names, nodes,
//! GPUs and engine parameters, deterministically.

use std::collections::HashSet;

use super::buckets::SimVersion;
use super::gpu::{GpuFault, GpuSpec, H100_SXM};
use super::params::{EngineParams, TrafficProfile};
use super::sampling::Sampler;

/// Kubernetes namespace of the simulated pods.
pub(crate) const NAMESPACE: &str = "llm";
/// Container name of the vLLM server in each pod.
pub(crate) const CONTAINER: &str = "vllm";
/// Block size of every simulated engine (vLLM's default).
pub(crate) const BLOCK_SIZE: u32 = 16;

/// A model the fleet serves, with what it costs in GPU memory.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    /// Model id (`model_name` label, `/v1/models`).
    pub id: &'static str,
    /// Deployment name of the pods serving it.
    pub deployment: &'static str,
    /// KV cache bytes per token (2 × layers × KV heads × head dim × 2 bytes for bf16).
    pub kv_bytes_per_token: u64,
    /// Weights in GPU memory, MiB.
    pub weights_mib: u64,
    /// Activation peak and CUDA graphs inside vLLM's memory budget, MiB.
    pub activation_mib: u64,
    pub max_model_len: u32,
}

/// Llama 3.1 8B: 32 layers, 8 KV heads of 128 → 128 KiB of KV per token.
pub(crate) const LLAMA_8B: ModelSpec = ModelSpec {
    id: "meta-llama/Llama-3.1-8B-Instruct",
    deployment: "vllm-llama-8b",
    kv_bytes_per_token: 2 * 32 * 8 * 128 * 2,
    weights_mib: 15_317,
    activation_mib: 2_560,
    max_model_len: 32_768,
};

/// Qwen2.5 7B: 28 layers, 4 KV heads of 128 → 56 KiB of KV per token.
pub(crate) const QWEN_7B: ModelSpec = ModelSpec {
    id: "Qwen/Qwen2.5-7B-Instruct",
    deployment: "vllm-qwen-7b",
    kv_bytes_per_token: 2 * 28 * 4 * 128 * 2,
    weights_mib: 14_535,
    activation_mib: 2_560,
    max_model_len: 32_768,
};

/// Arrivals per second that overload an engine with [`PRESSURE_REFERENCE_BLOCKS`] KV blocks
/// (an 8B model on one 80 GB GPU) with long prompts: its cache is full within ~10 s.
const PRESSURE_ARRIVALS_PER_S: f64 = 14.0;
/// KV cache size the pressure arrival rate refers to; other sizes scale it proportionally.
const PRESSURE_REFERENCE_BLOCKS: f64 = 27_000.0;

/// Range of the mean prefix-cache hit ratio of healthy traffic (shared system prompts and
/// multi-turn chats): above the 80 % the llm-d guidance asks for.
const HEALTHY_PREFIX: (f64, f64) = (0.84, 0.92);

/// Moderate chat traffic, well within one engine's capacity.
fn healthy_traffic(sampler: &mut Sampler) -> TrafficProfile {
    TrafficProfile {
        arrival_rate: sampler.between(6.0, 12.0),
        output_median: 300.0,
        prefix_hit_ratio: sampler.between(HEALTHY_PREFIX.0, HEALTHY_PREFIX.1),
        ..TrafficProfile::default()
    }
}

/// The models of the fleet; engine `i` serves `MODELS[i % 2]`.
pub const MODELS: [&ModelSpec; 2] = [&LLAMA_8B, &QWEN_7B];

/// What is going on with one engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Moderate traffic, well within capacity.
    Healthy,
    /// Arrivals above capacity with long prompts: the KV cache fills within ~10 s, requests
    /// queue, TTFT climbs and running requests are preempted.
    KvPressure,
    /// The endpoint refuses connections (the pod is not serving).
    Down,
    /// Healthy traffic on a GPU whose cooling failed: it heats towards 95 °C, draws its power
    /// cap and throttles its clock from 87 °C.
    GpuThermal,
    /// Healthy traffic on a GPU that reported this XID error (79: fallen off the bus; 48:
    /// double-bit ECC error; 94/95: contained/uncontained ECC error).
    GpuXid(u32),
    /// Light traffic on a starved GPU: utilization at most 12 %.
    GpuLowUtil,
    /// A fragmented KV cache (the last 7 % of blocks cannot be allocated) under more load than
    /// fits: usage sits at 91-93 %, requests queue and are preempted, TTFT climbs.
    KvThrash,
    /// Tiny batch limits (`--max-num-seqs 8 --max-num-batched-tokens 512`): requests queue
    /// while the KV cache is nearly empty, so throughput is low.
    LowThroughput,
    /// The engine hangs in a collective: requests stay running, no token comes out, the queue
    /// grows.
    StuckRequests,
    /// The engine dies with `CUDA out of memory` under load, its endpoint refuses for a few
    /// seconds, then it restarts (counters from zero), again and again.
    OomCrashloop,
    /// Too many OpenMP threads: the serving process burns more than two cores.
    HighCpu,
    /// Speculative decoding with a poorly matched draft model: 12 % of draft tokens accepted.
    SpecDecodePoor,
    /// Prompts share almost no prefix with what the engine has cached: hit rate ~6 %.
    PrefixMiss,
    /// KV usage held around 91 % (above the 88 % breaker) without a queue to speak of.
    CircuitOpen,
    /// The router piles new prompts onto this engine (KV ~70 %) while the other engines of its
    /// model idle (see [`Scenario::Idle`]).
    EmptyWorkerTrap,
    /// The router sends this engine almost nothing.
    Idle,
    /// A traffic surge on an engine capped at 128 running requests: 75 wait.
    QueueBuildup,
}

/// The XID of `Scenario::parse("xid")`: 79, "GPU has fallen off the bus".
pub(crate) const DEFAULT_XID: u32 = 79;

impl Scenario {
    /// Names [`Scenario::parse`] accepts, for help texts.
    pub(crate) const NAMES: [&'static str; 17] = [
        "healthy",
        "kv-pressure",
        "down",
        "gpu-thermal",
        "xid[:CODE]",
        "gpu-low-util",
        "kv-thrash",
        "low-throughput",
        "stuck-requests",
        "oom-crashloop",
        "high-cpu",
        "spec-decode-poor",
        "prefix-miss",
        "circuit-open",
        "empty-worker-trap",
        "idle",
        "queue-buildup",
    ];

    /// The scenario's name, as [`Scenario::parse`] reads it (`xid:48` for an XID).
    pub fn name(self) -> String {
        match self {
            Scenario::GpuXid(code) => format!("xid:{code}"),
            other => other.plain_name().to_owned(),
        }
    }

    fn plain_name(self) -> &'static str {
        match self {
            Scenario::Healthy => "healthy",
            Scenario::KvPressure => "kv-pressure",
            Scenario::Down => "down",
            Scenario::GpuThermal => "gpu-thermal",
            Scenario::GpuXid(_) => "xid",
            Scenario::GpuLowUtil => "gpu-low-util",
            Scenario::KvThrash => "kv-thrash",
            Scenario::LowThroughput => "low-throughput",
            Scenario::StuckRequests => "stuck-requests",
            Scenario::OomCrashloop => "oom-crashloop",
            Scenario::HighCpu => "high-cpu",
            Scenario::SpecDecodePoor => "spec-decode-poor",
            Scenario::PrefixMiss => "prefix-miss",
            Scenario::CircuitOpen => "circuit-open",
            Scenario::EmptyWorkerTrap => "empty-worker-trap",
            Scenario::Idle => "idle",
            Scenario::QueueBuildup => "queue-buildup",
        }
    }

    /// The built-in rule this scenario is made to trigger (see `config/rules.toml`), if any.
    pub fn rule(self) -> Option<&'static str> {
        Some(match self {
            Scenario::KvThrash => "ttft-kv-thrash",
            Scenario::LowThroughput => "batch-tokens-low",
            Scenario::StuckRequests => "stuck-requests",
            Scenario::OomCrashloop => "cuda-oom",
            Scenario::HighCpu => "cpu-high",
            Scenario::SpecDecodePoor => "spec-acceptance-low",
            Scenario::PrefixMiss => "prefix-hit-very-low",
            Scenario::CircuitOpen => "kv-breaker",
            Scenario::EmptyWorkerTrap => "empty-worker-trap",
            Scenario::QueueBuildup => "queue-deep",
            Scenario::Down => "engine-down",
            Scenario::KvPressure => "kv-full",
            Scenario::Healthy
            | Scenario::GpuThermal
            | Scenario::GpuXid(_)
            | Scenario::GpuLowUtil
            | Scenario::Idle => return None,
        })
    }

    /// Short note for listings; `None` for a healthy engine.
    pub fn note(self) -> Option<&'static str> {
        match self {
            Scenario::Healthy => None,
            Scenario::KvPressure => Some("KV pressure: arrivals above capacity, preempting"),
            Scenario::Down => Some("down: connection refused"),
            Scenario::GpuThermal => Some("GPU thermal: cooling failed, throttling"),
            Scenario::GpuXid(_) => Some("GPU XID error"),
            Scenario::GpuLowUtil => Some("GPU starved: low utilization"),
            Scenario::KvThrash => Some("KV thrash: fragmented cache full, preempting"),
            Scenario::LowThroughput => Some("low throughput: tiny batch limits, queueing"),
            Scenario::StuckRequests => Some("stuck: requests running, no tokens"),
            Scenario::OomCrashloop => Some("crash loop: CUDA out of memory, restarting"),
            Scenario::HighCpu => Some("high CPU: too many OpenMP threads"),
            Scenario::SpecDecodePoor => Some("spec decoding: 12% acceptance"),
            Scenario::PrefixMiss => Some("prefix cache misses: ~6% hits"),
            Scenario::CircuitOpen => Some("circuit open: KV above 88%"),
            Scenario::EmptyWorkerTrap => Some("empty worker trap: load piles onto it"),
            Scenario::Idle => Some("idle: the router sends it almost nothing"),
            Scenario::QueueBuildup => Some("queue build-up: traffic surge, 75 waiting"),
        }
    }

    /// A scenario by name: `healthy`, `kv-pressure`, `down`, `gpu-thermal` (or `thermal`),
    /// `xid` (XID 79) or `xid:CODE`, `gpu-low-util` (or `low-util`), and the diagnostics
    /// scenarios of [`Scenario::NAMES`] (`stuck` and `oom` are short for `stuck-requests` and
    /// `oom-crashloop`). Case-insensitive.
    pub fn parse(name: &str) -> Option<Scenario> {
        let name = name.trim().to_ascii_lowercase();
        if let Some(code) = name
            .strip_prefix("xid:")
            .or_else(|| name.strip_prefix("xid-"))
            .or_else(|| name.strip_prefix("gpu-xid:"))
        {
            return code.parse().ok().map(Scenario::GpuXid);
        }
        Some(match name.as_str() {
            "healthy" => Scenario::Healthy,
            "kv-pressure" | "kv_pressure" => Scenario::KvPressure,
            "down" => Scenario::Down,
            "gpu-thermal" | "thermal" => Scenario::GpuThermal,
            "xid" | "gpu-xid" => Scenario::GpuXid(DEFAULT_XID),
            "gpu-low-util" | "low-util" => Scenario::GpuLowUtil,
            "kv-thrash" => Scenario::KvThrash,
            "low-throughput" => Scenario::LowThroughput,
            "stuck-requests" | "stuck" => Scenario::StuckRequests,
            "oom-crashloop" | "oom" => Scenario::OomCrashloop,
            "high-cpu" => Scenario::HighCpu,
            "spec-decode-poor" => Scenario::SpecDecodePoor,
            "prefix-miss" => Scenario::PrefixMiss,
            "circuit-open" => Scenario::CircuitOpen,
            "empty-worker-trap" => Scenario::EmptyWorkerTrap,
            "idle" => Scenario::Idle,
            "queue-buildup" => Scenario::QueueBuildup,
            _ => return None,
        })
    }

    /// The fault of the engine's GPU in this scenario.
    pub(crate) fn gpu_fault(self) -> GpuFault {
        match self {
            Scenario::GpuThermal => GpuFault::Thermal,
            Scenario::GpuLowUtil => GpuFault::LowUtil,
            _ => GpuFault::None,
        }
    }

    /// The XID the engine's GPU reports in this scenario (0 = none).
    pub fn xid(self) -> u32 {
        match self {
            Scenario::GpuXid(code) => code,
            _ => 0,
        }
    }
}

/// Which engine a scenario is for: its index in the fleet or its pod name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineRef {
    Index(usize),
    Name(String),
}

impl EngineRef {
    /// A number is an index, anything else a pod name.
    pub fn parse(text: &str) -> EngineRef {
        let text = text.trim();
        match text.parse::<usize>() {
            Ok(index) => EngineRef::Index(index),
            Err(_) => EngineRef::Name(text.to_owned()),
        }
    }

    /// The engine's index in `plan`.
    pub fn resolve(&self, plan: &FleetPlan) -> Option<usize> {
        match self {
            EngineRef::Index(index) => (*index < plan.engines.len()).then_some(*index),
            EngineRef::Name(name) => plan.engines.iter().position(|e| e.pod == *name),
        }
    }
}

/// `NAME@ENGINE`: a scenario for one engine (e.g. `gpu-thermal@3`, `xid:48@vllm-qwen-7b-…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioAssignment {
    pub scenario: Scenario,
    pub engine: EngineRef,
}

impl std::str::FromStr for ScenarioAssignment {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (name, engine) = text
            .rsplit_once('@')
            .ok_or_else(|| format!("{text:?} is not NAME@ENGINE (e.g. gpu-thermal@3)"))?;
        let scenario = Scenario::parse(name).ok_or_else(|| {
            format!(
                "{name:?} is not a scenario (one of {})",
                Scenario::NAMES.join(", ")
            )
        })?;
        if engine.trim().is_empty() {
            return Err(format!("{text:?} names no engine after '@'"));
        }
        Ok(ScenarioAssignment {
            scenario,
            engine: EngineRef::parse(engine),
        })
    }
}

/// Give engine `engine` of `plan` another scenario, with the traffic that goes with it (the
/// engine's parameters are derived again from its own seed, so the result is deterministic).
pub(crate) fn apply_scenario(
    plan: &mut FleetPlan,
    engine: &EngineRef,
    scenario: Scenario,
    version: SimVersion,
) -> Result<(), String> {
    let index = engine.resolve(plan).ok_or_else(|| match engine {
        EngineRef::Index(i) => format!(
            "engine {i} does not exist (the fleet has {} engines)",
            plan.engines.len()
        ),
        EngineRef::Name(name) => format!("no engine is named {name:?}"),
    })?;
    let gpu = plan
        .engines
        .get(index)
        .and_then(|e| plan.nodes.get(e.node))
        .map_or(H100_SXM, |n| n.gpu.clone());
    let Some(spec) = plan.engines.get_mut(index) else {
        return Err(format!("engine {index} does not exist"));
    };
    spec.params = engine_params(
        spec.model,
        &gpu,
        scenario,
        version,
        &mut params_sampler(spec.seed),
    );
    spec.scenario = scenario;
    if scenario == Scenario::EmptyWorkerTrap {
        for peer in trap_peers(plan, index) {
            apply_scenario(plan, &EngineRef::Index(peer), Scenario::Idle, version)?;
        }
    }
    Ok(())
}

/// The engines a trap on engine `index` starves: the healthy engines serving the same model.
pub(crate) fn trap_peers(plan: &FleetPlan, index: usize) -> Vec<usize> {
    let Some(model) = plan.engines.get(index).map(|e| e.model.id) else {
        return Vec::new();
    };
    plan.engines
        .iter()
        .filter(|e| e.index != index && e.model.id == model && e.scenario == Scenario::Healthy)
        .map(|e| e.index)
        .collect()
}

/// The random stream an engine's parameters are drawn from (apart from its traffic stream).
pub(crate) fn params_sampler(engine_seed: u64) -> Sampler {
    Sampler::new(splitmix(engine_seed ^ 0x7061_7261_6d73))
}

/// The fleet's composition: for three engines or more, engine 0 is under KV pressure and the
/// last one is down; every other engine is healthy.
pub(crate) fn scenario_for(index: usize, engines: usize) -> Scenario {
    if engines < 3 {
        Scenario::Healthy
    } else if index == 0 {
        Scenario::KvPressure
    } else if index + 1 == engines {
        Scenario::Down
    } else {
        Scenario::Healthy
    }
}

/// One simulated engine (one pod on one GPU).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineSpec {
    pub index: usize,
    /// Pod name, e.g. `vllm-llama-8b-6d4f9-x7k2p`.
    pub pod: String,
    pub model: &'static ModelSpec,
    /// Index into [`FleetPlan::nodes`].
    pub node: usize,
    /// GPU index on the node.
    pub gpu: u32,
    pub scenario: Scenario,
    pub params: EngineParams,
    /// Seed of the engine's own random stream.
    pub seed: u64,
}

/// One GPU of a node.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSlot {
    pub index: u32,
    /// `UUID` label, `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    pub uuid: String,
    /// `pci_bus_id` label, `00000000:18:00.0`.
    pub pci_bus_id: String,
    /// Index of the engine running on it, if any.
    pub engine: Option<usize>,
}

/// One GPU node, with its dcgm-exporter.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpec {
    pub index: usize,
    /// Node name (`Hostname` label).
    pub name: String,
    /// Name of the node's dcgm-exporter pod (a DaemonSet pod).
    pub exporter_pod: String,
    pub gpu: GpuSpec,
    pub gpus: Vec<GpuSlot>,
}

/// The whole simulated fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetPlan {
    pub engines: Vec<EngineSpec>,
    pub nodes: Vec<NodeSpec>,
}

/// PCI bus numbers of the eight GPUs of an HGX H100 board.
const PCI_BUSES: [u8; 8] = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB];
/// Characters Kubernetes uses in generated name suffixes.
const K8S_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Lay out `engines` engines over nodes of `gpus_per_node` GPUs (engine `i` on node
/// `i / gpus_per_node`, GPU `i % gpus_per_node`), deterministically for `seed`.
pub fn plan(engines: usize, gpus_per_node: usize, version: SimVersion, seed: u64) -> FleetPlan {
    let gpus_per_node = gpus_per_node.max(1);
    let mut names = Sampler::new(seed ^ 0x6b76_746f_705f_6e6d);
    let node_count = engines.div_ceil(gpus_per_node);
    let width = digits(node_count.saturating_sub(1)).max(2);
    let mut nodes: Vec<NodeSpec> = (0..node_count)
        .map(|n| NodeSpec {
            index: n,
            name: format!("gpu-node-{n:0width$}"),
            exporter_pod: format!("dcgm-exporter-{}", k8s_suffix(&mut names)),
            gpu: H100_SXM,
            gpus: (0..gpus_per_node)
                .map(|g| GpuSlot {
                    index: g as u32,
                    uuid: gpu_uuid(&mut names),
                    pci_bus_id: format!(
                        "00000000:{:02X}:00.0",
                        PCI_BUSES
                            .get(g % PCI_BUSES.len())
                            .copied()
                            .unwrap_or(0)
                            .wrapping_add((g / PCI_BUSES.len()) as u8)
                    ),
                    engine: None,
                })
                .collect(),
        })
        .collect();

    let replica_sets: Vec<String> = MODELS.iter().map(|_| k8s_suffix(&mut names)).collect();
    let mut taken = HashSet::new();
    let mut specs = Vec::with_capacity(engines);
    for i in 0..engines {
        let model_idx = i % MODELS.len();
        let model = MODELS.get(model_idx).copied().unwrap_or(&LLAMA_8B);
        let rs = replica_sets.get(model_idx).map_or("", String::as_str);
        let pod = loop {
            let candidate = format!("{}-{}-{}", model.deployment, rs, k8s_suffix(&mut names));
            if taken.insert(candidate.clone()) {
                break candidate;
            }
        };
        let node = i / gpus_per_node;
        let gpu = (i % gpus_per_node) as u32;
        if let Some(slot) = nodes
            .get_mut(node)
            .and_then(|n| n.gpus.get_mut(gpu as usize))
        {
            slot.engine = Some(i);
        }
        let scenario = scenario_for(i, engines);
        let engine_seed = splitmix(seed.wrapping_add(i as u64));
        // Parameters come from the engine's own stream, so names never depend on scenarios.
        let mut sampler = params_sampler(engine_seed);
        let params = engine_params(model, &H100_SXM, scenario, version, &mut sampler);
        specs.push(EngineSpec {
            index: i,
            pod,
            model,
            node,
            gpu,
            scenario,
            params,
            seed: engine_seed,
        });
    }
    FleetPlan {
        engines: specs,
        nodes,
    }
}

/// Engine parameters for a model on a GPU in a scenario. The KV cache is what remains of
/// `gpu_memory_utilization` × framebuffer after weights and activations.
pub(crate) fn engine_params(
    model: &ModelSpec,
    gpu: &GpuSpec,
    scenario: Scenario,
    version: SimVersion,
    sampler: &mut Sampler,
) -> EngineParams {
    let base = EngineParams::default();
    let budget_mib = gpu.fb_total_mib as f64 * base.gpu_memory_utilization;
    let kv_mib = (budget_mib - (model.weights_mib + model.activation_mib) as f64).max(0.0);
    let block_bytes = (model.kv_bytes_per_token * u64::from(BLOCK_SIZE)) as f64;
    let num_gpu_blocks = (kv_mib * 1024.0 * 1024.0 / block_bytes).floor() as u32;
    let traffic = match scenario {
        Scenario::GpuLowUtil => TrafficProfile {
            arrival_rate: sampler.between(0.3, 0.8),
            output_median: 200.0,
            prefix_hit_ratio: sampler.between(HEALTHY_PREFIX.0, HEALTHY_PREFIX.1),
            ..TrafficProfile::default()
        },
        Scenario::Healthy | Scenario::Down | Scenario::GpuThermal | Scenario::GpuXid(_) => {
            healthy_traffic(sampler)
        }
        Scenario::KvThrash
        | Scenario::LowThroughput
        | Scenario::StuckRequests
        | Scenario::OomCrashloop
        | Scenario::HighCpu
        | Scenario::SpecDecodePoor
        | Scenario::PrefixMiss
        | Scenario::CircuitOpen
        | Scenario::EmptyWorkerTrap
        | Scenario::Idle
        | Scenario::QueueBuildup => {
            let healthy = healthy_traffic(sampler);
            let base = EngineParams {
                version,
                num_gpu_blocks,
                block_size: BLOCK_SIZE,
                max_model_len: model.max_model_len,
                admission_watermark: admission_watermark(version),
                traffic: healthy,
                ..base
            };
            return super::scenario_params::shape(base, scenario);
        }
        Scenario::KvPressure => {
            // Scaled so the cache fills at the same pace whatever its size.
            let scale = f64::from(num_gpu_blocks) / PRESSURE_REFERENCE_BLOCKS;
            TrafficProfile {
                arrival_rate: PRESSURE_ARRIVALS_PER_S * scale,
                prompt_median: 3_000.0,
                prompt_sigma: 0.5,
                output_median: 600.0,
                output_sigma: 0.5,
                prefix_hit_ratio: 0.2,
                ..TrafficProfile::default()
            }
        }
    };
    EngineParams {
        version,
        num_gpu_blocks,
        block_size: BLOCK_SIZE,
        max_model_len: model.max_model_len,
        admission_watermark: admission_watermark(version),
        traffic,
        ..base
    }
}

/// vLLM V0's block manager keeps 1% of the blocks free when admitting.
fn admission_watermark(version: SimVersion) -> f64 {
    match version {
        SimVersion::V0 => 0.01,
        SimVersion::V1 => 0.0,
    }
}

fn digits(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// A random name suffix of five characters from the alphabet Kubernetes uses.
pub(crate) fn k8s_suffix(s: &mut Sampler) -> String {
    (0..5)
        .map(|_| {
            let i = s.index(K8S_ALPHABET.len());
            char::from(K8S_ALPHABET.get(i).copied().unwrap_or(b'x'))
        })
        .collect()
}

fn gpu_uuid(s: &mut Sampler) -> String {
    let mut hex = |n: usize| -> String {
        (0..n)
            .map(|_| char::from_digit(s.index(16) as u32, 16).unwrap_or('0'))
            .collect()
    };
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex(8),
        hex(4),
        hex(4),
        hex(4),
        hex(12)
    )
}

/// SplitMix64 finaliser: well-spread per-engine seeds from consecutive integers.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composition_has_one_pressured_and_one_down_engine_from_three_up() {
        for n in [3, 4, 10, 1000] {
            let s: Vec<Scenario> = (0..n).map(|i| scenario_for(i, n)).collect();
            assert_eq!(s.iter().filter(|x| **x == Scenario::KvPressure).count(), 1);
            assert_eq!(s.iter().filter(|x| **x == Scenario::Down).count(), 1);
            assert_eq!(s.iter().filter(|x| **x == Scenario::Healthy).count(), n - 2);
        }
        assert!((0..2).all(|i| scenario_for(i, 2) == Scenario::Healthy));
        assert_eq!(scenario_for(0, 1), Scenario::Healthy);
    }

    #[test]
    fn layout_puts_eight_engines_per_node_and_alternates_models() {
        let p = plan(20, 8, SimVersion::V1, 1);
        assert_eq!(p.nodes.len(), 3);
        let e = &p.engines[13];
        assert_eq!((e.node, e.gpu), (1, 5));
        assert_eq!(p.nodes[1].gpus[5].engine, Some(13));
        assert_eq!(p.nodes[2].gpus[4].engine, None); // engines 16..19 fill GPUs 0..3
        assert_eq!(p.engines[0].model.id, "meta-llama/Llama-3.1-8B-Instruct");
        assert_eq!(p.engines[1].model.id, "Qwen/Qwen2.5-7B-Instruct");
        assert_eq!(p.nodes[0].name, "gpu-node-00");
        assert_eq!(p.nodes[0].gpus[0].pci_bus_id, "00000000:18:00.0");
    }

    #[test]
    fn names_are_pod_like_unique_and_deterministic() {
        let a = plan(1000, 8, SimVersion::V1, 42);
        let b = plan(1000, 8, SimVersion::V1, 42);
        let c = plan(1000, 8, SimVersion::V1, 43);
        assert_eq!(a, b);
        assert_ne!(a.engines[0].pod, c.engines[0].pod);
        let unique: HashSet<&str> = a.engines.iter().map(|e| e.pod.as_str()).collect();
        assert_eq!(unique.len(), 1000);
        let pod = &a.engines[0].pod;
        let suffix = pod
            .strip_prefix("vllm-llama-8b-")
            .expect("deployment prefix");
        let parts: Vec<&str> = suffix.split('-').collect();
        assert_eq!(parts.len(), 2);
        assert!(
            parts
                .iter()
                .all(|p| p.len() == 5 && p.bytes().all(|b| K8S_ALPHABET.contains(&b)))
        );
        let uuid = &a.nodes[0].gpus[0].uuid;
        assert_eq!(uuid.len(), "GPU-".len() + 36);
    }

    #[test]
    fn scenarios_parse_by_name_and_assignments_name_an_engine() {
        assert_eq!(Scenario::parse("GPU-Thermal"), Some(Scenario::GpuThermal));
        assert_eq!(Scenario::parse("xid"), Some(Scenario::GpuXid(79)));
        assert_eq!(Scenario::parse("xid:48"), Some(Scenario::GpuXid(48)));
        assert_eq!(Scenario::parse("low-util"), Some(Scenario::GpuLowUtil));
        assert_eq!(Scenario::parse("xid:abc"), None);
        assert_eq!(Scenario::parse("meltdown"), None);
        let a: ScenarioAssignment = "xid:48@3".parse().expect("valid");
        assert_eq!(
            a,
            ScenarioAssignment {
                scenario: Scenario::GpuXid(48),
                engine: EngineRef::Index(3)
            }
        );
        let b: ScenarioAssignment = "thermal@vllm-qwen-7b-abcde-fghjk".parse().expect("valid");
        assert_eq!(b.engine, EngineRef::Name("vllm-qwen-7b-abcde-fghjk".into()));
        assert!("thermal".parse::<ScenarioAssignment>().is_err());
        assert!("thermal@".parse::<ScenarioAssignment>().is_err());
        let err = "boil@1".parse::<ScenarioAssignment>().expect_err("unknown");
        assert!(err.contains("gpu-thermal"), "{err}");
    }

    #[test]
    fn applying_a_scenario_changes_its_engine_only_and_is_deterministic() {
        let mut p = plan(4, 8, SimVersion::V1, 1);
        let before = p.clone();
        apply_scenario(
            &mut p,
            &EngineRef::Index(2),
            Scenario::GpuLowUtil,
            SimVersion::V1,
        )
        .expect("engine 2 exists");
        assert_eq!(p.engines[2].scenario, Scenario::GpuLowUtil);
        assert!(p.engines[2].params.traffic.arrival_rate < 1.0);
        assert_eq!(p.engines[1], before.engines[1]);
        let mut q = before.clone();
        apply_scenario(
            &mut q,
            &EngineRef::Index(2),
            Scenario::GpuLowUtil,
            SimVersion::V1,
        )
        .expect("engine 2 exists");
        assert_eq!(p, q);
        let name = EngineRef::Name(p.engines[1].pod.clone());
        apply_scenario(&mut p, &name, Scenario::GpuXid(48), SimVersion::V1).expect("by name");
        assert_eq!(p.engines[1].scenario.xid(), 48);
        assert!(
            apply_scenario(&mut p, &EngineRef::Index(9), Scenario::Down, SimVersion::V1).is_err()
        );
    }

    #[test]
    fn kv_blocks_follow_from_memory_budget() {
        let mut s = Sampler::new(0);
        let p = engine_params(
            &LLAMA_8B,
            &H100_SXM,
            Scenario::Healthy,
            SimVersion::V1,
            &mut s,
        );
        // 0.9 × 81559 MiB = 73403.1 MiB; minus 15317 + 2560 → 55526.1 MiB of KV;
        // a block is 16 × 128 KiB = 2 MiB → 27763 blocks.
        assert_eq!(p.num_gpu_blocks, 27_763);
        let q = engine_params(
            &QWEN_7B,
            &H100_SXM,
            Scenario::Healthy,
            SimVersion::V1,
            &mut s,
        );
        // (73403.1 − 17095) MiB / (16 × 56 KiB = 0.875 MiB) = 64352.1 → 64352.
        assert_eq!(q.num_gpu_blocks, 64_352);
    }
}
