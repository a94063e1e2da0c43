/// The members of a cluster that vote: a quorum write needs a majority of them, and only
/// they stand for election. Configured with `--peer` by hand, or kept in a coordinator.
public struct Membership: Sendable, Hashable, CustomStringConvertible {
    /// Each member's advertised `HOST:PORT`, sorted, without repeats.
    public let addresses: [String]
    /// The coordinator's revision of the member list (0: configured by hand, or none yet).
    public let revision: Int64

    /// A membership of `addresses` (sorted, repeats dropped).
    public init(_ addresses: some Sequence<String>, revision: Int64 = 0) {
        self.addresses = Array(Set(addresses)).sorted()
        self.revision = revision
    }

    /// How many members make a majority.
    public var majority: Int { addresses.count / 2 + 1 }

    /// Whether `address` is a member.
    public func contains(_ address: String) -> Bool { addresses.contains(address) }

    /// The members other than `address`.
    public func others(than address: String) -> [String] { addresses.filter { $0 != address } }

    /// The addresses, comma-separated.
    public var description: String { addresses.joined(separator: ", ") }
}
