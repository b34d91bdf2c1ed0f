//! Retry backoff for failed refreshes: Fibonacci delays (1, 2, 3, 5, 8 … s)
//! capped at five minutes, each randomized by about ±30% so that many
//! datasets failing together do not retry in lockstep.

use std::time::Duration;

use rand::Rng;

const CAP: Duration = Duration::from_secs(300);
const SPREAD: f64 = 0.3;

/// The un-randomized delay before retry number `retry` (1-based).
pub fn base_delay(retry: u32) -> Duration {
    let (mut current, mut next) = (1u64, 2u64);
    for _ in 1..retry {
        if current >= CAP.as_secs() {
            return CAP;
        }
        (current, next) = (next, current.saturating_add(next));
    }
    Duration::from_secs(current).min(CAP)
}

/// The delay before retry number `retry`, randomized within ±30%.
pub fn delay(retry: u32) -> Duration {
    let factor = rand::rng().random_range((1.0 - SPREAD)..=(1.0 + SPREAD));
    base_delay(retry).mul_f64(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_follow_fibonacci_up_to_the_cap() {
        let secs: Vec<u64> = (1..=8).map(|n| base_delay(n).as_secs()).collect();
        assert_eq!(secs, vec![1, 2, 3, 5, 8, 13, 21, 34]);
        assert_eq!(base_delay(30), CAP);
        assert_eq!(base_delay(1000), CAP);
    }

    #[test]
    fn randomized_delay_stays_within_thirty_percent() {
        for _ in 0..200 {
            let d = delay(5).as_secs_f64();
            assert!((8.0 * 0.7..=8.0 * 1.3).contains(&d), "{d}");
        }
    }
}
