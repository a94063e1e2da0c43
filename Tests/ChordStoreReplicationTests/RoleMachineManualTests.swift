@testable import ChordStoreReplication
import Testing

/// The manual mode's scenarios, run on the pure machine with a made-up clock: no sockets,
/// no timers. Each test is one story of events and the actions they must (and must not)
/// produce.
@Suite("Role machine: manual mode")
struct RoleMachineManualTests {
    static let members = Membership(["a:1", "b:2", "c:3"])
    let t0 = ContinuousClock.now

    func machine(follow: String? = nil, epoch: UInt64 = 1) -> RoleMachine {
        RoleMachine(me: "a:1", mode: .manual(follow: follow), epoch: epoch, members: Self.members, timing: LeaseTiming(ttl: .seconds(2)), probeInterval: .milliseconds(500))
    }

    static func peer(_ address: String, leading: Bool = false, epoch: UInt64 = 1, last: UInt64 = 10) -> PeerView {
        PeerView(address: address, leading: leading, epoch: epoch, lastEpoch: epoch, lastSequence: last)
    }

    @Test("--follow: follows at once, the gate closed")
    func configuredFollower() {
        var machine = machine(follow: "b:2")
        let actions = machine.handle(.start, at: t0)
        #expect(actions.prefix(2) == [.setWritable(false), .follow("b:2")])
        #expect(machine.phase == .following(leader: "b:2"))
        #expect(machine.writeRefusal(at: t0) == "b:2")
    }

    @Test("no --follow: asks the peers, then leads, or follows one that leads with a newer epoch")
    func startProbe() {
        var leader = machine()
        guard case .probeAtStart(let generation)? = leader.handle(.start, at: t0).last else {
            Issue.record("no probe")
            return
        }
        let actions = leader.handle(.startProbed([Self.peer("b:2")], generation: generation), at: t0)
        #expect(actions.prefix(2) == [.resetFollowers, .setWritable(true)])
        #expect(actions.contains { if case .monitorPeers = $0 { true } else { false } })
        #expect(leader.isLeading && leader.leader == "a:1" && leader.writeRefusal(at: t0) == nil)

        var returning = machine()
        guard case .probeAtStart(let again)? = returning.handle(.start, at: t0).last else { Issue.record("the expected action is missing"); return }
        let followed = returning.handle(.startProbed([Self.peer("c:3", leading: true, epoch: 4)], generation: again), at: t0)
        #expect(followed.first == .follow("c:3"))
        #expect(returning.phase == .following(leader: "c:3"))
        // An answer of an earlier generation changes nothing.
        #expect(returning.handle(.startProbed([], generation: again - 1), at: t0).isEmpty)
    }

    @Test("a leader that sees a newer epoch steps down: gate closed before quorum waits fail, then it follows")
    func stepDownOnNewerEpoch() {
        var machine = machine()
        guard case .probeAtStart(let generation)? = machine.handle(.start, at: t0).last else { Issue.record("the expected action is missing"); return }
        _ = machine.handle(.startProbed([], generation: generation), at: t0)
        #expect(machine.handle(.epochSeen(1, from: "b:2", leading: true), at: t0).isEmpty)  // same epoch, higher address
        #expect(machine.handle(.epochSeen(9, from: "x:9", leading: true), at: t0).isEmpty)  // not a member
        let actions = machine.handle(.peersProbed([Self.peer("c:3", leading: true, epoch: 3)]), at: t0)
        #expect(Array(actions.prefix(3)) == [.setWritable(false), .failQuorumWaits, .resetFollowers])
        #expect(actions.contains(.follow("c:3")))
        #expect(machine.phase == .following(leader: "c:3"))
    }

    @Test("two leaders of one epoch: the one with the greater address steps down")
    func sameEpochTwoLeaders() {
        var machine = RoleMachine(me: "c:3", mode: .manual(follow: nil), epoch: 2, members: Self.members, timing: LeaseTiming(ttl: .seconds(2)), probeInterval: .milliseconds(500))
        guard case .probeAtStart(let generation)? = machine.handle(.start, at: t0).last else { Issue.record("the expected action is missing"); return }
        _ = machine.handle(.startProbed([], generation: generation), at: t0)
        _ = machine.handle(.epochSeen(2, from: "a:1", leading: true), at: t0)
        #expect(machine.phase == .following(leader: "a:1"))
    }

