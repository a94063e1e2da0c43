@testable import ChordStoreReplication
import Testing

/// The coordinated mode's scenarios on the pure machine: elections, the takeover, the
/// lease and its lapse, the key seen changing hands, handovers. Time is made up: `t0`
/// plus offsets.
@Suite("Role machine: coordinated mode")
struct RoleMachineCoordinatedTests {
    static let members = Membership(["a:1", "b:2", "c:3"], revision: 5)
    let t0 = ContinuousClock.now
    let timing = LeaseTiming(ttl: .seconds(2))

    func machine(me: String = "a:1", epoch: UInt64 = 3) -> RoleMachine {
        RoleMachine(me: me, mode: .coordinated, epoch: epoch, members: Membership([]), timing: timing, probeInterval: .milliseconds(500))
    }

    func view(leader: LeaderClaim? = nil, members: Membership = Self.members) -> ClusterView {
        ClusterView(leader: leader, members: members, revision: 10)
    }

    static func peer(_ address: String, lastEpoch: UInt64 = 3, last: UInt64 = 10, epoch: UInt64 = 3) -> PeerView {
        PeerView(address: address, leading: false, epoch: epoch, lastEpoch: lastEpoch, lastSequence: last)
    }

    /// Starts `machine`, shows it a free key, and returns the generation of its poll.
    func electing(_ machine: inout RoleMachine) -> UInt64? {
        #expect(machine.handle(.start, at: t0) == [.setWritable(false), .watchCluster])
        #expect(machine.handle(.incarnationChecked(true), at: t0).isEmpty)
        let actions = machine.handle(.clusterSeen(view()), at: t0)
        #expect(actions.first == .setMembers(Self.members))
        guard case .probeMembers(let generation)? = actions.last else {
            Issue.record("no poll of the members: \(actions)")
            return nil
        }
        return generation
    }

    /// Starts `machine`, shows it a free key and no other member, and returns the floor
    /// and generation of the campaign it starts.
    func campaigning(_ machine: inout RoleMachine) -> (floor: UInt64, generation: UInt64)? {
        guard let poll = electing(&machine) else { return nil }
        guard case .campaign(let floor, let generation)? = machine.handle(.membersProbed(own: Self.peer(machine.me), [], generation: poll), at: t0).first else {
            Issue.record("no campaign")
            return nil
        }
        return (floor, generation)
    }

    /// Drives `machine` to lead with `epoch` under a lease valid until `t0 + 1.5 s`.
    func leading(_ machine: inout RoleMachine, epoch: UInt64 = 4) -> HeldLease? {
        guard let (floor, generation) = campaigning(&machine) else { return nil }
        #expect(floor == 3)
        let lease = HeldLease(id: 77, validUntil: timing.validUntil(sentAt: t0, granted: .seconds(2)))
        let won = machine.handle(.campaignEnded(.won(epoch: epoch, lease: lease), generation: generation), at: t0)
        guard case .takeOver(epoch, let takeover)? = won.dropFirst(2).first else {
            Issue.record("no takeover: \(won)")
            return nil
        }
        #expect(Array(won.prefix(2)) == [.stopFollowing, .renewLease(id: 77)])
        #expect(machine.writeRefusal(at: t0) == "")  // not before the fence is done
        let led = machine.handle(.takeoverEnded(.ready, generation: takeover), at: t0)
        #expect(Array(led.prefix(3)) == [.resetFollowers, .setWriteDeadline(lease.validUntil), .setWritable(true)])
        return lease
    }

