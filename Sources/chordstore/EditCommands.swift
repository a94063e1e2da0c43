import ChordStoreRecords
import ArgumentParser
import ChordStoreDomain
import ChordStoreEngine
import Foundation

/// Executes one command and prints what happened.
func executeAndReport(_ command: Command, _ global: GlobalOptions) async throws {
    try await executeAndReport(global) { _ in command }
}

/// Executes the command `make` gives for the store reached (which it may read first, as
/// ``chordCommand(_:_:_:)`` does) and prints the event, or its envelope with `--json`.
func executeAndReport(_ global: GlobalOptions, _ make: @escaping (any StoreAccess) async throws -> Command) async throws {
    let recorded = try await withAccess(global) { store in try await store.execute(try await make(store), context: global.context) }
    if global.json {
        return try Output.json(RecordCodec.envelope(for: recorded))
    }
    Output.print("event \(recorded.sequence): \(Output.describe(recorded.event))")
}

/// `chordstore rename ID TITLE`.
struct RenameCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rename", abstract: "Change a chordset's title.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The chordset id.") var id: String
    @Argument(help: "The new title (may be empty).") var title: String

    func run() async throws {
        try await executeAndReport(.renameChordset(id: try parseID(id), title: title), global)
    }
}

/// `chordstore delete ID`.
struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a chordset and its eight chords (cascade).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The chordset id.") var id: String

    func run() async throws {
        try await executeAndReport(.deleteChordset(id: try parseID(id)), global)
    }
}

/// The colour options shared by `set-color` and `set-controls`.
struct ColorOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: "Hue, 0...1.") var hue: Double
    @Option(parsing: .unconditional, help: "Purity (saturation), 0...1.") var purity: Double
    @Option(parsing: .unconditional, help: "Brightness, 0...1.") var brightness: Double
    @Option(parsing: .unconditional, help: "Alpha, 0...1.") var alpha: Double = 1

    var color: ChordColor { ChordColor(hue: hue, purity: purity, brightness: brightness, alpha: alpha) }
}

/// `chordstore set-color CHORD_ID --hue H --purity P --brightness B [--alpha A]`.
struct SetColorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-color", abstract: "Set a chord's background colour (a chordset's chord or the controls chord).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The chord id, or 'controls' for the controls chord.") var chordID: String
    @OptionGroup var color: ColorOptions

    func run() async throws {
        let color = color.color
        try await chordCommand(chordID, global) { .setChordColor(chordID: $0, color: color) }
    }
}

/// Executes the edit `make` gives for the chord `text` names: an id, or `controls` (the
/// controls chord's id, read from the store first; as `show controls` takes it).
func chordCommand(_ text: String, _ global: GlobalOptions, _ make: @escaping @Sendable (UUID) -> Command) async throws {
    guard text == "controls" else { return try await executeAndReport(make(try parseID(text)), global) }
    try await executeAndReport(global) { store in
        guard let controls = try await store.controlsChord() else {
            throw ChordStoreError(.notFound, "the store has no controls chord (set one with set-controls)")
        }
        return make(controls.id)
    }
}

/// `chordstore set-bpm CHORD_ID BPM`.
struct SetBPMCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "set-bpm", abstract: "Set a chord's tempo (1...999 bpm).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The chord id, or 'controls' for the controls chord.") var chordID: String
    @Argument(help: "Beats per minute.") var bpm: Double

    func run() async throws {
        let bpm = bpm
        try await chordCommand(chordID, global) { .setChordBPM(chordID: $0, bpm: bpm) }
    }
}

/// `chordstore set-controls --bpm BPM --hue ...`.
struct SetControlsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-controls", abstract: "Create or replace the stand-alone controls chord.")
    @OptionGroup var global: GlobalOptions
    @Option(parsing: .unconditional, help: "Beats per minute.") var bpm: Double
    @OptionGroup var color: ColorOptions
    @Option(help: ArgumentHelp("The controls chord's id (kept when omitted).", valueName: "UUID")) var id: String?

    func run() async throws {
        let command = SetControlsChord(id: try id.map { try parseID($0) }, bpm: bpm, color: color.color)
        try await executeAndReport(.setControlsChord(command), global)
    }
}

/// `chordstore move ID INDEX`.
struct MoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "move", abstract: "Move a chordset to another place in the user order.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The chordset id.") var id: String
    @Argument(help: "The new index, 0...count-1.") var index: Int

    func run() async throws {
        try await executeAndReport(.moveChordset(id: try parseID(id), toIndex: index), global)
    }
}

/// `chordstore delete-all --yes`.
struct DeleteAllCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-all", abstract: "Delete every chordset (the log keeps them; the controls chord stays).")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Confirm.") var yes = false

    func validate() throws {
        if !yes { throw ValidationError("delete-all deletes every chordset: add --yes to confirm") }
    }

    func run() async throws {
        try await executeAndReport(.deleteAll, global)
    }
}
