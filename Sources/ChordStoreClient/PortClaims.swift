import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Claims on TCP ports that processes of one machine respect among themselves
/// (``LoopbackPorts``): a claim is a write lock on the port's byte of one shared file.
/// The kernel drops the claims when the file is closed: at `deinit`, or when the process
/// ends, killed or not, so no claim outlives its holder.
///
/// On Linux the locks belong to the open file (`F_OFD_SETLK`): two instances exclude each
/// other even in one process. Elsewhere they are POSIX record locks (`F_SETLK`), which
/// belong to the process: its instances do not exclude each other, and closing any
/// descriptor of the file drops all its locks (one instance per process, then).
final class PortClaims: Sendable {
    private let descriptor: Int32
    /// False once a lock failed for another reason than another holder (a kernel or a
    /// file system without such locks): every claim is granted from then on.
    private let working = Atomic<Bool>(true)

    /// Opens the regular file at `path`, or creates it writable by every user (ports are
    /// the machine's, not a user's); nil when neither can be done, or when `path` is a
    /// symbolic link or not a regular file.
    init?(path: String) {
        var descriptor = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        if descriptor < 0, errno == ENOENT {
            descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
            if descriptor >= 0 {
                _ = fchmod(descriptor, 0o666)  // the umask narrowed it
            } else if errno == EEXIST {
                descriptor = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)  // another process made it in between
            }
        }
        guard descriptor >= 0 else { return nil }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Claims `port`: false when another holder has it. A claim held already is granted
    /// again.
    func claim(_ port: Int) -> Bool {
        guard working.load(ordering: .relaxed) else { return true }
        if lock(port, type: F_WRLCK) { return true }
        let error = errno
        if error == EAGAIN || error == EACCES { return false }
        working.store(false, ordering: .relaxed)
        return true
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
        return fcntl(descriptor, Self.setLock, &request) == 0
    }

    #if os(Linux)
    /// `F_OFD_SETLK` (Linux 3.15), which <fcntl.h> declares only under `_GNU_SOURCE`.
    private static let setLock: Int32 = 37
    #else
    private static let setLock = F_SETLK
    #endif
}
