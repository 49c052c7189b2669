//! PURE. Random variates the traffic model needs, drawn from a seeded `SmallRng` so that a
//! simulator run is reproducible: exponential inter-arrival times (a Poisson process) and
//! lognormal lengths via the Box–Muller transform.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A seeded source of the variates used by the simulator.
#[derive(Debug, Clone)]
pub(crate) struct Sampler {
    rng: SmallRng,
    /// The second normal deviate of the last Box–Muller pair, not yet used.
    spare_normal: Option<f64>,
}

impl Sampler {
    /// A sampler whose whole sequence is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: SmallRng::seed_from_u64(seed),
            spare_normal: None,
        }
    }

    /// Uniform on `[0, 1)`.
    pub(crate) fn uniform(&mut self) -> f64 {
        self.rng.random::<f64>()
    }

    /// Uniform on `(0, 1]`, safe to take the logarithm of.
    fn uniform_open_low(&mut self) -> f64 {
        1.0 - self.uniform()
    }

    /// A standard normal deviate (Box–Muller; the pair's second value is kept for the next call).
    pub(crate) fn standard_normal(&mut self) -> f64 {
        if let Some(z) = self.spare_normal.take() {
            return z;
        }
        let radius = (-2.0 * self.uniform_open_low().ln()).sqrt();
        let angle = std::f64::consts::TAU * self.uniform();
        self.spare_normal = Some(radius * angle.sin());
        radius * angle.cos()
    }

    /// A lognormal deviate with the given median (`exp(mu)`) and shape `sigma`.
    pub(crate) fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        median * (sigma * self.standard_normal()).exp()
    }

    /// An exponential deviate with the given rate (events per unit time); infinite for a
    /// non-positive or non-finite rate, meaning "never".
    pub(crate) fn exponential(&mut self, rate: f64) -> f64 {
        if rate > 0.0 && rate.is_finite() {
            -self.uniform_open_low().ln() / rate
        } else {
            f64::INFINITY
        }
    }

    /// True with probability `p` (clamped to `[0, 1]`).
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p.clamp(0.0, 1.0)
    }

    /// Uniform on `[low, high)`.
    pub fn between(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.uniform()
    }

    /// A uniformly chosen index below `n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.rng.random_range(0..n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_different_seed_different_sequence() {
        let mut a = Sampler::new(7);
        let mut b = Sampler::new(7);
        let mut c = Sampler::new(8);
        let xa: Vec<f64> = (0..16).map(|_| a.lognormal(100.0, 0.5)).collect();
        let xb: Vec<f64> = (0..16).map(|_| b.lognormal(100.0, 0.5)).collect();
        let xc: Vec<f64> = (0..16).map(|_| c.lognormal(100.0, 0.5)).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
    }

    #[test]
    fn standard_normal_has_mean_zero_and_unit_variance() {
        let mut s = Sampler::new(1);
        let n = 40_000;
        let xs: Vec<f64> = (0..n).map(|_| s.standard_normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        // Standard error of the mean is 1/sqrt(40000) = 0.005; allow 4 of them.
        assert!(mean.abs() < 0.02, "mean {mean}");
        assert!((var - 1.0).abs() < 0.03, "variance {var}");
    }

    #[test]
    fn lognormal_median_is_the_requested_median() {
        let mut s = Sampler::new(2);
        let mut xs: Vec<f64> = (0..20_001).map(|_| s.lognormal(800.0, 0.9)).collect();
        xs.sort_by(f64::total_cmp);
        let median = xs[10_000];
        assert!((median / 800.0 - 1.0).abs() < 0.05, "median {median}");
        assert!(xs.iter().all(|x| *x > 0.0));
    }

    #[test]
    fn exponential_mean_is_inverse_rate_and_zero_rate_never_fires() {
        let mut s = Sampler::new(3);
        let n = 40_000;
        let mean = (0..n).map(|_| s.exponential(4.0)).sum::<f64>() / n as f64;
        assert!((mean - 0.25).abs() < 0.01, "mean {mean}");
        assert!(s.exponential(0.0).is_infinite());
        assert!(s.exponential(f64::NAN).is_infinite());
    }
}
