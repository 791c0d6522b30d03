//! Scheduler evidence for a benchmark: an ftrace instance that records, in memory on both
//! CPUs, every context switch, every wake-up of a real-time thread and every NET_RX softirq
//! (a raw-socket send on a veth runs the receive side's softirq in the sender's context, so
//! its entry marks the moment a frame left), and then, for chosen windows of the run, what
//! each CPU did: who ran, how long each thread waited for the CPU after its wake-up, and
//! where the CPU recorded nothing for a while (the vCPU stopped, or ran in slices, with a
//! thread current).
//!
//! Why ftrace and not `perf record`: the events stay in the kernel's ring buffer until the
//! run ends, so nothing writes gigabytes to disk while the run is measured (a 240 s
//! `perf record` of the same events tripled the bare sender's gaps, docs/benchmarks.md).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::raw::{mono_ns, realtime_ns};

/// Where tracefs is mounted (the first that exists).
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// A stretch of the CPU's trace without any event for this long is reported as a hole: at
/// the rates of these benchmarks (a switch or a wake-up every 20-130 us per CPU) the CPU
/// was not running the guest then, or ran it in slices.
pub const HOLE_NS: u64 = 60_000;

/// A trace instance: set up by [`Session::create`], recording from [`Session::record`] to
/// [`Session::stop`], read by [`Session::windows`]; removed (its buffer freed) on drop.
pub struct Session {
    dir: PathBuf,
    /// CLOCK_REALTIME - CLOCK_MONOTONIC at the start (ns): the bench's times are real time,
    /// the trace's (`trace_clock` mono) monotonic.
    offset_start: i64,
    offset_stop: Option<i64>,
}

fn clock_offset() -> i64 {
    realtime_ns() as i64 - mono_ns() as i64
}

fn write(dir: &Path, file: &str, v: &str) -> Result<(), String> {
    fs::write(dir.join(file), v).map_err(|e| format!("ftrace: {}: {e}", dir.join(file).display()))
}

impl Session {
    /// Create the instance `name` with `buffer_mb` per CPU, its events set up, not yet
    /// recording ([`Session::record`]). The kernel allocates the buffer here, which takes
    /// seconds for gigabytes: do it before anything of the run is timed.
    pub fn create(name: &str, buffer_mb: u64) -> Result<Session, String> {
        let root = TRACEFS
            .iter()
            .map(Path::new)
            .find(|p| p.join("instances").is_dir())
            .ok_or("ftrace: no tracefs (mount -t tracefs nodev /sys/kernel/tracing)")?;
        let dir = root.join("instances").join(name);
        // A leftover of an interrupted run: remove it first (its events are not ours).
        let _ = fs::remove_dir(&dir);
        fs::create_dir(&dir).map_err(|e| format!("ftrace: {}: {e}", dir.display()))?;
        let s = Session {
            dir,
            offset_start: 0,
            offset_stop: None,
        };
        // A new instance records from the start: off until the run asks.
        write(&s.dir, "tracing_on", "0")?;
        write(&s.dir, "trace_clock", "mono")?;
        write(&s.dir, "buffer_size_kb", &(buffer_mb * 1024).to_string())?;
        let ev = s.dir.join("events");
        // Wake-ups of real-time threads only (kernel prio < 100): the senders and their
        // competitors; the ordinary threads' wake-ups would fill the buffer.
        write(&ev, "sched/sched_wakeup/filter", "prio < 100")?;
        write(&ev, "irq/softirq_entry/filter", "vec == 3")?;
        write(&ev, "irq/softirq_exit/filter", "vec == 3")?;
        for e in [
            "sched/sched_switch",
            "sched/sched_wakeup",
            "irq/softirq_entry",
            "irq/softirq_exit",
        ] {
            write(&ev, &format!("{e}/enable"), "1")?;
        }
        Ok(s)
    }

    /// Start recording.
    pub fn record(&mut self) -> Result<(), String> {
        self.offset_start = clock_offset();
        write(&self.dir, "tracing_on", "1")
    }

    /// Stop recording (the buffer is kept for [`Session::windows`]).
    pub fn stop(&mut self) {
        let _ = write(&self.dir, "tracing_on", "0");
        self.offset_stop = Some(clock_offset());
    }

