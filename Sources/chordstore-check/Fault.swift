/// One fault the checker injects once the clients have attempted `at` writes.
struct Fault: Equatable, CustomStringConvertible {
    enum Action: String, CaseIterable {
        /// SIGKILL.
        case kill
        /// Start the node again with its first arguments.
        case restart
        /// SIGSTOP: the process is frozen, its connections stay open.
        case stop
        /// SIGCONT.
        case cont
        /// Promote the node (`best`: the live follower with the longest log) and point
        /// the clients at it.
        case promote
    }

    var at: Int
    var action: Action
    /// A node name (n1, n2, ...), several separated by commas (hit at once), or `best`
    /// for promote.
    var node: String

    /// Parses `AT:ACTION:NODE`, e.g. `2000:kill:n3` or `5000:promote:best`.
    init(parsing text: String) throws {
        let parts = text.split(separator: ":").map(String.init)
        guard parts.count == 3, let at = Int(parts[0]), at >= 0, let action = Action(rawValue: parts[1]) else {
            throw CheckFailure(
                "a fault is AT:ACTION:NODE with ACTION one of \(Action.allCases.map(\.rawValue).joined(separator: ", ")), not '\(text)'")
        }
        self.at = at
        self.action = action
        self.node = parts[2]
    }

    var description: String { "\(at):\(action.rawValue):\(node)" }
}