    @Test("the member furthest ahead stands at once; the one behind leaves it the key and looks again")
    func furthestAheadStands() {
        var ahead = machine()
        guard let poll = electing(&ahead) else { return }
        let stands = ahead.handle(.membersProbed(own: Self.peer("a:1", last: 20), [Self.peer("b:2", last: 10), Self.peer("x:9", last: 99)], generation: poll), at: t0)
        #expect(stands == [.campaign(floor: 3, generation: poll)])

        var behind = machine(me: "b:2")
        guard let second = electing(&behind) else { return }
        let yields = behind.handle(.membersProbed(own: Self.peer("b:2", last: 10), [Self.peer("a:1", last: 20)], generation: second), at: t0)
        #expect(yields.first == .after(timing.recheck, .electionDue(generation: second)))
        #expect(behind.phase == .electing(.yielding))
        // A newer epoch's shorter log is ahead of an older epoch's longer one.
        var older = machine(me: "c:3")
        guard let third = electing(&older) else { return }
        let decision = older.handle(.membersProbed(own: Self.peer("c:3", lastEpoch: 2, last: 50), [Self.peer("a:1", lastEpoch: 3, last: 5)], generation: third), at: t0)
        #expect(decision.first == .after(timing.recheck, .electionDue(generation: third)))
        // When the key is taken meanwhile, the recheck does nothing and it follows.
        _ = behind.handle(.clusterSeen(view(leader: LeaderClaim(address: "a:1", node: "a", epoch: 4, lease: 1))), at: t0)
        #expect(behind.phase == .following(leader: "a:1"))
        #expect(behind.handle(.electionDue(generation: second), at: t0).isEmpty)
    }

    @Test("members with level logs stand one after the other by address, the epoch floor the highest seen")
    func levelLogsStagger() {
        var machine = machine(me: "c:3")
        guard let poll = electing(&machine) else { return }
        let waits = machine.handle(.membersProbed(own: Self.peer("c:3"), [Self.peer("a:1", epoch: 6), Self.peer("b:2")], generation: poll), at: t0)
        #expect(waits == [.after(timing.stagger * 2, .electionDue(generation: poll))])
        #expect(machine.handle(.electionDue(generation: poll), at: t0) == [.campaign(floor: 6, generation: poll)])
    }

    @Test("leading: writes only within the lease; renewals extend it; a lapsed lease at the coordinator steps it down")
    func leaseBoundsWrites() {
        var machine = machine()
        guard let lease = leading(&machine) else { return }
        #expect(machine.isLeading && machine.epoch == 4 && machine.granted?.leader == "a:1")
        #expect(machine.writeRefusal(at: lease.validUntil - .milliseconds(1)) == nil)
        #expect(machine.writeRefusal(at: lease.validUntil) == "")  // still the leader, but takes no write
        let later = t0 + .seconds(1)
        #expect(machine.handle(.leaseRenewed(id: 77, validUntil: later + .milliseconds(1_500)), at: later) == [.setWriteDeadline(later + .milliseconds(1_500))])
        #expect(machine.writeRefusal(at: lease.validUntil) == nil)
        #expect(machine.handle(.leaseRenewed(id: 12, validUntil: later + .seconds(9)), at: later).isEmpty)  // another lease
        let gone = machine.handle(.leaseGone(id: 77), at: later)
        #expect(gone.first == .setWritable(false))
        #expect(!gone.contains { if case .resign = $0 { true } else { false } })  // nothing left to give up
        #expect(machine.phase == .following(leader: nil) && machine.lease == nil)
    }

    @Test("the key gone or held by another: the leader steps down and gives its lease up; with the key free it stands again")
    func keyChangesHands() {
        var machine = machine()
        guard leading(&machine) != nil else { return }
        let other = LeaderClaim(address: "b:2", node: "b", epoch: 5, lease: 88)
        let actions = machine.handle(.clusterSeen(view(leader: other)), at: t0)
        // The deadline stays: a commit in flight is judged by it, and the closed gate.
        #expect(Array(actions.prefix(2)) == [.setWritable(false), .resign(lease: 77)])
        #expect(!actions.contains { if case .setWriteDeadline = $0 { true } else { false } })
        #expect(actions.contains(.follow("b:2")))
        var again = self.machine()
        guard leading(&again) != nil else { return }
        let free = again.handle(.clusterSeen(view()), at: t0)
        #expect(free.first == .setWritable(false))
        #expect(free.contains { if case .probeMembers = $0 { true } else { false } })
        #expect(again.phase == .electing(.ranking))
    }