    /// A CLOCK_REALTIME time of the run on the trace's clock (the offset's mean over the
    /// run: NTP may slew real time a little).
    pub fn to_mono(&self, real_ns: u64) -> u64 {
        let off = (self.offset_start + self.offset_stop.unwrap_or(self.offset_start)) / 2;
        (real_ns as i64 - off).max(0) as u64
    }

    /// Events each CPU's ring buffer overwrote (lost from the start of the recording), by
    /// CPU: non-zero means the earliest windows may be incomplete.
    pub fn overruns(&self) -> Vec<(usize, u64)> {
        (0..)
            .map_while(|cpu| {
                fs::read_to_string(self.dir.join(format!("per_cpu/cpu{cpu}/stats"))).ok()
            })
            .enumerate()
            .map(|(cpu, s)| (cpu, stat(&s, "overrun:").unwrap_or(0)))
            .collect()
    }

    /// The records in each of `windows` (CLOCK_REALTIME ns, start and end), in time order.
    /// Reads the instance's whole text once (minutes for a 10-minute run).
    pub fn windows(&self, windows: &[(u64, u64)]) -> Result<Vec<Vec<Record>>, String> {
        let mono: Vec<(u64, u64)> = windows
            .iter()
            .map(|&(a, b)| (self.to_mono(a), self.to_mono(b)))
            .collect();
        let f = fs::File::open(self.dir.join("trace")).map_err(|e| format!("ftrace: {e}"))?;
        bucket(BufReader::with_capacity(1 << 20, f), &mono).map_err(|e| format!("ftrace: {e}"))
    }
}

/// The records of the trace text `rd` in each of `windows` (monotonic ns, inclusive).
fn bucket(mut rd: impl BufRead, windows: &[(u64, u64)]) -> std::io::Result<Vec<Vec<Record>>> {
    let mut out = vec![Vec::new(); windows.len()];
    let mut buf = Vec::with_capacity(256);
    loop {
        buf.clear();
        // Bytes, not `lines()`: a thread name need not be UTF-8.
        if rd.read_until(b'\n', &mut buf)? == 0 {
            return Ok(out);
        }
        let Some(r) = Record::parse(&String::from_utf8_lossy(&buf)) else {
            continue;
        };
        for (i, &(a, b)) in windows.iter().enumerate() {
            if (a..=b).contains(&r.t_ns) {
                out[i].push(r.clone());
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = write(&self.dir, "tracing_on", "0");
        // Frees the buffer; fails only if someone holds a file of it open.
        let _ = fs::remove_dir(&self.dir);
    }
}

fn stat(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
}

/// One line of the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// CLOCK_MONOTONIC ns (microsecond resolution).
    pub t_ns: u64,
    pub cpu: usize,
    /// The thread current on the CPU when the event was recorded.
    pub comm: String,
    pub event: String,
    pub args: String,
}

impl Record {
    /// Parse `  comm-pid  [001] d..2. 51851.291241: sched_switch: prev_comm=...` (the
    /// flags column is optional); `None` for comments and anything else.
    pub fn parse(line: &str) -> Option<Record> {
        let open = line.find(" [")?;
        let (task, rest) = line.split_at(open);
        let (comm, _pid) = task.trim_start().rsplit_once('-')?;
        let rest = rest.strip_prefix(" [")?;
        let (cpu, rest) = rest.split_once(']')?;
        let (head, tail) = rest.split_once(": ")?;
        let ts = head.split_whitespace().last()?;
        let (secs, frac) = ts.split_once('.')?;
        let frac_ns: u64 = format!("{frac:0<9}").get(..9)?.parse().ok()?;
        let t_ns = secs
            .parse::<u64>()
            .ok()?
            .checked_mul(1_000_000_000)?
            .checked_add(frac_ns)?;
        let (event, args) = tail.split_once(": ").unwrap_or((tail, ""));
        Some(Record {
            t_ns,
            cpu: cpu.trim().parse().ok()?,
            comm: comm.to_string(),
            event: event.trim().to_string(),
            args: args.trim_end().to_string(),
        })
    }

    /// `key=value` of the arguments (values end at the next space, as the kernel prints
    /// them; a comm with spaces is cut, which only shortens a name in the report).
    pub fn arg(&self, key: &str) -> Option<&str> {
        let at = self
            .args
            .match_indices(key)
            .find(|(i, _)| *i == 0 || self.args.as_bytes()[i - 1] == b' ')?
            .0;
        let v = self.args[at + key.len()..].strip_prefix('=')?;
        Some(v.split(' ').next().unwrap_or(v))
    }
}

/// What one CPU did in a window.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CpuWindow {
    /// Time each thread was current (ns), largest first.
    pub ran: Vec<(String, u64)>,
    /// Stretches without an event of at least [`HOLE_NS`]: start, length (ns), the thread
    /// current during it.
    pub holes: Vec<(u64, u64, String)>,
    /// Each thread's longest wait from its wake-up to its switch-in (ns).
    pub waits: Vec<(String, u64)>,
    /// The NET_RX softirqs (the sends) by thread: times (ns).
    pub sends: Vec<(String, Vec<u64>)>,
}

