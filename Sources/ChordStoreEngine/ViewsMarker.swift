import ChordStoreDomain
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Tells whether the views environment, which commits without fsync, can be trusted when
/// a store opens.
///
/// While a store is open, `views/open` holds the machine's boot id; a clean close syncs
/// the views to disk and then removes it. Found at open:
/// - no file: the last close was clean;
/// - the same boot id: only the process died; the kernel still holds every page it wrote
///   through the map, so the views are whole (at most a commit behind the log);
/// - another boot id (or none readable): the machine went down with the views open, and
///   pages the kernel never wrote may be missing, so the views are rebuilt from the log.
struct ViewsMarker {
    let file: URL

    init(viewsDirectory: URL) {
        file = viewsDirectory.appendingPathComponent("open")
    }

    /// This boot's id (Linux), or `nil` where the system has none.
    static let bootID: String? = {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else { return nil }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty ? nil : id
    }()

    /// Whether views left by the last opening may be used.
    var viewsTrusted: Bool {
        guard FileManager.default.fileExists(atPath: file.path) else { return true }
        guard let bootID = Self.bootID, let found = try? String(contentsOf: file, encoding: .utf8) else { return false }
        return found == bootID
    }

    /// Records that the views are open on this boot, durably (file and directory synced).
    func markOpen() throws(ChordStoreError) {
        let text = Self.bootID ?? "unknown"
        let fd = open(file.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Self.failure("create", file.path) }
        defer { close(fd) }
        let written = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
        guard written == text.utf8.count, fsync(fd) == 0 else { throw Self.failure("write", file.path) }
        try Self.syncDirectory(file.deletingLastPathComponent())
    }

    /// Records that the views may not be on disk although this boot closed them (their
    /// sync failed): the next open rebuilds them.
    func markUnsynced() {
        try? "unsynced".write(to: file, atomically: true, encoding: .utf8)
    }

    /// Records a clean close (call it after the views are synced).
    func markClosed() {
        unlink(file.path)
        try? Self.syncDirectory(file.deletingLastPathComponent())
    }

    private static func syncDirectory(_ directory: URL) throws(ChordStoreError) {
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("open", directory.path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw failure("sync", directory.path) }
    }

    private static func failure(_ action: String, _ path: String) -> ChordStoreError {
        ChordStoreError(.unavailable, "cannot \(action) \(path): \(String(cString: strerror(errno)))")
    }
}
