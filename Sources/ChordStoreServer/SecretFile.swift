import ChordStoreDomain
import ChordStoreEngine
public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The files that hold secrets: the node's admin token (`DATA/admin.token`, made on first
/// start, mode 0600) and the cluster secret (given by the operator).
public enum SecretFile {
    /// The node's admin token in `directory` (`admin.token`): read, or made with a new
    /// secret. A new file is written whole under a temporary name (mode 0600, synced) and
    /// then linked into place, so a crash never leaves a partial one, and an existing one
    /// is never overwritten. An existing file must be a regular file of this user that no
    /// one else may write. Returns the secret, whether it was made now, and when.
    public static func localAdminToken(in directory: URL) throws -> (secret: String, created: Bool, date: Date) {
        let file = directory.appendingPathComponent("admin.token").path
        try PrivateDirectory.create(directory)
        if let existing = try readAdminToken(file) { return (existing.secret, false, existing.date) }
        let secret = TokenSecret.make(id: TokenGrant.localAdminID)
        let temporary = directory.appendingPathComponent(".admin.token.\(getpid()).\(UInt32.random(in: .min ... .max))").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw SecretFileError("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        let bytes = Array((secret + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        defer { unlink(temporary) }
        guard written == bytes.count, synced == 0 else { throw SecretFileError("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        if link(temporary, file) != 0 {
            // Another process made it first: that one counts.
            if errno == EEXIST, let existing = try readAdminToken(file) { return (existing.secret, false, existing.date) }
            throw SecretFileError("cannot create \(file): \(String(cString: strerror(errno)))")
        }
        let directoryFD = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
        return (secret, true, Date())
    }

    /// The admin token in `path`, or `nil` if there is no such file.
    private static func readAdminToken(_ path: String) throws -> (secret: String, date: Date)? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            if errno == ELOOP { throw SecretFileError("\(path) is a symbolic link; the admin token must be a file of its own") }
            throw SecretFileError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw SecretFileError("\(path) is not a regular file") }
        guard info.st_uid == geteuid() else {
            throw SecretFileError("\(path) belongs to user id \(info.st_uid), not to this one (\(geteuid())): the admin token must be this user's")
        }
        guard info.st_mode & 0o022 == 0 else { throw SecretFileError("others may write \(path): chmod 600 it, or delete it and restart for a new one") }
        var buffer = [UInt8](repeating: 0, count: 1_024)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        let line = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self)
            .split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard TokenSecret.id(of: line) == TokenGrant.localAdminID else {
            throw SecretFileError("\(path) does not hold an admin token (cs1.local-admin.…): delete it and restart for a new one")
        }
        // When the token was made, for display only: the checks above were made on the open file.
        let made = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate]) as? Date
        return (line, made ?? Date())
    }

    /// The cluster secret in `path`: its first line, at least 32 bytes.
    public static func clusterSecret(at path: String) throws -> String {
        let secret = try read(path, what: "the cluster secret")
        guard secret.utf8.count >= 32 else {
            throw SecretFileError("the cluster secret in \(path) is \(secret.utf8.count) bytes; give at least 32 (e.g. `openssl rand -hex 32 > \(path)`)")
        }
        return secret
    }

    /// Whether `path` may be read by users other than its owner (a warning, not a refusal).
    public static func isShared(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & 0o077 != 0
    }

    /// A token or secret given in a file: its first line, trimmed.
    public static func read(_ path: String, what: String) throws -> String {
        // Read with the system's calls, whose failures name themselves (Foundation's said
        // "You don't have permission." of /dev/null, and gave a directory an error number).
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SecretFileError("cannot read \(what) from \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            throw SecretFileError("\(path) is a directory; give the file that holds \(what)")
        }
        // The first line is all that is used: 64 KiB is plenty, and bounds what a wrong
        // path (a device, a large file) makes this read.
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var count = 0
        while count < buffer.count {
            let read = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if read < 0 && errno == EINTR { continue }
            guard read >= 0 else { throw SecretFileError("cannot read \(what) from \(path): \(String(cString: strerror(errno)))") }
            if read == 0 { break }
            count += read
        }
        let text = String(decoding: buffer.prefix(count), as: UTF8.self)
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
        guard !line.isEmpty else { throw SecretFileError("\(path) is empty: it should hold \(what)") }
        return line
    }
}

/// A secret file that cannot be used, and why.
public struct SecretFileError: Error, CustomStringConvertible {
    /// What is wrong, and what to do.
    public let description: String
    init(_ description: String) { self.description = description }
}
