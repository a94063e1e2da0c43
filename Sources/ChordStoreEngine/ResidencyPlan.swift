/// Which stores to evict from memory to keep the live state under its bound
/// (``ChordStore/Options/maxStateMemory``), as a pure function.
///
/// The state's memory is its two copies (``LeftRight``) of every store's estimated bytes
/// (``StoreSet/Store/estimatedBytes``; an evicted store still counts its log index and
/// command ids). Over the bound, stores in memory are evicted least recently used first
/// (those never used since the start first of all) until the state is at three quarters
/// of the bound, so that the next few loads do not evict again at once. The store used
/// last is never evicted: a store larger than the bound alone stays in memory (evicting it
/// would only make every call fold it again).
enum ResidencyPlan {
    /// One store as the plan sees it.
    struct Entry: Equatable, Sendable {
        var id: UInt32
        var resident: Bool
        /// Estimated bytes in one copy.
        var bytes: Int
        /// Of those, what it keeps when evicted (its log index and command ids).
        var keptBytes: Int
    }

    /// Copies of the state in memory.
    static let copies = 2

    /// The estimated bytes of the state's copies.
    static func total(_ stores: [Entry]) -> Int {
        stores.reduce(0) { $0 + $1.bytes } * copies
    }

    /// The ids of the stores to evict, in eviction order.
    static func evictions(_ stores: [Entry], lastUse: [UInt32: UInt64], bound: Int) -> [UInt32] {
        var total = total(stores)
        guard total > bound else { return [] }
        let target = bound / 4 * 3
        let candidates = stores.filter(\.resident).sorted {
            (lastUse[$0.id] ?? 0, $0.id) < (lastUse[$1.id] ?? 0, $1.id)
        }
        var evicted: [UInt32] = []
        for store in candidates.dropLast() {
            guard total > target else { break }
            evicted.append(store.id)
            total -= (store.bytes - store.keptBytes) * copies
        }
        return evicted
    }
}
