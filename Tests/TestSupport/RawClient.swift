import ChordStoreProto
import Foundation
import SwiftProtobuf
#if canImport(Glibc)
import Glibc
#endif

/// A failure of a ``RawClient``'s socket.
public struct RawClientError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs blocking work on its own thread, not on the cooperative pool: a test blocked in
/// `recv` on one of the pool's two threads here would starve the server it waits for.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}

/// A blocking TCP client that sends raw bytes and reads raw frames, for malformed input.
/// Its reads go through ``offPool(_:)``.
public final class RawClient: @unchecked Sendable {
    public let fd: Int32

    /// Connects to 127.0.0.1:`port`, from `source` (another loopback address, to act as
    /// another host) when given, with a receive buffer of `receiveBuffer` bytes if set.
    public init(port: Int, receiveBuffer: Int32? = nil, source: String? = nil, host: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { throw RawClientError("cannot bind to \(source): errno \(errno)") }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw RawClientError("connect failed: errno \(errno)") }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)  // a loaded 2-core machine can be slow; a failure only waits longer
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    public func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Tells the server nothing more will come (it sees end of stream).
    public func finishSending() { shutdown(fd, Int32(SHUT_WR)) }

    public func send(_ frame: Chordstore_V1_Frame) throws { try send([frame]) }

    /// Sends frames in one write, so the server reads them together.
    public func send(_ frames: [Chordstore_V1_Frame]) throws {
        var bytes: [UInt8] = []
        for frame in frames {
            let body: [UInt8] = try frame.serializedBytes()
            bytes += withUnsafeBytes(of: UInt32(body.count).bigEndian) { Array($0) } + body
        }
        send(bytes)
    }

    public func call(
        _ id: UInt64, _ method: String, _ payload: some SwiftProtobuf.Message, timeoutMicros: UInt64 = 0, metadata: [String: String] = [:]
    ) throws {
        var frame = Chordstore_V1_Frame()
        frame.call = .with {
            $0.callID = id
            $0.method = method
            $0.payload = try! payload.serializedData()
            $0.timeoutMicros = timeoutMicros
            $0.metadata = metadata
        }
        try send(frame)
    }

    /// Reads exactly `count` bytes, or nil at end of stream or timeout.
    public func read(_ count: Int) -> [UInt8]? {
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
    public func readFrame() throws -> Chordstore_V1_Frame? {
        guard let header = read(4) else { return nil }
        let length = Int(UInt32(bigEndian: header.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }))
        guard let body = read(length) else { return nil }
        return try Chordstore_V1_Frame(serializedBytes: body)
    }

    /// Reads frames until the final reply of `callID`; returns its status and the number
    /// of payload replies before it.
    public func finalStatus(of callID: UInt64) async throws -> (status: Chordstore_V1_Status, messages: Int)? {
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
    public func waitForFirstMessage(of callID: UInt64) async throws -> [UInt64: Chordstore_V1_Status] {
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
    public func readUntilClosed() async throws -> Chordstore_V1_GoAway? {
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
