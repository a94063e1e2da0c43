import ChordStoreDomain
import CSystemExtras
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Writes a new file front to back, as a backup's or a bootstrap's files arrive, past the
/// page cache where the filesystem allows it (`O_DIRECT`): the bytes go from an aligned
/// buffer to the disk instead of being copied into cached pages first, which cost a new
/// follower more CPU than all else (docs/REPLICATION.md, "Figures") and left gigabytes
/// of dirty pages for the kernel to throttle the next writer on. Up to ``writesInFlight``
/// full buffers are written at once, each at its own offset on a queue of its own, while
/// the caller fills the next: the disk's time overlaps the caller's, and a disk that
/// serves two requests at once (a virtual disk usually does) is kept busy. A filesystem
/// that refuses `O_DIRECT` (tmpfs) gets ordinary writes, made by the caller, as do the
/// file's last, unaligned bytes. ``finish()`` syncs the file: nothing written is trusted
/// before it. Used by one caller at a time.
///
/// ```swift
/// let writer = try SequentialFileWriter(creating: path)
/// try writer.append(bytes)
/// try writer.finish()
/// ```
final class SequentialFileWriter {
    /// The file's path, for messages.
    let path: String
    private let file: File
    /// Whether writes bypass the page cache: each then writes a whole aligned buffer.
    private(set) var direct: Bool
    /// The buffer being filled, and how much of it is.
    private var filling: Buffer
    private var filled = 0
    /// Where the next buffer handed off goes in the file.
    private var offset: Int64 = 0
    /// Buffers no write is using (a finished write puts its buffer back before it
    /// signals `slots`).
    private let free: Shelf
    /// Taken for each write in flight: at most ``writesInFlight`` are.
    private let slots = DispatchSemaphore(value: SequentialFileWriter.writesInFlight)
    private let queue = DispatchQueue(label: "chordstore-file-writer", attributes: .concurrent)

    /// The unit `O_DIRECT` writes are aligned to (in memory, in the file, in length): the
    /// largest logical block size Linux filesystems use.
    static let alignment = 4_096
    /// Bytes gathered before each direct write.
    static let bufferSize = 4 << 20
    /// Direct writes made at once. With `dd oflag=direct`, two writers took 2.6 GiB from
    /// 5.6 s to 3.9 s on the test machine's disk (a file each), and from 6.2–6.8 s to
    /// 5.4–5.9 s on later tries (one file); four did no better (docs/REPLICATION.md,
    /// "Figures").
    static let writesInFlight = 2

    /// Creates the file at `path` (which must not exist), readable only by its owner
    /// unless `mode` says otherwise; `bypassCache: false` writes through the page cache.
    init(creating path: String, mode: mode_t = 0o600, bypassCache: Bool = true) throws(ChordStoreError) {
        self.path = path
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC
        var fd = bypassCache ? Glibc.open(path, flags | cse_o_direct(), mode) : -1
        direct = fd >= 0
        if fd < 0, !bypassCache || errno == EINVAL {
            fd = Glibc.open(path, flags, mode)
        }
        guard fd >= 0 else { throw DurableFile.failure("create", path) }
        file = File(fd)
        let size = direct ? Self.bufferSize : 0
        filling = Buffer(size)
        free = Shelf((0..<Self.writesInFlight).map { _ in Buffer(size) })
    }

    deinit {
        drain()  // a write on the queue uses the file and a buffer
    }

    /// Takes the file's next bytes.
    func append(_ bytes: UnsafeRawBufferPointer) throws(ChordStoreError) {
        try checkQueue()
        guard direct else { return try write(bytes) }
        var rest = bytes[...]
        while !rest.isEmpty {
            let take = min(Self.bufferSize - filled, rest.count)
            UnsafeMutableRawBufferPointer(rebasing: filling.bytes[filled..<(filled + take)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: rest.prefix(take)))
            filled += take
            rest = rest.dropFirst(take)
            if filled == Self.bufferSize { try handOff() }
        }
    }

    /// Writes what is gathered and syncs the file (its data and size), unless `sync` is
    /// `false` (the caller syncs it later); then closes it.
    func finish(sync: Bool = true) throws(ChordStoreError) {
        drain()
        try checkQueue()
        if direct, filled % Self.alignment != 0 { try leaveDirect() }
        if filled > 0 { try write(UnsafeRawBufferPointer(rebasing: filling.bytes[..<filled])) }
        filled = 0
        guard !sync || fsync(file.fd) == 0 else { throw DurableFile.failure("sync", path) }
        file.close()
    }

