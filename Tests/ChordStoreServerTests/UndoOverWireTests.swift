@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf
import Testing

/// The error `body` fails with, or `nil` if it succeeds.
func failure(_ body: () async throws -> Void) async -> ClientError? {
    do {
        try await body()
        return nil
    } catch let error as ClientError {
        return error
    } catch {
        return ClientError(.unknown, "not a ClientError: \(error)")
    }
}

/// Undo, redo, history, reads of the past and optimistic concurrency through the protocol.
@Suite("Undo over the wire")
struct UndoOverWireTests {
    @Test("an expected revision that moved on is ABORTED with the current revision; a retried command id applies once")
    func expectedRevisionAndRetries() async throws {
        let server = try await TestServer.start()
        let client = try await server.connect()
        defer { Task { await client.close(); await server.stop() } }

        let added: Chordstore_V1_CommandReply = try await client.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "a" })
        let id = added.event.chordsetAdded.chordset.id
        func rename(_ title: String, expected: UInt64?, commandID: String = "") -> Chordstore_V1_RenameChordsetRequest {
            .with {
                $0.chordsetID = id
                $0.title = title
                $0.context.commandID = commandID
                if let expected { $0.context.expected = .with { $0.revision = expected } }
            }
        }
        let renamed: Chordstore_V1_CommandReply = try await client.call(.renameChordset, rename("b", expected: added.event.sequence))
        let stale = await failure {
            _ = try await client.call(.renameChordset, rename("c", expected: added.event.sequence), as: Chordstore_V1_CommandReply.self)
        }
        #expect(stale?.code == .aborted)
        #expect(stale?.currentRevision == renamed.event.sequence)
        // Expected revision 0: "never changed", so a stale client creating a chordset
        // with a known id is refused, and the first one is accepted.
        let existing = await failure {
            _ = try await client.call(.addChordset, Chordstore_V1_AddChordsetRequest.with {
                $0.id = id
                $0.context.expected = .with { $0.revision = 0 }
            }, as: Chordstore_V1_CommandReply.self)
        }
        #expect(existing?.code == .aborted)

        // The same command id twice: the original event comes back, nothing new is written.
        let first: Chordstore_V1_CommandReply = try await client.call(.renameChordset, rename("d", expected: nil, commandID: "retry-1"))
        let second: Chordstore_V1_CommandReply = try await client.call(.renameChordset, rename("d", expected: nil, commandID: "retry-1"))
        #expect(second.event == first.event)
        let undoRequest = Chordstore_V1_UndoRequest.with { $0.context.commandID = "undo-1" }
        let undo1: Chordstore_V1_CommandReply = try await client.call(.undo, undoRequest)
        let undo2: Chordstore_V1_CommandReply = try await client.call(.undo, undoRequest)
        #expect(undo1.event == undo2.event)
        #expect(undo1.event.mark.undoes == first.event.sequence)
        let profile: Chordstore_V1_Profile = try await client.call(.getProfile, Chordstore_V1_GetProfileRequest())
        #expect(profile.lastSequence == undo1.event.sequence)
        #expect(try server.store.chordset(try UUID(protoBytes: id))?.title == "b")
    }

    @Test("undo, redo, session state, history and reads of the past answer over the wire")
    func methods() async throws {
        let server = try await TestServer.start()
        let client = Client(host: "127.0.0.1", port: server.port)
        defer { Task { await client.close(); await server.stop() } }

        let app = WriteOptions(session: "app")
        let added = try await client.execute(.addChordset(AddChordset(title: "one")), options: app)
        let id = try #require(added.event.chordsetID)
        let renamed = try await client.renameChordset(id, to: "two", options: app)
        var state = try await client.session("app")
        #expect(state.undoTarget == renamed.sequence && state.redoTarget == nil)

        let undo = try await client.undo(options: app)
        #expect(undo.mark == .undoes(renamed.sequence))
        #expect(undo.event == .chordsetRenamed(id: id, title: "one", previousTitle: "two"), "\(undo.event)")
        state = try await client.session("app")
        #expect(state.redoTarget == undo.sequence && state.redoDepth == 1)
        let redo = try await client.redo(options: app)
        #expect(redo.mark == .redoes(undo.sequence) && redo.event == .chordsetRenamed(id: id, title: "two", previousTitle: "one"))
        let nothing = await #expect(throws: ClientError.self) { try await client.redo(options: app) }
        #expect(nothing?.code == .failedPrecondition && nothing?.reason == .nothingToRedo)

        let history = try await client.history(ofChordset: id, limit: 2)
        #expect(history.map(\.sequence) == [added.sequence, renamed.sequence])
        let rest = try await client.history(ofChordset: id, after: renamed.sequence)
        #expect(rest.map(\.sequence) == [undo.sequence, redo.sequence])
        #expect(try await client.history(ofSession: "app", limit: 100).count == 4)

        let past = try await client.chordsets(asOf: .sequence(added.sequence), order: .index)
        #expect(past.sequence == added.sequence && past.chordsets.map(\.title) == ["one"])
        #expect(try await client.chordset(id, asOf: .sequence(undo.sequence)).chordset?.title == "one")
        #expect(try await client.profile(asOf: .sequence(0)).chordsets == 0)
        let beyond = await #expect(throws: ClientError.self) { try await client.profile(asOf: .sequence(1_000)) }
        #expect(beyond?.code == .outOfRange)
    }
}
