import ChordStoreDomain
import ChordStoreWire
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
// sockaddr_in's members: when another file of this module imports NIOPosix, the C
// module that declares them to Swift in a compile batch can be CNIOLinux (it includes
// <netinet/in.h>), and with MemberImportVisibility they are then visible only where it
// is imported. Which module it is depends on how files are batched (seen once in an
// incremental build): importing it here makes both cases compile.
import CNIOLinux
#endif

/// Free TCP ports on 127.0.0.1, for tests and tools that start servers whose addresses
/// must be known before they listen (cluster members name each other).
public enum LoopbackPorts {
    /// `count` distinct ports that were free a moment ago (bound together, then released;
    /// another process could take one in between). They are taken below the kernel's
    /// range of ephemeral ports where it leaves room: port 0 would hand out a port from
    /// that range, which every outgoing connection of the process draws from too, and a
    /// client socket opened in between could take it. A port is not handed out twice by
    /// one process (until the range is nearly spent): two callers here, each about to
    /// bind what it was given, never race for one port. Nor by two processes that both
    /// use this (a test run and the `chordstore-check` it starts): each port handed out is
    /// claimed with a lock on its byte of a shared file (``claimsPath``), which the
    /// kernel releases when the process ends.
    public static func free(_ count: Int) throws(ClientError) -> [Int] {
        try shared.free(count)
    }

    /// The file whose byte locks are every process's claims on ports (``PortClaims``).
    static let claimsPath = "/tmp/chordstore-loopback-ports.lock"

    /// This process's pool, claiming in the shared file (where it opens: ports are then
    /// claimed in this process only).
    static let shared = Pool(claims: PortClaims(path: claimsPath))

    /// The ports one process hands out, and its claims on them.
    final class Pool: Sendable {
        /// The ports handed out, forgotten (and their claims released) when most of the
        /// range has been.
        private let handedOut = Mutex<Set<Int>>([])
        private let claims: PortClaims?

        /// A pool claiming through `claims` (nil: not across processes).
        init(claims: PortClaims?) {
            self.claims = claims
        }

        /// See ``LoopbackPorts/free(_:)``.
        func free(_ count: Int) throws(ClientError) -> [Int] {
            var sockets: [Int32] = []
            defer { for socket in sockets { close(socket) } }
            var ports: [Int] = []
            let low = ephemeralLow
            let candidates = low > 11_024 ? Array((low - 10_000)..<low).shuffled() : []
            var next = candidates.makeIterator()
            handedOut.withLock {
                guard $0.count > candidates.count * 4 / 5 else { return }
                for port in $0 { claims?.release(port) }
                $0.removeAll()
            }
            while ports.count < count {
                var wanted = 0  // 0: any free port, once the candidates are spent
                while let candidate = next.next() {
                    // Not handed out here before, nor claimed by another process now.
                    let taken = handedOut.withLock { handed in
                        guard !handed.contains(candidate), claims?.claim(candidate) ?? true else { return false }
                        handed.insert(candidate)
                        return true
                    }
                    if taken {
                        wanted = candidate
                        break
                    }
                }
                #if os(Linux)
                let stream = Int32(SOCK_STREAM.rawValue)  // an enum in Glibc
                #else
                let stream = SOCK_STREAM
                #endif
                let fd = socket(AF_INET, stream, 0)
                guard fd >= 0 else { throw ClientError(.unavailable, "cannot open a socket") }
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                address.sin_port = in_port_t(UInt16(wanted).bigEndian)
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let bound = withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
                }
                guard bound else {
                    close(fd)
                    if wanted != 0 { continue }  // taken: the next candidate
                    throw ClientError(.unavailable, "cannot bind a socket to 127.0.0.1")
                }
                sockets.append(fd)
                ports.append(Int(UInt16(bigEndian: address.sin_port)))
            }
            return ports
        }
    }

    /// The lowest port the kernel hands out to outgoing connections (Linux's
    /// `ip_local_port_range`, 32768 where it cannot be read; Darwin's default, 49152).
    static var ephemeralLow: Int {
        #if os(Linux)
        let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        return text?.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { Int($0) } ?? 32_768
        #else
        return 49_152
        #endif
    }
}
