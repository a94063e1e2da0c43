/// The manual mode's transitions: the start probe, finding a lost leader, promotion.
extension RoleMachine {
    /// Manual start without `--follow`: follow a peer that leads with a newer epoch (a
    /// former leader coming back), else lead.
    mutating func startProbed(_ peers: [PeerView], generation: UInt64) -> [Action] {
        guard phase == .probing, generation == self.generation else { return [] }
        if let newer = peers.first(where: { $0.leading && $0.epoch > epoch && $0.address != me }) {
            phase = .following(leader: newer.address)
            return [.follow(newer.address), following(newer.address, reason: "\(newer.address) leads with epoch \(newer.epoch), newer than \(epoch)")]
        }
        return lead(reason: "no reachable peer leads with a newer epoch")
    }

    /// A look for the leader answered: follow the member found, if it is another; with no
    /// leader known, look again after ``probeInterval``.
    mutating func leaderFound(_ found: String?, generation: UInt64) -> [Action] {
        guard generation == self.generation, case .following(let current) = phase else { return [] }
        if let found, found != current {
            return switchLeader(to: found, reason: "\(found) leads with the newest epoch")
        }
        return current == nil ? [.after(probeInterval, .lookAgain(generation: generation))] : []
    }

    /// `promote`: a follower stops copying and runs the promotion; a leader is already
    /// promoted (no action: the caller answers with its status).
    mutating func promoteRequested(force: Bool) -> [Action] {
        if isCoordinated {
            return [.refuse(
                "the coordinator decides who leads in this cluster: a member whose log is furthest ahead takes over when the leader's lease lapses; to move leadership, remove the leader from the cluster (`chordstore cluster remove`)")]
        }
        switch phase {
        case .leading:
            return []
        case .following:
            phase = .promoting
            generation += 1
            return [.stopFollowing, .runPromotion(force: force, generation: generation)]
        default:
            return [.refuse("this node is already being promoted, or is stopping")]
        }
    }

    /// The promotion takes `claimed` for this member: each epoch goes to one leader, so
    /// one a fence granted to another leader (or a newer one) is refused. Two members
    /// promoted at once with the same epoch could otherwise fence each other with it.
    mutating func epochClaimed(_ claimed: UInt64) -> [Action] {
        guard phase == .promoting else { return [.refuse("this node is no longer being promoted")] }
        if let granted, granted.leader != me, granted.epoch >= claimed {
            return [.refuse("epoch \(granted.epoch) was already granted to \(granted.leader)")]
        }
        granted = (claimed, me)
        return []
    }

    mutating func promotionEnded(_ outcome: PromotionOutcome, generation: UInt64) -> [Action] {
        guard phase == .promoting, generation == self.generation else { return [] }
        switch outcome {
        case .promoted(let promoted):
            epoch = max(epoch, promoted)
            granted = (promoted, me)
            return lead(reason: "promoted")
        case .refused:
            phase = .following(leader: nil)
            self.generation += 1
            return [.follow(nil), following(nil, reason: "promotion refused"), .findLeader(generation: self.generation)]
        }
    }
}
