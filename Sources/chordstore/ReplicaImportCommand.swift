import ArgumentParser
import ChordStoreDomain
import ChordStoreReplica
import Foundation

extension ReplicaCommand {
    /// `chordstore replica --dir D --store S import-core-data FILE.sqlite [--dry-run]`.
    struct ImportCoreData: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import-core-data",
            abstract: "Import an Imager or Image Performer Core Data store (its .sqlite file) into the replica as queued writes.",
            discussion: prose("""
                Reads the app's Core Data store read-only (with its -wal and -shm files; the
                app may have it open) and queues one add per chordset, with its id, title,
                creation date and eight chords, and the controls chord; sync sends them.
                Every row is imported or reported with the rule that handled it (a NULL
                title filled, a missing chord filled, an orphan chord skipped, ...: see
                docs/DEVICES.md, "Coming from Core Data"). Importing again adds nothing:
                chordsets imported before, or whose ids the store holds, are skipped and
                named. --dry-run prints the report and writes nothing.

                Image Performer's RLColor columns are matched by name (hue; purity or
                saturation; brightness; alpha or opacity); when they are named otherwise
                the import refuses with the columns it found: say which is which with
                --map, once per column.

                  chordstore replica --dir phone --store songs import-core-data Imager.sqlite --dry-run
                  chordstore replica --dir phone import-core-data Performer.sqlite --map ZSAT=purity
                  chordstore replica --dir phone sync
                """))
        @OptionGroup var global: GlobalOptions
        @OptionGroup var replica: Options
        @Argument(help: ArgumentHelp("The Core Data store's SQLite file.", valueName: "FILE.sqlite")) var file: String
        @Flag(name: .customLong("dry-run"), help: "Print what the import would do; write nothing.") var dryRun = false
        @Option(
            name: .customLong("map"),
            help: ArgumentHelp("Name the RLColor column that holds a component (hue, purity, brightness, alpha).", valueName: "COLUMN=FIELD"))
        var map: [String] = []
        @Option(parsing: .unconditional, help: "Print at most this many notes per rule (--json prints all).") var notes: Int = 10

        func validate() throws {
            if file.isEmpty { throw ValidationError("FILE.sqlite is empty: name the Core Data store's file") }
            _ = try colorColumns()
            if notes < 0 { throw ValidationError("--notes must be 0 or more") }
        }

        func colorColumns() throws -> [String: ChordColorField] {
            var columns: [String: ChordColorField] = [:]
            for entry in map {
                let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
                let fields = ChordColorField.allCases.map(\.rawValue).joined(separator: ", ")
                guard parts.count == 2, !parts[0].isEmpty else { throw ValidationError("--map \(entry): write COLUMN=FIELD, FIELD one of \(fields)") }
                guard let field = ChordColorField(rawValue: parts[1].lowercased()) else {
                    throw ValidationError("--map \(entry): \(parts[1]) is not a colour component (\(fields))")
                }
                let column = parts[0].uppercased().hasPrefix("Z") ? parts[0].uppercased() : "Z" + parts[0].uppercased()
                if let named = columns.first(where: { key, _ in (key.uppercased().hasPrefix("Z") ? key.uppercased() : "Z" + key.uppercased()) == column }) {
                    if named.value == field { continue }
                    throw ValidationError("--map names column \(parts[0]) twice (for \(named.value.rawValue) and \(field.rawValue))")
                }
                guard !columns.values.contains(field) else { throw ValidationError("--map names two columns for \(field.rawValue)") }
                columns[parts[0]] = field
            }
            return columns
        }

        func run() async throws {
            var options = CoreDataImportOptions()
            options.dryRun = dryRun
            options.colorColumns = try colorColumns()
            // A directory with no replica yet is not made for a dry run, nor for an import
            // that is refused: the import is tried on a scratch replica first.
            let directory = URL(fileURLWithPath: replica.dir)
            let isNew = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).isEmpty
            if isNew {
                let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("chordstore-import-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: scratch) }
                var dry = options
                dry.dryRun = true
                var scratchOptions = ReplicaCommand.Options()
                scratchOptions.dir = scratch.path
                let report = try await ReplicaCommand.with(scratchOptions, global) { scratchReplica in
                    try await Self.importing(scratchReplica, file: file, options: dry)
                }
                if dryRun {
                    if global.json { try Self.printJSON(report) } else {
                        Self.printText(report, file: file, notesPerRule: notes)
                        Output.print("(\(replica.dir) holds no replica yet: nothing was made)")
                    }
                    return
                }
            }
            try await ReplicaCommand.with(replica, global) { replica in
                let report = try await Self.importing(replica, file: file, options: options)
                if global.json {
                    try Self.printJSON(report)
                } else {
                    Self.printText(report, file: file, notesPerRule: notes)
                    Output.print(ReplicaCommand.pendingLine(replica))
                }
            }
        }

        /// The import, its refusal as a `CODE: message` failure.
        static func importing(_ replica: Replica, file: String, options: CoreDataImportOptions) async throws -> CoreDataImportReport {
            do throws(CoreDataImportError) {
                return try await replica.importCoreDataStore(at: URL(fileURLWithPath: file), options: options)
            } catch {
                let found = error.columnsFound.isEmpty ? "" : " (found: \(error.columnsFound.joined(separator: ", ")))"
                throw ChordStoreError(error.statusCode, error.message + (error.code == .colorColumns ? "" : found))
            }
        }

        static func printText(_ report: CoreDataImportReport, file: String, notesPerRule: Int) {
            let model = report.model == .imager ? "Imager" : "Image Performer"
            Output.print("\(report.dryRun ? "Dry run (nothing written): " : "")\(model) store \(report.storeUUID) (\(file))")
            for entity in ["Chordset", "Chord", "RLColor"] {
                guard let read = report.rowsRead[entity] else { continue }
                Output.print(
                    "  \(Output.pad(entity, 9)) \(Output.count(read, "row")): \(report.rowsImported[entity, default: 0]) imported, \(report.rowsSkipped[entity, default: 0]) skipped")
            }
            let verb = report.dryRun ? "would be" : "were"
            let controls = report.dryRun ? (report.controlsChordSet ? "would be" : "would not be") : (report.controlsChordSet ? "was" : "was not")
            Output.print(
                "  \(Output.count(report.chordsetsAdded, "chordset")) \(verb) added (\(Output.count(report.chordsFilled, "chord")) filled in); the controls chord \(controls) set")
            if !report.dryRun { Output.print("  \(Output.count(report.writesQueued, "write")) queued: sync sends them") }
            if !report.alreadyImported.isEmpty { Output.print("  \(Output.count(report.alreadyImported.count, "chordset")) imported before: skipped") }
            if !report.alreadyInStore.isEmpty {
                let shown = report.alreadyInStore.prefix(notesPerRule).map(\.uuidString)
                let more = report.alreadyInStore.count > notesPerRule ? ["..."] : []
                Output.print("  \(Output.count(report.alreadyInStore.count, "chordset")) the store holds already: \((shown + more).joined(separator: ", "))")
            }
            let byRule = Dictionary(grouping: report.notes, by: \.rule)
            for rule in CoreDataImportRule.allCases {
                guard let notes = byRule[rule] else { continue }
                Output.print("\(rule.rawValue) (\(notes.count)):")
                for note in notes.prefix(notesPerRule) { Output.print("  \(note.entity) Z_PK \(note.primaryKey): \(note.detail)") }
                if notes.count > notesPerRule { Output.print("  ... and \(notes.count - notesPerRule) more (--notes N, or --json for all)") }
            }
        }

        static func printJSON(_ report: CoreDataImportReport) throws {
            let object: [String: Any] = [
                "model": report.model.rawValue,
                "storeUuid": report.storeUUID,
                "dryRun": report.dryRun,
                "rowsRead": report.rowsRead,
                "rowsImported": report.rowsImported,
                "rowsSkipped": report.rowsSkipped,
                "chordsetsAdded": report.chordsetsAdded,
                "chordsFilled": report.chordsFilled,
                "controlsChordSet": report.controlsChordSet,
                "writesQueued": report.writesQueued,
                "alreadyImported": report.alreadyImported.map { $0.uuidString.lowercased() },
                "alreadyInStore": report.alreadyInStore.map { $0.uuidString.lowercased() },
                "notes": report.notes.map { ["entity": $0.entity, "zPk": $0.primaryKey, "rule": $0.rule.rawValue, "detail": $0.detail] as [String: Any] },
            ]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            Output.print(String(decoding: data, as: UTF8.self))
        }
    }
}
