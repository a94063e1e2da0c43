import CoreMetrics

/// What the engine records through swift-metrics, into the factory of
/// ``ChordStore/Options/metrics`` (none by default): the writer's commits and the log's
/// durable writes. Gauges of the storage are read on demand instead
/// (``ChordStore/storageUsage``).
struct EngineMetrics: Sendable {
    /// Events per commit: how well group commit gathers concurrent commands.
    let commitEvents: Recorder
    /// One writer turn: decide, append, fsync and fold a batch.
    let commitDuration: CoreMetrics.Timer
    /// The log's commit: its pages written and fsynced (what durability costs).
    let logSync: CoreMetrics.Timer
    /// Stores evicted from the live state's memory (its bound).
    let stateEvictions: Counter
    /// Evicted stores put back in memory after a read folded them from the log (the
    /// writer's loads are not counted apart: they come with its commits).
    let stateLoads: Counter
    /// The live state's estimated bytes (both copies), after each turn of the bound.
    let stateBytes: Gauge

    init(factory: any MetricsFactory) {
        commitEvents = Recorder(label: "chordstore_commit_events", dimensions: [], aggregate: true, factory: factory)
        commitDuration = CoreMetrics.Timer(label: "chordstore_commit_seconds", dimensions: [], factory: factory)
        logSync = CoreMetrics.Timer(label: "chordstore_log_sync_seconds", dimensions: [], factory: factory)
        stateEvictions = Counter(label: "chordstore_state_evictions_total", dimensions: [], factory: factory)
        stateLoads = Counter(label: "chordstore_state_loads_total", dimensions: [], factory: factory)
        stateBytes = Gauge(label: "chordstore_state_bytes", dimensions: [], factory: factory)
    }

    /// A writer turn committed `events` in `duration`.
    func committed(events: Int, in duration: Duration) {
        commitDuration.recordNanoseconds(duration.nanoseconds)
        commitEvents.record(events)
    }

    /// A turn of the memory bound put `stores` evicted stores back in memory.
    func stateLoaded(_ stores: Int) {
        if stores > 0 { stateLoads.increment(by: Int64(stores)) }
    }

    /// A turn of the memory bound evicted `stores` stores.
    func stateEvicted(_ stores: Int) {
        stateEvictions.increment(by: Int64(stores))
    }

    /// The live state's estimated `bytes` (both copies) after a turn of the memory bound.
    func stateSize(_ bytes: Int) {
        stateBytes.record(bytes)
    }

    /// The log's pages of a commit were written and fsynced in `duration`.
    func logSynced(in duration: Duration) {
        logSync.recordNanoseconds(duration.nanoseconds)
    }
}

/// How much room the store's files take and have, for operators (a full map or disk
/// refuses writes).
public struct StorageUsage: Sendable, Hashable {
    /// Bytes of the log's file in use (up to its last page).
    public var logBytes: Int
    /// The log's map: the most its file can grow to before the map grows again.
    public var logMapBytes: Int
    /// Bytes of the views' file in use.
    public var viewsBytes: Int
    /// The views' map.
    public var viewsMapBytes: Int
    /// The most either map may grow to (``ChordStore/Options/maxMapSize``).
    public var maxMapBytes: Int
    /// Free bytes on the filesystem holding the data directory.
    public var freeDiskBytes: Int

    /// Creates a reading.
    public init(logBytes: Int, logMapBytes: Int, viewsBytes: Int, viewsMapBytes: Int, maxMapBytes: Int, freeDiskBytes: Int) {
        self.logBytes = logBytes
        self.logMapBytes = logMapBytes
        self.viewsBytes = viewsBytes
        self.viewsMapBytes = viewsMapBytes
        self.maxMapBytes = maxMapBytes
        self.freeDiskBytes = freeDiskBytes
    }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating at `Int64`'s bounds (what a metrics
    /// timer records).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