    @Test("a follower that fails three times looks for the leader, and follows the one found")
    func findsLostLeader() {
        var machine = machine(follow: "b:2")
        _ = machine.handle(.start, at: t0)
        #expect(machine.handle(.followEnded(leader: "b:2", .failed), at: t0).isEmpty)
        #expect(machine.handle(.followEnded(leader: "b:2", .failed), at: t0).isEmpty)
        guard case .findLeader(let generation)? = machine.handle(.followEnded(leader: "b:2", .failed), at: t0).first else {
            Issue.record("no look for the leader after three failures")
            return
        }
        #expect(machine.handle(.leaderFound("b:2", generation: generation), at: t0).isEmpty)
        let actions = machine.handle(.leaderFound("c:3", generation: generation), at: t0)
        #expect(actions.first == .follow("c:3"))
        // Progress resets the count.
        _ = machine.handle(.followEnded(leader: "c:3", .failed), at: t0)
        _ = machine.handle(.followEnded(leader: "c:3", .progressed), at: t0)
        #expect(machine.handle(.followEnded(leader: "c:3", .failed), at: t0).isEmpty)
    }

    @Test("a redirect names the leader; with none known the follower keeps looking")
    func redirect() {
        var machine = machine(follow: "b:2")
        _ = machine.handle(.start, at: t0)
        _ = machine.handle(.followEnded(leader: "b:2", .redirected(to: "c:3")), at: t0)
        #expect(machine.phase == .following(leader: "c:3"))
        let actions = machine.handle(.followEnded(leader: "c:3", .redirected(to: nil)), at: t0)
        guard case .findLeader(let generation)? = actions.last else {
            Issue.record("no look for the leader")
            return
        }
        let again = machine.handle(.leaderFound(nil, generation: generation), at: t0)
        #expect(again == [.after(.milliseconds(500), .lookAgain(generation: generation))])
        #expect(machine.handle(.lookAgain(generation: generation), at: t0) == [.findLeader(generation: generation)])
    }

    @Test("promotion: copying stops, the promotion runs; its end opens the gate or follows again")
    func promotion() {
        var machine = machine(follow: "b:2")
        _ = machine.handle(.start, at: t0)
        let actions = machine.handle(.promoteRequested(force: false), at: t0)
        guard actions.first == .stopFollowing, case .runPromotion(false, let generation)? = actions.last else {
            Issue.record("no promotion: \(actions)")
            return
        }
        #expect(machine.handle(.promoteRequested(force: false), at: t0).first == .refuse("this node is already being promoted, or is stopping"))
        let led = machine.handle(.promotionEnded(.promoted(epoch: 5), generation: generation), at: t0)
        #expect(led.contains(.setWritable(true)))
        #expect(machine.isLeading && machine.epoch == 5)
        #expect(machine.granted?.epoch == 5 && machine.granted?.leader == "a:1")
        #expect(machine.handle(.promoteRequested(force: false), at: t0).isEmpty)  // already the leader

        var refused = self.machine(follow: "b:2")
        _ = refused.handle(.start, at: t0)
        guard case .runPromotion(_, let second)? = refused.handle(.promoteRequested(force: true), at: t0).last else { Issue.record("the expected action is missing"); return }
        let back = refused.handle(.promotionEnded(.refused, generation: second), at: t0)
        #expect(back.first == .follow(nil))
        #expect(refused.phase == .following(leader: nil))
    }

