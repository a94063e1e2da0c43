import ChordStoreClient
import ChordStoreDomain
import Foundation
import TestSupport
import Testing

/// The domain-typed methods of the reconnecting client, one per call.
@Suite("Client methods")
struct ClientMethodTests {
    @Test("each domain-typed method reaches its call and answers in domain values")
    func typedMethods() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = Client(host: "127.0.0.1", port: server.port)
        let chordset = try await client.addChordset(title: "typed")
        #expect(chordset.chords.count == 8 && chordset.title == "typed")
        try await client.renameChordset(chordset.id, to: "renamed")
        try await client.setChordBPM(chordset.chords[0].id, to: 61)
        try await client.setChordColor(chordset.chords[0].id, to: ChordColor(hue: 0.3, purity: 0, brightness: 0, alpha: 1))
        try await client.setControlsChord(bpm: 70, color: ChordColor(hue: 0, purity: 0, brightness: 0, alpha: 1))
        let second = try await client.addChordset(title: "second")
        try await client.moveChordset(chordset.id, to: 1)
        #expect(try await client.chordsets(order: .index).map(\.title) == ["second", "renamed"])
        #expect(try await client.chordset(chordset.id)?.chords[0].bpm == 61)
        #expect(try await client.chord(chordset.chords[0].id)?.chord.color.hue == 0.3)
        #expect(try await client.controlsChord()?.bpm == 70)
        #expect(try await client.chordset(UUID()) == nil, "NOT_FOUND of a chordset is nil")
        let profile = try await client.profile()
        #expect(profile.chordsets == 2 && profile.lastSequence == 7)
        var events: [RecordedEvent] = []
        for try await event in client.events(from: 1) {
            events.append(event)
            if events.count == 7 { break }
        }
        #expect(events.map(\.sequence) == Array(1...7) && events[1].event.kindName == "chordset_renamed")
        let page = try await client.chordsets(ChordsetQuery(title: (.prefix, "sec"), limit: 10))
        #expect(page.chordsets.map(\.id) == [second.id] && page.nextCursor == nil)
        #expect(try await client.count(ChordsetQuery(title: (.contains, "e"))) == 2)
        #expect(try await client.history(ofChordset: chordset.id).map(\.event.kindName) == [
            "chordset_added", "chordset_renamed", "chord_bpm_set", "chord_color_set", "chordset_moved"])
        #expect(try await client.chordsets(asOf: .sequence(1)).chordsets.map(\.title) == ["typed"])
        try await client.deleteChordset(chordset.id)
        let undone = try await client.undo()
        #expect(undone.mark == .undoes(8))
        try await client.deleteAll()
        #expect(try await client.profile().chordsets == 0)
        let refused = await #expect(throws: ClientError.self) { try await client.renameChordset(chordset.id, to: "gone") }
        #expect(refused?.code == .notFound && refused?.reason == .chordsetNotFound)
        await client.close()
    }

    @Test("a live query answers its result, then the deltas and the new result after each change")
    func liveQuery() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = Client(host: "127.0.0.1", port: server.port)
        let first = try await client.addChordset(title: "b")
        var updates = client.watch(ChordsetQuery(order: .title)).makeAsyncIterator()
        let initial = try await updates.next()
        #expect(initial?.isInitial == true && initial?.chordsets.map(\.id) == [first.id])
        _ = try await client.addChordset(title: "a")
        let next = try await updates.next()
        #expect(next?.isInitial == false && next?.chordsets.map(\.title) == ["a", "b"] && next?.deltas.count == 1, "\(String(describing: next))")
        await client.close()
    }

    @Test("the README's Swift example runs as written")
    func readmeExample() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        _ = try await Client(host: "127.0.0.1", port: server.port).createStore("songs")
        // The lines of README.md, "From Swift" (the server here needs no token).
        let client = Client(host: "127.0.0.1", port: server.port, store: "songs", credentials: ClientCredentials(token: nil))
        let verse = try await client.addChordset(title: "Verse")
        try await client.renameChordset(verse.id, to: "Verse 1")
        try await client.setChordBPM(verse.chords[0].id, to: 96)
        try await client.undo()
        let page = try await client.chordsets(ChordsetQuery(title: (.prefix, "Ver"), order: .title))
        var caught = false
        do {
            try await client.renameChordset(UUID(), to: "x")
        } catch {
            caught = error.reason == .chordsetNotFound
        }
        var shown: [[Chordset]] = []
        for try await update in client.watch(ChordsetQuery()) {
            shown.append(update.chordsets)
            break
        }
        #expect(page.chordsets.map(\.title) == ["Verse 1"] && caught)
        #expect(shown.first?.first?.chords[0].bpm == verse.chords[0].bpm, "the undo reverted the tempo")
        await client.close()
    }
}
