import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
import ChordStoreServer
import ChordStoreWire
import Foundation
import Logging
import SwiftProtobuf
import TestSupport
import Testing

/// Tokens, roles and the registry's permissions, over the wire (docs/SECURITY.md).
@Suite("Security: tokens and permissions")
struct SecurityTests {
    static let adminSecret = TokenSecret.make(id: TokenGrant.localAdminID)
    static let clusterSecret = "a-cluster-secret-of-the-test-cluster"

    static var secured: ServerSecurity {
        ServerSecurity(authentication: .tokens(localAdmin: adminSecret, clusterSecret: clusterSecret))
    }

    /// What each method needs, written here apart from the registry: a method added to
    /// the service without its line here (and a permission in the registry) fails.
    /// `status`: an admin token or a cluster member (GetNodeStatus, GetClusterStatus,
    /// AddMember, RemoveMember, Backup).
    enum Need { case anyone, read, write, admin, status, member }
    static let needs: [ChordStoreAPI.Method: Need] = [
        .addChordset: .write, .renameChordset: .write, .deleteChordset: .write, .setChordColor: .write,
        .setChordBPM: .write, .setControlsChord: .write, .moveChordset: .write, .deleteAll: .write,
        .undo: .write, .redo: .write,
        .listChordsets: .read, .getChordset: .read, .getChord: .read, .getControlsChord: .read, .getProfile: .read,
        .readLog: .read, .getSession: .read, .getHistory: .read, .readAsOf: .read, .subscribe: .read,
        .queryChordsets: .read, .countChordsets: .read, .watchQuery: .read,
        .health: .anyone,
        .replicate: .member, .ackReplication: .member, .promote: .member, .fence: .member, .getLogPosition: .member,
        .getNodeStatus: .status, .getClusterStatus: .status, .addMember: .status, .removeMember: .status,
        .createStore: .admin, .deleteStore: .admin, .listStores: .admin, .getStoreInfo: .read,
        .createToken: .admin, .revokeToken: .admin, .listTokens: .admin,
        .backup: .status, .importEvents: .admin,
    ]

    enum Caller: String, CaseIterable { case stranger, member, admin, readWrite, readOnly }
    enum Outcome: Equatable { case allowed, unauthenticated, denied }

    /// The outcome the security model gives `caller` calling a method with `need` on its
    /// own store (store `a`, the scoped tokens' store) or another (`b`).
    static func expected(_ need: Need, _ caller: Caller, ownStore: Bool) -> Outcome {
        switch (need, caller) {
        case (.anyone, _): return .allowed
        case (_, .stranger): return .unauthenticated
        case (.member, .member), (.status, .member), (.status, .admin): return .allowed
        case (.member, _), (_, .member): return .denied
        case (_, .admin): return .allowed
        case (.read, .readWrite), (.read, .readOnly), (.write, .readWrite): return ownStore ? .allowed : .denied
        default: return .denied
        }
    }

