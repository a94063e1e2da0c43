import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Testing

/// Tokens in the log (docs/SECURITY.md): created, revoked, and gone with their store; the
/// views equal a replay; a reopen and a rebuild keep them; the limits hold.
@Suite("Tokens in the engine")
struct TokenEngineTests {
    static func grant(_ id: String, _ role: TokenRole, store: String = "") -> TokenGrant {
        TokenGrant(id: id, role: role, storeName: store, secretHash: Array(repeating: UInt8(id.count), count: 32))
    }

    @Test("create, revoke, store deletion; every event names the token that made it; verify agrees", arguments: EngineKind.allCases)
    func lifecycle(_ kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        try await store.createStore("a", context: CommandContext(tokenID: "local-admin"))
        let admin = try await store.createToken(Self.grant("admin1", .admin), context: CommandContext(tokenID: "local-admin"))
        #expect(admin.createdBy == "local-admin" && admin.grant.storeID == 0)
        let scoped = try await store.createToken(Self.grant("reader1", .readOnly, store: "a"), context: CommandContext(tokenID: "admin1"))
        #expect(scoped.grant.storeID == 1 && scoped.grant.storeName == "a")
        #expect(try store.tokens().map(\.grant.id) == ["admin1", "reader1"])

        // Refusals write nothing.
        await #expect(throws: ChordStoreError.self) { try await store.createToken(Self.grant("admin1", .admin)) }
        let noStore = await #expect(throws: ChordStoreError.self) { try await store.createToken(Self.grant("x1", .readWrite, store: "nowhere")) }
        #expect(noStore?.code == .notFound)
        let scopedAdmin = await #expect(throws: ChordStoreError.self) { try await store.createToken(Self.grant("x2", .admin, store: "a")) }
        #expect(scopedAdmin?.code == .invalidArgument)
        let badID = await #expect(throws: ChordStoreError.self) { try await store.createToken(Self.grant("Not An Id", .admin)) }
        #expect(badID?.code == .invalidArgument)
        let reserved = await #expect(throws: ChordStoreError.self) { try await store.createToken(Self.grant("local-admin", .admin)) }
        #expect(reserved?.code == .invalidArgument)
        let unknown = await #expect(throws: ChordStoreError.self) { try await store.revokeToken("ghost") }
        #expect(unknown?.code == .notFound)

        // An event of a store records its token; the feed of a store never shows token events.
        let added = try await store.execute(.addChordset(AddChordset(title: "x")), context: CommandContext(store: "a", tokenID: "reader1"))
        #expect(added.tokenID == "reader1")
        #expect(try store.history(chordset: try #require(added.event.chordsetID), store: "a").map(\.tokenID) == ["reader1"])

        let revoked = try await store.revokeToken("admin1", context: CommandContext(tokenID: "local-admin"))
        #expect(revoked.tokenID == "local-admin")
        #expect(try store.tokens().map(\.grant.id) == ["reader1"])
        try await store.deleteStore("a")
        #expect(try store.tokens().isEmpty)
        #expect(try store.verify().isSound)
    }

    @Test("tokens survive a reopen and a rebuild from the log; --max-tokens bounds them")
    func durable() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var options = ChordStore.Options()
        options.maxTokens = 2
        var store = try ChordStore.open(at: directory, options: options)
        try await store.createToken(Self.grant("t1", .admin))
        try await store.createToken(Self.grant("t2", .readWrite, store: "default"))
        let full = await #expect(throws: ChordStoreError.self) { try await store.createToken(Self.grant("t3", .admin)) }
        #expect(full?.code == .resourceExhausted)
        let before = try store.tokens()
        store.close()
        store = try ChordStore.open(at: directory, options: options)
        #expect(try store.tokens() == before)
        try await store.rebuild()
        #expect(try store.tokens() == before)
        #expect(try store.verify().isSound)
        store.close()
    }
}
