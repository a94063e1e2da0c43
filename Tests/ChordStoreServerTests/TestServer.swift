import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreServer
import ChordStoreWire
import Foundation
import NIOCore
import Logging
import SwiftProtobuf
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A server on 127.0.0.1 with a free port, over an in-memory or LMDB store.
struct TestServer {
    let store: ChordStore
    let server: Server
    let port: Int

    static func start(durable: Bool = false, limits: WireLimits = WireLimits()) async throws -> TestServer {
        var options = ChordStore.Options()
        options.seed = 3
        let store = durable
            ? try ChordStore.open(at: FileManager.default.temporaryDirectory.appendingPathComponent("server-tests-\(UUID().uuidString)"), options: options)
            : ChordStore.inMemory(options: options)
        var logger = Logger(label: "test-server")
        logger.logLevel = .critical
        let server = Server(store: store, limits: limits, node: "test-node", logger: logger, threads: 1)
        let address = try await server.start(host: "127.0.0.1", port: 0)
        return TestServer(store: store, server: server, port: address.port ?? 0)
    }

    func connect() async throws -> Connection { try await Connection.connect(host: "127.0.0.1", port: port) }

    func stop() async {
        await server.shutdown(grace: .seconds(2))
        store.close()
    }
}

/// Runs blocking work on its own thread, not on the cooperative pool: a test blocked in
/// `recv` on one of the pool's two threads here would starve the server it waits for.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}

/// A blocking TCP client that sends raw bytes and reads raw frames, for malformed input.
/// Its reads go through ``offPool(_:)``.
final class RawClient: @unchecked Sendable {
    let fd: Int32

    init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw ClientError(.unavailable, "connect failed: \(errno)") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Tells the server nothing more will come (it sees end of stream).
    func finishSending() { shutdown(fd, Int32(SHUT_WR)) }

    func send(_ frame: Chordstore_V1_Frame) throws { try send([frame]) }

    /// Sends frames in one write, so the server reads them together.
    func send(_ frames: [Chordstore_V1_Frame]) throws {
        var bytes: [UInt8] = []
        for frame in frames {
            let body: [UInt8] = try frame.serializedBytes()
            bytes += withUnsafeBytes(of: UInt32(body.count).bigEndian) { Array($0) } + body
        }
        send(bytes)
    }

    func call(_ id: UInt64, _ method: String, _ payload: some SwiftProtobuf.Message, timeoutMicros: UInt64 = 0) throws {
        var frame = Chordstore_V1_Frame()
        frame.call = .with {
            $0.callID = id
            $0.method = method
            $0.payload = try! payload.serializedData()
            $0.timeoutMicros = timeoutMicros
        }
        try send(frame)
    }

    /// Reads exactly `count` bytes, or nil at end of stream or timeout.
    func read(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + got, count - got, 0) }
            if n <= 0 { return nil }
            got += n
        }
        return bytes
    }

    /// The next frame, or nil when the server closed the connection.
    func readFrame() throws -> Chordstore_V1_Frame? {
        guard let header = read(4) else { return nil }
        let length = Int(UInt32(bigEndian: header.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }))
        guard let body = read(length) else { return nil }
        return try Chordstore_V1_Frame(serializedBytes: body)
    }

    /// Reads frames until the final reply of `callID`; returns its status and the number
    /// of payload replies before it.
    func finalStatus(of callID: UInt64) async throws -> (status: Chordstore_V1_Status, messages: Int)? {
        try await offPool { try self.blockingFinalStatus(of: callID) }
    }

    private func blockingFinalStatus(of callID: UInt64) throws -> (status: Chordstore_V1_Status, messages: Int)? {
        var messages = 0
        while let frame = try readFrame() {
            guard case .reply(let reply) = frame.kind, reply.callID == callID else { continue }
            if !reply.payload.isEmpty { messages += 1 }
            if reply.hasStatus { return (reply.status, messages) }
        }
        return nil
    }

    /// Reads frames until one for `callID` carries a payload; returns the final statuses
    /// of other calls seen on the way.
    func waitForFirstMessage(of callID: UInt64) async throws -> [UInt64: Chordstore_V1_Status] {
        try await offPool {
            var statuses: [UInt64: Chordstore_V1_Status] = [:]
            while let frame = try self.readFrame() {
                guard case .reply(let reply) = frame.kind else { continue }
                if reply.hasStatus { statuses[reply.callID] = reply.status }
                if reply.callID == callID, !reply.payload.isEmpty { break }
            }
            return statuses
        }
    }

    /// Reads until the server closes the connection; returns the `GoAway` it sent, if any.
    func readUntilClosed() async throws -> Chordstore_V1_GoAway? {
        try await offPool { try self.blockingReadUntilClosed() }
    }

    private func blockingReadUntilClosed() throws -> Chordstore_V1_GoAway? {
        var goAway: Chordstore_V1_GoAway?
        while let frame = try readFrame() {
            if case .goAway(let g) = frame.kind { goAway = g }
        }
        return goAway
    }
}

extension ChordStore {
    /// Adds a chordset and returns it.
    func add(_ title: String) async throws -> Chordset {
        let recorded = try await execute(.addChordset(AddChordset(title: title)))
        guard case .chordsetAdded(let chordset) = recorded.event else {
            throw ChordStoreError(.internal, "add returned \(recorded.event.kindName)")
        }
        return chordset
    }
}
