//! When refreshes are due: the jittered initial load, jittered intervals and
//! cron times. Pure functions of the configuration, the clock and a random
//! source, so the rules are tested without waiting.
//!
//! Jitter spreads refreshes of many datasets (or many pgaccel instances
//! restarted together) over time: the initial load waits a random time in
//! `[0, max]`, and each interval is the configured one plus or minus a random
//! time in `[0, max]`. A cron refresh starts at the cron time plus a random
//! time in `[0, max]`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::Rng;

use crate::config::Schedule;

/// How long the initial load waits.
pub fn initial_delay(jitter: Option<Duration>, rng: &mut impl Rng) -> Duration {
    match jitter {
        Some(max) if !max.is_zero() => rng.random_range(Duration::ZERO..=max),
        _ => Duration::ZERO,
    }
}

/// The time from one refresh to the next on an interval schedule:
/// `interval ± [0, max]`, never negative.
pub fn jittered_interval(
    interval: Duration,
    jitter: Option<Duration>,
    rng: &mut impl Rng,
) -> Duration {
    let Some(max) = jitter.filter(|max| !max.is_zero()) else {
        return interval;
    };
    let offset = rng.random_range(Duration::ZERO..=max);
    if rng.random_bool(0.5) {
        interval + offset
    } else {
        interval.saturating_sub(offset)
    }
}

/// The next scheduled refresh after `now`: for an interval, `now` plus the
/// jittered interval; for cron, the next cron time (its jitter is added when
/// that time comes, see [`cron_start_delay`]). `None` without a schedule.
pub fn next_due(
    schedule: Option<&Schedule>,
    jitter: Option<Duration>,
    now: DateTime<Utc>,
    rng: &mut impl Rng,
) -> Option<DateTime<Utc>> {
    match schedule? {
        Schedule::Interval(interval) => Some(now + jittered_interval(*interval, jitter, rng)),
        Schedule::Cron(cron) => cron.cron().find_next_occurrence(&now, false).ok(),
    }
}

/// How long a cron refresh waits after its cron time.
pub fn cron_start_delay(
    schedule: Option<&Schedule>,
    jitter: Option<Duration>,
    rng: &mut impl Rng,
) -> Duration {
    match schedule {
        Some(Schedule::Cron(_)) => initial_delay(jitter, rng),
        _ => Duration::ZERO,
    }
}

/// The tokio instant of a wall-clock time (now if it has passed).
pub fn instant_of(at: DateTime<Utc>) -> tokio::time::Instant {
    let wait = (at - Utc::now()).to_std().unwrap_or(Duration::ZERO);
    tokio::time::Instant::now() + wait
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Timelike};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::config::CronSchedule;

    #[test]
    fn initial_load_waits_up_to_the_jitter_max() {
        let mut rng = StdRng::seed_from_u64(7);
        let max = Duration::from_secs(1);
        let delays: Vec<Duration> = (0..1000)
            .map(|_| initial_delay(Some(max), &mut rng))
            .collect();
        assert!(delays.iter().all(|delay| *delay <= max));
        assert!(delays.iter().any(|delay| *delay < max / 10));
        assert!(delays.iter().any(|delay| *delay > max * 9 / 10));
        assert_eq!(initial_delay(None, &mut rng), Duration::ZERO);
    }

    #[test]
    fn intervals_vary_within_plus_or_minus_the_jitter_max() {
        let mut rng = StdRng::seed_from_u64(7);
        let (interval, max) = (Duration::from_secs(10), Duration::from_secs(1));
        let intervals: Vec<Duration> = (0..1000)
            .map(|_| jittered_interval(interval, Some(max), &mut rng))
            .collect();
        assert!(
            intervals
                .iter()
                .all(|i| *i >= interval - max && *i <= interval + max)
        );
        assert!(intervals.iter().any(|i| *i < interval - max * 9 / 10));
        assert!(intervals.iter().any(|i| *i > interval + max * 9 / 10));
        assert_eq!(jittered_interval(interval, None, &mut rng), interval);
    }

    #[test]
    fn cron_schedules_report_the_next_cron_time() {
        let mut rng = StdRng::seed_from_u64(7);
        let schedule = Schedule::Cron(CronSchedule::parse("0 12 * * 1-5").unwrap());
        // Saturday 2026-11-28 15:00 UTC: the next weekday noon is Monday's.
        let now = Utc.with_ymd_and_hms(2026, 11, 28, 15, 0, 0).unwrap();
        let due = next_due(Some(&schedule), None, now, &mut rng).unwrap();
        assert_eq!(due, Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap());
        // With seconds: strictly after now.
        let every_second = Schedule::Cron(CronSchedule::parse("* * * * * *").unwrap());
        let now = Utc.with_ymd_and_hms(2026, 11, 28, 15, 0, 0).unwrap();
        let due = next_due(Some(&every_second), None, now, &mut rng).unwrap();
        assert_eq!(due.second(), 1);
        // Cron jitter is added when the refresh is triggered, up to the max.
        let max = Duration::from_millis(500);
        assert!(cron_start_delay(Some(&schedule), Some(max), &mut rng) <= max);
        let interval = Schedule::Interval(Duration::from_secs(5));
        assert_eq!(
            cron_start_delay(Some(&interval), Some(max), &mut rng),
            Duration::ZERO
        );
    }

    #[test]
    fn no_schedule_means_no_due_time() {
        let mut rng = StdRng::seed_from_u64(7);
        assert_eq!(next_due(None, None, Utc::now(), &mut rng), None);
    }
}
