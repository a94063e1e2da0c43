@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The reconnecting client: a write whose connection drops mid-call is retried on a new
/// connection with the same command id and applied exactly once.
@Suite("Client retry")
struct ClientRetryTests {
    @Test("a write retried after the connection drops mid-call is applied exactly once")
    func retryAppliesOnce() async throws {
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        let proxy = try DroppingProxy(targetPort: server.port)
        defer { proxy.stop() }
        let client = Client(host: "127.0.0.1", port: proxy.port)
        let reply: Chordstore_V1_CommandReply = try await client.call(
            .addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "once" })
        #expect(reply.event.sequence == 1)
        #expect(!reply.event.commandID.isEmpty, "the client gives commands an id")
        #expect(proxy.accepted >= 2, "the first connection was dropped and the call retried")
        #expect(try server.store.profile().chordsets == 1)
        #expect(try server.store.profile().lastSequence == 1)
        await client.close()
    }

    @Test("a call that got no reply past its deadline leaves its connection behind: the next call opens a new one and is answered")
    func silentConnectionReplaced() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // The proxy holds its first connection silent, as a wedged one would be (the
        // members' kept clients, `PeerProbe`, saw a peer unreachable for as long as one
        // connection stayed so).
        let proxy = try RelayProxy(targetPort: server.port, silentConnections: 1)
        defer { proxy.stop() }
        let client = Client(host: "127.0.0.1", port: proxy.port, retry: .once)
        defer { Task { await client.close() } }
        do {
            let _: Chordstore_V1_Profile = try await client.call(.getProfile, Chordstore_V1_GetProfileRequest(), timeout: .milliseconds(200))
            Issue.record("a call on a silent connection was answered")
        } catch {
            #expect(error.code == .deadlineExceeded && !error.isServerReply, "\(error)")
        }
        let profile: Chordstore_V1_Profile = try await client.call(.getProfile, Chordstore_V1_GetProfileRequest(), timeout: .seconds(10))
        #expect(profile.lastSequence == 0)
        #expect(proxy.accepted == 2, "one new connection, after the silent one")
    }

    @Test("a read fails with UNAVAILABLE after the attempts run out when nothing listens")
    func givesUp() async throws {
        var policy = Client.RetryPolicy()
        policy.attempts = 2
        policy.backoff = .milliseconds(1)
        let client = Client(host: "127.0.0.1", port: 1, retry: policy)
        do {
            let _: Chordstore_V1_Profile = try await client.call(.getProfile, Chordstore_V1_GetProfileRequest())
            Issue.record("a call to a closed port succeeded")
        } catch {
            #expect(error.code == .unavailable)
        }
    }
}

/// A TCP proxy to a local port that cuts its first connection after passing on the
/// client's first bytes (the server gets the call; the client never sees the reply),
/// and relays later connections faithfully.
final class DroppingProxy: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var count = 0
    private var stopped = false

    var accepted: Int { lock.withLock { count } }

    init(targetPort: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        listen(fd, 16)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop(targetPort: targetPort) }
    }

    func stop() {
        lock.withLock { stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop(targetPort: Int) {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 || lock.withLock({ stopped }) { return }
            let number = lock.withLock { () -> Int in count += 1; return count }
            guard let upstream = try? RawClient(port: targetPort) else { close(client); continue }
            if number == 1 {
                Thread.detachNewThread {
                    var buffer = [UInt8](repeating: 0, count: 65_536)
                    let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                    if n > 0 { upstream.send(Array(buffer[..<n])) }
                    Thread.sleep(forTimeInterval: 0.3)
                    close(client)
                    _ = upstream
                }
            } else {
                Thread.detachNewThread { Self.pump(from: client, to: upstream.fd) }
                Thread.detachNewThread { Self.pump(from: upstream.fd, to: client); _ = upstream }
            }
        }
    }

    private static func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            let sent = buffer.withUnsafeBytes { send(destination, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { break }
        }
        shutdown(destination, Int32(SHUT_WR))
    }
}
