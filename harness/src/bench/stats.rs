//! Interval statistics of one frame stream: percentiles of the interval and of
//! |interval - period|, missed cycles and long gaps.

use serde::Serialize;

/// Statistics of the intervals between consecutive frames of one stream (all times in us).
#[derive(Debug, Clone, Default, Serialize)]
pub struct IntervalStats {
    pub frames: u64,
    pub period_us: f64,
    pub interval_p50: f64,
    pub interval_p99: f64,
    pub interval_p999: f64,
    pub interval_max: f64,
    pub dev_p50: f64,
    pub dev_p99: f64,
    pub dev_p999: f64,
    pub dev_max: f64,
    /// Slots without a frame: sum over intervals of round(interval / period) - 1.
    pub missed_cycles: u64,
    /// Intervals longer than 3 periods.
    pub gaps_over_3: u64,
    /// Intervals shorter than half a period (bursts / catch-up frames).
    pub short_intervals: u64,
    /// Start of the longest interval, CLOCK_REALTIME ns (to line streams up).
    pub max_at_ns: u64,
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Statistics of frames at `ts` (ns, any order) against `period_ns`.
pub fn intervals(ts: &[u64], period_ns: u64) -> IntervalStats {
    let mut t: Vec<u64> = ts.to_vec();
    t.sort_unstable();
    let period = period_ns.max(1) as f64;
    let mut iv: Vec<f64> = Vec::with_capacity(t.len());
    let mut dev: Vec<f64> = Vec::with_capacity(t.len());
    let mut st = IntervalStats {
        frames: t.len() as u64,
        period_us: period / 1000.0,
        ..Default::default()
    };
    let mut longest = 0u64;
    for w in t.windows(2) {
        if w[1] - w[0] > longest {
            longest = w[1] - w[0];
            st.max_at_ns = w[0];
        }
        let d = (w[1] - w[0]) as f64;
        iv.push(d / 1000.0);
        dev.push((d - period).abs() / 1000.0);
        let slots = (d / period).round();
        if slots >= 2.0 {
            st.missed_cycles += slots as u64 - 1;
        }
        if d > 3.0 * period {
            st.gaps_over_3 += 1;
        }
        if d < 0.5 * period {
            st.short_intervals += 1;
        }
    }
    iv.sort_by(f64::total_cmp);
    dev.sort_by(f64::total_cmp);
    st.interval_p50 = pct(&iv, 0.5);
    st.interval_p99 = pct(&iv, 0.99);
    st.interval_p999 = pct(&iv, 0.999);
    st.interval_max = iv.last().copied().unwrap_or(0.0);
    st.dev_p50 = pct(&dev, 0.5);
    st.dev_p99 = pct(&dev, 0.99);
    st.dev_p999 = pct(&dev, 0.999);
    st.dev_max = dev.last().copied().unwrap_or(0.0);
    st
}

/// Percentiles of arbitrary samples: (p50, p99, max, n).
pub fn summary(samples: &[f64]) -> (f64, f64, f64, usize) {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    (
        pct(&s, 0.5),
        pct(&s, 0.99),
        s.last().copied().unwrap_or(0.0),
        s.len(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_stream_with_one_gap() {
        // 1 ms period, frames at 0..=9 ms, then one missing slot (11 ms), then 12 ms.
        let mut ts: Vec<u64> = (0..10).map(|i| i * 1_000_000).collect();
        ts.push(12_000_000);
        let st = intervals(&ts, 1_000_000);
        assert_eq!(st.frames, 11);
        assert_eq!(st.missed_cycles, 2);
        assert_eq!(st.gaps_over_3, 0);
        assert_eq!(st.interval_p50, 1000.0);
        assert_eq!(st.interval_max, 3000.0);
        assert_eq!(st.dev_max, 2000.0);
        assert_eq!(st.short_intervals, 0);
    }

    #[test]
    fn empty_and_single() {
        assert_eq!(intervals(&[], 1000).frames, 0);
        assert_eq!(intervals(&[5], 1000).dev_max, 0.0);
        assert_eq!(summary(&[]).3, 0);
    }
}

/// Intervals of `ts` (ns) longer than `factor` x `period_ns`, as (start, end).
pub fn gaps(ts: &[u64], period_ns: u64, factor: f64) -> Vec<(u64, u64)> {
    let mut t: Vec<u64> = ts.to_vec();
    t.sort_unstable();
    let lim = (period_ns as f64 * factor) as u64;
    t.windows(2)
        .filter(|w| w[1] - w[0] > lim)
        .map(|w| (w[0], w[1]))
        .collect()
}

/// How many of `gaps` are not explained by the machine: no gap of the reference stream
/// (longer than 2 periods, i.e. at least one slot the bare sender itself could not keep)
/// overlaps them, widened by one period on each side.
pub fn unexplained(gaps_: &[(u64, u64)], reference: &[(u64, u64)], period_ns: u64) -> usize {
    unexplained_gaps(gaps_, reference, period_ns).len()
}

/// The gaps [`unexplained`] counts.
pub fn unexplained_gaps(
    gaps_: &[(u64, u64)],
    reference: &[(u64, u64)],
    period_ns: u64,
) -> Vec<(u64, u64)> {
    gaps_
        .iter()
        .filter(|(s, e)| {
            let (s, e) = (s.saturating_sub(period_ns), e + period_ns);
            !reference.iter().any(|(rs, re)| *rs < e && *re > s)
        })
        .copied()
        .collect()
}

/// How many of `gaps_` contain one of `marks` (sorted times): with the controller's Connect
/// requests as marks, the gaps that are a reconnect's outage (the AR had ended; the stream
/// resumed with the new AR) rather than a stall.
pub fn containing(gaps_: &[(u64, u64)], marks: &[u64]) -> usize {
    gaps_
        .iter()
        .filter(|(s, e)| {
            let i = marks.partition_point(|m| m <= s);
            marks.get(i).is_some_and(|m| m < e)
        })
        .count()
}

#[cfg(test)]
mod gap_tests {
    use super::*;

    #[test]
    fn gap_attribution() {
        let p = 1000;
        // Device: gap 10..15 and 30..36; bare: gap 11..14 only.
        let d = vec![(10_000, 15_000), (30_000, 36_000)];
        let b = vec![(11_000, 14_000)];
        assert_eq!(unexplained(&d, &b, p), 1);
        assert_eq!(unexplained(&d, &[], p), 2);
        // The second gap holds a Connect request: a reconnect's outage.
        assert_eq!(containing(&d, &[5_000, 33_000, 40_000]), 1);
        assert_eq!(containing(&d, &[15_000]), 0);
        assert_eq!(containing(&d, &[]), 0);
        let ts = [0, 1000, 2000, 6000, 7000];
        assert_eq!(gaps(&ts, 1000, 3.0), vec![(2000, 6000)]);
        assert!(gaps(&ts, 1000, 4.0).is_empty());
    }
}
