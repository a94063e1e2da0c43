import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Testing
import TestSupport

/// For random sequences of commands, valid and invalid, the live views equal a replay of
/// the log after every step, and the invariants hold.
@Suite("Replay property")
struct ReplayPropertyTests {
    /// Draws a command that is valid most of the time and invalid in every way sometimes.
    static func randomCommand(_ g: inout SplitMix64, chordsets: [Chordset], controls: Chord?) -> Command {
        func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[Int(g.next() % UInt64(items.count))] }
        let chordIDs = chordsets.flatMap { $0.chords.map(\.id) } + (controls.map { [$0.id] } ?? [])
        let color = ChordColor.random(using: &g)
        let badColor = ChordColor(hue: 1.5, purity: 0, brightness: 0)
        switch g.next() % 20 {
        case 0...4:
            let title = g.next() % 10 == 0 ? "bad\ntitle" : "t\(g.next() % 1_000)"
            let reuse = g.next() % 15 == 0 ? pick(chordIDs) : nil
            var specs = (0..<8).map { ChordSpec(position: $0) }
            if let reuse { specs[0].id = reuse }
            // Sometimes a client's id of the shape the server gives (its chords then drawn,
            // indexed), or a chord id that looks derived from a chordset that is not its own.
            let clientID = g.next() % 6 == 0 ? DerivedChordIDs.aligned(UUID.version7(at: .now, using: &g)) : nil
            if g.next() % 6 == 0, let other = pick(chordsets) {
                specs[1].id = DerivedChordIDs.chordID(of: DerivedChordIDs.aligned(other.id), position: Int(g.next() % 8))
            }
            return .addChordset(AddChordset(id: clientID, title: title, chords: g.next() % 2 == 0 ? specs : []))
        case 5, 6:
            return .renameChordset(id: pick(chordsets)?.id ?? UUID(), title: "r\(g.next() % 1_000)")
        case 7, 8:
            return .deleteChordset(id: g.next() % 6 == 0 ? UUID() : (pick(chordsets)?.id ?? UUID()))
        case 9, 10:
            return .setChordColor(chordID: pick(chordIDs) ?? UUID(), color: g.next() % 8 == 0 ? badColor : color)
        case 11, 12:
            return .setChordBPM(chordID: pick(chordIDs) ?? UUID(), bpm: Double(g.next() % 1_100))
        case 13:
            return .setControlsChord(SetControlsChord(bpm: 60, color: color))
        case 14...17:
            let target = Int(g.next() % UInt64(max(1, chordsets.count + 1)))
            return .moveChordset(id: pick(chordsets)?.id ?? UUID(), toIndex: target)
        case 18:
            return g.next() % 4 == 0 ? .deleteAll : .addChordset(AddChordset())
        default:
            return .addChordset(AddChordset(id: pick(chordsets)?.id))
        }
    }

    @Test("live state equals a replay of the log after every command", arguments: EngineKind.allCases, [11, 12, 13] as [UInt64])
    func liveEqualsReplay(kind: EngineKind, seed: UInt64) async throws {
        try await onOwnThread {
            let store = try kind.makeStore(seed: seed)
            defer { store.close() }
            var g = SplitMix64(seed: seed)
            var refused = 0
            for step in 0..<250 {
                let live = try store.liveSnapshot()
                let command = Self.randomCommand(&g, chordsets: live.chordsets, controls: live.controlsChord)
                // Mostly fresh command ids, sometimes a repeat of an earlier one (a retry).
                let commandID = step > 0 && g.next() % 10 == 0 ? "c\(g.next() % UInt64(step))" : "c\(step)"
                do throws(ChordStoreError) {
                    try await store.execute(command, context: CommandContext(commandID: commandID))
                } catch {
                    refused += 1
                    #expect(error.code != .internal && error.code != .dataLoss, "step \(step): \(error)")
                }
                let after = try store.liveSnapshot()
                let replayed = try store.replayedSnapshot()
                let difference = replayed.firstDifference(from: after)
                #expect(difference == nil, "step \(step) \(command.kindName): replay vs live: \(difference ?? "")")
                if step % 50 == 49 {
                    let report = try store.verify()
                    #expect(report.isSound, "step \(step): \(String(describing: report.problem))")
                }
                let profile = try store.profile()
                #expect(profile.chords == 8 * profile.chordsets + (profile.hasControlsChord ? 1 : 0))
                if difference != nil { return }
            }
            #expect(refused > 10, "the generator should produce invalid commands too")
            #expect(try store.verify().isSound)
        }
    }
}