    @Test("fences: an older epoch, or one granted to another leader, is refused; a leader fenced steps down")
    func fences() {
        var machine = machine(epoch: 4)
        guard case .probeAtStart(let generation)? = machine.handle(.start, at: t0).last else { Issue.record("the expected action is missing"); return }
        _ = machine.handle(.startProbed([], generation: generation), at: t0)
        #expect(machine.handle(.fenceRequested(epoch: 3, leader: "b:2"), at: t0) == [.refuse("epoch 3 is older than this node's (4)")])
        #expect(machine.handle(.fenceRequested(epoch: 4, leader: "b:2"), at: t0) == [.refuse("this node leads epoch 4")])
        // Granted: the leader closes its gate before the epoch is adopted, so that nothing
        // it still commits carries the new epoch.
        let granted = machine.handle(.fenceRequested(epoch: 5, leader: "b:2"), at: t0)
        #expect(granted.first == .setWritable(false))
        #expect(machine.phase == .following(leader: "b:2"))
        #expect(machine.handle(.fenceRequested(epoch: 5, leader: "c:3"), at: t0) == [.refuse("epoch 5 was already granted to b:2")])
        #expect(machine.handle(.fenced(epoch: 5, leader: "b:2"), at: t0).isEmpty)
        #expect(machine.phase == .following(leader: "b:2") && machine.epoch == 5)
    }

    @Test("a fence older than the epoch granted last is refused, so the newer epoch cannot be granted again before it is adopted")
    func olderFenceKeepsTheGrant() {
        var machine = machine(follow: "b:2", epoch: 4)
        _ = machine.handle(.start, at: t0)
        #expect(machine.handle(.fenceRequested(epoch: 6, leader: "b:2"), at: t0).allSatisfy { if case .refuse = $0 { false } else { true } })
        // The fence of epoch 6 is not adopted yet (the store still says 4).
        #expect(machine.handle(.fenceRequested(epoch: 5, leader: "c:3"), at: t0) == [.refuse("epoch 5 is older than epoch 6, granted to b:2")])
        #expect(machine.handle(.fenceRequested(epoch: 6, leader: "c:3"), at: t0) == [.refuse("epoch 6 was already granted to b:2")])
    }

    @Test("two members promoted at once with the same epoch: the one that claimed it refuses the other's fence, and one fenced first cannot claim it")
    func concurrentPromotions() {
        var first = machine(follow: "b:2", epoch: 4)
        _ = first.handle(.start, at: t0)
        _ = first.handle(.promoteRequested(force: false), at: t0)
        #expect(first.handle(.epochClaimed(5), at: t0).isEmpty)
        #expect(first.handle(.fenceRequested(epoch: 5, leader: "c:3"), at: t0) == [.refuse("epoch 5 was already granted to a:1")])

        var second = machine(follow: "b:2", epoch: 4)
        _ = second.handle(.start, at: t0)
        _ = second.handle(.promoteRequested(force: false), at: t0)
        _ = second.handle(.fenceRequested(epoch: 5, leader: "c:3"), at: t0)
        #expect(second.handle(.epochClaimed(5), at: t0) == [.refuse("epoch 5 was already granted to c:3")])
        #expect(second.handle(.epochClaimed(6), at: t0).isEmpty, "a newer epoch is free")
    }

    @Test("a grant kept by the store before a restart is refused to another leader")
    func grantFromBeforeARestart() {
        var machine = RoleMachine(
            me: "a:1", mode: .manual(follow: "b:2"), epoch: 5, members: Self.members, timing: LeaseTiming(ttl: .seconds(2)),
            probeInterval: .milliseconds(500), granted: (5, "b:2"))
        _ = machine.handle(.start, at: t0)
        #expect(machine.handle(.fenceRequested(epoch: 5, leader: "c:3"), at: t0) == [.refuse("epoch 5 was already granted to b:2")])
        #expect(machine.handle(.fenceRequested(epoch: 5, leader: "b:2"), at: t0).allSatisfy { if case .refuse = $0 { false } else { true } })
    }

    @Test("after stop nothing starts, and a fence is refused")
    func stopped() {
        var machine = machine(follow: "b:2")
        _ = machine.handle(.start, at: t0)
        let actions = machine.handle(.stop, at: t0)
        #expect(actions == [.setWritable(false), .stopFollowing, .failQuorumWaits])
        #expect(machine.handle(.followEnded(leader: "b:2", .failed), at: t0).isEmpty)
        #expect(machine.handle(.fenceRequested(epoch: 9, leader: "c:3"), at: t0) == [.refuse("this node is stopping")])
    }
}
