@_spi(Raw) import ChordStoreClient
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

    static func start(durable: Bool = false, limits: WireLimits = WireLimits(), security: ServerSecurity = .loopbackOnly) async throws -> TestServer {
        var options = ChordStore.Options()
        options.seed = 3
        let store = durable
            ? try ChordStore.open(at: FileManager.default.temporaryDirectory.appendingPathComponent("server-tests-\(UUID().uuidString)"), options: options)
            : ChordStore.inMemory(options: options)
        return try await start(store: store, limits: limits, security: security)
    }

    /// A server over `store`, which it closes when stopped.
    static func start(store: ChordStore, limits: WireLimits = WireLimits(), security: ServerSecurity = .loopbackOnly) async throws -> TestServer {
        var logger = Logger(label: "test-server")
        logger.logLevel = .critical
        let server = Server(store: store, limits: limits, node: "test-node", security: security, logger: logger, threads: 1)
        let address = try await server.start(host: "127.0.0.1", port: 0)
        return TestServer(store: store, server: server, port: address.port ?? 0)
    }

    func connect() async throws -> Connection { try await Connection.connect(host: "127.0.0.1", port: port) }

    func stop() async {
        await server.shutdown(grace: .seconds(2))
        store.close()
    }
}

extension ChordStore {
    /// Adds `count` chordsets titled "c0", "c1", … from 32 concurrent callers (so the
    /// writer batches them), not from a task each: thousands of queued tasks would hold up
    /// the other tests' tasks on the shared cooperative pool.
    func fill(_ count: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<32 {
                group.addTask {
                    for i in stride(from: worker, to: count, by: 32) {
                        _ = try await self.execute(.addChordset(AddChordset(title: "c\(i)")))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Adds a chordset and returns it.
    func add(_ title: String) async throws -> Chordset {
        let recorded = try await execute(.addChordset(AddChordset(title: title)))
        guard case .chordsetAdded(let chordset) = recorded.event else {
            throw ChordStoreError(.internal, "add returned \(recorded.event.kindName)")
        }
        return chordset
    }
}
