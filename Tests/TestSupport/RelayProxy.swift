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
    private var sockets: [Int32] = []

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

    /// Stops accepting and cuts every connection it holds.
    public func stop() {
        let held = lock.withLock {
            stopped = true
            return sockets
        }
        listener.shutDown()
        for socket in held { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop(targetPort: Int, silent: Int, slice: Int, pause: Double) {
        while true {
            let client = accept(listener.fd, nil, nil)
            if client < 0 { return }
            let (number, refused) = lock.withLock {
                count += 1
                sockets.append(client)
                return (count, stopped)
            }
            if refused { return }
            if number <= silent { continue }  // held open, never read, never answered
            guard let upstream = try? RawClient(port: targetPort) else {
                shutdown(client, Int32(SHUT_RDWR))
                continue
            }
            lock.withLock { sockets.append(upstream.fd) }
            Thread.detachNewThread { Self.pump(from: client, to: upstream.fd, slice: slice, pause: pause) }
            Thread.detachNewThread {
                Self.pump(from: upstream.fd, to: client, slice: 65_536, pause: 0)
                _ = upstream
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
