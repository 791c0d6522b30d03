//! CPU affinity for timing tests on a virtual machine.
//!
//! Why: this kind of VM's hypervisor stalls a vCPU for 1.5-20 ms at times. With the device and
//! the test controller on different vCPUs, a stall of one side's vCPU looks to the other like
//! 10-20 ms of network silence, which a 12 ms data-hold time (4 ms x 3) cannot cover. A real
//! controller runs on its own hardware; co-locating both ends of a test on one vCPU makes a
//! stall freeze both, so it is not mistaken for a silent peer. Only tests whose subject is
//! "no watchdog trip at a tight data-hold time" use this; benchmarks measure unpinned.

/// The CPU timing tests pin both ends to.
pub const TEST_CPU: usize = 1;

fn cpu_set(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        set
    }
}

/// Pin every current thread of process `pid` (threads created later inherit the mask of their
/// creator) to `cpu`. Returns how many threads were pinned.
pub fn pin_process(pid: u32, cpu: usize) -> usize {
    let set = cpu_set(cpu);
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for e in rd.flatten() {
            if let Ok(tid) = e.file_name().to_string_lossy().parse::<i32>() {
                // SAFETY: valid cpu_set_t; tid of a thread of a process we own.
                let rc = unsafe {
                    libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set)
                };
                if rc == 0 {
                    n += 1;
                }
            }
        }
    }
    n
}

/// Pin every thread of the calling process to `cpu`.
pub fn pin_self(cpu: usize) -> usize {
    pin_process(std::process::id(), cpu)
}

/// Pin the calling thread only (threads it creates later inherit the mask).
pub fn pin_current_thread(cpu: usize) -> bool {
    let set = cpu_set(cpu);
    // SAFETY: valid cpu_set_t; 0 = the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}
