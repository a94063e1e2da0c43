import ArgumentParser
import ChordStoreDomain
import ChordStoreEngine

/// `chordstore show ID`: one chordset with its chords, one chord, or the controls chord.
struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show a chordset with its chords, a single chord, or the controls chord.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "A chordset id, a chord id, or 'controls'.")
    var id: String

    @OptionGroup var asOf: AsOfOption

    func run() async throws {
        if let point = try asOf.point() {
            let chordsetID = try parseID(id, what: "chordset id (--as-of reads chordsets only)")
            let answer = try await withAccess(global, readOnly: true) { try await $0.readAsOf(point, .chordset(chordsetID)) }
            guard case .chordset(let chordset, let sequence) = answer, let chordset else {
                throw Failure(ChordStoreError(.notFound, "no chordset had id \(chordsetID) then", reason: .chordsetNotFound))
            }
            if !global.json { Output.print("as of event \(sequence):") }
            return try Output.chordset(chordset, json: global.json)
        }
        if id == "controls" {
            let chord = try await withAccess(global, readOnly: true) { try await $0.controlsChord() }
            guard let chord else { throw Failure(ChordStoreError(.notFound, "the controls chord is not set")) }
            return try Output.chord(chord, chordsetID: nil, json: global.json)
        }
        let id = try parseID(id)
        let (chordset, chord) = try await withAccess(global, readOnly: true) { store in
            (try await store.chordset(id), try await store.chord(id))
        }
        if let chordset { return try Output.chordset(chordset, json: global.json) }
        if let chord { return try Output.chord(chord.chord, chordsetID: chord.chordsetID, json: global.json) }
        throw Failure(ChordStoreError(.notFound, "no chordset or chord has id \(id)"))
    }
}
