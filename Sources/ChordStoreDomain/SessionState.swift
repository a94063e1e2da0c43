/// What undo and redo would do next for a session.
public struct SessionState: Sendable, Hashable {
    /// The session.
    public var session: String
    /// The event undo would revert, if any.
    public var undoTarget: UInt64?
    /// The undo event redo would revert, if any.
    public var redoTarget: UInt64?
    /// How many undone changes redo can re-apply (at most ``maxReportedDepth``: counting
    /// costs a step per change).
    public var redoDepth: Int
    /// The most ``redoDepth`` reports.
    public static let maxReportedDepth = 10_000

    /// Creates a session state.
    public init(session: String, undoTarget: UInt64?, redoTarget: UInt64?, redoDepth: Int) {
        self.session = session
        self.undoTarget = undoTarget
        self.redoTarget = redoTarget
        self.redoDepth = redoDepth
    }
}
