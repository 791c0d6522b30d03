//! Tests whose outcome a stall outside the program can decide (this VM's hypervisor stops a
//! vCPU for 1.5-21 ms at times, a CPython peer's garbage collector pauses its sender): up to
//! `n` attempts, each failure printed with its evidence, all failures in the final panic.

use std::panic::{catch_unwind, RefUnwindSafe};

/// Run `attempt(k)` for k = 1..=n until one returns without panicking; panic with every
/// failure's message when none does.
pub fn up_to(n: u32, attempt: impl Fn(u32) + RefUnwindSafe) {
    let mut failures = Vec::new();
    for k in 1..=n {
        match catch_unwind(|| attempt(k)) {
            Ok(()) => {
                if !failures.is_empty() {
                    eprintln!("passed on attempt {k} after: {failures:#?}");
                }
                return;
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                eprintln!("attempt {k} failed: {msg}");
                failures.push(msg);
            }
        }
    }
    panic!("all {n} attempts failed: {failures:#?}");
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn stops_at_the_first_success_and_reports_all_failures() {
        let calls = AtomicU32::new(0);
        super::up_to(3, |k| {
            calls.fetch_add(1, Ordering::Relaxed);
            assert!(k >= 2, "attempt {k} fails");
        });
        assert_eq!(calls.load(Ordering::Relaxed), 2);
        let r = std::panic::catch_unwind(|| super::up_to(2, |k| panic!("no {k}")));
        let msg = r.unwrap_err().downcast::<String>().unwrap();
        assert!(msg.contains("no 1") && msg.contains("no 2"), "{msg}");
    }
}
