public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The files that hold secrets: the node's admin token (`DATA/admin.token`, made on first
/// start, mode 0600) and the cluster secret (given by the operator).
public enum SecretFile {
    /// The node's admin token in `directory` (`admin.token`): read, or made with a new
    /// secret (mode 0600, never overwritten). Returns the secret and whether it was made.
    public static func localAdminToken(in directory: URL) throws -> (secret: String, created: Bool) {
        let file = directory.appendingPathComponent("admin.token")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let secret = TokenSecret.make(id: TokenSecret.localAdminID)
        let fd = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd >= 0 {
            let bytes = Array((secret + "\n").utf8)
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let synced = fsync(fd)
            close(fd)
            guard written == bytes.count, synced == 0 else {
                unlink(file.path)
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path])
            }
            return (secret, true)
        }
        guard errno == EEXIST else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let stored = try read(file.path, what: "the admin token")
        guard TokenSecret.id(of: stored) == TokenSecret.localAdminID else {
            throw SecretFileError("\(file.path) does not hold an admin token (cs1.local-admin.…): delete it and restart for a new one")
        }
        return (stored, false)
    }

    /// The cluster secret in `path`: its first line, at least 16 bytes.
    public static func clusterSecret(at path: String) throws -> String {
        let secret = try read(path, what: "the cluster secret")
        guard secret.utf8.count >= 16 else {
            throw SecretFileError("the cluster secret in \(path) is \(secret.utf8.count) bytes; give at least 16 (e.g. `openssl rand -hex 32 > \(path)`)")
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
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SecretFileError("cannot read \(what) from \(path): \(error.localizedDescription)")
        }
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? ""
        guard !line.isEmpty else { throw SecretFileError("\(path) is empty: it should hold \(what)") }
        return line
    }
}

/// A secret file that cannot be used, and why.
public struct SecretFileError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
