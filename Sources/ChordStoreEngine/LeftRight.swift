import Foundation
import Synchronization

/// A value that one writer changes while any number of readers read it: readers never
/// wait for the writer (they take the published copy under a lock held for a retain),
/// and in the common case nothing is copied (the left-right pattern).
///
/// It keeps two copies. Readers read the published one. The writer changes the other,
/// publishes it, and keeps the replay of its change; before its next change it brings
/// the copy it just unpublished up to date with that replay, in place, once no reader
/// holds it (readers hold a copy only for the length of a ``read(_:)``). It lets a
/// reader still there finish for up to its grace (5 ms); one that stays longer and a
/// change that throws each cost the writer one copy of the value (``fallbackCopies``),
/// as a replacement does (copy-on-write, of the parts it changes next). Memory: two
/// copies of the value; each change is applied twice.
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
    /// How long the writer lets readers of its copy finish before it copies instead.
    /// Reads take microseconds, but a reader the scheduler stops in the middle holds on
    /// for a time slice (milliseconds), and a copy of a large store costs far more than
    /// that wait; a reader that stays longer still (an export, say) costs the copy.
    let readerGrace: Duration
    /// How many times the writer's copy was remade from the published one instead of
    /// being brought up to date in place.
    private let copies = Atomic(0)
    /// How many replays threw (only a bug makes one).
    private let replayFailures = Atomic(0)

    /// Both copies start as `value`.
    init(_ value: Value, readerGrace: Duration = .milliseconds(5)) {
        published = Mutex(Box(value))
        writer = Mutex(Writer(spare: Box(value)))
        self.readerGrace = readerGrace
    }

    /// How many times the writer's copy was remade from the published one (a reader that
    /// stayed past the grace, a change that threw, a replay that failed).
    var fallbackCopies: Int { copies.load(ordering: .relaxed) }

    /// How many replays of a change on the other copy threw, each then remade as a copy
    /// (a replay that does not apply: only a bug makes one; tests check for none).
    var failedReplays: Int { replayFailures.load(ordering: .relaxed) }

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
                remake(&writer)
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

    /// Replaces both copies with what `make` makes of the published value (a rebuild, a
    /// truncation), in the writer's turn: a reader still reading sees the old value to
    /// the end of its read. If `make` throws, nothing changes.
    func replace<Failure: Error>(_ make: (Value) throws(Failure) -> Value) throws(Failure) {
        try writer.withLock { writer throws(Failure) in
            let value = try make(published.withLock { $0 }.value)
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
            } catch {
                replayFailures.add(1, ordering: .relaxed)
            }
        }
        remake(&writer)
    }

    /// Makes the writer's copy a copy of the published one.
    private func remake(_ writer: inout Writer) {
        writer.spare = Box(published.withLock { $0 }.value)
        writer.pending = []
        copies.add(1, ordering: .relaxed)
    }

    /// Whether no reader holds `box`, waiting up to ``readerGrace`` (yielding the CPU)
    /// for those that do to let go.
    private func isHeldOnlyByWriter(_ box: inout Box) -> Bool {
        var deadline: ContinuousClock.Instant?
        while !isKnownUniquelyReferenced(&box) {
            let now = ContinuousClock.now
            if let deadline, now >= deadline { return false }
            deadline = deadline ?? now + readerGrace
            sched_yield()
        }
        // Pairs with each reader's release of the box: its reads happened before.
        atomicMemoryFence(ordering: .acquiring)
        return true
    }
}
