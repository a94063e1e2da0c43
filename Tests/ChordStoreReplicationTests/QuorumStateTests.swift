@testable import ChordStoreReplication
import Testing

/// The quorum rule: the last event a majority of members holds, counting only
/// acknowledgements of this epoch from configured members.
@Suite("Quorum state")
struct QuorumStateTests {
    let now = ContinuousClock.now

    /// Member `x:N` connects from 10.0.0.N.
    static func sources(_ members: String...) -> [String: Set<String>] {
        Dictionary(uniqueKeysWithValues: members.map { ($0, ["10.0.0.\($0.split(separator: ":")[1])"]) })
    }

    @Test("three members: the leader and its more advanced follower make the majority")
    func threeMembers() {
        var quorum = QuorumState(me: "l:0", members: Membership(["l:0", "a:1", "b:2"]), sources: Self.sources("a:1", "b:2"))
        #expect(quorum.quorumSequence(epoch: 1) == 0)
        quorum.ack(address: "a:1", from: "10.0.0.1", node: "a", sequence: 10, epoch: 1, at: now)
        #expect(quorum.quorumSequence(epoch: 1) == 10)
        quorum.ack(address: "b:2", from: "10.0.0.2", node: "b", sequence: 25, epoch: 1, at: now)
        #expect(quorum.quorumSequence(epoch: 1) == 25)
        quorum.ack(address: "a:1", from: "10.0.0.1", node: "a", sequence: 5, epoch: 1, at: now)  // positions never go back
        #expect(quorum.followers["a:1"]?.acked == 10)
    }

    @Test("five members need two followers; strangers and other epochs do not count")
    func fiveMembers() {
        var quorum = QuorumState(me: "l:0", members: Membership(["l:0", "a:1", "b:2", "c:3", "d:4"]), sources: Self.sources("a:1", "b:2", "c:3", "d:4"))
        quorum.ack(address: "a:1", from: "10.0.0.1", node: "a", sequence: 40, epoch: 2, at: now)
        quorum.ack(address: "x:9", from: "10.0.0.9", node: "x", sequence: 50, epoch: 2, at: now)  // not a member
        quorum.ack(address: "b:2", from: "10.0.0.2", node: "b", sequence: 60, epoch: 1, at: now)  // an older epoch
        #expect(quorum.quorumSequence(epoch: 2) == 0)
        quorum.ack(address: "c:3", from: "10.0.0.3", node: "c", sequence: 30, epoch: 2, at: now)
        #expect(quorum.quorumSequence(epoch: 2) == 30)
        quorum.ack(address: "b:2", from: "10.0.0.2", node: "b", sequence: 35, epoch: 2, at: now)  // a new epoch starts its count again
        #expect(quorum.quorumSequence(epoch: 2) == 35)
    }

