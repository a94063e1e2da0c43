import Foundation
import Synchronization

/// A value that one writer changes while any number of readers read it: readers never
/// wait, and nothing is copied in the common case (the left-right pattern).
///
/// It keeps two copies. Readers read the published one. The writer changes the other,
/// publishes it, and keeps the replay of its change; before its next change it brings
/// the copy it just unpublished up to date with that replay, in place, once no reader
/// holds it (readers hold a copy only for the length of a ``read(_:)``). It lets a
/// reader still there finish for up to ``readerGrace``; one that stays longer costs the
/// writer one copy of the value (copy-on-write, of the parts it changes next). Memory:
/// two copies of the value; each change is applied twice.
///
/// Before, a reader copied the whole value out of a lock, and the writer's next change
/// copied every collection it touched while that reader still held it: a commit under
/// steady reads cost the size of the store, not the size of the batch.
final class LeftRight<Value: Sendable>: Sendable {
    /// One copy. Only the writer changes `value`, and only while no reader holds the box.
    private final class Box: @unchecked Sendable {
        var value: Value
        init(_ value: Value) { self.value = value }
    }

    /// The writer's side: its copy, and the replays of the changes that copy lacks.
    private struct Writer: ~Copyable {
        var spare: Box
        var pending: [@Sendable (inout Value) throws -> Void] = []
    }

    private let published: Mutex<Box>
    private let writer: Mutex<Writer>

    /// Both copies start as `value`.
    init(_ value: Value) {
        published = Mutex(Box(value))
        writer = Mutex(Writer(spare: Box(value)))
    }

    /// Calls `body` with the published value. The value stays as it is for the length of
    /// the call whatever the writer does meanwhile; `body` should not keep it longer (the
    /// writer would then copy what it changes next).
    func read<T>(_ body: (Value) throws -> T) rethrows -> T {
        let box = published.withLock { $0 }
        return try withExtendedLifetime(box) { try body(box.value) }
    }

    /// Changes the value: `change` runs on the writer's copy and returns its result and a
    /// replay, which must bring an equal value (the one before `change`) to the same
    /// result without deciding anything again; the changed copy is then published. If
    /// `change` throws, nothing is published and the writer's copy is discarded.
    /// Called by one writer at a time (the lock orders them).
    func write<T: Sendable>(_ change: (inout Value) throws -> (result: T, replay: @Sendable (inout Value) throws -> Void)) throws -> T {
        try writer.withLock { writer in
            catchUp(&writer)
            let outcome: (result: T, replay: @Sendable (inout Value) throws -> Void)
            do {
                outcome = try change(&writer.spare.value)
            } catch {
                writer.spare = Box(published.withLock { $0 }.value)
                throw error
            }
            let unpublished = published.withLock { box in
                let previous = box
                box = writer.spare
                return previous
            }
            writer.spare = unpublished
            writer.pending = [outcome.replay]
            return outcome.result
        }
    }

    /// Replaces both copies with `value` (a rebuild, a truncation): a reader still
    /// reading sees the old value to the end of its read.
    func replace(with value: Value) {
        writer.withLock { writer in
            published.withLock { $0 = Box(value) }
            writer.spare = Box(value)
            writer.pending = []
        }
    }

    /// Brings the writer's copy up to the published one: in place once no reader holds
    /// it (a reader that took it just before the last publication is let finish, for up
    /// to ``readerGrace``), else (or if a replay fails, which only a bug makes happen) as
    /// a copy of the published one.
    private func catchUp(_ writer: inout Writer) {
        if isHeldOnlyByWriter(&writer.spare) {
            do {
                for replay in writer.pending { try replay(&writer.spare.value) }
                writer.pending = []
                return
            } catch {}
        }
        writer.spare = Box(published.withLock { $0 }.value)
        writer.pending = []
    }

    /// How long the writer lets readers of its copy finish before it copies instead.
    /// Reads take microseconds, but a reader the scheduler stops in the middle holds on
    /// for a time slice (milliseconds), and a copy of a large store costs far more than
    /// that wait; a reader that stays longer still (an export, say) costs the copy.
    static var readerGrace: Duration { .milliseconds(5) }

    /// Whether no reader holds `box`, waiting up to ``readerGrace`` (yielding the CPU)
    /// for those that do to let go.
    private func isHeldOnlyByWriter(_ box: inout Box) -> Bool {
        var deadline: ContinuousClock.Instant?
        while !isKnownUniquelyReferenced(&box) {
            let now = ContinuousClock.now
            if let deadline, now >= deadline { return false }
            deadline = deadline ?? now + Self.readerGrace
            sched_yield()
        }
        // Pairs with each reader's release of the box: its reads happened before.
        atomicMemoryFence(ordering: .acquiring)
        return true
    }
}
