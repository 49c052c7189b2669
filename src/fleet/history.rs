//! Tiered per-engine history of derived signals: full resolution for the recent past,
//! downsampled (averaged) buckets beyond it, so memory per engine is bounded.

/// The series kept per engine, one value per scrape (or per downsampled bucket).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Series {
    KvUsage,
    Running,
    Waiting,
    TtftP50,
    TtftP95,
    TtftP99,
    ItlP50,
    ItlP95,
    ItlP99,
    GenTps,
    PromptTps,
    PrefixHit,
    PreemptionsPerS,
    RequestsPerS,
}

impl Series {
    pub const ALL: [Series; 14] = [
        Series::KvUsage,
        Series::Running,
        Series::Waiting,
        Series::TtftP50,
        Series::TtftP95,
        Series::TtftP99,
        Series::ItlP50,
        Series::ItlP95,
        Series::ItlP99,
        Series::GenTps,
        Series::PromptTps,
        Series::PrefixHit,
        Series::PreemptionsPerS,
        Series::RequestsPerS,
    ];
    pub const COUNT: usize = Self::ALL.len();
    pub fn index(self) -> usize {
        self as usize
    }
}

/// History of one engine (see module docs). Values are stored as `f32`; `NaN` marks unknown.
#[derive(Debug, Clone)]
pub struct History {
    // Implementation detail of the fleet module.
}

impl History {
    pub fn new(settings: &super::FleetSettings) -> Self {
        let _ = settings;
        todo!("History::new")
    }
    /// Append the signals derived at time `t`.
    pub fn push(&mut self, t: super::Ts, signals: &super::Signals) {
        let _ = (t, signals);
        todo!("History::push")
    }
    /// Points of one series at or after `since`, oldest first; unknown values are skipped.
    pub fn points(&self, series: Series, since: super::Ts) -> Vec<(f64, f64)> {
        let _ = (series, since);
        todo!("History::points")
    }
    /// The newest known value of a series.
    pub fn last(&self, series: Series) -> Option<(super::Ts, f64)> {
        let _ = series;
        todo!("History::last")
    }
}
