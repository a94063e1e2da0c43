/// Whether a node should be sent traffic (`/health/ready`): a pure decision over what the
/// node reports, so that every case is tested without a server.
///
/// A node is ready when it is open and not shutting down, and, on a follower, when it has
/// heard from its leader lately and is at most ``Policy/maxLagEvents`` behind it. A full
/// disk or map, which refuses writes but serves reads, keeps a node ready: the report says
/// so in `writes`.
public struct Readiness: Sendable, Hashable, Codable {
    /// `ready` or `not ready`.
    public var status: String
    /// `leader` or `follower`.
    public var role: String
    /// Why the node is not ready (empty when it is).
    public var reasons: [String]
    /// `accepted`, or why writes are refused now.
    public var writes: String
    /// On a follower: how many events it is behind its leader, as last heard.
    public var lagEvents: UInt64?

    /// Whether the node is ready.
    public var isReady: Bool { reasons.isEmpty }

    /// How far behind a follower may be and still take reads.
    public struct Policy: Sendable, Hashable {
        /// Most events behind the leader.
        public var maxLagEvents: UInt64 = 1_000
        /// Longest without a word from the leader (a batch or a heartbeat every second).
        public var maxSilence: Duration = .seconds(5)

        /// The default policy.
        public init() {}
    }

    /// A follower's position against its leader's.
    public struct Following: Sendable, Hashable {
        /// Its last applied event.
        public var applied: UInt64
        /// The leader's last event, as last heard.
        public var leaderLast: UInt64
        /// How long ago the leader was last heard.
        public var silence: Duration

        /// Creates a position.
        public init(applied: UInt64, leaderLast: UInt64, silence: Duration) {
            self.applied = applied
            self.leaderLast = leaderLast
            self.silence = silence
        }
    }

    /// What the node reports.
    public struct Observation: Sendable, Hashable {
        /// The store is open.
        public var open = true
        /// The server is shutting down.
        public var draining = false
        /// Whether it leads (a lone server leads).
        public var leading = true
        /// On a follower: where it stands against its leader (`nil`: never heard from one).
        public var following: Following?
        /// Why writes are refused, if they are.
        public var writeRefusal: String?

        /// An open lone leader.
        public init() {}
    }

    /// The decision for `observation` under `policy`.
    public init(_ observation: Observation, policy: Policy = Policy()) {
        var reasons: [String] = []
        if !observation.open { reasons.append("the store is closed") }
        if observation.draining { reasons.append("the server is shutting down") }
        var lag: UInt64?
        if !observation.leading {
            if let following = observation.following {
                let behind = following.leaderLast > following.applied ? following.leaderLast - following.applied : 0
                lag = behind
                if following.silence > policy.maxSilence {
                    let tenths = following.silence / .milliseconds(100)
                    reasons.append("no word from the leader for \(Int(tenths) / 10).\(Int(tenths) % 10) s")
                }
                if behind > policy.maxLagEvents {
                    reasons.append("\(behind) events behind the leader (at most \(policy.maxLagEvents))")
                }
            } else {
                reasons.append("has not heard from a leader yet")
            }
        }
        self.status = reasons.isEmpty ? "ready" : "not ready"
        self.role = observation.leading ? "leader" : "follower"
        self.reasons = reasons
        self.writes = observation.writeRefusal.map { "refused: \($0)" } ?? (observation.leading ? "accepted" : "sent to the leader")
        self.lagEvents = lag
    }
}
