import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A failure to set up a ``ScratchFilesystem``.
public struct ScratchFilesystemError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A small tmpfs mounted for one test, to see what a small or full disk does. Mounting
/// needs root: ``isAvailable`` tells whether tests that need one can run here (they are
/// skipped, with that reason, where not).
public final class ScratchFilesystem: @unchecked Sendable {
    /// Where it is mounted.
    public let directory: URL

    /// Whether a tmpfs can be mounted here (the process runs as root and `mount` works).
    public static let isAvailable: Bool = {
        guard getuid() == 0 else { return false }
        guard let probe = try? ScratchFilesystem(megabytes: 1) else { return false }
        probe.unmount()
        return true
    }()

    /// Mounts a tmpfs of `megabytes` MiB on a new temporary directory.
    public init(megabytes: Int) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("scratch-fs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let status = try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", directory.path])
        guard status == 0 else {
            try? FileManager.default.removeItem(at: directory)
            throw ScratchFilesystemError("mount -t tmpfs exited with \(status)")
        }
    }

    deinit { unmount() }

    /// Unmounts it (everything in it is gone) and removes the directory.
    public func unmount() {
        guard FileManager.default.fileExists(atPath: directory.path) else { return }
        _ = try? Self.run("/bin/umount", ["-l", directory.path])
        try? FileManager.default.removeItem(at: directory)
    }

    /// Free bytes left on it.
    public var freeBytes: Int {
        var stats = statvfs()
        guard statvfs(directory.path, &stats) == 0 else { return 0 }
        return Int(stats.f_bavail) * Int(stats.f_frsize)
    }

    /// Writes a file of `bytes` bytes (its blocks allocated), to be removed later to free
    /// that much space.
    public func ballast(_ name: String, bytes: Int) throws -> URL {
        let url = directory.appendingPathComponent(name)
        let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw ScratchFilesystemError("cannot create \(url.path)") }
        defer { close(fd) }
        let rc = posix_fallocate(fd, 0, off_t(bytes))
        guard rc == 0 else { throw ScratchFilesystemError("posix_fallocate of \(bytes) bytes: \(rc)") }
        return url
    }

    private static func run(_ path: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
