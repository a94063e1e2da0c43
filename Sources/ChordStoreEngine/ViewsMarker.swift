import ChordStoreDomain
import Foundation

/// Tells whether the views environment, which commits without fsync, can be trusted when
/// a store opens.
///
/// `views/open` holds the machine's boot id while a store is open, and after it the
/// opening's own id (``opening``, which names the views' restore point, see
/// ``ViewsRestorePoint``); a clean close syncs the views to disk and then writes `closed`
/// over it. Found at open:
/// - `closed`, or no file (an earlier version removed it at a clean close): the last close was clean;
/// - the same boot id: only the process died; the kernel still holds every page it wrote
///   through the map, so the views are whole (at most a commit behind the log);
/// - another boot id (or anything else): the machine went down with the views open, and
///   pages the kernel never wrote may be missing, so the views go back to the restore point
///   that opening left (``openingLeftOpen``) and catch up from there, or are rebuilt from
///   the log when there is none.
///
/// The file keeps one fixed length and is rewritten in place, never truncated or
/// removed: once it exists, recording an open or a close needs no new block of the disk,
/// so a full disk never stops a store from opening or closing cleanly.
struct ViewsMarker {
    let file: URL
    /// The length of every state written, padded with spaces.
    static let length = 64
    static let closedText = "closed"

    /// This opening's id: 16 hex digits, drawn at random.
    let opening: String

    init(viewsDirectory: URL) {
        file = viewsDirectory.appendingPathComponent("open")
        opening = String(UInt64.random(in: .min ... .max) | 1 << 63, radix: 16)
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
        guard let found = recorded else { return false }
        return found == [Self.closedText] || (Self.bootID != nil && found.first == Self.bootID)
    }

    /// The id of the opening that left the views open (the second word of the file), if
    /// the file names one.
    var openingLeftOpen: String? {
        guard let found = recorded, found.count == 2 else { return nil }
        return found[1]
    }

    /// The file's words, or `nil` if it cannot be read.
    private var recorded: [String]? {
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return nil }
        return text.split(whereSeparator: \.isWhitespace).map(String.init)
    }

    /// Records that the views are open on this boot, by this opening, durably.
    func markOpen() throws(ChordStoreError) {
        try write("\(Self.bootID ?? "unknown") \(opening)")
    }

    /// Records that the views may not be on disk although this boot closed them (their
    /// sync failed): the next open rebuilds them.
    func markUnsynced() {
        try? write("unsynced")
    }

    /// Records a clean close (call it after the views are synced).
    func markClosed() {
        try? write(Self.closedText)
    }

    /// Writes `text`, padded to ``length``, over the file's first bytes and syncs it; a
    /// new file's directory is synced too.
    private func write(_ text: String) throws(ChordStoreError) {
        var bytes = Array(text.utf8.prefix(Self.length - 1))
        bytes += Array(repeating: UInt8(ascii: " "), count: Self.length - 1 - bytes.count) + [UInt8(ascii: "\n")]
        let existed = FileManager.default.fileExists(atPath: file.path)
        try DurableFile.write(bytes, to: file.path)
        if !existed { try DurableFile.sync(file.deletingLastPathComponent().path) }
    }
}
