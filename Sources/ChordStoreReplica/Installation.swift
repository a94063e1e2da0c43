import Foundation

/// Which installation a replica directory belongs to: the file system's number of its
/// queue's file (the inode; format 1: its data file), recorded when the device session
/// was given. A directory
/// copied, or restored from a backup (an iPad restored, an app moved to a new device),
/// has new files and so another number: it is another installation and starts a session
/// of its own. A directory moved or renamed on its volume keeps its files and its
/// number. (The volume's number is left out: it changes when a volume is mounted again,
/// which would throw away the undo history for nothing.) Read through Foundation's file
/// attributes, on every platform.
struct Installation: Sendable, Hashable, CustomStringConvertible {
    let file: UInt64

    /// The identity of `file`; `nil` where the file system gives none.
    init?(of file: URL) {
        let path = file.path
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let file = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value, file != 0
        else { return nil }
        self.file = file
    }

    /// The identity as stored (the file number in decimal).
    init?(_ stored: String) {
        guard let file = UInt64(stored), file != 0 else { return nil }
        self.file = file
    }

    var description: String { String(file) }
}
