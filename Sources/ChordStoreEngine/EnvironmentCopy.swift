import ChordStoreDomain
import Dispatch
import Foundation
import LMDB
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// LMDB's compacting copy of one environment (one read transaction, taken while commits
/// go on), read as blocks of ``BlockDigest/blockSize`` bytes without touching the disk:
/// a thread runs the copy into a pipe, another reads the pipe, and at most two blocks wait
/// for the consumer, so a slow consumer slows the copy instead of filling memory. (While
/// a copy runs, a map growth waits for it, see ``LMDB/Environment/copy(to:compact:)``.)
///
/// A consumer that stops early (an error, a cancelled call) calls ``abandon()``: the
/// reader then drains the pipe to its end, so the copy finishes on its own (never killed
/// by a write to a closed pipe), and `abandon()` returns once both threads have ended.
/// Used by one task at a time.
final class EnvironmentCopy {
    /// Blocks read but not yet consumed, at most two. Made at 0 and signalled twice: a
    /// semaphore freed below the value it was made with traps in libdispatch, and an
    /// abandoned copy ends with its slots in any state.
    private let slots = DispatchSemaphore(value: 0)
    private let abandoned = Flag()
    private let ended = DispatchSemaphore(value: 0)
    private var blocks: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator

    /// Starts copying `environment`.
    init(_ environment: Environment) throws(ChordStoreError) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            throw ChordStoreError(.unavailable, "cannot make a pipe for the copy: \(String(cString: strerror(errno)))")
        }
        slots.signal()
        slots.signal()
        let (readEnd, writeEnd) = (fds[0], fds[1])
        _ = fcntl(writeEnd, Self.setPipeSize, Int32(BlockDigest.blockSize))  // fewer wake-ups; the default (64 KiB) works too
        let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        self.blocks = stream.makeAsyncIterator()
        let copied = DispatchSemaphore(value: 0)
        let failure = Mutex<(any Error)?>(nil)
        let copier = Thread {
            do {
                try environment.copy(to: writeEnd, compact: true)
            } catch {
                failure.withLock { $0 = error }
            }
            close(writeEnd)
            copied.signal()
        }
        copier.name = "chordstore-copy"
        let slots = self.slots, abandoned = self.abandoned, ended = self.ended
        let reader = Thread {
            let sink = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
            defer { sink.deallocate() }
            while !abandoned.isRaised {
                // Each block is read into an array of its own and handed on as it is:
                // copying it out of one reused buffer was a pass over every byte copied.
                var count = 0
                var code: Int32 = 0
                let block = [UInt8](unsafeUninitializedCapacity: BlockDigest.blockSize) { buffer, initialized in
                    count = Self.readFully(readEnd, into: UnsafeMutableRawBufferPointer(buffer))
                    if count < 0 { code = errno }
                    initialized = max(count, 0)
                }
                guard count > 0 else {
                    if count < 0 { failure.withLock { $0 = $0 ?? Self.readFailure(code) } }
                    break
                }
                slots.wait()
                if abandoned.isRaised { break }
                continuation.yield(block)
            }
            // Drain the pipe to its end, so the copy ends on its own: the rest of an
            // abandoned copy, or what a failed read left the copier blocked on.
            while Self.readFully(readEnd, into: sink) > 0 {}
            close(readEnd)
            copied.wait()
            continuation.finish(throwing: failure.withLock { $0.map(ChordStoreError.wrapping) })
            ended.signal()
        }
        reader.name = "chordstore-copy-reader"
        copier.start()
        reader.start()
    }

    /// The next block (full, but for the last), or `nil` at the end; throws the copy's
    /// failure.
    func next() async throws -> [UInt8]? {
        let block = try await blocks.next()
        slots.signal()  // the block before this one is consumed
        return block
    }

    /// Stops taking blocks: the rest of the copy is read and dropped. Returns once the
    /// copy and its reader have ended (the copy's read transaction is over).
    func abandon() async {
        abandoned.raise()
        slots.signal()
        let ended = self.ended
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                ended.wait()
                ended.signal()
                continuation.resume()
            }
        }
    }

    /// Linux's `F_SETPIPE_SZ` (`F_LINUX_SPECIFIC_BASE + 7`), which Swift's Glibc module
    /// does not export.
    private static let setPipeSize: Int32 = 1_031

    private static func readFailure(_ code: Int32) -> ChordStoreError {
        DurableFile.failure("read", "the copy's pipe", code: code)
    }

    /// Reads until `buffer` is full or the pipe ends; the count read, or -1 on an error.
    private static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var filled = 0
        while filled < buffer.count {
            let count = read(fd, buffer.baseAddress! + filled, buffer.count - filled)
            if count < 0, errno == EINTR { continue }
            if count < 0 { return -1 }
            if count == 0 { break }
            filled += count
        }
        return filled
    }
}

/// A flag raised once, read from any thread.
private final class Flag: Sendable {
    private let raised = Atomic(false)
    var isRaised: Bool { raised.load(ordering: .acquiring) }
    func raise() { raised.store(true, ordering: .releasing) }
}
