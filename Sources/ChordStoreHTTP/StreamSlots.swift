import ChordStoreDomain
import ChordStoreWire
import Synchronization

/// The streams open on the HTTP endpoint, bounded in all and per client address: a
/// stream holds a ``StreamSlot`` from before its response starts until it ends, or until
/// the response is dropped unwritten (the slot is given back when released).
final class StreamSlots: Sendable {
    private struct State {
        var total = 0
        var byAddress: [String: Int] = [:]
    }

    private let state = Mutex(State())
    /// Streams open at once, in all.
    let limit: Int
    /// Streams open at once from one address.
    let perAddress: Int

    init(limit: Int, perAddress: Int) {
        self.limit = limit
        self.perAddress = perAddress
    }

    /// Streams open now.
    var count: Int { state.withLock { $0.total } }

    /// A slot for a stream from `address`, or `RESOURCE_EXHAUSTED`.
    func take(for address: String) throws(WireError) -> StreamSlot {
        let refusal = state.withLock { state -> String? in
            if state.total >= limit { return "\(limit) streams are open on this endpoint: try again later" }
            if state.byAddress[address, default: 0] >= perAddress { return "\(perAddress) streams are open from \(address): close one first" }
            state.total += 1
            state.byAddress[address, default: 0] += 1
            return nil
        }
        if let refusal { throw WireError(.resourceExhausted, refusal) }
        return StreamSlot(slots: self, address: address)
    }

    fileprivate func give(_ address: String) {
        state.withLock { state in
            state.total -= 1
            let left = state.byAddress[address, default: 1] - 1
            state.byAddress[address] = left > 0 ? left : nil
        }
    }
}

/// One stream's slot: given back by ``release()`` or, at the latest, when the last
/// reference goes (a response Hummingbird dropped without running its body).
final class StreamSlot: Sendable {
    private let slots: StreamSlots
    private let address: String
    private let held = Atomic(true)

    fileprivate init(slots: StreamSlots, address: String) {
        self.slots = slots
        self.address = address
    }

    /// Gives the slot back (once; later calls do nothing).
    func release() {
        if held.exchange(false, ordering: .acquiringAndReleasing) { slots.give(address) }
    }

    deinit { release() }
}
