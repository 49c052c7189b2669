//! PURE. Physical readings of one simulated GPU, driven by the activity of the engine on it:
//! utilisation follows the engine's steps, temperature approaches a load-dependent target with
//! thermal lag, power and SM clock follow utilisation, and the framebuffer holds what vLLM
//! preallocates (`gpu_memory_utilization` × total).

/// Datasheet-like figures of a GPU model.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSpec {
    /// `modelName` label.
    pub name: &'static str,
    /// Framebuffer size, MiB (= used + free + reserved).
    pub fb_total_mib: u64,
    /// Framebuffer the driver reserves, MiB.
    pub fb_reserved_mib: u64,
    /// CUDA context and allocator overhead beyond vLLM's budget, MiB.
    pub cuda_context_mib: u64,
    pub idle_power_w: f64,
    pub max_power_w: f64,
    pub idle_temp_c: f64,
    pub max_temp_c: f64,
    pub idle_sm_clock_mhz: f64,
    pub max_sm_clock_mhz: f64,
    /// Seconds for the temperature to cover ~63% of a step change.
    pub thermal_tau_s: f64,
}

/// An NVIDIA H100 SXM 80 GB.
pub(crate) const H100_SXM: GpuSpec = GpuSpec {
    name: "NVIDIA H100 80GB HBM3",
    fb_total_mib: 81_559,
    fb_reserved_mib: 519,
    cuda_context_mib: 536,
    idle_power_w: 72.0,
    max_power_w: 690.0,
    idle_temp_c: 31.0,
    max_temp_c: 74.0,
    idle_sm_clock_mhz: 345.0,
    max_sm_clock_mhz: 1980.0,
    thermal_tau_s: 40.0,
};

/// A GPU-side fault the simulation can inject (see `fleet::Scenario`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GpuFault {
    #[default]
    None,
    /// Cooling failure: the temperature climbs towards [`THERMAL_TARGET_C`] whatever the load,
    /// power runs at the cap, and from [`THROTTLE_C`] the SM clock drops to
    /// [`THROTTLED_SM_CLOCK_MHZ`].
    Thermal,
    /// The GPU is starved of work (tiny batches, a CPU-bound front end): utilization stays at
    /// most [`LOW_UTIL_CAP`] whatever the engine does.
    LowUtil,
}

/// Temperature a GPU with failed cooling heads for, °C.
pub(crate) const THERMAL_TARGET_C: f64 = 95.0;
/// Temperature from which a hot GPU throttles its clock, °C (H100: slowdown around 87–90 °C).
pub(crate) const THROTTLE_C: f64 = 87.0;
/// SM clock of a thermally throttled GPU, MHz.
pub(crate) const THROTTLED_SM_CLOCK_MHZ: f64 = 1410.0;
/// Highest utilization of a starved GPU (0..1).
pub(crate) const LOW_UTIL_CAP: f64 = 0.12;

/// One GPU's dynamic state.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuModel {
    spec: GpuSpec,
    clock: f64,
    utilization: f64,
    temp_c: f64,
    /// Share of the framebuffer the process on this GPU preallocated (0 when none runs).
    memory_fraction: f64,
    /// Last XID error code (0 = none).
    xid: u32,
    fault: GpuFault,
}

impl GpuModel {
    /// An idle GPU at `now`.
    pub fn new(spec: GpuSpec, now: f64) -> Self {
        let temp_c = spec.idle_temp_c;
        Self {
            spec,
            clock: now,
            utilization: 0.0,
            temp_c,
            memory_fraction: 0.0,
            xid: 0,
            fault: GpuFault::None,
        }
    }

    /// Move to `now` with the engine's current activity (0..1) and the framebuffer share its
    /// process holds (`gpu_memory_utilization`, or 0 when no process runs).
    pub(crate) fn advance_to(&mut self, now: f64, activity: f64, memory_fraction: f64) {
        let dt = now - self.clock;
        self.utilization = clamp_unit(activity);
        if self.fault == GpuFault::LowUtil {
            self.utilization = self.utilization.min(LOW_UTIL_CAP);
        }
        self.memory_fraction = clamp_unit(memory_fraction);
        if dt > 0.0 && dt.is_finite() {
            let target = if self.fault == GpuFault::Thermal {
                THERMAL_TARGET_C
            } else {
                self.spec.idle_temp_c
                    + (self.spec.max_temp_c - self.spec.idle_temp_c) * self.utilization.powf(0.8)
            };
            let approach = 1.0 - (-dt / self.spec.thermal_tau_s.max(1e-3)).exp();
            self.temp_c += (target - self.temp_c) * approach;
            self.clock = now;
        }
    }

    /// Record an XID error (shown until replaced; 0 clears it).
    pub(crate) fn set_xid(&mut self, code: u32) {
        self.xid = code;
    }

    /// Inject (or, with [`GpuFault::None`], clear) a fault; it shapes readings from the next
    /// advance on.
    pub(crate) fn set_fault(&mut self, fault: GpuFault) {
        self.fault = fault;
    }

    pub fn fault(&self) -> GpuFault {
        self.fault
    }

    pub fn spec(&self) -> &GpuSpec {
        &self.spec
    }

    /// `DCGM_FI_DEV_GPU_UTIL`, percent.
    pub fn util_pct(&self) -> u32 {
        (self.utilization * 100.0).round() as u32
    }

