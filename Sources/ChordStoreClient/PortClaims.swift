import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Claims on TCP ports that processes of one machine respect among themselves
/// (``LoopbackPorts``): a claim is a write lock on the port's byte of one shared file.
/// The kernel drops the claims when the file is closed: at ``deinit``, or when the
/// process ends, killed or not, so no claim outlives its holder.
///
/// On Linux the locks belong to the open file (`F_OFD_SETLK`): two instances exclude each
/// other even in one process. Elsewhere they are POSIX record locks (`F_SETLK`), which
/// belong to the process: its instances do not exclude each other, and closing any
/// descriptor of the file drops all its locks (one instance per process, then).
final class PortClaims: Sendable {
    private let descriptor: Int32

    /// Opens (or creates, writable by every user: ports are the machine's) the file at
    /// `path`; nil when it cannot be opened for writing.
    init?(path: String) {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { return nil }
        _ = fchmod(descriptor, 0o666)  // the creator's umask narrowed it; another user's file stays as it is
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Claims `port`: false when another holder has it. A claim held already is granted
    /// again.
    func claim(_ port: Int) -> Bool {
        lock(port, type: F_WRLCK)
    }

    /// Gives `port` up.
    func release(_ port: Int) {
        _ = lock(port, type: F_UNLCK)
    }

    private func lock(_ port: Int, type: Int32) -> Bool {
        var request = flock()
        request.l_type = Int16(type)
        request.l_whence = Int16(SEEK_SET)
        request.l_start = off_t(port)
        request.l_len = 1
        #if os(Linux)
        let command: Int32 = 37  // F_OFD_SETLK, which <fcntl.h> declares only under _GNU_SOURCE (Linux 3.15)
        #else
        let command = F_SETLK
        #endif
        return fcntl(descriptor, command, &request) == 0
    }
}
