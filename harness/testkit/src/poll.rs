//! Await a condition with a deadline (the tests' replacement for sleeping as synchronisation).

use std::time::{Duration, Instant};

/// How often a condition is checked.
pub const INTERVAL: Duration = Duration::from_millis(20);

/// Check `f` every [`INTERVAL`] until it returns `Some`; `None` once `timeout` has passed.
pub fn some<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > end {
            return None;
        }
        std::thread::sleep(INTERVAL);
    }
}

/// Check `f` every [`INTERVAL`] until it holds; false once `timeout` has passed.
pub fn until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    some(timeout, || f().then_some(())).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_first_value_and_gives_up_after_the_deadline() {
        let mut n = 0;
        assert_eq!(
            some(Duration::from_secs(5), || {
                n += 1;
                (n == 3).then_some(n)
            }),
            Some(3)
        );
        assert!(!until(Duration::from_millis(50), || false));
        assert!(until(Duration::ZERO, || true));
    }
}
