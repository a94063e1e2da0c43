import CoreMetrics
import Prometheus

/// A swift-metrics factory over a Prometheus registry that gives every metric its `HELP`
/// text (``help``), which Prometheus's own lint (`promtool check metrics`) asks for and
/// swift-prometheus's own factory leaves out. Counters, gauges and histograms map as in
/// swift-prometheus: a timer is a duration histogram, an aggregating recorder a value
/// histogram, any other recorder or meter a gauge.
struct DescribedMetricsFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry
    /// Buckets of the duration histograms (timers).
    let durationBuckets: [Duration]
    /// Buckets of value histograms, by metric; others get ``defaultValueBuckets``.
    let valueBuckets: [String: [Double]]
    let defaultValueBuckets: [Double] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1_024]

    /// What each metric of the node measures, as `/metrics` says it in `# HELP` and
    /// docs/OPERATIONS.md in its table. A metric missing here has no `HELP` line, which
    /// the endpoint's lint test reports.
    static let help: [String: String] = [
        "chordstore_calls_total": "Calls ended, by method and status code.",
        "chordstore_call_seconds": "Time from a unary call's arrival to its final reply, by method.",
        "chordstore_failed_authentications_total": "Calls refused for an invalid credential or one that is missing.",
        "chordstore_commit_events": "Events per commit of the writer: how well group commit gathers writes.",
        "chordstore_commit_seconds": "One turn of the writer: decide, append, fsync and fold a batch.",
        "chordstore_log_sync_seconds": "The log's commit alone: its pages written and fsynced.",
        "chordstore_state_evictions_total": "Stores evicted from the state in memory to keep it under --max-state-memory.",
        "chordstore_state_loads_total": "Evicted stores put back in memory after a read (or a command's caller) folded them from the log.",
        "chordstore_state_bytes": "The state in memory with --live-state, estimated bytes (both copies).",
        "chordstore_log_sequence": "The log's last position.",
        "chordstore_log_bytes": "Bytes of the log's file in use.",
        "chordstore_map_bytes": "The size of each memory map (log, views) now.",
        "chordstore_map_usage_percent": "Bytes in use of the most each map may grow to (--map-size-max), in percent.",
        "chordstore_disk_free_bytes": "Free bytes on the data directory's filesystem.",
        "chordstore_writes_refused": "1 while the store refuses writes (full disk, damaged log, a map at its limit), else 0.",
        "chordstore_connections": "Open connections of the framed protocol.",
        "chordstore_calls_in_flight": "Calls not yet answered, streams included.",
        "chordstore_streams": "Open server streams, by method.",
        "chordstore_epoch": "The node's epoch.",
        "chordstore_leader": "1 while the node leads, else 0.",
        "chordstore_replication_lag_events": "On a leader: events a follower has not acknowledged.",
        "chordstore_replication_lag_seconds": "On a leader: the age of the oldest event a follower lacks.",
        "chordstore_follower_lag_events": "On a follower: events behind what its leader last reported.",
        "chordstore_follower_silence_seconds": "On a follower: seconds since its leader last spoke.",
    ]

    /// `label` with its help text (the name as swift-metrics gives it).
    private func described(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: Self.help[label] ?? "")
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: described(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: described(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: described(label), labels: dimensions) }
        return registry.makeValueHistogram(descriptor: described(label), labels: dimensions, buckets: valueBuckets[label] ?? defaultValueBuckets)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: described(label), labels: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(descriptor: described(label), labels: dimensions, buckets: durationBuckets)
    }

    func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        switch handler {
        case let gauge as Prometheus.Gauge: registry.unregisterGauge(gauge)
        case let histogram as ValueHistogram: registry.unregisterValueHistogram(histogram)
        default: break
        }
    }

    func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}