    @Test("addresses that are not members are kept up to a bound, the least recently heard without a stream forgotten first; members are always kept")
    func nonMembersBounded() {
        var quorum = QuorumState(me: "l:0", members: Membership(["l:0", "a:1", "b:2"]), sources: Self.sources("a:1", "b:2"))
        quorum.stream(address: "joining:7", node: "j", delta: 1, at: now)  // a stream open, heard from first
        quorum.ack(address: "a:1", from: "10.0.0.1", node: "a", sequence: 10, epoch: 1, at: now)
        for index in 0..<500 {
            quorum.ack(address: "x:\(index)", from: "10.9.9.9", node: "x", sequence: 1, epoch: 1, at: now + .milliseconds(index + 1))
        }
        quorum.ack(address: "b:2", from: "10.0.0.2", node: "b", sequence: 20, epoch: 1, at: now + .seconds(1))
        let strangers = quorum.followers.keys.filter { !quorum.isMember($0) }
        #expect(strangers.count == QuorumState.maxNonMembers)
        #expect(quorum.followers["joining:7"]?.streams == 1, "the one with a stream open stays")
        #expect(quorum.followers["x:499"] != nil && quorum.followers["x:0"] == nil, "the latest stay, the oldest go")
        #expect(quorum.followers["a:1"]?.acked == 10 && quorum.followers["b:2"]?.acked == 20)
        #expect(quorum.quorumSequence(epoch: 1) == 20)

        // A stream closing for an address forgotten meanwhile brings nothing back.
        quorum.stream(address: "x:0", node: "x", delta: -1, at: now + .seconds(2))
        #expect(quorum.followers["x:0"] == nil)
        // A member being added is kept like the others; members removed count as
        // strangers, and the next new address brings them all back under the bound.
        quorum.beginChange(to: Membership(["l:0", "a:1", "b:2", "c:3"]))
        quorum.setSources(["10.0.0.3"], for: "c:3")
        let counted = quorum.ack(address: "c:3", from: "10.0.0.3", node: "c", sequence: 5, epoch: 1, at: now - .seconds(1))  // the oldest of all
        #expect(counted)
        quorum.setMembers(Membership(["l:0"]))
        quorum.ack(address: "y:1", from: "10.9.9.9", node: "y", sequence: 1, epoch: 1, at: now + .seconds(3))
        #expect(quorum.followers.keys.filter { !quorum.isMember($0) }.count == QuorumState.maxNonMembers)
        #expect(quorum.followers["y:1"] != nil && quorum.followers["c:3"] == nil)
    }

    @Test("during a membership change, a member being added is never forgotten, however many strangers come")
    func pendingMemberKept() {
        var quorum = QuorumState(me: "l:0", members: Membership(["l:0", "a:1"]), sources: Self.sources("a:1", "c:3"))
        quorum.beginChange(to: Membership(["l:0", "a:1", "c:3"]))
        quorum.ack(address: "c:3", from: "10.0.0.3", node: "c", sequence: 7, epoch: 1, at: now)
        for index in 0..<200 {
            quorum.ack(address: "x:\(index)", from: "10.9.9.9", node: "x", sequence: 1, epoch: 1, at: now + .milliseconds(index + 1))
        }
        #expect(quorum.followers["c:3"]?.acked == 7)
    }

    @Test("a leader alone is a majority of one")
    func alone() {
        let quorum = QuorumState(me: "l:0", members: Membership(["l:0"]), sources: [:])
        #expect(quorum.quorumSequence(epoch: 1) == .max)
    }

    @Test("streams are counted per follower, and a reset forgets everything")
    func streams() {
        var quorum = QuorumState(me: "l:0", members: Membership(["l:0", "a:1"]), sources: Self.sources("a:1"))
        quorum.stream(address: "a:1", node: "a", delta: 1, at: now)
        quorum.stream(address: "a:1", node: "a", delta: 1, at: now)
        quorum.stream(address: "a:1", node: "a", delta: -1, at: now)
        #expect(quorum.followers["a:1"]?.streams == 1)
        quorum.reset()
        #expect(quorum.followers.isEmpty)
    }

    @Test("a follower shown to hold less brings its acknowledged position down to that, never up; its next acknowledgement raises it")
    func followerHoldsLess() {
        var quorum = QuorumState(me: "l:0", members: Membership(["l:0", "a:1", "b:2"]), sources: Self.sources("a:1", "b:2"))
        quorum.ack(address: "a:1", from: "10.0.0.1", node: "a", sequence: 40, epoch: 1, at: now)
        #expect(quorum.quorumSequence(epoch: 1) == 40)
        // a is replaced at its address by a node whose log holds 10 events.
        quorum.holds(address: "a:1", atMost: 10)
        #expect(quorum.followers["a:1"]?.acked == 10)
        #expect(quorum.quorumSequence(epoch: 1) == 10)
        // A stream from further on does not raise it: only acknowledgements do.
        quorum.holds(address: "a:1", atMost: 30)
        #expect(quorum.followers["a:1"]?.acked == 10)
        quorum.ack(address: "a:1", from: "10.0.0.1", node: "a", sequence: 12, epoch: 1, at: now)
        #expect(quorum.quorumSequence(epoch: 1) == 12)
        // Streams opening and closing say nothing of the log; an address not known stays so.
        quorum.stream(address: "a:1", node: "a", delta: 1, at: now)
        quorum.stream(address: "a:1", node: "a", delta: -1, at: now)
        #expect(quorum.followers["a:1"]?.acked == 12)
        quorum.holds(address: "b:2", atMost: 0)
        #expect(quorum.followers["b:2"] == nil)
    }

