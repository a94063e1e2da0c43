public import ChordStoreDomain
public import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on `DIR/chordstore.lock`, held while a store is open, so that a
/// second process (a CLI next to a running server, or a second server) is refused with
/// a clear message instead of writing the same log. The file holds the owner's pid.
public final class DirectoryLock: Sendable {
    private let descriptor: Mutex<Int32>
    package static let fileName = "chordstore.lock"

    /// Takes the lock of `directory`, or fails with `UNAVAILABLE` and `inUse`'s sentence
    /// (given the owner's pid, if known) while another process holds it.
    public init(directory: URL, inUse: ((Int?) -> String)? = nil) throws(ChordStoreError) {
        let path = directory.appendingPathComponent(Self.fileName).path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ChordStoreError(.unavailable, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        if !locked, Self.owner(fd: fd) == Int(getpid()) {
            // This process held the lock and let it go: a child it is starting holds a copy
            // of the descriptor until the child runs its own program (a few milliseconds),
            // and the lock with it. flock has no wake-up for that; try again briefly.
            for _ in 0..<100 where !locked {
                usleep(10_000)
                locked = flock(fd, LOCK_EX | LOCK_NB) == 0
            }
        }
        guard locked else {
            let owner = Self.owner(fd: fd)
            close(fd)
            if let inUse { throw ChordStoreError(.unavailable, inUse(owner)) }
            throw ChordStoreError(
                .unavailable,
                "data directory \(directory.path) is in use by another process\(owner.map { " (pid \($0))" } ?? ""); "
                    + "stop it, or send commands to the running server instead of using --data")
        }
        // Written over the old pid, then cut to its length: no new block is needed on a
        // full disk (a truncation first would free the block and need one again).
        let pid = Array("\(getpid())\n".utf8)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        _ = ftruncate(fd, off_t(pid.count))
        descriptor = Mutex(fd)
    }

    deinit {
        release()
    }

    /// Gives up the lock. Calling it again does nothing.
    public func release() {
        descriptor.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    private static func owner(fd: Int32) -> Int? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
