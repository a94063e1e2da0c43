extension ErrorReason {
    /// The reason of a refusal from a server older than reasons (before issue 36: its
    /// `Status` has no `reason`), read from the code and the message's first words
    /// exactly as those servers wrote them; `nil` when they say nothing more than the
    /// code. A client or a member newer than its servers (a rolling upgrade, an app
    /// updated before its server) still tells a follower's "not the leader" from a
    /// rejected write, a divergent log from a lost connection. This is the one place that
    /// reads a message's words (tools/check-reasons lets it), for servers that sent
    /// nothing else; every newer server sends the reason.
    public static func ofOlderServer(code: StatusCode, message: String) -> ErrorReason? {
        let prefixes: [(StatusCode, String, ErrorReason)] = [
            (.failedPrecondition, "not the leader: ", .notLeader),
            (.failedPrecondition, "diverged: ", .diverged),
            (.failedPrecondition, "a batch of an older leader: ", .olderLeader),
            (.resourceExhausted, "the client did not read its stream for ", .slowReader),
            (.unauthenticated, "this call needs a token", .tokenRequired),
        ]
        return prefixes.first { $0.0 == code && message.hasPrefix($0.1) }?.2
    }
}