/// Who is current on one CPU and since when, with the tallies [`summarize`] builds.
#[derive(Default)]
struct Tally {
    cur: Option<(String, u64)>,
    ran: HashMap<String, u64>,
    woke: HashMap<String, u64>,
    waits: HashMap<String, u64>,
}

impl Tally {
    /// `next` becomes current at `t`.
    fn switch_to(&mut self, next: &str, t: u64) {
        if let Some((who, from)) = self.cur.take() {
            *self.ran.entry(who).or_default() += t.saturating_sub(from);
        }
        if let Some(w) = self.woke.remove(next) {
            let e = self.waits.entry(next.to_string()).or_default();
            *e = (*e).max(t.saturating_sub(w));
        }
        self.cur = Some((next.to_string(), t));
    }
}

/// Summarise `records` (one window, time order) for `cpu` between `from` and `to`
/// (monotonic ns).
///
/// Every record names the thread current when it was written, and that is trusted over the
/// switches: the kernels here leave out some switches from the idle task (a real-time
/// thread woken from idle by its timer shows up running with no `sched_switch` to it), so a
/// record of another thread than the one last switched to is taken as a switch at that
/// record (the thread's wait for the CPU is then an upper bound).
pub fn summarize(records: &[Record], cpu: usize, from: u64, to: u64) -> CpuWindow {
    let mut t = Tally::default();
    let mut sends: Vec<(String, Vec<u64>)> = Vec::new();
    let mut holes = Vec::new();
    let mut last = from;
    let idle = format!("swapper/{cpu}");
    for r in records.iter().filter(|r| r.cpu == cpu) {
        let here = if r.comm == "<idle>" {
            idle.as_str()
        } else {
            r.comm.as_str()
        };
        let known = t.cur.as_ref().map(|c| c.0.clone());
        if r.t_ns.saturating_sub(last) >= HOLE_NS {
            let who = match &known {
                Some(k) if k != here => format!("{k}, then {here}"),
                Some(k) => k.clone(),
                None => here.to_string(),
            };
            holes.push((last, r.t_ns - last, who));
        }
        last = r.t_ns;
        match known {
            None => t.cur = Some((here.to_string(), from)),
            Some(k) if k != here => t.switch_to(here, r.t_ns),
            Some(_) => {}
        }
        match r.event.as_str() {
            "sched_switch" => {
                if let Some(n) = r.arg("next_comm") {
                    t.switch_to(n, r.t_ns);
                }
            }
            "sched_wakeup" => {
                if let Some(c) = r.arg("comm") {
                    t.woke.entry(c.to_string()).or_insert(r.t_ns);
                }
            }
            "softirq_entry" => match sends.iter_mut().find(|s| s.0 == here) {
                Some(s) => s.1.push(r.t_ns),
                None => sends.push((here.to_string(), vec![r.t_ns])),
            },
            _ => {}
        }
    }
    if to.saturating_sub(last) >= HOLE_NS {
        let current = t.cur.as_ref().map_or("?", |c| c.0.as_str());
        holes.push((last, to - last, current.to_string()));
    }
    if let Some((c, at)) = t.cur.take() {
        *t.ran.entry(c).or_default() += to.saturating_sub(at);
    }
    let mut ran: Vec<_> = t.ran.into_iter().collect();
    ran.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut waits: Vec<_> = t.waits.into_iter().collect();
    waits.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    CpuWindow {
        ran,
        holes,
        waits,
        sends,
    }
}