    @Test("a takeover refused (a member ahead) gives the key up and sits out the next election for a while")
    func refusedTakeover() {
        var machine = machine()
        guard let generation = campaigning(&machine)?.generation else { return }
        let lease = HeldLease(id: 5, validUntil: t0 + .seconds(1))
        guard case .takeOver(_, let takeover)? = machine.handle(.campaignEnded(.won(epoch: 4, lease: lease), generation: generation), at: t0).dropFirst(2).first else { Issue.record("the expected action is missing"); return }
        let refused = machine.handle(.takeoverEnded(.refused("b:2 is ahead"), generation: takeover), at: t0)
        #expect(refused.contains(.resign(lease: 5)))
        #expect(!refused.contains(.setWritable(true)))
        let free = machine.handle(.clusterSeen(view()), at: t0 + .milliseconds(100))
        #expect(free.last == .after(timing.retryAfterRefusal - .milliseconds(100), .electionDue(generation: machine.generation)))
        #expect(machine.phase == .electing(.yielding))
    }

    @Test("a takeover that ends after the lease lapsed does not lead")
    func takeoverTooLate() {
        var machine = machine()
        guard let generation = campaigning(&machine)?.generation else { return }
        let lease = HeldLease(id: 5, validUntil: t0 + .seconds(1))
        guard case .takeOver(_, let takeover)? = machine.handle(.campaignEnded(.won(epoch: 4, lease: lease), generation: generation), at: t0).dropFirst(2).first else { Issue.record("the expected action is missing"); return }
        let actions = machine.handle(.takeoverEnded(.ready, generation: takeover), at: t0 + .seconds(2))
        #expect(!actions.contains(.setWritable(true)))
        #expect(actions.contains(.resign(lease: 5)))
    }

    @Test("a key won while the node stops is given up; its own win seen first in the watch is not revoked")
    func staleWin() {
        var machine = machine()
        guard let generation = campaigning(&machine)?.generation else { return }
        let own = LeaderClaim(address: "a:1", node: "a", epoch: 4, lease: 9)
        #expect(machine.handle(.clusterSeen(view(leader: own)), at: t0).isEmpty)  // the watch was faster than the answer
        _ = machine.handle(.stop, at: t0)
        #expect(machine.handle(.campaignEnded(.won(epoch: 4, lease: HeldLease(id: 9, validUntil: t0)), generation: generation), at: t0) == [.resign(lease: 9)])
    }

    @Test("a key held under this address by an earlier run is revoked; a learner never stands")
    func earlierRunAndLearner() {
        var machine = machine()
        _ = machine.handle(.start, at: t0)
        let stale = LeaderClaim(address: "a:1", node: "a", epoch: 3, lease: 41)
        let actions = machine.handle(.clusterSeen(view(leader: stale)), at: t0)
        #expect(actions.contains(.revokeStale(stale)))
        #expect(machine.phase == .following(leader: nil))

        var learner = self.machine(me: "d:4")
        _ = learner.handle(.start, at: t0)
        _ = learner.handle(.incarnationChecked(true), at: t0)  // it vouches: only not being a member keeps it out
        let free = learner.handle(.clusterSeen(view()), at: t0)
        #expect(!free.contains { if case .probeMembers = $0 { true } else { false } })
        #expect(!learner.isMember)
        _ = learner.handle(.clusterSeen(view(leader: LeaderClaim(address: "b:2", node: "b", epoch: 4, lease: 2))), at: t0)
        #expect(learner.phase == .following(leader: "b:2"))
    }

    @Test("a key won under a lease this process was granted, after its campaign was given up as failed, is its own: taken over, not revoked as an earlier run's")
    func ownLateWinIsTakenOver() {
        var machine = machine()
        guard let (_, generation) = campaigning(&machine) else { return }
        let granted = HeldLease(id: 55, validUntil: timing.validUntil(sentAt: t0, granted: .seconds(2)))
        #expect(machine.handle(.leaseGranted(granted), at: t0).isEmpty)
        // The transaction applied, but its answer and the read after it were lost (a
        // member killed and restarted, etcd slow): the campaign reports a failure.
        let failed = machine.handle(.campaignEnded(.failed("deadline exceeded"), generation: generation), at: t0)
        #expect(machine.phase == .electing(.yielding), "\(failed)")
        let own = LeaderClaim(address: "a:1", node: "a", epoch: 4, lease: 55)
        let seen = machine.handle(.clusterSeen(view(leader: own)), at: t0 + .milliseconds(100))
        #expect(!seen.contains { if case .revokeStale = $0 { true } else { false } }, "\(seen)")
        #expect(Array(seen.prefix(2)) == [.stopFollowing, .renewLease(id: 55)], "\(seen)")
        guard case .takeOver(4, let takeover)? = seen.dropFirst(2).first else {
            Issue.record("no takeover: \(seen)")
            return
        }
        #expect(machine.lease == granted && machine.phase == .takingOver(epoch: 4))
        let led = machine.handle(.takeoverEnded(.ready, generation: takeover), at: t0 + .milliseconds(200))
        #expect(led.contains(.setWritable(true)) && machine.isLeading && machine.epoch == 4)
    }

