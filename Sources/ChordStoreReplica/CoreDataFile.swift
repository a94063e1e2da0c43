import ChordStoreDomain
import ChordStoreRecords
import Foundation
import GRDB

/// The rows of a Core Data SQLite store of one of the seed models, read as Core Data lays
/// them out: entities from `Z_PRIMARYKEY` (`Z_ENT`, `Z_NAME`, `Z_SUPER`), an entity's rows
/// from its root entity's `Z<NAME>` table where `Z_ENT` is its number, attributes from
/// `Z<ATTRIBUTE>` columns, to-one relationships as `Z<RELATIONSHIP>` keys to `Z_PK`, dates
/// as seconds since 2001-01-01, UUIDs as 16-byte blobs.
struct CoreDataFile: Sendable {
    struct ChordsetRow: Sendable {
        var pk: Int64
        var id: CoreDataID
        var title: String?
        /// Whether the title's bytes were not UTF-8 (each bad sequence became U+FFFD).
        var titleNotUTF8 = false
        /// Seconds since Core Data's reference date.
        var created: Double?
        /// Image Performer's user order.
        var index: Int64?
    }

    struct ChordRow: Sendable {
        var pk: Int64
        var id: CoreDataID
        var position: Int64?
        var bpm: Double?
        var chordset: Int64?
        /// Imager: the colour index.
        var colorIndex: Int64?
        /// Image Performer: the `RLColor` row's `Z_PK`, when the chord's table holds it.
        var color: Int64?
    }

    struct ColorRow: Sendable {
        var pk: Int64
        var chord: Int64?
        /// Hue, purity, brightness and alpha, in ``ChordColorField/allCases`` order.
        var components: [Double?]

        func component(_ field: ChordColorField) -> Double? {
            components[ChordColorField.allCases.firstIndex(of: field)!]
        }
    }

    /// An id column's value.
    enum CoreDataID: Sendable, Hashable {
        case null
        case uuid(UUID)
        /// Neither a 16-byte blob nor a UUID string: what it was, for the report.
        case unreadable(String)
    }

    var model: CoreDataModel
    /// `Z_METADATA.Z_UUID` (the store's `NSStoreUUID`).
    var uuid: String
    var chordsets: [ChordsetRow] = []
    var chords: [ChordRow] = []
    var colors: [ColorRow] = []

