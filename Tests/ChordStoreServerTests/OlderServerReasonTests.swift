@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreProto
import Testing

/// A server older than reasons sends a `Status` without one: the client reads the few
/// refusals such a server told by their words (docs/PROTOCOL.md §3), so failover, a
/// follower's divergence and a replica's retry still work against it.
@Suite("Reasons of older servers")
struct OlderServerReasonTests {
    /// `code` and `message` as a server before reasons sent them.
    private func read(_ code: StatusCode, _ message: String, leader: String = "") -> ClientError {
        ClientError(Chordstore_V1_Status.with {
            $0.code = code.rawValue
            $0.message = message
            $0.leader = leader
        })
    }

    @Test("the refusals an older server told by their words get their reasons; the rest their code's name")
    func olderServers() {
        #expect(read(.failedPrecondition, "not the leader: no leader is known now; retry shortly").reason == .notLeader)
        #expect(read(.failedPrecondition, "not the leader: send it to 10.0.0.2:7420", leader: "10.0.0.2:7420").reason == .notLeader)
        #expect(read(.failedPrecondition, "diverged: the follower has event 9; this leader's log ends at 7").reason == .diverged)
        #expect(read(.failedPrecondition, "a batch of an older leader: its epoch 2 is older than this node's (3)").reason == .olderLeader)
        #expect(read(.resourceExhausted, "the client did not read its stream for 10 s").reason == .slowReader)
        #expect(read(.unauthenticated, "this call needs a token: send the metadata 'authorization: Bearer <token>'").reason == .tokenRequired)
        #expect(read(.failedPrecondition, "undo conflicts with a later change").reason == ErrorReason(.failedPrecondition))
        #expect(read(.notFound, "not the leader: (a title)").reason == ErrorReason(.notFound), "words count only with their code")
    }

    @Test("a reason the server sent is taken as it is, whatever the words")
    func newerServers() {
        let error = ClientError(Chordstore_V1_Status.with {
            $0.code = StatusCode.failedPrecondition.rawValue
            $0.message = "not the leader: but the reason says otherwise"
            $0.reason = "DIVERGED"
        })
        #expect(error.reason == .diverged)
    }
}
