import Foundation
import Synchronization

/// A bounded, blocking channel between two threads.
final class Channel<Element: Sendable>: Sendable {
    private struct State {
        var items: [Element] = []
        var cancelled = false
    }

    private let state = Mutex(State())
    private let slots: DispatchSemaphore
    private let available = DispatchSemaphore(value: 0)

    /// Made at 0 and signalled `capacity` times: a semaphore freed below the value it was
    /// made with traps in libdispatch, and a cancelled channel may hold unread items.
    init(capacity: Int) {
        slots = DispatchSemaphore(value: 0)
        for _ in 0..<capacity { slots.signal() }
    }

    /// Waits for room, then queues `item`; returns `false` if the receiver has gone.
    func send(_ item: sending Element) -> Bool {
        slots.wait()
        let accepted = state.withLock { state -> Bool in
            if state.cancelled { return false }
            state.items.append(item)
            return true
        }
        if accepted { available.signal() } else { slots.signal() }
        return accepted
    }

    /// Waits for the next item.
    func receive() -> Element {
        available.wait()
        let item = state.withLock { $0.items.removeFirst() }
        slots.signal()
        return item
    }

    /// Tells the sender to stop: a blocked or later `send` returns `false`.
    func cancel() {
        state.withLock { $0.cancelled = true }
        slots.signal()
    }
}
