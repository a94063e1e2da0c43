/// What a store's views need when it opens, decided from what they record and what the
/// log holds. A pure value, so every case is tested without files.
enum ViewsPlan: Equatable {
    /// They hold the log's last event.
    case current
    /// They hold an earlier event of this log, at most `maxCatchUp` behind: the process
    /// died between the two commits of a turn. The missing events are folded in.
    case catchUp
    /// Another layout, views of another log (or ahead of it), discarded after a machine
    /// crash, or a long lag. `reusable`: they are this log's, only far behind, so reads
    /// may use them while the rebuild cannot run (a full disk).
    case rebuild(reusable: Bool)

    /// Decides from the views' layout (whether it is this version's), their applied head,
    /// the log's head, and the checksum the log stores at the applied head's sequence.
    init(currentLayout: Bool, applied: LogHead, logHead: LogHead, logChecksumAtApplied: UInt64?, maxCatchUp: UInt64) {
        guard currentLayout, applied.sequence <= logHead.sequence else {
            self = .rebuild(reusable: false)
            return
        }
        guard applied.sequence == 0 || logChecksumAtApplied == applied.checksum else {
            self = .rebuild(reusable: false)
            return
        }
        if applied.sequence == logHead.sequence {
            self = .current
        } else {
            self = logHead.sequence - applied.sequence > maxCatchUp ? .rebuild(reusable: true) : .catchUp
        }
    }

    /// Whether reads may use the views as they are (consistent, maybe behind).
    var servesReads: Bool {
        switch self {
        case .current, .catchUp, .rebuild(reusable: true): true
        case .rebuild(reusable: false): false
        }
    }
}
