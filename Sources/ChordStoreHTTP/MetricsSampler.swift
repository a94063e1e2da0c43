import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
import ChordStoreServer
import CoreMetrics
import Synchronization

/// Sets the gauges that are read rather than counted (connections, streams, the maps and
/// the disk, replication lag) from a node, just before a scrape emits them. Gauges of a
/// follower that left, or of a role the node no longer has, are removed, so that no
/// alert fires on a value that is no longer true.
final class MetricsSampler: Sendable {
    let node: NodeReadings
    let factory: any MetricsFactory
    /// The followers whose lag the last scrape reported, and whether it reported this
    /// node's own lag behind a leader.
    private let reported = Mutex<(followers: Set<String>, following: Bool)>(([], false))

    init(node: NodeReadings, factory: any MetricsFactory) {
        self.node = node
        self.factory = factory
    }

    func sample() {
        let server = node.server
        gauge("chordstore_connections", Double(server.openConnections))
        gauge("chordstore_calls_in_flight", Double(server.callsInFlight))
        for (method, open) in server.streamsInFlight {
            gauge("chordstore_streams", Double(open), [("method", ServerMetrics.label(method))])
        }
        let store = node.store
        if let usage = store.storageUsage {
            gauge("chordstore_log_bytes", Double(usage.logBytes))
            gauge("chordstore_disk_free_bytes", Double(usage.freeDiskBytes))
            for (map, used, size) in [("log", usage.logBytes, usage.logMapBytes), ("views", usage.viewsBytes, usage.viewsMapBytes)] {
                gauge("chordstore_map_bytes", Double(size), [("map", map)])
                // Of the most the map may grow to: what --map-size-max leaves.
                gauge("chordstore_map_usage_percent", 100 * Double(used) / Double(max(1, usage.maxMapBytes)), [("map", map)])
            }
        }
        gauge("chordstore_writes_refused", store.writeRefusal == nil ? 0 : 1)
        gauge("chordstore_log_sequence", Double((try? store.lastLogSequence()) ?? 0))
        gauge("chordstore_epoch", Double(store.epoch))
        guard let replication = node.replication else {
            gauge("chordstore_leader", 1)
            return
        }
        gauge("chordstore_leader", replication.role == .leader ? 1 : 0)
        var followers: Set<String> = []
        if let status = try? replication.status() {
            for follower in status.followers {
                let labels = [("follower", follower.address)]
                gauge("chordstore_replication_lag_events", Double(follower.lagEvents), labels)
                gauge("chordstore_replication_lag_seconds", Double(follower.lagMillis) / 1_000, labels)
                followers.insert(follower.address)
            }
        }
        let following = node.observation().following
        if let following {
            gauge("chordstore_follower_lag_events", Double(following.leaderLast > following.applied ? following.leaderLast - following.applied : 0))
            gauge("chordstore_follower_silence_seconds", Double(following.silence / .milliseconds(1)) / 1_000)
        }
        let (gone, stopped) = reported.withLock { reported in
            defer { reported = (followers, following != nil) }
            return (reported.followers.subtracting(followers), reported.following && following == nil)
        }
        for address in gone {
            for label in ["chordstore_replication_lag_events", "chordstore_replication_lag_seconds"] {
                Gauge(label: label, dimensions: [("follower", address)], factory: factory).destroy()
            }
        }
        if stopped {
            for label in ["chordstore_follower_lag_events", "chordstore_follower_silence_seconds"] {
                Gauge(label: label, dimensions: [], factory: factory).destroy()
            }
        }
    }

    private func gauge(_ label: String, _ value: Double, _ dimensions: [(String, String)] = []) {
        Gauge(label: label, dimensions: dimensions, factory: factory).record(value)
    }
}
