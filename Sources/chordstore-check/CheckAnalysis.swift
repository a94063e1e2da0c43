/// What the checker concludes from the writes it made and the log it read back: pure,
/// so that each kind of anomaly is tested on crafted inputs.
struct CheckAnalysis: Codable, Equatable {
    /// Acknowledged writes missing from the log.
    var lost: [String] = []
    /// Titles present more than once.
    var duplicated: [String] = []
    /// Titles in the log that no client attempted.
    var unexpected: [String] = []
    /// Acknowledged writes of one client that the log holds in another order than the
    /// client made them (each client writes one at a time).
    var outOfOrder: [String] = []
    /// Acknowledged writes the log holds at another sequence number than acknowledged.
    var misplaced: [String] = []

    /// Whether nothing went wrong.
    var isClean: Bool { lost.isEmpty && duplicated.isEmpty && unexpected.isEmpty && outOfOrder.isEmpty && misplaced.isEmpty }

    /// One write a client attempted.
    struct Attempt {
        var client: Int
        var index: Int
        var title: String
        /// The sequence number of the acknowledgement, `nil` if the write failed (it may
        /// or may not have been applied).
        var acked: UInt64?
    }

    /// Compares `attempts` with `log` (the title of each chordset the run added, with
    /// its sequence number, in log order; other events are left out by the caller).
    static func analyze(attempts: [Attempt], log: [(sequence: UInt64, title: String)]) -> CheckAnalysis {
        var analysis = CheckAnalysis()
        var positions: [String: [UInt64]] = [:]
        for entry in log { positions[entry.title, default: []].append(entry.sequence) }
        let attempted = Set(attempts.map(\.title))
        analysis.duplicated = positions.filter { $0.value.count > 1 }.keys.sorted()
        analysis.unexpected = positions.keys.filter { !attempted.contains($0) }.sorted()
        for attempt in attempts {
            guard let acked = attempt.acked else { continue }
            guard let found = positions[attempt.title]?.first else {
                analysis.lost.append(attempt.title)
                continue
            }
            if found != acked { analysis.misplaced.append(attempt.title) }
        }
        let byClient = Dictionary(grouping: attempts.filter { $0.acked != nil }, by: \.client)
        for (_, writes) in byClient {
            var last: UInt64 = 0
            for write in writes.sorted(by: { $0.index < $1.index }) {
                guard let found = positions[write.title]?.first else { continue }
                if found < last { analysis.outOfOrder.append(write.title) }
                last = max(last, found)
            }
        }
        analysis.lost.sort()
        analysis.misplaced.sort()
        analysis.outOfOrder.sort()
        return analysis
    }

    /// The first `count` of each kind: a report's examples.
    func examples(_ count: Int) -> CheckAnalysis {
        CheckAnalysis(
            lost: Array(lost.prefix(count)), duplicated: Array(duplicated.prefix(count)), unexpected: Array(unexpected.prefix(count)),
            outOfOrder: Array(outOfOrder.prefix(count)), misplaced: Array(misplaced.prefix(count)))
    }
}
