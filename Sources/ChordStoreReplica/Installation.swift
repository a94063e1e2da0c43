import Foundation

/// Which installation a replica directory belongs to: the file system's identity of its
/// data file (the volume's number and the file's), recorded when the device session was
/// given. A directory copied, or restored from a backup (an iPad restored, an app moved
/// to a new device), has new files and so another identity: it is another installation
/// and starts a session of its own. A directory moved or renamed on its volume keeps it.
/// Read through Foundation's file attributes, on every platform.
struct Installation: Sendable, Hashable, CustomStringConvertible {
    let volume: UInt64
    let file: UInt64

    /// The identity of the replica's data file in `directory`; `nil` where the file
    /// system gives none.
    init?(of directory: URL) {
        let path = directory.appendingPathComponent("data.mdb").path
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let volume = (attributes[.systemNumber] as? NSNumber)?.uint64Value,
              let file = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value, file != 0
        else { return nil }
        (self.volume, self.file) = (volume, file)
    }

    /// The identity as stored (`VOLUME:FILE`).
    init?(_ stored: String) {
        let parts = stored.split(separator: ":")
        guard parts.count == 2, let volume = UInt64(parts[0]), let file = UInt64(parts[1]) else { return nil }
        (self.volume, self.file) = (volume, file)
    }

    var description: String { "\(volume):\(file)" }
}
