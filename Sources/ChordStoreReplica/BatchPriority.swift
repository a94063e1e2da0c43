#if canImport(Glibc)
import Glibc
#endif

/// Runs a pull's batch at a lower scheduling priority than the app's threads, so that a
/// read on another thread (the main one) is not kept waiting for a core by the fold of a
/// long first sync. On Linux the calling thread's nice value is raised by 10 for the
/// batch (each thread has its own there) when the process may set it back afterwards
/// (root, or an `RLIMIT_NICE` that allows it); elsewhere the task's priority does this
/// (`ObservedReplica` syncs at `.utility`).
enum BatchPriority {
    static func lowered<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        #if os(Linux)
        let thread: id_t = 0  // the calling thread
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        errno = 0
        let before = getpriority(which, thread)
        if errno == 0, before < 19, mayRestore(before) {
            _ = setpriority(which, thread, min(before + 10, 19))
            defer { _ = setpriority(which, thread, before) }
            return try body()
        }
        #endif
        return try body()
    }

    #if os(Linux)
    /// Whether the process may lower its nice value back to `nice` (`RLIMIT_NICE`'s soft
    /// limit r allows down to 20 - r; root may always).
    private static func mayRestore(_ nice: Int32) -> Bool {
        if geteuid() == 0 { return true }
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(__RLIMIT_NICE.rawValue), &limit) == 0 else { return false }
        if limit.rlim_cur == rlim_t.max { return true }  // RLIM_INFINITY
        return 20 - Int64(limit.rlim_cur) <= Int64(nice)
    }
    #endif
}
