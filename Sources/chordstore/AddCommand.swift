import ChordStoreAPI
import ArgumentParser
import ChordStoreDomain
import ChordStoreEngine
import Foundation

/// `chordstore add [TITLE]`: adds a chordset with eight chords of random colours.
struct AddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a chordset (eight chords with random colours, as the seed app did).")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The title (optional; at most 200 characters, no control characters).")
    var title: String = ""

    @Option(help: ArgumentHelp("Use this id instead of a random one.", valueName: "UUID"))
    var id: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Tempo of all eight chords (default 120).", valueName: "BPM"))
    var bpm: Double?

    func run() async throws {
        let id = try self.id.map { try parseID($0) }
        // Checked here too: on the wire a chord's bpm of 0 means the default, so a server
        // would take --bpm 0 as 120.
        if let bpm {
            do { try Validation().checkBPM(bpm) } catch { throw Failure(error) }
        }
        let chords = bpm.map { bpm in (0..<Chordset.chordCount).map { ChordSpec(position: $0, bpm: bpm) } } ?? []
        let recorded = try await withAccess(global) { store in
            try await store.execute(.addChordset(AddChordset(id: id, title: title, chords: chords)), context: global.context)
        }
        guard case .chordsetAdded(let chordset) = recorded.event else { return }
        if global.json { return try Output.json(chordset.proto) }
        Output.print("added chordset \(chordset.id.uuidString) at index \(chordset.index) (event \(recorded.sequence))")
    }
}