    /// `DCGM_FI_DEV_GPU_TEMP`, °C.
    pub fn temp_c(&self) -> u32 {
        self.temp_c.round().max(0.0) as u32
    }

    /// `DCGM_FI_DEV_POWER_USAGE`, W.
    pub fn power_w(&self) -> f64 {
        let s = &self.spec;
        if self.fault == GpuFault::Thermal {
            return s.max_power_w;
        }
        // Leakage grows a little with temperature on top of the load-driven draw.
        let thermal = (self.temp_c - s.idle_temp_c).max(0.0) * 0.4;
        (s.idle_power_w + (s.max_power_w - s.idle_power_w) * self.utilization + thermal)
            .min(s.max_power_w)
    }

    /// `DCGM_FI_DEV_SM_CLOCK`, MHz: boost clock while busy, idle clock otherwise.
    pub fn sm_clock_mhz(&self) -> u32 {
        let s = &self.spec;
        let clock = if self.utilization <= 0.02 {
            s.idle_sm_clock_mhz
        } else if self.temp_c >= THROTTLE_C {
            THROTTLED_SM_CLOCK_MHZ
        } else {
            s.max_sm_clock_mhz
        };
        clock.round() as u32
    }

    /// `DCGM_FI_DEV_FB_USED`, MiB.
    pub fn fb_used_mib(&self) -> u64 {
        let s = &self.spec;
        if self.memory_fraction <= 0.0 {
            return 0;
        }
        let budget = (s.fb_total_mib as f64 * self.memory_fraction).round() as u64;
        (budget + s.cuda_context_mib).min(s.fb_total_mib.saturating_sub(s.fb_reserved_mib))
    }

    /// `DCGM_FI_DEV_FB_FREE`, MiB.
    pub fn fb_free_mib(&self) -> u64 {
        self.spec
            .fb_total_mib
            .saturating_sub(self.spec.fb_reserved_mib)
            .saturating_sub(self.fb_used_mib())
    }

    /// `DCGM_FI_DEV_FB_RESERVED`, MiB.
    pub fn fb_reserved_mib(&self) -> u64 {
        self.spec.fb_reserved_mib
    }

    /// `DCGM_FI_DEV_XID_ERRORS`: last XID code, 0 when none.
    pub fn xid(&self) -> u32 {
        self.xid
    }
}

fn clamp_unit(x: f64) -> f64 {
    if x.is_finite() {
        x.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_gpu_reads_idle_values() {
        let g = GpuModel::new(H100_SXM, 0.0);
        assert_eq!(g.util_pct(), 0);
        assert_eq!(g.temp_c(), 31);
        assert_eq!(g.sm_clock_mhz(), 345);
        assert_eq!(g.fb_used_mib(), 0);
        assert_eq!(g.fb_free_mib(), 81_559 - 519);
        assert!((g.power_w() - 72.0).abs() < 1e-9);
    }

    #[test]
    fn load_heats_the_gpu_with_lag_and_memory_adds_up() {
        let mut g = GpuModel::new(H100_SXM, 0.0);
        g.advance_to(40.0, 1.0, 0.9);
        // One time constant at full load: 31 + 43 × (1 − e^-1) ≈ 58.2 °C.
        assert_eq!(g.temp_c(), 58);
        g.advance_to(1000.0, 1.0, 0.9);
        assert_eq!(g.temp_c(), 74);
        assert_eq!(g.util_pct(), 100);
        assert_eq!(g.sm_clock_mhz(), 1980);
        assert!(g.power_w() > 600.0);
        // 0.9 × 81559 = 73403.1 → 73403 + 536 context.
        assert_eq!(g.fb_used_mib(), 73_939);
        assert_eq!(
            g.fb_used_mib() + g.fb_free_mib() + g.fb_reserved_mib(),
            81_559
        );
    }

    #[test]
    fn failed_cooling_heats_an_idle_gpu_throttles_it_and_pins_power() {
        let mut g = GpuModel::new(H100_SXM, 0.0);
        g.set_fault(GpuFault::Thermal);
        g.advance_to(40.0, 0.5, 0.9);
        // One time constant towards 95 °C from 31: 31 + 64 × (1 − e^-1) ≈ 71.45 °C.
        assert_eq!(g.temp_c(), 71);
        assert_eq!(g.sm_clock_mhz(), 1980);
        assert_eq!(g.power_w(), 690.0);
        g.advance_to(400.0, 0.5, 0.9);
        assert_eq!(g.temp_c(), 95);
        assert_eq!(g.sm_clock_mhz(), 1410);
        g.set_fault(GpuFault::None);
        g.advance_to(2000.0, 0.5, 0.9);
        assert!(g.temp_c() < 70, "{}", g.temp_c());
    }

    #[test]
    fn a_starved_gpu_stays_below_the_cap_and_xids_stick_until_cleared() {
        let mut g = GpuModel::new(H100_SXM, 0.0);
        g.set_fault(GpuFault::LowUtil);
        g.advance_to(1.0, 0.9, 0.9);
        assert_eq!(g.util_pct(), 12);
        g.set_xid(79);
        g.advance_to(2.0, 0.9, 0.9);
        assert_eq!(g.xid(), 79);
        g.set_xid(0);
        assert_eq!(g.xid(), 0);
    }
}
