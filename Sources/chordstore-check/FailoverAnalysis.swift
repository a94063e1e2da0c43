/// What the failover check concludes from its acknowledged writes: how long each failover
/// took, and whether two leaders ever took writes at once. Pure, so that each verdict is
/// tested on crafted histories.
enum FailoverAnalysis {
    /// One acknowledged write as the client saw it.
    struct Ack: Sendable, Hashable {
        /// Its epoch, from the acknowledged event.
        var epoch: UInt64
        /// When the leader committed it (the event's timestamp, microseconds).
        var committedMicros: Int64
        /// When the client got the acknowledgement (milliseconds since the run began).
        var ackedMillis: Double
    }

    /// A time when two epochs' leaders both took writes: the last acknowledged write of
    /// `older` was committed `overlapMicros` after the first of `newer`.
    struct SplitBrain: Codable, Sendable, Hashable {
        var older: UInt64
        var newer: UInt64
        var overlapMicros: Int64
    }

    /// Milliseconds from a fault at `faultMillis` to the first acknowledgement of a newer
    /// epoch than `epochBefore` (`nil`: none came).
    static func failoverMillis(faultMillis: Double, epochBefore: UInt64, acks: [Ack]) -> Double? {
        acks.filter { $0.epoch > epochBefore && $0.ackedMillis >= faultMillis }.map(\.ackedMillis).min().map { $0 - faultMillis }
    }

    /// Every pair of epochs whose acknowledged writes were committed in overlapping spans
    /// of time: each epoch's span runs from its first acknowledged commit to its last.
    static func splitBrains(_ acks: [Ack]) -> [SplitBrain] {
        var spans: [UInt64: (first: Int64, last: Int64)] = [:]
        for ack in acks {
            let span = spans[ack.epoch] ?? (ack.committedMicros, ack.committedMicros)
            spans[ack.epoch] = (min(span.first, ack.committedMicros), max(span.last, ack.committedMicros))
        }
        let epochs = spans.keys.sorted()
        var found: [SplitBrain] = []
        for (index, older) in epochs.enumerated() {
            for newer in epochs[(index + 1)...] {
                guard let a = spans[older], let b = spans[newer], a.last > b.first else { continue }
                found.append(SplitBrain(older: older, newer: newer, overlapMicros: a.last - b.first))
            }
        }
        return found
    }

    /// The median and the largest of `values` (`nil` when empty).
    static func medianAndMax(_ values: [Double]) -> (median: Double, max: Double)? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        let median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        return (median, sorted[sorted.count - 1])
    }
}