/// The text of one CPU's summary (microseconds), for the report file.
pub fn describe(cpu: usize, w: &CpuWindow, origin: u64) -> String {
    let us = |ns: u64| ns as f64 / 1000.0;
    let mut s = format!("  CPU {cpu}: ran (us):");
    for (c, t) in w.ran.iter().take(6) {
        let _ = write!(s, " {c} {:.0};", us(*t));
    }
    s.push_str("\n    no event for >= 60 us (at us from the silence's start, length, current):");
    for (a, len, c) in &w.holes {
        let at = *a as f64 - origin as f64;
        let _ = write!(s, " {:+.0} {:.0} {c};", at / 1000.0, us(*len));
    }
    s.push_str("\n    longest wait from wake-up to the CPU (us):");
    for (c, t) in w.waits.iter().take(8) {
        let _ = write!(s, " {c} {:.0};", us(*t));
    }
    s.push_str("\n    sends (NET_RX in the thread's context, us from the silence's start):");
    for (c, ts) in &w.sends {
        let v: Vec<String> = ts
            .iter()
            .map(|t| format!("{:+.0}", (*t as f64 - origin as f64) / 1000.0))
            .collect();
        let _ = write!(s, " {c} [{}];", v.join(" "));
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_lines_parse_with_and_without_the_flags_column() {
        let r = Record::parse(
            "  pn-bare-sender-15658   [001] d..2. 51851.291241: sched_switch: prev_comm=pn-bare-sender prev_pid=15658 prev_prio=38 prev_state=S ==> next_comm=pn-cyclic next_pid=15646 next_prio=39",
        )
        .expect("a switch");
        assert_eq!(r.t_ns, 51_851_291_241_000);
        assert_eq!((r.cpu, r.comm.as_str()), (1, "pn-bare-sender"));
        assert_eq!(r.event, "sched_switch");
        assert_eq!(r.arg("prev_comm"), Some("pn-bare-sender"));
        assert_eq!(r.arg("next_comm"), Some("pn-cyclic"));
        assert_eq!(r.arg("comm"), None, "prev_comm is not comm");
        let r = Record::parse(
            "          <idle>-0     [000]  51.5: softirq_entry: vec=3 [action=NET_RX]",
        )
        .expect("no flags");
        assert_eq!(
            (r.t_ns, r.cpu, r.comm.as_str()),
            (51_500_000_000, 0, "<idle>")
        );
        assert_eq!(r.arg("vec"), Some("3"));
        for bad in [
            "# tracer: nop",
            "",
            "x [1] 1.0",
            "a-1 [x] 1.0: e: f",
            "a-1 [0] 1.x: e: f",
        ] {
            assert_eq!(Record::parse(bad), None, "{bad:?}");
        }
    }

    fn rec(t_us: u64, cpu: usize, comm: &str, event: &str, args: &str) -> Record {
        Record {
            t_ns: t_us * 1000,
            cpu,
            comm: comm.into(),
            event: event.into(),
            args: args.into(),
        }
    }

    #[test]
    fn a_window_says_who_ran_who_waited_and_where_the_cpu_was_silent() {
        let sw = |t, from: &str, to: &str| {
            rec(t, 1, from, "sched_switch", &format!("prev_comm={from} prev_pid=1 prev_prio=38 prev_state=S ==> next_comm={to} next_pid=2 next_prio=39"))
        };
        let recs = vec![
            rec(
                1000,
                1,
                "<idle>",
                "sched_wakeup",
                "comm=pn-cyclic pid=2 prio=39 target_cpu=001",
            ),
            rec(
                1001,
                1,
                "<idle>",
                "sched_wakeup",
                "comm=bare pid=3 prio=38 target_cpu=001",
            ),
            sw(1002, "swapper/1", "bare"),
            rec(1005, 1, "bare", "softirq_entry", "vec=3 [action=NET_RX]"),
            // The vCPU stops for 400 us with the bare sender current.
            sw(1405, "bare", "pn-cyclic"),
            rec(
                1410,
                1,
                "pn-cyclic",
                "softirq_entry",
                "vec=3 [action=NET_RX]",
            ),
            rec(1410, 0, "other", "softirq_entry", "vec=3 [action=NET_RX]"),
            sw(1420, "pn-cyclic", "swapper/1"),
        ];
        let w = summarize(&recs, 1, 900_000, 1_500_000);
        assert_eq!(
            w.holes,
            vec![
                (900_000, 100_000, "swapper/1".into()),
                (1_005_000, 400_000, "bare".into()),
                (1_420_000, 80_000, "swapper/1".into())
            ],
            "before the first event the current thread is the first record's (<idle>: swapper)"
        );
        assert_eq!(
            w.waits,
            vec![("pn-cyclic".into(), 405_000), ("bare".into(), 1_000)]
        );
        assert_eq!(
            w.sends,
            vec![
                ("bare".into(), vec![1_005_000]),
                ("pn-cyclic".into(), vec![1_410_000])
            ]
        );
        assert_eq!(w.ran[0], ("bare".into(), 403_000));
        assert!(w.ran.contains(&("swapper/1".into(), 80_000 + 102_000)));
        let text = describe(1, &w, 1_000_000);
        assert!(text.contains("+5 400 bare;"), "{text}");
        assert!(text.contains("pn-cyclic [+410]"), "{text}");
    }

    #[test]
    fn a_switch_the_trace_left_out_is_taken_from_the_records_thread() {
        // Woken from idle at 100 us, the thread's first record is its send at 250 us: no
        // sched_switch to it in between (as this kernel traces an idle CPU's timer wake-up).
        let recs = vec![
            rec(100, 1, "<idle>", "sched_wakeup", "comm=pn-cyclic pid=2 prio=39 target_cpu=001"),
            rec(250, 1, "pn-cyclic", "softirq_entry", "vec=3 [action=NET_RX]"),
            rec(255, 1, "pn-cyclic", "sched_switch", "prev_comm=pn-cyclic prev_pid=2 prev_prio=39 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120"),
        ];
        let w = summarize(&recs, 1, 0, 300_000);
        assert_eq!(w.waits, vec![("pn-cyclic".into(), 150_000)]);
        assert_eq!(
            w.ran,
            vec![("swapper/1".into(), 295_000), ("pn-cyclic".into(), 5_000)]
        );
        assert_eq!(
            w.holes,
            vec![
                (0, 100_000, "swapper/1".into()),
                (100_000, 150_000, "swapper/1, then pn-cyclic".into())
            ]
        );
        assert_eq!(w.sends, vec![("pn-cyclic".into(), vec![250_000])]);
    }

    #[test]
    fn the_trace_text_is_cut_into_overlapping_windows_and_bad_bytes_do_not_stop_it() {
        let mut text = b"# tracer: nop\n".to_vec();
        text.extend_from_slice(b"  a-1 [000] d..2. 1.000010: sched_wakeup: comm=x pid=2 prio=39\n");
        text.extend_from_slice(b"  b\xff-2 [001] d..2. 1.000020: softirq_entry: vec=3\n");
        text.extend_from_slice(b"  c-3 [001] d..2. 1.000030: softirq_exit: vec=3");
        let w = bucket(
            std::io::Cursor::new(text),
            &[
                (1_000_010_000, 1_000_020_000),
                (1_000_020_000, 1_000_040_000),
                (0, 5),
            ],
        )
        .expect("read");
        let times = |i: usize| w[i].iter().map(|r| r.t_ns).collect::<Vec<_>>();
        assert_eq!(times(0), [1_000_010_000, 1_000_020_000]);
        assert_eq!(
            times(1),
            [1_000_020_000, 1_000_030_000],
            "the last line has no newline"
        );
        assert!(times(2).is_empty());
        assert_eq!(w[0][1].comm, "b\u{fffd}");
    }

    #[test]
    fn stats_are_read_by_key() {
        let s = "entries: 5\noverrun: 12\ncommit overrun: 0\n";
        assert_eq!(stat(s, "overrun:"), Some(12));
        assert_eq!(stat(s, "bytes:"), None);
    }
}
