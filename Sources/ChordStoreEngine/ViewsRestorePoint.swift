import ChordStoreDomain
import ChordStoreRecords
import Foundation
import LMDB

/// The views' restore point, `views/restore-point`: a state of the views (written
/// without fsync) that a machine crash cannot have damaged, so that a store opening after
/// one catches the views up from there instead of rebuilding them from the whole log.
///
/// ``ViewsSyncer`` takes one every ``ChordStore/Options/restorePointInterval`` or
/// ``ChordStore/Options/restorePointEvents`` events: it pins the views' last commit (no
/// later commit overwrites its pages, see `PinnedCommit`), syncs the views' file, and
/// writes this file with that commit's meta page. After a crash, the meta page written
/// back over the views' two makes them that state again (`Environment.rollBack`).
///
/// The file names the opening that took it (``ViewsMarker/opening``): only that opening
/// kept the state pinned, so a restore point is used only when `views/open` says that
/// opening was the one the machine went down in.
///
/// Layout: `CSVIEWS1`, the opening's 16 hex digits, the views' applied event (8 bytes),
/// the page size (4), the meta page's first bytes (152), then the XXH64 of all that
/// (8 bytes; integers big-endian).
struct ViewsRestorePoint: Equatable {
    /// The opening that made it.
    let opening: String
    /// The last event the views held then.
    let applied: UInt64
    /// The views' state then.
    let meta: CommitMeta

    static let magic = Array("CSVIEWS1".utf8)
    static let encodedLength = 8 + 16 + 8 + 4 + CommitMeta.length + 8

    var encoded: [UInt8] {
        var bytes = Self.magic + Array(opening.utf8)
        bytes += withUnsafeBytes(of: applied.bigEndian) { Array($0) }
        bytes += withUnsafeBytes(of: UInt32(meta.pageSize).bigEndian) { Array($0) }
        bytes += meta.bytes
        bytes += withUnsafeBytes(of: XXHash64.hash(bytes).bigEndian) { Array($0) }
        return bytes
    }

    init(opening: String, applied: UInt64, meta: CommitMeta) {
        self.opening = opening
        self.applied = applied
        self.meta = meta
    }

    /// Decodes ``encoded``; `nil` for anything else (damaged, truncated, another layout).
    init?(bytes: [UInt8]) {
        guard bytes.count == Self.encodedLength, Array(bytes[0..<8]) == Self.magic else { return nil }
        func integer<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            bytes.withUnsafeBytes { T(bigEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
        }
        let end = Self.encodedLength - 8
        guard XXHash64.hash(bytes[0..<end]) == integer(end, UInt64.self),
            let opening = String(validating: bytes[8..<24], as: UTF8.self),
            let meta = CommitMeta(bytes: Array(bytes[36..<(36 + CommitMeta.length)]), pageSize: Int(integer(32, UInt32.self)))
        else { return nil }
        self.init(opening: opening, applied: integer(24, UInt64.self), meta: meta)
    }

    /// The restore point in `viewsDirectory`, or `nil` if there is none it can read.
    static func read(in viewsDirectory: URL) -> ViewsRestorePoint? {
        guard let data = try? Data(contentsOf: file(in: viewsDirectory)) else { return nil }
        return ViewsRestorePoint(bytes: Array(data))
    }

    static func file(in viewsDirectory: URL) -> URL { viewsDirectory.appendingPathComponent("restore-point") }

    /// Replaces the restore point in `viewsDirectory` with this one, durably: a new file,
    /// synced, renamed over the old, the directory synced. A crash leaves the old or the
    /// new. `renamed` is set once the rename is done: should the directory's sync fail
    /// then, either file may be the one a crash leaves. A write that fails before the
    /// rename removes the new file.
    func write(in viewsDirectory: URL, renamed: inout Bool) throws(ChordStoreError) {
        try DurableFile.replace(Self.file(in: viewsDirectory), with: encoded, renamed: &renamed)
    }

    /// Removes the restore point in `viewsDirectory`, durably (before the state it names
    /// may be overwritten).
    static func remove(in viewsDirectory: URL) throws(ChordStoreError) {
        try DurableFile.remove(file(in: viewsDirectory))
    }
}
