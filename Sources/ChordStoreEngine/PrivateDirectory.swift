public import ChordStoreDomain
public import Foundation

/// Directories that hold a store's data, kept to their owner (docs/SECURITY.md, "Files"):
/// created with mode 0700, their files 0600, and a data directory that other users may
/// write to is refused (they could replace its log or its admin token).
public enum PrivateDirectory {
    /// Creates `directory`, and its missing parents, readable by its owner only; an
    /// existing one is left as it is.
    public static func create(_ directory: URL) throws(ChordStoreError) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ChordStoreError(.unavailable, "cannot create \(directory.path): \(error.localizedDescription)", cause: error)
        }
    }

    /// Refuses a data directory that users other than its owner may write to (the group's
    /// or everyone's `w` bit): `FAILED_PRECONDITION`, saying how to mend it.
    public static func checkWritableByOwnerOnly(_ directory: URL) throws(ChordStoreError) {
        guard let mode = mode(of: directory.path), mode & 0o022 != 0 else { return }
        throw ChordStoreError(
            .failedPrecondition,
            "other users may write to the data directory \(directory.path) (mode \(String(mode & 0o777, radix: 8))): they could replace its log or its admin token. Make it the owner's alone: chmod 700 \(directory.path)")
    }

    /// What other users may read of the data directory `directory` (itself, its log, the
    /// views), as a warning to log; `nil` when it is its owner's alone.
    public static func exposure(of directory: URL) -> String? {
        let paths = [directory.path] + ["data.mdb", "lock.mdb", "views", "views/data.mdb", "views/lock.mdb"].map {
            directory.appendingPathComponent($0).path
        }
        let readable = paths.filter { mode(of: $0).map { $0 & 0o044 != 0 } ?? false }
        guard !readable.isEmpty else { return nil }
        return "other users may read \(readable.joined(separator: ", ")): chmod -R go-rwx \(directory.path)"
    }

    /// The permission bits of `path` (`nil` if it does not exist).
    private static func mode(of path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int
    }
}
