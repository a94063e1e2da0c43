#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The answers the writer hands out for one batch, and what their receivers do once all
/// of them are handed out: a receiver that would wake a thread for each answer (an event
/// loop, for every command of the batch it serves) asks to be woken once, at the end.
///
/// The writer runs a batch's completions inside ``run(_:)``; a receiver on that thread
/// finds the batch in ``current`` and registers its wake-up with ``atEnd(of:_:)``. On any
/// other thread, or outside a batch, ``current`` is `nil` and the receiver wakes its
/// thread at once, as before.
///
/// So code inside a batch must not block waiting for work it handed to a receiver
/// during that batch: the receiver's thread is woken only when the batch ends. And work
/// another thread hands the same receiver meanwhile waits for the batch's end too (no
/// longer than the batch's own work).
///
/// ```swift
/// AnswerBatch.run {
///     for answer in answers { answer() }  // each receiver: AnswerBatch.current?.atEnd(of: self) { wake() }
/// }                                        // here each receiver's wake-up runs, once
/// ```
package final class AnswerBatch {
    private var owners: [ObjectIdentifier] = []
    private var endings: [() -> Void] = []

    private init() {}

    /// The batch whose answers this thread is handing out, or `nil`.
    package static var current: AnswerBatch? {
        pthread_getspecific(key).map { Unmanaged<AnswerBatch>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs `body` as a batch on this thread, then each wake-up registered in it, in the
    /// order registered. A batch inside a batch joins the outer one.
    package static func run(_ body: () throws -> Void) rethrows {
        guard current == nil else { return try body() }
        let batch = AnswerBatch()
        pthread_setspecific(key, Unmanaged.passUnretained(batch).toOpaque())
        defer {
            pthread_setspecific(key, nil)
            for ending in batch.endings { ending() }
        }
        try withExtendedLifetime(batch) { try body() }
    }

    /// Runs `action` when the batch ends, unless `owner` already registered one: a
    /// receiver's wake-up happens once, whatever the number of answers it got.
    package func atEnd(of owner: AnyObject, _ action: @escaping () -> Void) {
        let id = ObjectIdentifier(owner)
        guard !owners.contains(id) else { return }
        owners.append(id)
        endings.append(action)
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let created = pthread_key_create(&key, nil)
        precondition(created == 0, "pthread_key_create failed: \(created)")
        return key
    }()
}