    @Test("the watch shows this process's own key while its campaign runs, then the campaign fails (its answer lost): the key is taken over, not left to lapse")
    func ownKeySeenBeforeTheFailure() {
        var machine = machine()
        guard let (_, generation) = campaigning(&machine) else { return }
        let granted = HeldLease(id: 58, validUntil: timing.validUntil(sentAt: t0, granted: .seconds(2)))
        _ = machine.handle(.leaseGranted(granted), at: t0)
        let own = LeaderClaim(address: "a:1", node: "a", epoch: 4, lease: 58)
        #expect(machine.handle(.clusterSeen(view(leader: own)), at: t0).isEmpty, "while campaigning, its own key waits for the answer")
        let failed = machine.handle(.campaignEnded(.failed("the answer was lost"), generation: generation), at: t0 + .milliseconds(50))
        #expect(failed.contains(.renewLease(id: 58)) && failed.contains { if case .takeOver(4, _) = $0 { true } else { false } }, "\(failed)")
        #expect(machine.lease == granted && machine.phase == .takingOver(epoch: 4))
    }

    @Test("a key won under this process's lease after the machine moved on to follow another is given up, not blamed on an earlier run; after a restart the same key is an earlier run's")
    func ownLateWinGivenUpWhenFollowing() {
        var machine = machine()
        guard let (_, generation) = campaigning(&machine) else { return }
        _ = machine.handle(.leaseGranted(HeldLease(id: 56, validUntil: t0 + .seconds(2))), at: t0)
        _ = machine.handle(.campaignEnded(.failed("timeout"), generation: generation), at: t0)
        _ = machine.handle(.clusterSeen(view(leader: LeaderClaim(address: "b:2", node: "b", epoch: 5, lease: 2))), at: t0)
        #expect(machine.phase == .following(leader: "b:2"))
        // Not a state a cluster reaches (the key has one holder), but the order of watch
        // events is the coordinator's: this member follows b, so its own key goes.
        _ = machine.handle(.leaseGranted(HeldLease(id: 57, validUntil: t0 + .seconds(2))), at: t0)  // valid: only following keeps it out
        let own = LeaderClaim(address: "a:1", node: "a", epoch: 6, lease: 57)
        let seen = machine.handle(.clusterSeen(view(leader: own)), at: t0 + .milliseconds(10))
        #expect(seen.contains(.resign(lease: 57)) && !seen.contains { if case .revokeStale = $0 { true } else { false } }, "\(seen)")
        #expect(machine.lease == nil)

        #expect(machine.phase == .following(leader: "b:2"))

        var restarted = self.machine()  // a new process: it was granted nothing
        _ = restarted.handle(.start, at: t0)
        #expect(restarted.handle(.clusterSeen(view(leader: own)), at: t0).contains(.revokeStale(own)))
    }

    @Test("a handover closes the gate but keeps serving followers; done, it follows; failed, it leads again")
    func handOver() {
        var machine = machine()
        guard let lease = leading(&machine) else { return }
        #expect(machine.handle(.handOverStarted, at: t0).first == .setWritable(false))
        #expect(machine.servesReplication && machine.writeRefusal(at: t0) == "")
        #expect(machine.handle(.handOverEnded(false), at: t0).prefix(2) == [.setWriteDeadline(lease.validUntil), .setWritable(true)])
        _ = machine.handle(.handOverStarted, at: t0)
        let done = machine.handle(.handOverEnded(true), at: t0)
        #expect(done.contains(.resign(lease: 77)))
        #expect(machine.phase == .following(leader: nil))
        #expect(!machine.servesReplication)
    }

