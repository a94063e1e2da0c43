/// The one error type of ChordStore. Its ``Code`` values are gRPC's status codes, so the
/// wire carries them unchanged.
public struct ChordStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error class (gRPC status code numbers).
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// The input is malformed or outside a documented limit.
        public static let invalidArgument = Code(rawValue: 3)
        /// A named chordset or chord does not exist.
        public static let notFound = Code(rawValue: 5)
        /// An id is already in use.
        public static let alreadyExists = Code(rawValue: 6)
        /// The caller may not do this (for example, speak for another cluster member).
        public static let permissionDenied = Code(rawValue: 7)
        /// A limit on stored data was reached.
        public static let resourceExhausted = Code(rawValue: 8)
        /// The state does not allow the operation (for example, a command id already used
        /// by another kind of command).
        public static let failedPrecondition = Code(rawValue: 9)
        /// A concurrency conflict: the item is not at the revision the command expected.
        public static let aborted = Code(rawValue: 10)
        /// A position past the end (for example a sequence number after the log's last).
        public static let outOfRange = Code(rawValue: 11)
        /// A bug or an unexpected storage failure.
        public static let `internal` = Code(rawValue: 13)
        /// The store cannot be used now (closed, or in use by another process).
        public static let unavailable = Code(rawValue: 14)
        /// Stored data is damaged.
        public static let dataLoss = Code(rawValue: 15)
        /// The call showed no valid credential (docs/SECURITY.md).
        public static let unauthenticated = Code(rawValue: 16)

        public var description: String {
            switch self {
            case .invalidArgument: "INVALID_ARGUMENT"
            case .notFound: "NOT_FOUND"
            case .alreadyExists: "ALREADY_EXISTS"
            case .permissionDenied: "PERMISSION_DENIED"
            case .resourceExhausted: "RESOURCE_EXHAUSTED"
            case .failedPrecondition: "FAILED_PRECONDITION"
            case .aborted: "ABORTED"
            case .outOfRange: "OUT_OF_RANGE"
            case .internal: "INTERNAL"
            case .unavailable: "UNAVAILABLE"
            case .dataLoss: "DATA_LOSS"
            case .unauthenticated: "UNAUTHENTICATED"
            default: "CODE_\(rawValue)"
            }
        }
    }

    /// The error class.
    public var code: Code
    /// A sentence for a person: what was wrong and, where it helps, the limit.
    public var message: String
    /// The lower-level error, if any (for example an LMDB error).
    public var cause: (any Error)?
    /// With ``Code/aborted`` for an expected-revision mismatch: the item's revision now.
    public var currentRevision: UInt64?

    /// Creates an error.
    public init(_ code: Code, _ message: String, cause: (any Error)? = nil, currentRevision: UInt64? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
        self.currentRevision = currentRevision
    }

    public var description: String { "\(code): \(message)" }

    public static func == (lhs: ChordStoreError, rhs: ChordStoreError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
    }
}

extension ChordStoreError {
    /// How a `failedPrecondition` message starts when two logs differ at the position a
    /// replication batch or stream starts from (members branch on it; see REPLICATION.md).
    public static let divergedPrefix = "diverged: "
    /// How a `failedPrecondition` message starts when a follower refuses a write or a
    /// Replicate stream (the wire's `Status.leader` then names the leader).
    public static let notLeaderPrefix = "not the leader: "

    /// Whether this is the refusal of a member whose log differs at the requested position.
    public var isDivergence: Bool { code == .failedPrecondition && message.hasPrefix(Self.divergedPrefix) }
}
