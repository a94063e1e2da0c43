/// What a failover check reports (JSON, snake_case keys).
struct FailoverReport: Codable {
    /// One round: its fault, on which node, and what it did to the writes.
    struct Round: Codable {
        var kind: String
        var node: String
        var epochBefore: UInt64
        var epochAfter: UInt64
        /// Fault to the first acknowledged write of a newer epoch (faults of the leader).
        var failoverMillis: Double?
        /// The longest time without any acknowledged write around the fault.
        var longestGapMillis: Double
        /// Why the round was skipped, if it was.
        var skipped: String?
    }

    var rounds: [Round] = []
    var attempted = 0
    var acknowledged = 0
    var failed = 0
    var failures: [String: Int] = [:]
    /// Acknowledged writes of the local clients, and how many of them the final log lacks
    /// (a leader lost before a follower copied them: allowed for `local`).
    var localAcknowledged = 0
    var localLost = 0
    var lost = 0
    var duplicated = 0
    var unexpected = 0
    var outOfOrder = 0
    var misplaced = 0
    var splitBrains: [FailoverAnalysis.SplitBrain] = []
    var logsIdentical = false
    var logEvents = 0
    var parkedEvents: UInt64 = 0
    /// Failover time after a kill -9 of the leader: median and largest.
    var killFailoverMedianMillis: Double?
    var killFailoverMaxMillis: Double?
    /// Failover time over every fault of the leader (kill, stop, partition).
    var failoverMedianMillis: Double?
    var failoverMaxMillis: Double?
    var examples = CheckAnalysis()
    var network: String = ""
    var seconds = 0.0

    var passed: Bool {
        lost + duplicated + unexpected + outOfOrder + misplaced == 0 && splitBrains.isEmpty && logsIdentical
            && rounds.allSatisfy { $0.skipped != nil || !$0.kind.hasSuffix("leader") || $0.failoverMillis != nil }
    }
}
