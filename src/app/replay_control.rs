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

/// What a replay's records build of the console, apart from how it is viewed: the fleet, the
/// rules state and what Kubernetes told. A replay jumping forward starts from a copy of it
/// made ahead of time (see `commands::replay`) instead of taking every record before.
#[derive(Debug, Clone)]
pub struct ReplayState {
    fleet: kvtop_core::fleet::Fleet,
    diag: super::Diagnostics,
    kube: super::kube::KubeView,
}

impl super::App {
    /// A copy of what the records built so far.
    pub(crate) fn replay_state(&self) -> ReplayState {
        ReplayState {
            fleet: self.fleet.clone(),
            diag: self.diag.clone(),
            kube: self.kube.clone(),
        }
    }

    /// Take `state` as what the records built, keeping how it is viewed (the selections, the
    /// open views, the acknowledged incidents); the view follows the present again.
    pub(crate) fn restore(&mut self, state: ReplayState) {
        self.fleet = state.fleet;
        self.diag.restore(state.diag);
        let deployments_open = self.kube.deployments_open;
        let followed = self.kube.followed.take();
        self.kube = state.kube;
        self.kube.deployments_open = deployments_open;
        self.kube.followed = followed;
        self.frozen = None;
        self.dirty = true;
    }
}
