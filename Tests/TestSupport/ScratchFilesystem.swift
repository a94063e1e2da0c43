import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A failure to set up a ``ScratchFilesystem``.
public struct ScratchFilesystemError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A small filesystem mounted for one test, to see what a small or full disk does: a
/// tmpfs, or ext4 in an image file on a loop device (``init(ext4Megabytes:)``), which
/// takes `O_DIRECT` writes where tmpfs refuses them. Mounting needs root:
/// ``isAvailable`` and ``ext4IsAvailable`` tell whether tests that need one can run here
/// (they are skipped, with that reason, where not).
public final class ScratchFilesystem: @unchecked Sendable {
    /// Where it is mounted.
    public let directory: URL
    /// The ext4 image behind it, removed with it.
    private let image: URL?

    /// Whether a tmpfs can be mounted here (the process runs as root and `mount` works).
    public static let isAvailable: Bool = {
        guard getuid() == 0 else { return false }
        guard let probe = try? ScratchFilesystem(megabytes: 1) else { return false }
        probe.unmount()
        return true
    }()

    /// Whether an ext4 image can be made and mounted on a loop device here (root,
    /// `mkfs.ext4` and a loop device).
    public static let ext4IsAvailable: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: mkfs) else { return false }
        guard let probe = try? ScratchFilesystem(ext4Megabytes: 8) else { return false }
        probe.unmount()
        return true
    }()

    private static let mkfs = "/usr/sbin/mkfs.ext4"

    /// Mounts a tmpfs of `megabytes` MiB on a new temporary directory.
    public init(megabytes: Int) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("scratch-fs-\(UUID().uuidString)")
        image = nil
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let status = try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", directory.path])
        guard status == 0 else {
            try? FileManager.default.removeItem(at: directory)
            throw ScratchFilesystemError("mount -t tmpfs exited with \(status)")
        }
    }

    /// Makes an ext4 filesystem of `megabytes` MiB in an image file and mounts it on a
    /// loop device on a new temporary directory.
    public init(ext4Megabytes megabytes: Int) throws {
        let name = "scratch-fs-\(UUID().uuidString)"
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(name)
        let image = FileManager.default.temporaryDirectory.appendingPathComponent(name + ".img")
        self.image = image
        guard FileManager.default.createFile(atPath: image.path, contents: nil),
              truncate(image.path, off_t(megabytes) << 20) == 0 else {
            throw ScratchFilesystemError("cannot make the image \(image.path)")
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let made = try Self.run(Self.mkfs, ["-q", "-F", image.path])
        let status = made == 0 ? try Self.run("/bin/mount", ["-o", "loop", image.path, directory.path]) : made
        guard status == 0 else {
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(at: image)
            throw ScratchFilesystemError("mkfs.ext4 and mount -o loop exited with \(status)")
        }
    }

    deinit { unmount() }

    /// Unmounts it (everything in it is gone) and removes the directory.
    public func unmount() {
        guard FileManager.default.fileExists(atPath: directory.path) else { return }
        // A loop device is freed by the unmount itself (not lazily), before its image goes.
        _ = try? Self.run("/bin/umount", image == nil ? ["-l", directory.path] : [directory.path])
        try? FileManager.default.removeItem(at: directory)
        if let image { try? FileManager.default.removeItem(at: image) }
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
