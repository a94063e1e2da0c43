/// Who stands for the leader key when it is free: the member whose log is furthest ahead
/// (by last epoch, then length), so that a lagging member never leads while one holding
/// more acknowledged writes is reachable. Members whose logs are level stand one after
/// the other by address, ``LeaseTiming/stagger`` apart. Pure: decided from the members'
/// statuses.
///
/// Standing is only a courtesy that keeps elections quick: safety comes from the
/// takeover, which fences a majority and refuses to lead if any of them is ahead.
enum Election {
    /// What a member does about a free leader key.
    enum Decision: Sendable, Hashable {
        /// Take it now, with an epoch above `floor`.
        case stand(floor: UInt64)
        /// Take it after `delay` (members before it in line go first), with an epoch
        /// above `floor`, unless someone has taken it by then.
        case standAfter(Duration, floor: UInt64)
        /// Leave it to these members, whose logs are ahead; look again later.
        case yield(to: [String])
    }

    /// The decision of `me` given the statuses of the members that answered.
    static func decide(me: PeerView, answered: [PeerView], members: Membership, timing: LeaseTiming) -> Decision {
        let others = answered.filter { $0.address != me.address && members.contains($0.address) }
        let floor = ([me.epoch] + answered.map(\.epoch)).max() ?? me.epoch
        let ahead = others.filter { $0.isAhead(of: me) }
        if !ahead.isEmpty { return .yield(to: ahead.map(\.address).sorted()) }
        let before = others.count { $0.isLevel(with: me) && $0.address < me.address }
        return before == 0 ? .stand(floor: floor) : .standAfter(timing.stagger * before, floor: floor)
    }
}
