/// Which connections a server takes: at most `maxConnections` in all and `maxPerAddress`
/// from one IP address, and the last `reserve` slots only for addresses that hold none
/// yet. One address, or a few, filling the server therefore cannot lock out a client
/// connecting from elsewhere.
///
/// A connection is *unauthenticated* until one of its calls shows a valid credential.
/// At most `maxUnauthenticated` are: a new connection past that, or past the total or
/// into the reserve, closes the oldest unauthenticated one instead of being refused (the
/// limit per address still refuses). Strangers (who need no credential for `Health`)
/// therefore hold a small share of the slots at most, and a client with a token gets
/// in: its connection is the newest until its first call proves it, and only as many
/// new strangers as that share, in that moment, could push it out. A pure value: the
/// server keeps it under a lock.
struct ConnectionAdmission: Sendable {
    /// Why a connection was refused.
    enum Refusal: Equatable, Sendable {
        /// Every slot is taken, by connections that showed a credential.
        case full
        /// Its address holds `maxPerAddress` connections.
        case perAddress
        /// Only the reserve is left, its address already holds a connection, and every
        /// other connection showed a credential.
        case reserved
    }

    /// What became of a new connection.
    enum Admission: Equatable, Sendable {
        /// Taken; `evicting` is an unauthenticated connection to close for it.
        case admitted(evicting: Int?)
        /// Refused, for this reason.
        case refused(Refusal)
    }

    let maxConnections: Int
    let maxPerAddress: Int
    let maxUnauthenticated: Int
    /// Slots kept for addresses that hold no connection: a sixteenth of the total.
    let reserve: Int
    private(set) var total = 0
    private(set) var perAddress: [String: Int] = [:]
    /// The address of each connection, by id.
    private var addresses: [Int: String] = [:]
    /// The unauthenticated connections, oldest first (ids grow with time).
    private(set) var unauthenticated: [Int] = []

    init(maxConnections: Int, maxPerAddress: Int, maxUnauthenticated: Int) {
        self.maxConnections = maxConnections
        self.maxPerAddress = maxPerAddress
        self.maxUnauthenticated = max(1, maxUnauthenticated)
        self.reserve = maxConnections / 16
    }

    /// Takes a slot for connection `id` (larger than every id before) from `address`,
    /// closing the oldest unauthenticated connection when there is no other room, or
    /// says why not.
    mutating func admit(_ address: String, id: Int) -> Admission {
        let held = perAddress[address, default: 0]
        if held >= maxPerAddress { return .refused(.perAddress) }
        let full = total >= maxConnections
        let reserved = held > 0 && total >= maxConnections - reserve
        var evicting: Int?
        if full || reserved || unauthenticated.count >= maxUnauthenticated {
            guard let oldest = unauthenticated.first else { return .refused(full ? .full : .reserved) }
            release(oldest)
            evicting = oldest
        }
        total += 1
        perAddress[address, default: 0] += 1
        addresses[id] = address
        unauthenticated.append(id)
        return .admitted(evicting: evicting)
    }

    /// Connection `id` made a call with a valid credential: it keeps its slot for good.
    mutating func authenticated(_ id: Int) {
        if let index = unauthenticated.firstIndex(of: id) { unauthenticated.remove(at: index) }
    }

    /// Whether connection `id` holds a slot (it was admitted and neither released nor
    /// evicted).
    func holds(_ id: Int) -> Bool { addresses[id] != nil }

    /// Gives back the slot of connection `id` (once; an evicted one's is back already).
    mutating func release(_ id: Int) {
        guard let address = addresses.removeValue(forKey: id) else { return }
        if let index = unauthenticated.firstIndex(of: id) { unauthenticated.remove(at: index) }
        total -= 1
        let held = perAddress[address, default: 1]
        perAddress[address] = held > 1 ? held - 1 : nil
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
}