    /// Reads the store at `url` read-only, in one read transaction (with its `-wal` file:
    /// what the app has committed, while it may have the store open).
    static func read(at url: URL, colorColumns: [String: ChordColorField]) throws(CoreDataImportError) -> CoreDataFile {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw CoreDataImportError(.notFound, "\(url.path) does not exist")
        }
        // A FIFO or a device would block the read, a directory is no store.
        let type = (try? FileManager.default.attributesOfItem(atPath: url.resolvingSymlinksInPath().path))?[.type] as? FileAttributeType
        guard type == .typeRegular else {
            throw CoreDataImportError(.unreadable, "\(url.path) is not a regular file (a Core Data store is one)")
        }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(5)
        do {
            let database = try DatabaseQueue(path: url.path, configuration: configuration)
            defer { try? database.close() }
            return try database.read { db in try read(db, path: url.path, colorColumns: colorColumns) }
        } catch let error as CoreDataImportError {
            throw error
        } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB {
            throw CoreDataImportError(.unreadable, "\(url.path) is not an SQLite database")
        } catch {
            // SQLITE_BUSY after the wait (the app holds an exclusive lock), no permission, ...
            throw CoreDataImportError(.unreadable, "cannot read \(url.path): \(error)")
        }
    }

    private struct Entity {
        var number: Int64
        /// Its number and its sub-entities'.
        var numbers: [Int64]
        var table: String
        var columns: Set<String>
    }

    private static func read(_ db: Database, path: String, colorColumns: [String: ChordColorField]) throws -> CoreDataFile {
        let tables = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
        guard tables.contains("Z_PRIMARYKEY"), tables.contains("Z_METADATA") else {
            throw CoreDataImportError(
                .notCoreData, "\(path) is an SQLite database but not a Core Data store (it has no Z_PRIMARYKEY and Z_METADATA tables)",
                columnsFound: tables.sorted())
        }
        // The store's UUID: what ids missing from its rows are derived from (Core Data
        // always writes it; without it two stores would derive the same ids).
        let uuid = try DatabaseValue.fetchOne(db, sql: "SELECT Z_UUID FROM Z_METADATA ORDER BY Z_VERSION DESC LIMIT 1").flatMap(text) ?? ""
        guard !uuid.isEmpty else {
            throw CoreDataImportError(.notCoreData, "\(path) has no store UUID in Z_METADATA (Core Data writes one): it is not a Core Data store, or a damaged one")
        }
        // Entities by name; each is stored in its root entity's table, with its
        // sub-entities' rows (a fetch of an entity returns its sub-entities' too).
        var names: [Int64: (name: String, parent: Int64)] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY") {
            guard let number = integer(row[0]), let name = text(row[1]) else { continue }
            names[number] = (name, integer(row[2]) ?? 0)
        }
        var entities: [String: Entity] = [:]
        for (number, entry) in names {
            var root = entry
            var hops = 0
            while root.parent != 0, let parent = names[root.parent], hops < names.count {
                root = parent
                hops += 1
            }
            let table = "Z" + root.name.uppercased()
            guard tables.contains(table) else {
                if ["chordset", "chord", "rlcolor"].contains(entry.name.lowercased()) {
                    throw CoreDataImportError(
                        .unknownModel, "\(path) names the entity \(entry.name) but has no table \(table) for it", columnsFound: tables.sorted())
                }
                continue
            }
            let columns = Set(try db.columns(in: table).map { $0.name.uppercased() })
            var numbers: [Int64] = [number]
            for (other, candidate) in names where other != number {
                var up = candidate.parent
                var steps = 0
                while up != 0, steps < names.count {
                    if up == number { numbers.append(other); break }
                    up = names[up]?.parent ?? 0
                    steps += 1
                }
            }
            entities[entry.name.lowercased()] = Entity(number: number, numbers: numbers.sorted(), table: table, columns: columns)
        }
        let found = names.values.map(\.name).sorted()
        guard let chordset = entities["chordset"], let chord = entities["chord"] else {
            throw CoreDataImportError(
                .unknownModel, "\(path) is a Core Data store of other entities (\(found.joined(separator: ", "))): the import reads Imager's and Image Performer's Chordset and Chord",
                columnsFound: found)
        }
        let colorEntity = entities["rlcolor"]
        var store = CoreDataFile(model: colorEntity == nil ? .imager : .imagePerformer, uuid: uuid)
        if colorEntity == nil, !colorColumns.isEmpty {
            throw CoreDataImportError(.colorColumns, "\(path) is an Imager store (no RLColor): its colours are indexes, no columns to name")
        }
        try require(["ZID", "ZTITLE", "ZCREATIONDATE"], of: "Chordset", chordset)
        try require(["ZID", "ZPOSITION", "ZBPM", "ZCHORDSET"], of: "Chord", chord)

        func select(_ entity: Entity, _ columns: [String]) -> String {
            // A title is read as its bytes: SQLite's text stops at a NUL.
            let list = columns.map { entity.columns.contains($0) ? ($0 == "ZTITLE" ? "CAST(ZTITLE AS BLOB)" : $0) : "NULL" }.joined(separator: ", ")
            let filter = entity.columns.contains("Z_ENT") ? " WHERE Z_ENT IN (\(entity.numbers.map(String.init).joined(separator: ", ")))" : ""
            return "SELECT Z_PK, \(list) FROM \(entity.table)\(filter) ORDER BY Z_PK"
        }
        func key(_ value: DatabaseValue, _ table: String) throws -> Int64 {
            guard let pk = integer(value) else {
                throw CoreDataImportError(.unknownModel, "a row of \(table) has a Z_PK that is not an integer (\(value)): Core Data's keys are")
            }
            return pk
        }
        let chordsets = try Row.fetchCursor(db, sql: select(chordset, ["ZID", "ZTITLE", "ZCREATIONDATE", "ZINDEX"]))
        while let row = try chordsets.next() {
            var title: String?
            var notUTF8 = false
            if case .blob(let bytes) = (row[2] as DatabaseValue).storage {
                if let valid = String(validating: bytes, as: UTF8.self) { title = valid } else {
                    title = String(decoding: bytes, as: UTF8.self)
                    notUTF8 = true
                }
            } else {
                title = text(row[2])
            }
            store.chordsets.append(ChordsetRow(
                pk: try key(row[0], chordset.table), id: id(row[1]), title: title, titleNotUTF8: notUTF8, created: real(row[3]), index: integer(row[4])))
        }
        let chords = try Row.fetchCursor(db, sql: select(chord, ["ZID", "ZPOSITION", "ZBPM", "ZCHORDSET", "ZBGCOLOR"]))
        while let row = try chords.next() {
            let bgColor = integer(row[5])
            store.chords.append(ChordRow(
                pk: try key(row[0], chord.table), id: id(row[1]), position: integer(row[2]), bpm: real(row[3]), chordset: integer(row[4]),
                colorIndex: colorEntity == nil ? bgColor : nil, color: colorEntity == nil ? nil : bgColor))
        }
        if let colorEntity {
            let mapped = try mapColorColumns(colorEntity.columns, named: colorColumns)
            guard colorEntity.columns.contains("ZCHORD") || chord.columns.contains("ZBGCOLOR") else {
                throw CoreDataImportError(
                    .unknownModel, "neither Chord.bgColor (ZCHORD.ZBGCOLOR) nor RLColor.chord (ZRLCOLOR.ZCHORD) links a chord to its colour",
                    columnsFound: colorEntity.columns.sorted())
            }
            let order = ChordColorField.allCases
            let colors = try Row.fetchCursor(db, sql: select(colorEntity, ["ZCHORD"] + order.map { mapped[$0]! }))
            while let row = try colors.next() {
                let components = order.indices.map { real(row[2 + $0]) }
                store.colors.append(ColorRow(pk: try key(row[0], colorEntity.table), chord: integer(row[1]), components: components))
            }
        }
        return store
    }

    private static func require(_ columns: [String], of entity: String, _ found: Entity) throws {
        let missing = columns.filter { !found.columns.contains($0) }
        guard missing.isEmpty else {
            throw CoreDataImportError(
                .unknownModel,
                "\(entity) (\(found.table)) has no \(missing.joined(separator: ", ")): its columns are \(found.columns.sorted().joined(separator: ", "))",
                columnsFound: found.columns.sorted())
        }
    }

    /// Which `RLColor` column holds each component: the ones named in `named`, then by name.
    static func mapColorColumns(_ columns: Set<String>, named: [String: ChordColorField]) throws(CoreDataImportError) -> [ChordColorField: String] {
        let data = columns.filter { !$0.hasPrefix("Z_") && $0 != "ZCHORD" }.sorted()
        var mapped: [ChordColorField: String] = [:]
        for (given, field) in named {
            let column = given.uppercased().hasPrefix("Z") && data.contains(given.uppercased()) ? given.uppercased() : "Z" + given.uppercased()
            guard data.contains(column) else {
                throw CoreDataImportError(
                    .colorColumns, "RLColor has no column \(given) (its columns are \(data.joined(separator: ", ")))", columnsFound: data)
            }
            mapped[field] = column
        }
        let byName: [ChordColorField: [String]] = [
            .hue: ["ZHUE"], .purity: ["ZPURITY", "ZSATURATION"], .brightness: ["ZBRIGHTNESS"], .alpha: ["ZALPHA", "ZOPACITY"],
        ]
        for field in ChordColorField.allCases where mapped[field] == nil {
            if let column = byName[field]!.first(where: { data.contains($0) && !mapped.values.contains($0) }) { mapped[field] = column }
        }
        let missing = ChordColorField.allCases.filter { mapped[$0] == nil }
        guard missing.isEmpty else {
            throw CoreDataImportError(
                .colorColumns,
                "RLColor's columns (\(data.joined(separator: ", "))) do not say which holds \(missing.map(\.rawValue).joined(separator: ", ")): name them with --map COLUMN=FIELD",
                columnsFound: data)
        }
        let used = Array(mapped.values)
        guard Set(used).count == used.count else {
            throw CoreDataImportError(.colorColumns, "one RLColor column is named for two components", columnsFound: data)
        }
        return mapped
    }

    private static func id(_ value: DatabaseValue) -> CoreDataID {
        switch value.storage {
        case .null: return .null
        case .blob(let data) where data.count == 16:
            return .uuid(data.withUnsafeBytes(StoreKeys.id))
        case .string(let text):
            if let uuid = UUID(uuidString: text) { return .uuid(uuid) }
            return .unreadable("the text \"\(text.prefix(40))\"")
        case .blob(let data): return .unreadable("a blob of \(data.count) bytes")
        case .int64(let number): return .unreadable("the number \(number)")
        case .double(let number): return .unreadable("the number \(number)")
        }
    }

    private static func text(_ value: DatabaseValue) -> String? {
        // (A blob that is not UTF-8 reads with U+FFFD for each bad sequence.)
        switch value.storage {
        case .string(let text): text
        case .blob(let data): String(decoding: data, as: UTF8.self)
        case .int64(let number): String(number)
        case .double(let number): String(number)
        case .null: nil
        }
    }

    private static func real(_ value: DatabaseValue) -> Double? {
        switch value.storage {
        case .double(let number): number
        case .int64(let number): Double(number)
        default: nil
        }
    }

    private static func integer(_ value: DatabaseValue) -> Int64? {
        switch value.storage {
        case .int64(let number): number
        case .double(let number) where number.isFinite && number.rounded() == number && abs(number) < 9e18: Int64(number)
        default: nil
        }
    }
}
