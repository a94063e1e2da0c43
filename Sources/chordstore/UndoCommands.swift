import ChordStoreRecords
import ArgumentParser
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import Foundation
import SwiftProtobuf

/// `chordstore undo`.
struct UndoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "undo",
        abstract: "Revert the session's most recent change that is not undone.",
        discussion: prose("""
            The undo is itself an event (the log is never edited): it records the reverting
            change, marked as the undo of the event it reverts. Undo walks back through the
            session's changes one by one; it fails with FAILED_PRECONDITION, changing
            nothing, if another session changed the same chordset (or the controls chord)
            after the change being undone. The session is --session, or this user's stable
            default (see 'chordstore session').
            """))
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await executeAndReport(.undo, global)
    }
}

/// `chordstore redo`.
struct RedoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redo",
        abstract: "Re-apply the session's most recently undone change.",
        discussion: prose("""
            Any new change by the session empties what redo can re-apply. Redo follows the
            same conflict rule as undo.
            """))
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await executeAndReport(.redo, global)
    }
}

/// `chordstore session`: what undo and redo would do next.
struct SessionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session", abstract: "Show the session's name and what undo and redo would do next.")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let name = global.sessionName
        let state = try await withAccess(global, readOnly: true) { try await $0.sessionState(name) }
        if global.json {
            return try Output.json(Chordstore_V1_SessionState.with {
                $0.session = state.session
                $0.undoTarget = state.undoTarget ?? 0
                $0.redoTarget = state.redoTarget ?? 0
                $0.redoDepth = UInt64(state.redoDepth)
            })
        }
        Output.print("session \(state.session)")
        Output.print(state.undoTarget.map { "undo would revert event \($0)" } ?? "nothing to undo")
        Output.print(state.redoTarget.map { "redo would revert undo event \($0) (\(state.redoDepth) undone change(s) to redo)" } ?? "nothing to redo")
    }
}

/// `chordstore history [ID]`.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "List the events of one chordset, or (without an id) those of the session.",
        discussion: prose("""
            A chordset's history includes its add, renames, chord edits, moves, deletes,
            the delete-alls that removed it and the undos that put it back.
            """))
    @OptionGroup var global: GlobalOptions
    @Argument(help: "A chordset id; without it, the session's own events.") var id: String?
    @Option(help: "Start after this sequence number.") var after: UInt64 = 0
    @Option(parsing: .unconditional, help: "Show at most this many (1...100000); a note on standard error says when more follow.") var limit = 1_000

    func validate() throws {
        guard (1...100_000).contains(limit) else { throw ValidationError("--limit must be between 1 and 100000") }
    }

    func run() async throws {
        let chordset = try id.map { try parseID($0, what: "chordset id") }
        let session = global.sessionName
        // In pages of 1,000 events (an event can carry a chordset of 2 KB: a page stays
        // under the 4 MiB frame), each printed as it arrives.
        var listed = 0
        var last = after
        var more = false
        try await withAccess(global, readOnly: true) { store in
            while listed < limit {
                let asked = min(1_000, limit - listed)
                let events = try await store.history(chordset: chordset, session: session, after: last, limit: asked)
                for event in events {
                    Output.print(global.json ? try RecordCodec.envelope(for: event).jsonString() : Output.eventLine(event))
                    last = event.sequence
                }
                listed += events.count
                if events.count < asked { return }
            }
            more = !(try await store.history(chordset: chordset, session: session, after: last, limit: 1).isEmpty)
        }
        if listed == 0 && !global.json {
            Output.print(chordset.map { "no events for chordset \($0.uuidString)" } ?? "no events for session \(session)")
        }
        if more { Output.note("listed \(listed) events; more follow: --after \(last)") }
    }
}

/// `--as-of SEQ|TIME`, shared by the read verbs.
struct AsOfOption: ParsableArguments {
    @Option(name: .customLong("as-of"), help: ArgumentHelp(
        "Read the state as it was after event SEQ, or at TIME (ISO 8601, e.g. 2026-11-22T10:00:00Z).",
        valueName: "SEQ|TIME"))
    var asOf: String?

    /// The point asked for, or `nil` for the present.
    func point() throws -> AsOf? {
        guard let asOf else { return nil }
        if let sequence = UInt64(asOf) { return .sequence(sequence) }
        if let instant = parseInstant(asOf) { return .time(instant) }
        throw ValidationError("--as-of takes a sequence number or an ISO 8601 time, not '\(asOf)'")
    }

    func validate() throws { _ = try point() }
}

/// Parses an ISO 8601 time, with or without fractional seconds.
func parseInstant(_ text: String) -> Instant? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    guard let date = formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text) else { return nil }
    return Instant(microsecondsSince1970: Int64((date.timeIntervalSince1970 * 1_000_000).rounded()))
}
