//! Thread priorities, as the seeds' thread-pool section describes them:
//! bulk refresh runs on low-priority `refresh-worker` threads, the apply of
//! change streams on `cdc-apply-worker` threads at the default priority,
//! and while any dataset streams changes the query threads run at nice 5,
//! so that applying changes and the key lookups they serve stay responsive
//! on a saturated host.
//!
//! Written with `libc` directly: on Linux a nice value belongs to a thread
//! (`setpriority` with the thread's id), which the crates that set process
//! priorities do not expose.

/// The name of the threads that serve queries (the process's main
/// runtime).
pub const QUERY_THREADS: &str = "query-worker";

thread_local! {
    static LANE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as a connection lane: a single-threaded
/// runtime whose connections share the thread, where nothing may block
/// in place.
pub(crate) fn mark_lane() {
    LANE.with(|lane| lane.set(true));
}

/// Whether the calling thread is a connection lane.
pub(crate) fn on_lane() -> bool {
    LANE.with(std::cell::Cell::get)
}

/// The nice value of the `refresh-worker` threads.
pub const REFRESH_NICE: i32 = 10;

/// The nice value of the query threads while any dataset streams changes.
pub const QUERY_NICE_WHILE_STREAMING: i32 = 5;

/// Sets the calling thread's nice value. Raising it is always allowed;
/// lowering it needs privileges, and fails without them.
pub fn set_current_nice(nice: i32) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take plain integers and touch no
        // memory of ours.
        let outcome = unsafe {
            let thread = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, thread as libc::id_t, nice)
        };
        if outcome != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
    Ok(())
}

/// The calling thread's nice value (0 where threads have none of their own).
pub fn current_nice() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: as above.
        unsafe {
            let thread = libc::gettid();
            libc::getpriority(libc::PRIO_PROCESS, thread as libc::id_t)
        }
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// Sets the nice value of every thread of this process whose name starts
/// with `prefix`; returns how many were set.
pub fn renice_threads(prefix: &str, nice: i32) -> usize {
    #[cfg(target_os = "linux")]
    {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return 0;
        };
        let mut set = 0;
        for task in tasks.flatten() {
            let Some(id) = task
                .file_name()
                .to_str()
                .and_then(|id| id.parse::<libc::id_t>().ok())
            else {
                continue;
            };
            let named = std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|name| name.trim_end().starts_with(prefix));
            // SAFETY: as above.
            if named && unsafe { libc::setpriority(libc::PRIO_PROCESS, id, nice) } == 0 {
                set += 1;
            }
        }
        set
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (prefix, nice);
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_lowers_its_own_priority() {
        std::thread::spawn(|| {
            set_current_nice(REFRESH_NICE).unwrap();
            if cfg!(target_os = "linux") {
                assert_eq!(current_nice(), REFRESH_NICE);
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn threads_are_reniced_by_name() {
        let (started, wait) = std::sync::mpsc::channel();
        let (release, done) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("pgaccel-nice-t".to_owned())
            .spawn(move || {
                started.send(()).unwrap();
                let _ = done.recv();
                current_nice()
            })
            .unwrap();
        wait.recv().unwrap();
        let set = renice_threads("pgaccel-nice-t", QUERY_NICE_WHILE_STREAMING);
        release.send(()).unwrap();
        let nice = thread.join().unwrap();
        if cfg!(target_os = "linux") {
            assert_eq!(set, 1);
            assert_eq!(nice, QUERY_NICE_WHILE_STREAMING);
        }
    }
}
