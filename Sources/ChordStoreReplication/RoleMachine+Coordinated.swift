/// The coordinated mode's transitions: the leader key seen, elections, the takeover, the
/// lease.
extension RoleMachine {
    /// The coordinator's view changed: follow the key's holder, step down if it is no
    /// longer this member, stand for election when the key is free.
    mutating func clusterSeen(_ view: ClusterView, at now: ContinuousClock.Instant) -> [Action] {
        let previous = cluster
        cluster = view
        var actions: [Action] = []
        if previous?.members != view.members {
            members = view.members
            actions.append(.setMembers(view.members))
        }
        switch view.leader {
        case let claim? where claim.address == me:
            if phase == .campaigning { return actions }  // this member's own win, seen before its answer
            if let lease, lease.id == claim.lease { return actions }
            if let own = grantedLeases.firstIndex(where: { $0.id == claim.lease }) {
                return actions + ownLateWin(claim, lease: grantedLeases.remove(at: own), at: now)
            }
            // A claim of this address under a lease this process was never granted: an
            // earlier run of this member, killed while it led. The lease would lapse by
            // itself; revoking it starts the election now.
            actions.append(.revokeStale(claim))
            if isLeadingOrTakingOver { return actions + stepDown(to: nil, reason: "the leader key is held under another lease") }
            return actions + switchLeader(to: nil, reason: "an earlier run of this node held the leader key; it is revoked")
        case let claim?:
            if isLeadingOrTakingOver {
                return actions + stepDown(to: claim.address, reason: "\(claim.address) holds the leader key, epoch \(claim.epoch)")
            }
            return actions + switchLeader(to: claim.address, reason: "\(claim.address) holds the leader key, epoch \(claim.epoch)")
        case nil:
            if isLeadingOrTakingOver {
                actions += stepDown(to: nil, reason: "the leader key is gone: this node's lease lapsed in the coordinator")
            }
            guard case .following = phase else { return actions }
            return actions + (mayVote ? startElection(at: now) : switchLeader(to: nil, reason: "no member leads"))
        }
    }

    /// The key under `lease`, which this process was granted for a campaign it gave up on
    /// (its answer was lost or came late): taken over if this member may lead now, as a
    /// won campaign would be, else given up. Either way no earlier run is blamed, and a
    /// key won is not thrown away for another epoch.
    private mutating func ownLateWin(_ claim: LeaderClaim, lease: HeldLease, at now: ContinuousClock.Instant) -> [Action] {
        let free = phase == .following(leader: nil) || { if case .electing = phase { return true } else { return false } }()
        guard free, mayVote, notBefore.map({ now >= $0 }) ?? true, now < lease.validUntil else {
            return [.resign(lease: claim.lease), .log(LogLine(.notice, "gave up the leader key this node's own campaign took after it had moved on", ["epoch": "\(claim.epoch)"]))]
        }
        return takeKey(epoch: claim.epoch, lease: lease, note: "took the leader key (its campaign's answer was lost)")
    }

    /// The key is this member's with `epoch` under `lease`: fence the members and lead.
    private mutating func takeKey(epoch: UInt64, lease: HeldLease, note: String) -> [Action] {
        grantedLeases.removeAll()
        self.lease = lease
        phase = .takingOver(epoch: epoch)
        generation += 1
        return [
            .stopFollowing, .renewLease(id: lease.id), .takeOver(epoch: epoch, generation: generation),
            .log(LogLine(.notice, note, ["epoch": "\(epoch)"])),
        ]
    }

    /// The key is free: a member ranks itself among the others (or waits out a refusal).
    mutating func startElection(at now: ContinuousClock.Instant) -> [Action] {
        generation += 1
        var actions: [Action] = phase == .following(leader: nil) ? [] : [.follow(nil)]
        if let notBefore, now < notBefore {
            phase = .electing(.yielding)
            actions.append(.after(notBefore - now, .electionDue(generation: generation)))
        } else {
            phase = .electing(.ranking)
            actions.append(.probeMembers(generation: generation))
        }
        return actions
    }

    mutating func membersProbed(own: PeerView?, _ answered: [PeerView], generation: UInt64) -> [Action] {
        guard generation == self.generation, phase == .electing(.ranking), cluster?.leader == nil, mayVote else { return [] }
        guard let own else {
            phase = .electing(.yielding)
            return [
                .after(timing.recheck, .electionDue(generation: generation)),
                .log(LogLine(.warning, "cannot read this node's log to stand for leader; looking again")),
            ]
        }
        switch Election.decide(me: own, answered: answered, members: members, timing: timing) {
        case .stand(let floor):
            phase = .campaigning
            return [.campaign(floor: max(floor, epoch), generation: generation)]
        case .standAfter(let delay, let floor):
            phase = .electing(.waiting(floor: max(floor, epoch)))
            return [.after(delay, .electionDue(generation: generation))]
        case .yield(let ahead):
            phase = .electing(.yielding)
            return [
                .after(timing.recheck, .electionDue(generation: generation)),
                .log(LogLine(.info, "leaving the leader key to a member further ahead", ["ahead": ahead.joined(separator: ", ")])),
            ]
        }
    }