    @Test("an acknowledgement counts only for the member its connection comes from; a forged one changes nothing")
    func forgedAcknowledgement() {
        var quorum = QuorumState(me: "l:0", members: Membership(["l:0", "a:1", "b:2"]), sources: Self.sources("a:1", "b:2"))
        let counted1 = quorum.ack(address: "a:1", from: "10.0.0.1", node: "a", sequence: 5, epoch: 1, at: now)
        #expect(counted1)
        // b is down; a process on a's host (or anywhere else) names b with a later event.
        let counted2 = quorum.ack(address: "b:2", from: "10.0.0.1", node: "b", sequence: 99, epoch: 1, at: now)
        #expect(!counted2)
        let counted3 = quorum.ack(address: "b:2", from: "10.9.9.9", node: "b", sequence: 99, epoch: 1, at: now)
        #expect(!counted3)
        #expect(quorum.followers["b:2"] == nil)
        #expect(quorum.quorumSequence(epoch: 1) == 5)
        // IPv4 seen through an IPv6 socket is the same address; a non-member may stream
        // from anywhere, but counts for nothing.
        let counted4 = quorum.ack(address: "b:2", from: "::ffff:10.0.0.2", node: "b", sequence: 7, epoch: 1, at: now)
        #expect(counted4)
        #expect(quorum.mayActAs("x:9", from: "10.9.9.9"))
        #expect(quorum.quorumSequence(epoch: 1) == 7)
        // A host that resolves to new addresses.
        quorum.setSources(["10.0.0.20"], for: "b:2")
        let counted5 = quorum.ack(address: "b:2", from: "10.0.0.2", node: "b", sequence: 8, epoch: 1, at: now)
        #expect(!counted5)
        let counted6 = quorum.ack(address: "b:2", from: "10.0.0.20", node: "b", sequence: 8, epoch: 1, at: now)
        #expect(counted6)
    }

    @Test("during a membership change a quorum needs a majority of both lists; once changed, of the new one; aborted, of the old")
    func jointQuorum() {
        var quorum = QuorumState(me: "l:0", members: Membership(["l:0", "a:1", "b:2"]), sources: Self.sources("a:1", "b:2", "c:3"))
        quorum.ack(address: "a:1", from: "10.0.0.1", node: "a", sequence: 20, epoch: 1, at: now)
        #expect(quorum.quorumSequence(epoch: 1) == 20)
        // Adding c: four members, three of them needed; c has copied nothing yet.
        let four = Membership(["l:0", "a:1", "b:2", "c:3"])
        quorum.beginChange(to: four)
        #expect(quorum.isMember("c:3"))
        #expect(quorum.quorumSequence(epoch: 1) == 0)
        quorum.ack(address: "c:3", from: "10.0.0.3", node: "c", sequence: 15, epoch: 1, at: now)
        #expect(quorum.quorumSequence(epoch: 1) == 15)  // the old majority holds 20, the new one 15
        #expect(quorum.quorumSequence(of: four, epoch: 1) == 15)
        quorum.setMembers(four)
        #expect(quorum.pending == nil)
        #expect(quorum.quorumSequence(epoch: 1) == 15)
        // Removing a and c from a list of four, aborted: the list stays as it was.
        quorum.beginChange(to: Membership(["l:0", "b:2"]))
        #expect(quorum.quorumSequence(epoch: 1) == 0)  // b has acknowledged nothing
        quorum.abortChange()
        #expect(quorum.quorumSequence(epoch: 1) == 15)
        #expect(!quorum.isMember("l:0"))  // the leader is never one of the followers it counts
    }
}