    @Test("every method of the registry declares a permission, and every method × role × own/other store gets the outcome of the model")
    func permissionTable() async throws {
        #expect(Set(Self.needs.keys) == Set(ChordStoreAPI.Method.allCases), "a method has no line in the table of this test")
        #expect(Set(ServiceDispatcher.registry.keys) == Set(ChordStoreAPI.Method.allCases), "a method is missing from the registry")
        let server = try await TestServer.start(security: Self.secured)
        defer { Task { await server.stop() } }
        let admin = ClientCredentials(token: Self.adminSecret)
        let setup = try await Connection.connect(host: "127.0.0.1", port: server.port, credentials: admin)
        _ = try await setup.call(.createStore, Chordstore_V1_CreateStoreRequest.with { $0.name = "a" }, as: Chordstore_V1_StoreInfo.self)
        _ = try await setup.call(.createStore, Chordstore_V1_CreateStoreRequest.with { $0.name = "b" }, as: Chordstore_V1_StoreInfo.self)
        func token(_ role: Chordstore_V1_TokenRole) async throws -> String {
            try await setup.call(.createToken, Chordstore_V1_CreateTokenRequest.with {
                $0.role = role
                $0.store = "a"
            }, as: Chordstore_V1_CreatedToken.self).secret
        }
        let credentials: [Caller: ClientCredentials] = [
            .stranger: ClientCredentials(), .member: ClientCredentials(clusterSecret: Self.clusterSecret), .admin: admin,
            .readWrite: ClientCredentials(token: try await token(.readWrite)), .readOnly: ClientCredentials(token: try await token(.readOnly)),
        ]
        await setup.close()
        var mismatches: [String] = []
        for caller in Caller.allCases {
            for store in ["a", "b"] {
                let connection = try await Connection.connect(host: "127.0.0.1", port: server.port, store: store, credentials: credentials[caller]!)
                for method in ChordStoreAPI.Method.allCases {
                    let outcome: Outcome
                    do {
                        // A refusal comes at once; only an allowed live stream runs to its
                        // deadline (kept short), which counts as allowed.
                        if ServiceDispatcher.registry[method]!.handler.isStream {
                            let stream = try await connection.stream(method, Chordstore_V1_HealthRequest(), timeout: .seconds(1), as: Chordstore_V1_HealthReply.self)
                            for try await _ in stream {}
                        } else {
                            _ = try await connection.callRaw(method, Chordstore_V1_HealthRequest(), timeout: .seconds(20))
                        }
                        outcome = .allowed
                    } catch let error as ClientError {
                        outcome = error.code == .unauthenticated ? .unauthenticated : error.code == .permissionDenied ? .denied : .allowed
                    }
                    let want = Self.expected(Self.needs[method]!, caller, ownStore: store == "a")
                    if outcome != want { mismatches.append("\(method) as \(caller) on \(store): \(outcome), expected \(want)") }
                }
                await connection.close()
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
    }

    @Test("no token: UNAUTHENTICATED; a read-only token of a lists a, cannot add to a, cannot read b; revoked, it fails on its open connection")
    func readOnlyTokenAndRevocation() async throws {
        let server = try await TestServer.start(security: Self.secured)
        defer { Task { await server.stop() } }
        let admin = try #require(Client(address: "127.0.0.1:\(server.port)", credentials: ClientCredentials(token: Self.adminSecret)))
        _ = try await admin.createStore("a")
        _ = try await admin.createStore("b")
        let adminOfA = try #require(Client(address: "127.0.0.1:\(server.port)", store: "a", credentials: ClientCredentials(token: Self.adminSecret)))
        let added = try await adminOfA.execute(.addChordset(AddChordset(title: "In a")))

        let stranger = try await Connection.connect(host: "127.0.0.1", port: server.port, store: "a")
        let refused = await #expect(throws: ClientError.self) {
            try await stranger.call(.listChordsets, Chordstore_V1_ListChordsetsRequest(), as: Chordstore_V1_ChordsetList.self)
        }
        #expect(refused?.code == .unauthenticated)
        await stranger.close()

        let created: Chordstore_V1_CreatedToken = try await admin.call(.createToken, Chordstore_V1_CreateTokenRequest.with {
            $0.role = .readOnly
            $0.store = "a"
        })
        #expect(created.token.role == .readOnly && created.token.store == "a" && created.secret.hasPrefix("cs1.\(created.token.tokenID)."))
        let reader = try await Connection.connect(host: "127.0.0.1", port: server.port, store: "a", credentials: ClientCredentials(token: created.secret))
        let list: Chordstore_V1_ChordsetList = try await reader.call(.listChordsets, Chordstore_V1_ListChordsetsRequest())
        #expect(list.chordsets.map(\.title) == ["In a"])
        let write = await #expect(throws: ClientError.self) {
            try await reader.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "no" }, as: Chordstore_V1_CommandReply.self)
        }
        #expect(write?.code == .permissionDenied)
        let readerOfB = try await Connection.connect(host: "127.0.0.1", port: server.port, store: "b", credentials: ClientCredentials(token: created.secret))
        let other = await #expect(throws: ClientError.self) {
            try await readerOfB.call(.listChordsets, Chordstore_V1_ListChordsetsRequest(), as: Chordstore_V1_ChordsetList.self)
        }
        #expect(other?.code == .permissionDenied)
        await readerOfB.close()

        // The list of tokens: ids, roles, stores, last use; never a secret.
        let tokens: Chordstore_V1_TokenList = try await admin.call(.listTokens, Chordstore_V1_ListTokensRequest())
        #expect(tokens.tokens.map(\.tokenID) == [TokenGrant.localAdminID, created.token.tokenID])
        #expect(tokens.tokens[1].hasLastUsed)
        #expect(!(try tokens.jsonString()).contains(String(created.secret.split(separator: ".").last!)))

        // Revoked: the open connection's next call fails, and its open stream ends.
        let feed = try await reader.stream(.subscribe, Chordstore_V1_SubscribeRequest(), as: Chordstore_V1_EventEnvelope.self)
        let ended = Task { () -> StatusCode? in
            do {
                for try await _ in feed {}
                return .ok
            } catch let error as ClientError {
                return error.code
            } catch {
                return nil
            }
        }
        let _: Chordstore_V1_RevokeTokenReply = try await admin.call(.revokeToken, Chordstore_V1_RevokeTokenRequest.with { $0.tokenID = created.token.tokenID })
        let revoked = await #expect(throws: ClientError.self) {
            try await reader.call(.listChordsets, Chordstore_V1_ListChordsetsRequest(), as: Chordstore_V1_ChordsetList.self)
        }
        #expect(revoked?.code == .unauthenticated)
        #expect(await ended.value == .unauthenticated)
        await reader.close()

        // Who did it: the event of the add records the admin token's id.
        let history: Chordstore_V1_HistoryPage = try await adminOfA.call(.getHistory, Chordstore_V1_GetHistoryRequest.with {
            $0.chordsetID = added.event.chordsetID?.protoBytes ?? Data()
        })
        #expect(history.events.map(\.tokenID) == [TokenGrant.localAdminID])
    }

    @Test("Health needs no token but tells a stranger nothing of the stores: no wait on min_sequence, no store looked up, last_sequence 0")
    func healthTellsStrangersNothing() async throws {
        let server = try await TestServer.start(security: Self.secured)
        defer { Task { await server.stop() } }
        _ = try await server.store.add("one")
        // Waiting for event 1,000,000 of a store that does not exist would end in NOT_FOUND,
        // or DEADLINE_EXCEEDED: it is answered.
        let stranger = try await Connection.connect(host: "127.0.0.1", port: server.port, store: "no-such-store")
        let reply: Chordstore_V1_HealthReply = try await stranger.call(
            .health, Chordstore_V1_HealthRequest(), timeout: .seconds(5), minSequence: 1_000_000)
        #expect(reply.lastSequence == 0 && reply.protocolVersion == 1)
        await stranger.close()
        let admin = try await Connection.connect(host: "127.0.0.1", port: server.port, credentials: ClientCredentials(token: Self.adminSecret))
        let known: Chordstore_V1_HealthReply = try await admin.call(.health, Chordstore_V1_HealthRequest())
        #expect(known.lastSequence == 1)
        await admin.close()
    }

    @Test("a store's deletion takes its tokens with it; a token never reaches a re-created store of the same name")
    func storeDeletionRevokesItsTokens() async throws {
        let server = try await TestServer.start(security: Self.secured)
        defer { Task { await server.stop() } }
        let admin = try #require(Client(address: "127.0.0.1:\(server.port)", credentials: ClientCredentials(token: Self.adminSecret)))
        _ = try await admin.createStore("a")
        let created: Chordstore_V1_CreatedToken = try await admin.call(.createToken, Chordstore_V1_CreateTokenRequest.with {
            $0.role = .readWrite
            $0.store = "a"
        })
        _ = try await admin.deleteStore("a")
        _ = try await admin.createStore("a")
        let writer = try await Connection.connect(host: "127.0.0.1", port: server.port, store: "a", credentials: ClientCredentials(token: created.secret))
        let refused = await #expect(throws: ClientError.self) {
            try await writer.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "x" }, as: Chordstore_V1_CommandReply.self)
        }
        #expect(refused?.code == .unauthenticated)
        await writer.close()
        #expect(try server.store.tokens().isEmpty)
    }

    @Test("wrong tokens: answered at once, then after growing delays, then the connection is closed; counted")
    func guessingIsSlowedThenCut() async throws {
        var security = Self.secured
        security.guessing.firstDelay = .milliseconds(20)
        security.guessing.maxDelay = .milliseconds(80)
        security.guessing.closeAfter = 6
        let server = try await TestServer.start(security: security)
        defer { Task { await server.stop() } }
        let guesser = try await Connection.connect(
            host: "127.0.0.1", port: server.port, credentials: ClientCredentials(token: "cs1.local-admin.\(String(repeating: "A", count: 43))"))
        var codes: [StatusCode] = []
        for _ in 0..<5 {
            do {
                _ = try await guesser.call(.getProfile, Chordstore_V1_GetProfileRequest(), as: Chordstore_V1_Profile.self)
            } catch {
                codes.append(error.code)
            }
        }
        #expect(codes == Array(repeating: .unauthenticated, count: 5))
        // The sixth failure is answered, then the connection is closed, with a GoAway
        // saying why (docs/PROTOCOL.md §2: a client that reads no GoAway learns of it
        // when it sends a seventh).
        let sixth = await #expect(throws: ClientError.self) {
            _ = try await guesser.call(.getProfile, Chordstore_V1_GetProfileRequest(), as: Chordstore_V1_Profile.self)
        }
        #expect(sixth?.code == .unauthenticated && sixth?.isServerReply == true, "\(String(describing: sixth))")
        let goAway = await guesser.closed()
        #expect(goAway?.status.code == UInt32(StatusCode.unauthenticated.rawValue))
        #expect(server.server.failedAuthentications == 6)
        // The right token from the same address still works at once.
        let admin = try await Connection.connect(host: "127.0.0.1", port: server.port, credentials: ClientCredentials(token: Self.adminSecret))
        let _: Chordstore_V1_Profile = try await admin.call(.getProfile, Chordstore_V1_GetProfileRequest())
        await admin.close()
    }

    @Test("the guessing limiter: free failures, doubling delays up to the cap, then close; windows expire; addresses are bounded")
    func failedAuthenticationsScenario() {
        var limiter = FailedAuthentications()
        limiter.maxPeers = 3
        let start = ContinuousClock.now
        var penalties: [FailedAuthentications.Penalty] = []
        for _ in 0..<11 { penalties.append(limiter.failed(from: "10.0.0.1", at: start).penalty) }
        #expect(penalties == [
            .answer, .answer, .answer, .delay(.milliseconds(100)), .delay(.milliseconds(200)), .delay(.milliseconds(400)),
            .delay(.milliseconds(800)), .delay(.milliseconds(1_600)), .delay(.seconds(2)), .close(after: .seconds(2)), .close(after: .seconds(2)),
        ])
        // Another address is not slowed by the first's failures; a window later, neither is the first.
        #expect(limiter.failed(from: "10.0.0.2", at: start).penalty == .answer)
        #expect(limiter.failed(from: "10.0.0.1", at: start + .seconds(61)).penalty == .answer)
        for peer in 3...10 { _ = limiter.failed(from: "10.0.0.\(peer)", at: start + .seconds(62)) }
        #expect(limiter.peerCount <= 3)
        #expect(limiter.total == 21)
    }

    @Test("--auth none binds loopback only: any other address is refused before listening")
    func noAuthenticationOnLoopbackOnly() async throws {
        let store = ChordStore.inMemory()
        defer { store.close() }
        let server = Server(store: store, security: .loopbackOnly, logger: Logger(label: "test"), threads: 1)
        let refusal = await #expect(throws: WireError.self) { _ = try await server.start(host: "0.0.0.0", port: 0) }
        #expect(refusal?.code == .failedPrecondition)
        await server.shutdown(grace: .zero)
    }
}

