/// What a run reports.
struct CheckReport: Codable {
    struct NodeReport: Codable {
        var name: String
        var role: String
        var epoch: UInt64
        var lastSequence: UInt64
        var lastChecksum: String
        var parkedEvents: UInt64
    }

    var attempted = 0
    var acknowledged = 0
    var failed = 0
    /// Failed writes by status code.
    var failures: [String: Int] = [:]
    /// The slowest failed write, from its start to its failure.
    var slowestFailureMillis = 0
    var lost = 0
    var duplicated = 0
    var unexpected = 0
    var outOfOrder = 0
    var misplaced = 0
    var logsIdentical = false
    var logEvents = 0
    var examples = CheckAnalysis()
    var nodes: [NodeReport] = []
    var faults: [String] = []
    var seconds = 0.0
    var passed: Bool { lost + duplicated + unexpected + outOfOrder + misplaced == 0 && logsIdentical }
}