    mutating func electionDue(generation: UInt64, at now: ContinuousClock.Instant) -> [Action] {
        guard generation == self.generation, mayVote else { return [] }
        if phase == .following(leader: nil) {
            // No leader known for a while: follow the key's holder, or stand if it is free.
            if let claim = cluster?.leader, claim.address != me {
                return switchLeader(to: claim.address, reason: "\(claim.address) holds the leader key, epoch \(claim.epoch)")
            }
            if cluster?.leader == nil { return startElection(at: now) }
            return [.after(timing.recheck, .electionDue(generation: generation))]  // this node's own claim, not yet gone
        }
        guard case .electing(let step) = phase, cluster?.leader == nil else { return [] }
        switch step {
        case .waiting(let floor):
            phase = .campaigning
            return [.campaign(floor: floor, generation: generation)]
        case .yielding:
            if let notBefore, now < notBefore { return [.after(notBefore - now, .electionDue(generation: generation))] }
            phase = .electing(.ranking)
            return [.probeMembers(generation: generation)]
        case .ranking:
            return []
        }
    }

    mutating func campaignEnded(_ outcome: CampaignOutcome, generation: UInt64, at now: ContinuousClock.Instant) -> [Action] {
        guard generation == self.generation, phase == .campaigning else {
            // The machine moved on: a key won meanwhile is given up at once.
            if case .won(_, let lease) = outcome { return [.resign(lease: lease.id)] }
            return []
        }
        switch outcome {
        case .won(let won, let lease):
            return takeKey(epoch: won, lease: lease, note: "took the leader key")
        case .lost:
            let winner = cluster?.leader?.address
            phase = .following(leader: winner)
            self.generation += 1
            return [.follow(winner)] + (winner == nil ? lookForLeader() : [])
        case .failed(let reason):
            phase = .electing(.yielding)
            let failed: [Action] = [.log(LogLine(.warning, "could not stand for leader", ["reason": reason]))]
            // The watch showed this process's own key while the campaign ran (its answer
            // was lost after the key was written): it is this member's after all.
            if let claim = cluster?.leader, claim.address == me, let own = grantedLeases.firstIndex(where: { $0.id == claim.lease }) {
                return failed + ownLateWin(claim, lease: grantedLeases.remove(at: own), at: now)
            }
            return [.after(timing.recheck, .electionDue(generation: generation))] + failed
        }
    }

    mutating func takeoverEnded(_ outcome: TakeoverOutcome, generation: UInt64, at now: ContinuousClock.Instant) -> [Action] {
        guard generation == self.generation, case .takingOver(let taken) = phase else { return [] }
        switch outcome {
        case .ready:
            guard let lease, now < lease.validUntil else { return refuseTakeover("the lease lapsed during the takeover", at: now) }
            epoch = max(epoch, taken)
            granted = (taken, me)
            return lead(reason: "took the leader key and fenced a majority")
        case .refused(let reason):
            return refuseTakeover(reason, at: now)
        }
    }

    /// Gives the key up after a refused takeover and stays out of elections for a while,
    /// so that a member further ahead takes it.
    private mutating func refuseTakeover(_ reason: String, at now: ContinuousClock.Instant) -> [Action] {
        notBefore = now + timing.retryAfterRefusal
        return [.log(LogLine(.warning, "not leading after all", ["reason": reason]))] + stepDown(to: nil, reason: "takeover refused")
    }

    mutating func leaseRenewed(id: Int64, validUntil: ContinuousClock.Instant) -> [Action] {
        guard var held = lease, held.id == id else { return [] }
        held.validUntil = max(held.validUntil, validUntil)
        lease = held
        return phase == .leading ? [.setWriteDeadline(held.validUntil)] : []
    }

    mutating func leaseGone(id: Int64) -> [Action] {
        guard let held = lease, held.id == id else { return [] }
        lease = nil
        guard isLeadingOrTakingOver else { return [] }
        return stepDown(to: nil, reason: "the coordinator let this node's lease lapse")
    }

    /// A leader that has not heard from a majority of the members (itself included) for
    /// ``LeaseTiming/touchWindow`` gives the key up: it may still reach the coordinator
    /// while its followers and clients cannot reach it (a partial partition), and then
    /// nothing else would replace it. It sits out the next elections for a while, so that
    /// a member the others reach takes over.
    mutating func quorumChecked(inTouch: Int, at now: ContinuousClock.Instant) -> [Action] {
        guard phase == .leading, isCoordinated else { return [] }
        if inTouch >= members.majority {
            leadingSince = now
            return []
        }
        guard let since = leadingSince else {
            leadingSince = now  // the window starts with leading
            return []
        }
        guard now - since >= timing.touchWindow else { return [] }
        notBefore = now + timing.retryAfterRefusal
        return [.log(LogLine(.warning, "heard from only \(inTouch) of \(members.addresses.count) members for \(timing.touchWindow): giving the leader key up"))]
            + stepDown(to: nil, reason: "out of touch with a majority")
    }
}