/// TLS on the client port (docs/SECURITY.md).
@Suite("Security: TLS")
struct TLSTests {
    @Test("a TLS server answers a client that trusts its authority, refuses a plaintext client and one that trusts another authority")
    func tlsServer() async throws {
        let certificates = try TestCertificates.make()
        defer { try? FileManager.default.removeItem(at: certificates.directory) }
        var security = SecurityTests.secured
        security.tls = try ServerTLS(certificateFile: certificates.serverCertificate, keyFile: certificates.serverKey)
        let server = try await TestServer.start(security: security)
        defer { Task { await server.stop() } }
        let trusted = try await Connection.connect(
            host: "127.0.0.1", port: server.port,
            credentials: ClientCredentials(token: SecurityTests.adminSecret, tls: try ClientTLS(caFile: certificates.ca)))
        let profile: Chordstore_V1_Profile = try await trusted.call(.getProfile, Chordstore_V1_GetProfileRequest())
        #expect(profile.chordsets == 0)
        await trusted.close()

        // Plaintext: the server reads a TLS record that is not one and closes the connection.
        let plain = try await Connection.connect(host: "127.0.0.1", port: server.port, credentials: ClientCredentials(token: SecurityTests.adminSecret))
        await #expect(throws: ClientError.self) {
            try await plain.call(.getProfile, Chordstore_V1_GetProfileRequest(), timeout: .seconds(5), as: Chordstore_V1_Profile.self)
        }
        await plain.close()

