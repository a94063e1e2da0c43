/// Which connections a server takes: at most `maxConnections` in all and `maxPerAddress`
/// from one IP address, and the last `reserve` slots only for addresses that hold none
/// yet. One address, or a few, filling the server therefore cannot lock out a client
/// connecting from elsewhere. A pure value: the server keeps it under a lock.
struct ConnectionAdmission: Sendable {
    /// Why a connection was refused.
    enum Refusal: Equatable, Sendable {
        /// Every slot is taken.
        case full
        /// Its address holds `maxPerAddress` connections.
        case perAddress
        /// Only the reserve is left, and its address already holds a connection.
        case reserved
    }

    let maxConnections: Int
    let maxPerAddress: Int
    /// Slots kept for addresses that hold no connection: a sixteenth of the total.
    let reserve: Int
    private(set) var total = 0
    private(set) var perAddress: [String: Int] = [:]

    init(maxConnections: Int, maxPerAddress: Int) {
        self.maxConnections = maxConnections
        self.maxPerAddress = maxPerAddress
        self.reserve = maxConnections / 16
    }

    /// Takes a slot for a connection from `address`, or says why not.
    mutating func admit(_ address: String) -> Refusal? {
        let held = perAddress[address, default: 0]
        if total >= maxConnections { return .full }
        if held >= maxPerAddress { return .perAddress }
        if held > 0, total >= maxConnections - reserve { return .reserved }
        total += 1
        perAddress[address] = held + 1
        return nil
    }

    /// What the per-address limit counts a client by: an IPv4 address itself, an IPv6
    /// one by its /64 network (one host commonly holds a whole /64, and could otherwise
    /// take every slot by changing its low 64 bits).
    static func key(for address: String) -> String {
        guard address.contains(":") else { return address }
        let bare = address.split(separator: "%", maxSplits: 1)[0]
        let gap = bare.firstRange(of: "::")
        let head = (gap.map { bare[..<$0.lowerBound] } ?? bare).split(separator: ":")
        let tail = gap.map { bare[$0.upperBound...].split(separator: ":") } ?? []
        if tail.last?.contains(".") == true { return String(tail.last!) }  // ::ffff:a.b.c.d
        let groups = head + Array(repeating: "0", count: max(0, 8 - head.count - tail.count)) + tail
        return groups.prefix(4).map { String(Int($0, radix: 16) ?? 0, radix: 16) }.joined(separator: ":") + "::/64"
    }

    /// Gives back the slot of a connection from `address`.
    mutating func release(_ address: String) {
        guard let held = perAddress[address] else { return }
        total -= 1
        perAddress[address] = held > 1 ? held - 1 : nil
    }
}
