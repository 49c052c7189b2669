//! What the console controls of a replay's clock (`kvtop replay`, the console on a past
//! Prometheus window): pausing and resuming it with `p`, and jumping it forward with the time
//! cursor keys. A live console has none.

/// A replay's clock, as the console sees it.
pub trait ReplayControl: std::fmt::Debug + Send + Sync {
    fn paused(&self) -> bool;
    /// Stop the clock where it is, or run it again from there.
    fn set_paused(&self, paused: bool);
    /// Jump forward to `t`: what was recorded up to it is handed over at once (nothing when
    /// `t` is not ahead, or the recording has ended).
    fn skip_to(&self, t: kvtop_core::fleet::Ts);
    /// Where a jump forward still being caught up goes (the next step starts from there).
    fn skipping_to(&self) -> Option<kvtop_core::fleet::Ts>;
}
