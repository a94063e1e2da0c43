import ChordStoreDomain
import Foundation

/// Writes lines to a file handle, buffered, from a `@Sendable` callback; a failed write
/// (a full disk, a closed pipe) throws, naming the target.
final class LineWriter: @unchecked Sendable {
    private let handle: FileHandle
    private let target: String
    private let lock = NSLock()
    private var buffer = Data()
    private var count = 0
    private var last: UInt64 = 0

    init(_ handle: FileHandle, target: String) {
        self.handle = handle
        self.target = target
    }

    /// The largest sequence written.
    var lastSequence: UInt64 { lock.withLock { last } }

    /// Writes one event's line.
    func write(_ line: String, sequence: UInt64) throws {
        try lock.withLock {
            buffer.append(contentsOf: line.utf8)
            buffer.append(UInt8(ascii: "\n"))
            count += 1
            last = max(last, sequence)
            if buffer.count >= 1 << 16 { try drain() }
        }
    }

    /// Writes a line that is not an event (the header, the last line).
    func writeLine(_ bytes: Data) throws {
        lock.withLock {
            buffer.append(bytes)
            buffer.append(UInt8(ascii: "\n"))
        }
    }

    func flush() throws {
        try lock.withLock { try drain() }
    }

    var lines: Int { lock.withLock { count } }

    private func drain() throws {
        do {
            try handle.write(contentsOf: buffer)
        } catch {
            let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
            let reason = underlying?.domain == NSPOSIXErrorDomain ? String(cString: strerror(Int32(underlying!.code))) : "\(error)"
            throw ChordStoreError(.unavailable, "cannot write to \(target): \(reason)")
        }
        buffer.removeAll(keepingCapacity: true)
    }
}