    @Test("promote is refused; stop gives the key up")
    func promoteAndStop() {
        var machine = machine()
        guard leading(&machine) != nil else { return }
        guard case .refuse(let reason)? = machine.handle(.promoteRequested(force: false), at: t0).first else {
            Issue.record("promote not refused")
            return
        }
        #expect(reason.contains("coordinator"))
        #expect(machine.handle(.stop, at: t0).contains(.resign(lease: 77)))
    }

    @Test("a lost campaign with no winner in view, or a step-down with the key's fate unknown, looks again after a second and stands if the key is free")
    func noLeaderInView() throws {
        var machine = machine()
        let generation = try #require(campaigning(&machine)).generation
        // Another member won and gave the key up again within one answer of the watch:
        // this member never sees it held.
        let lost = machine.handle(.campaignEnded(.lost, generation: generation), at: t0)
        #expect(machine.phase == .following(leader: nil))
        guard case .after(let delay, .electionDue(let due))? = lost.last else {
            Issue.record("no look again: \(lost)")
            return
        }
        #expect(delay == timing.recheck)
        let again = machine.handle(.electionDue(generation: due), at: t0 + delay)
        #expect(again.contains { if case .probeMembers = $0 { true } else { false } })
        #expect(machine.phase == .electing(.ranking))
        // A member whose own log cannot be read does not stand, and looks again.
        guard case .probeMembers(let next)? = again.last else { return }
        #expect(machine.handle(.membersProbed(own: nil, [], generation: next), at: t0).first == .after(timing.recheck, .electionDue(generation: next)))
        #expect(machine.phase == .electing(.yielding))
    }

    @Test("a key won after the machine moved on to another leader is given up at once")
    func winAfterMovingOn() throws {
        var machine = machine()
        let generation = try #require(campaigning(&machine)).generation
        _ = machine.handle(.clusterSeen(view(leader: LeaderClaim(address: "b:2", node: "b", epoch: 4, lease: 8))), at: t0)
        #expect(machine.phase == .following(leader: "b:2"))
        let late = machine.handle(.campaignEnded(.won(epoch: 5, lease: HeldLease(id: 9, validUntil: t0 + .seconds(1))), generation: generation), at: t0)
        #expect(late == [.resign(lease: 9)])
        #expect(machine.phase == .following(leader: "b:2") && machine.lease == nil)
    }

    @Test("a leader whose lease lapsed names no leader, so clients look elsewhere; renewed, it names itself again")
    func lapsedLeaderNamesNone() throws {
        var machine = machine()
        let lease = try #require(leading(&machine))
        #expect(machine.leader(at: t0) == "a:1")
        #expect(machine.leader(at: lease.validUntil) == nil)
        _ = machine.handle(.leaseRenewed(id: 77, validUntil: lease.validUntil + .seconds(5)), at: lease.validUntil)
        #expect(machine.leader(at: lease.validUntil) == "a:1")
    }

    @Test("a data directory the coordinator does not know for this member (lost, restored) neither stands nor grants a fence until it has copied a leader")
    func unknownDirectoryDoesNotVouch() throws {
        var wiped = machine()
        _ = wiped.handle(.start, at: t0)
        #expect(!wiped.vouches)  // not before the coordinator has said
        let said = wiped.handle(.incarnationChecked(false), at: t0)
        #expect(said.count == 1)  // a warning, nothing else
        let seen = wiped.handle(.clusterSeen(view()), at: t0)
        #expect(!seen.contains { if case .probeMembers = $0 { true } else { false } })
        #expect(!wiped.mayVote)
        guard case .refuse(let reason)? = wiped.handle(.fenceRequested(epoch: 49, leader: "c:3"), at: t0).first else {
            Issue.record("the fence was granted")
            return
        }
        #expect(reason.contains("cannot vouch"))
        // Once it has copied a leader, it records its directory and counts again.
        _ = wiped.handle(.clusterSeen(view(leader: LeaderClaim(address: "b:2", node: "b", epoch: 50, lease: 1))), at: t0)
        #expect(wiped.handle(.caughtUp, at: t0) == [.recordIncarnation])
        #expect(wiped.mayVote)
        #expect(wiped.handle(.caughtUp, at: t0).isEmpty)
        #expect(wiped.handle(.fenceRequested(epoch: 51, leader: "c:3"), at: t0).isEmpty)
        // A directory the coordinator knows vouches at once.
        var known = machine()
        _ = known.handle(.start, at: t0)
        _ = known.handle(.incarnationChecked(true), at: t0)
        #expect(known.mayVote == false && known.vouches)  // a member once the list names it
        _ = known.handle(.clusterSeen(view()), at: t0)
        #expect(known.mayVote)
    }

