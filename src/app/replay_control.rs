//! What the console controls of a replay's clock (`kvtop replay`, the console on a past
//! Prometheus window): pausing and resuming it with `p`. A live console has none.

/// A replay's clock, as the console sees it.
pub trait ReplayControl: std::fmt::Debug + Send + Sync {
    fn paused(&self) -> bool;
    /// Stop the clock where it is, or run it again from there.
    fn set_paused(&self, paused: bool);
}
