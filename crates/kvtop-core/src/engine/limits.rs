//! How much one target's payload may hold: beyond it the target is refused (`too many series`)
//! instead of growing kvtop's memory with whatever an endpoint chooses to send.

use std::num::NonZeroUsize;

/// Bounds on one payload of one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadLimits {
    /// Engines (`model_name` × `engine` pairs). A node serves a handful; a large multi-model
    /// gateway a few hundred.
    pub max_engines: NonZeroUsize,
    /// Sample lines. A vLLM engine exports about 1,000; the default leaves room for a few
    /// hundred engines behind one endpoint.
    pub max_series: NonZeroUsize,
}

impl PayloadLimits {
    pub const DEFAULT_MAX_ENGINES: NonZeroUsize = NonZeroUsize::MIN.saturating_add(999);
    pub const DEFAULT_MAX_SERIES: NonZeroUsize = NonZeroUsize::MIN.saturating_add(499_999);
}

impl Default for PayloadLimits {
    fn default() -> Self {
        PayloadLimits {
            max_engines: Self::DEFAULT_MAX_ENGINES,
            max_series: Self::DEFAULT_MAX_SERIES,
        }
    }
}