        // A client that trusts another authority refuses the server's certificate.
        await #expect(throws: ClientError.self) {
            let wrong = try await Connection.connect(
                host: "127.0.0.1", port: server.port,
                credentials: ClientCredentials(token: SecurityTests.adminSecret, tls: try ClientTLS(caFile: certificates.otherCA)))
            defer { Task { await wrong.close() } }
            _ = try await wrong.call(.getProfile, Chordstore_V1_GetProfileRequest(), timeout: .seconds(5), as: Chordstore_V1_Profile.self)
        }
    }

    @Test("mutual TLS: a client without a certificate of the client authority is refused; one with it is served")
    func mutualTLS() async throws {
        let certificates = try TestCertificates.make()
        defer { try? FileManager.default.removeItem(at: certificates.directory) }
        var security = SecurityTests.secured
        security.tls = try ServerTLS(certificateFile: certificates.serverCertificate, keyFile: certificates.serverKey, clientCAFile: certificates.ca)
        let server = try await TestServer.start(security: security)
        defer { Task { await server.stop() } }
        await #expect(throws: ClientError.self) {
            let anonymous = try await Connection.connect(
                host: "127.0.0.1", port: server.port,
                credentials: ClientCredentials(token: SecurityTests.adminSecret, tls: try ClientTLS(caFile: certificates.ca)))
            defer { Task { await anonymous.close() } }
            _ = try await anonymous.call(.getProfile, Chordstore_V1_GetProfileRequest(), timeout: .seconds(5), as: Chordstore_V1_Profile.self)
        }
        let known = try await Connection.connect(
            host: "127.0.0.1", port: server.port,
            credentials: ClientCredentials(
                token: SecurityTests.adminSecret,
                tls: try ClientTLS(caFile: certificates.ca, certificateFile: certificates.clientCertificate, keyFile: certificates.clientKey)))
        let _: Chordstore_V1_Profile = try await known.call(.getProfile, Chordstore_V1_GetProfileRequest())
        await known.close()
    }
}

