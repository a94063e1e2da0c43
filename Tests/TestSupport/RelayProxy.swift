import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on 127.0.0.1 to a local port, for tests that need a connection to behave
/// in a way a server cannot be made to:
/// - with `uploadBytesPerSecond`, the client's bytes are passed on at most that fast (in
///   slices of 256 bytes; the server's come back at once): an upload then takes as long
///   as its size says, however loaded the machine, and a test can act in the middle of
///   it (kill the client, say) without guessing delays;
/// - the first `silentConnections` connections are accepted and then left silent,
///   nothing passed on and nothing closed, as a wedged peer's would be.
public final class RelayProxy: @unchecked Sendable {
    /// The port the proxy listens on.
    public var port: Int { listener.port }
    private let listener: LoopbackListener
    private let lock = NSLock()
    private var stopped = false
    private var count = 0
    /// The accepted sockets and the connections to the server, for ``cut()``. Each is
    /// closed once the proxy and the pumps using it have let it go, so its descriptor is
    /// never reused while a pump may still use it.
    private var clients: [AcceptedSocket] = []
    private var upstreams: [RawClient] = []

    /// How many connections the proxy accepted.
    public var accepted: Int { lock.withLock { count } }

    /// Listens on a free port of 127.0.0.1 and relays each connection to `targetPort`.
    public init(targetPort: Int, uploadBytesPerSecond: Int? = nil, silentConnections: Int = 0) throws {
        listener = try LoopbackListener(backlog: 16)
        let slice = uploadBytesPerSecond == nil ? 65_536 : 256
        let pause = uploadBytesPerSecond.map { Double(slice) / Double(max(1, $0)) } ?? 0
        Thread.detachNewThread { [self] in
            acceptLoop(targetPort: targetPort, silent: silentConnections, slice: slice, pause: pause)
        }
    }

    /// Cuts every connection relayed or held so far (both ways, at once: bytes the proxy
    /// has not passed on yet are dropped); later connections are relayed as before.
    public func cut() {
        let sockets = lock.withLock { clients.map(\.fd) + upstreams.map(\.fd) }
        for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    /// Stops accepting and cuts every connection.
    public func stop() {
        lock.withLock { stopped = true }
        listener.shutDown()
        cut()
    }

    private func acceptLoop(targetPort: Int, silent: Int, slice: Int, pause: Double) {
        while true {
            let fd = accept(listener.fd, nil, nil)
            if fd < 0 { return }
            let client = AcceptedSocket(fd: fd)
            let (number, refused) = lock.withLock {
                count += 1
                clients.append(client)
                return (count, stopped)
            }
            if refused {
                shutdown(fd, Int32(SHUT_RDWR))
                return
            }
            if number <= silent { continue }  // held open, never read, never answered
            guard let upstream = try? RawClient(port: targetPort) else {
                shutdown(fd, Int32(SHUT_RDWR))
                continue
            }
            var forever = timeval()  // RawClient's reads time out; a relay waits as long as the server
            setsockopt(upstream.fd, SOL_SOCKET, SO_RCVTIMEO, &forever, socklen_t(MemoryLayout<timeval>.size))
            lock.withLock { upstreams.append(upstream) }
            Thread.detachNewThread {
                Self.pump(from: client.fd, to: upstream.fd, slice: slice, pause: pause)
                withExtendedLifetime((client, upstream)) {}
            }
            Thread.detachNewThread {
                Self.pump(from: upstream.fd, to: client.fd, slice: 65_536, pause: 0)
                withExtendedLifetime((client, upstream)) {}
            }
        }
    }

    /// Copies `source` to `destination` until either ends, `slice` bytes at most at a
    /// time, sleeping `pause` seconds per full slice after each.
    private static func pump(from source: Int32, to destination: Int32, slice: Int, pause: Double) {
        var buffer = [UInt8](repeating: 0, count: slice)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            let sent = buffer.withUnsafeBytes { send(destination, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { break }
            if pause > 0 { Thread.sleep(forTimeInterval: pause * Double(n) / Double(slice)) }
        }
        shutdown(destination, Int32(SHUT_WR))
    }
}

/// A socket `accept` returned, closed when the last holder lets it go.
private final class AcceptedSocket: @unchecked Sendable {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    deinit { close(fd) }
}