    @Test("a late fence from a member whose claim was replaced neither is granted nor moves a follower off the key's holder; a newer one does")
    func lateFenceIsRefused() {
        var follower = machine(epoch: 17)
        _ = follower.handle(.start, at: t0)
        _ = follower.handle(.incarnationChecked(true), at: t0)
        _ = follower.handle(.clusterSeen(view(leader: LeaderClaim(address: "b:2", node: "b", epoch: 20, lease: 1))), at: t0)
        #expect(follower.phase == .following(leader: "b:2"))
        guard case .refuse(let reason)? = follower.handle(.fenceRequested(epoch: 18, leader: "c:3"), at: t0).first else {
            Issue.record("the late fence was granted")
            return
        }
        #expect(reason.contains("leader key"))
        // One granted just before the view changed, persisted after: it stays with b:2.
        #expect(follower.handle(.fenced(epoch: 18, leader: "c:3"), at: t0).isEmpty)
        #expect(follower.phase == .following(leader: "b:2") && follower.epoch == 18)
        // A fence newer than the key's holder's epoch is the next leader's: granted, followed.
        #expect(follower.handle(.fenceRequested(epoch: 21, leader: "c:3"), at: t0).isEmpty)
        _ = follower.handle(.fenced(epoch: 21, leader: "c:3"), at: t0)
        #expect(follower.phase == .following(leader: "c:3"))
        // If c:3 never takes the key and stops serving, the follower goes back to its holder.
        _ = follower.handle(.followEnded(leader: "c:3", .redirected(to: nil)), at: t0)
        #expect(follower.phase == .following(leader: "b:2"))
    }

    @Test("a leader that hears from no majority for twice its lease gives the key up and sits out the next election; one that does, leads on")
    func checkQuorum() throws {
        var machine = machine()
        _ = try #require(leading(&machine))
        #expect(machine.handle(.quorumChecked(inTouch: 1), at: t0).isEmpty)  // the window starts
        #expect(machine.handle(.quorumChecked(inTouch: 1), at: t0 + timing.touchWindow - .milliseconds(1)).isEmpty)
        #expect(machine.handle(.quorumChecked(inTouch: 2), at: t0 + timing.touchWindow).isEmpty)  // heard again: a new window
        #expect(machine.handle(.quorumChecked(inTouch: 1), at: t0 + timing.touchWindow * 2 - .milliseconds(1)).isEmpty)
        let gave = machine.handle(.quorumChecked(inTouch: 1), at: t0 + timing.touchWindow * 2)
        #expect(gave.contains(.setWritable(false)) && gave.contains(.resign(lease: 77)))
        #expect(machine.phase == .following(leader: nil))
        let free = machine.handle(.clusterSeen(view()), at: t0 + timing.touchWindow * 2)
        #expect(machine.phase == .electing(.yielding))
        #expect(free.last == .after(timing.retryAfterRefusal, .electionDue(generation: machine.generation)))
    }

    @Test("the lease's timing keeps Patroni's inequality for every time to live")
    func timingIsSafe() {
        for seconds in 2...60 {
            let timing = LeaseTiming(ttl: .seconds(seconds))
            #expect(timing.isSafe)
            #expect(timing.validUntil(sentAt: t0, granted: .seconds(seconds)) == t0 + .seconds(seconds) - timing.margin)
        }
    }
}