/// Cluster members prove themselves with the cluster secret (docs/SECURITY.md).
@Suite("Security: cluster members")
struct ClusterSecurityTests {
    @Test("each cluster method, as a stranger and as an admin token: refused, no log bytes, and the leader keeps committing quorum writes")
    func strangersCannotReplicateOrFence() async throws {
        let (leader, follower, _) = try await ReplicationServerTests.Member.startPair(
            security: SecurityTests.secured, credentials: ClientCredentials(clusterSecret: SecurityTests.clusterSecret), durability: .quorum)
        defer { Task { await follower.stop(); await leader.stop() } }
        let writer = try #require(Client(address: leader.address, credentials: ClientCredentials(token: SecurityTests.adminSecret)))
        let first = try await writer.execute(.addChordset(AddChordset(title: "before")))
        let epoch = leader.store.epoch
        let requests: [(ChordStoreAPI.Method, any SwiftProtobuf.Message)] = [
            (.replicate, Chordstore_V1_ReplicateRequest.with { $0.fromSequence = 1 }),
            (.ackReplication, Chordstore_V1_ReplicationAck.with { $0.sequence = 1_000_000 }),
            (.fence, Chordstore_V1_FenceRequest.with {
                $0.epoch = epoch + 100
                $0.leader = "127.0.0.1:1"
            }),
            (.promote, Chordstore_V1_PromoteRequest.with { $0.force = true }),
        ]
        for credentials in [ClientCredentials(), ClientCredentials(token: SecurityTests.adminSecret)] {
            for target in [leader, follower] {
                let targetPort = Int(target.address.split(separator: ":").last!)!
                let connection = try await Connection.connect(host: "127.0.0.1", port: targetPort, credentials: credentials)
                for (method, request) in requests {
                    var received = 0
                    do {
                        if method == .replicate {
                            for try await batch in try await connection.stream(method, request, timeout: .seconds(2), as: Chordstore_V1_ReplicationBatch.self) {
                                received += batch.records.count
                            }
                        } else {
                            _ = try await connection.callRaw(method, request, timeout: .seconds(2))
                        }
                        Issue.record("\(method) was answered for \(credentials.token == nil ? "a stranger" : "an admin token")")
                    } catch let error as ClientError {
                        #expect(error.code == .unauthenticated || error.code == .permissionDenied, "\(method): \(error)")
                    }
                    #expect(received == 0)
                }
                await connection.close()
            }
            // Still the leader, at its epoch, committing quorum writes.
            let reply = try await writer.execute(.addChordset(AddChordset(title: "after")))
            #expect(reply.sequence > first.sequence)
        }
        #expect(leader.node.role == .leader && follower.node.role == .follower)
        #expect(leader.store.epoch == epoch && follower.store.epoch == epoch)
        // The member with the secret is served: the follower holds every write.
        #expect(await eventually(timeout: .seconds(10)) { (try? follower.store.profile().chordsets) == 3 })
    }
}