    /// Waits until no write is in flight.
    private func drain() {
        for _ in 0..<Self.writesInFlight { slots.wait() }
        for _ in 0..<Self.writesInFlight { slots.signal() }
    }

    /// Passes the full buffer to the queue once fewer than ``writesInFlight`` writes are
    /// in flight, and goes on filling a free one.
    private func handOff() throws(ChordStoreError) {
        slots.wait()
        if let error = queueError() {
            slots.signal()
            throw error
        }
        let (full, count, at, file, slots, free) = (filling, filled, offset, file, slots, free)
        // A slot was free, so a buffer is: its write put it back before signalling.
        filling = free.take()
        filled = 0
        offset += Int64(count)
        queue.async {
            let code = Self.write(UnsafeRawBufferPointer(rebasing: full.bytes[..<count]), to: file.fd, at: at)
            if code != 0 { _ = file.failure.compareExchange(expected: 0, desired: code, ordering: .releasing) }
            free.put(full)
            slots.signal()
        }
    }

    /// Throws the failure of a write made on the queue.
    private func checkQueue() throws(ChordStoreError) {
        if let error = queueError() { throw error }
    }

    private func queueError() -> ChordStoreError? {
        let code = file.failure.load(ordering: .acquiring)
        guard code != 0 else { return nil }
        return DurableFile.failure("write", path, code: code)
    }

    /// Writes `bytes` at the file's end, the caller waiting.
    private func write(_ bytes: UnsafeRawBufferPointer) throws(ChordStoreError) {
        let code = Self.write(bytes, to: file.fd, at: offset)
        guard code == 0 else { throw DurableFile.failure("write", path, code: code) }
        offset += Int64(bytes.count)
    }

    /// Turns `O_DIRECT` off for the rest of the file.
    private func leaveDirect() throws(ChordStoreError) {
        guard Self.leaveDirect(file.fd) else { throw DurableFile.failure("write", path) }
        direct = false
    }

    private static func leaveDirect(_ fd: Int32) -> Bool {
        let flags = fcntl(fd, F_GETFL)
        return flags >= 0 && fcntl(fd, F_SETFL, flags & ~cse_o_direct()) == 0
    }

    /// Writes `bytes` to `fd` from `offset` on until all are written or a write fails: 0,
    /// or the failure's `errno` (`EIO` for a write that wrote nothing). A direct write the
    /// filesystem refuses after all (`EINVAL`) goes on through the page cache, as the
    /// file's later writes do.
    private static func write(_ bytes: UnsafeRawBufferPointer, to fd: Int32, at offset: Int64) -> Int32 {
        var done = 0
        var leftDirect = false
        while done < bytes.count {
            let written = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if written < 0, errno == EINTR { continue }
            if written < 0, errno == EINVAL, !leftDirect {
                guard leaveDirect(fd) else { return errno }
                leftDirect = true
                continue
            }
            guard written > 0 else { return written < 0 ? errno : EIO }
            done += written
        }
        return 0
    }

    /// An aligned buffer, handed to the queue for one write at a time (the semaphore
    /// orders the accesses).
    private final class Buffer: @unchecked Sendable {
        let bytes: UnsafeMutableRawBufferPointer

        init(_ count: Int) {
            bytes = .allocate(byteCount: count, alignment: SequentialFileWriter.alignment)
        }

        deinit { bytes.deallocate() }
    }

    /// The buffers no write is using.
    private final class Shelf: Sendable {
        private let buffers: Mutex<[Buffer]>

        init(_ buffers: [Buffer]) { self.buffers = Mutex(buffers) }

        func take() -> Buffer { buffers.withLock { $0.removeLast() } }

        func put(_ buffer: Buffer) { buffers.withLock { $0.append(buffer) } }
    }

    /// The open file, closed once, and the `errno` of the first failed write on the
    /// queue (reported by the caller's next call).
    private final class File: Sendable {
        private let descriptor: Atomic<Int32>
        let failure = Atomic<Int32>(0)
        var fd: Int32 { descriptor.load(ordering: .acquiring) }

        init(_ fd: Int32) { descriptor = Atomic(fd) }

        func close() {
            let fd = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
            if fd >= 0 { _ = Glibc.close(fd) }
        }

        deinit { close() }
    }
}
