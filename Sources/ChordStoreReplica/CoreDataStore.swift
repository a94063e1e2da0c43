import ChordStoreDomain
import ChordStoreRecords
import Foundation
import GRDB

/// The rows of a Core Data SQLite store of one of the seed models, read as Core Data lays
/// them out: entities from `Z_PRIMARYKEY` (`Z_ENT`, `Z_NAME`, `Z_SUPER`), an entity's rows
/// from its root entity's `Z<NAME>` table where `Z_ENT` is its number, attributes from
/// `Z<ATTRIBUTE>` columns, to-one relationships as `Z<RELATIONSHIP>` keys to `Z_PK`, dates
/// as seconds since 2001-01-01, UUIDs as 16-byte blobs.
struct CoreDataStore: Sendable {
    struct ChordsetRow: Sendable {
        var pk: Int64
        var id: CoreDataID
        var title: String?
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
    static func read(at url: URL, colorColumns: [String: ChordColorField]) throws(CoreDataImportError) -> CoreDataStore {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw CoreDataImportError(.notFound, "\(url.path) does not exist")
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
        } catch {
            throw CoreDataImportError(.unreadable, "cannot read \(url.path) as an SQLite database: \(error)")
        }
    }

    private struct Entity {
        var number: Int64
        var table: String
        var columns: Set<String>
    }

    private static func read(_ db: Database, path: String, colorColumns: [String: ChordColorField]) throws -> CoreDataStore {
        let tables = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
        guard tables.contains("Z_PRIMARYKEY"), tables.contains("Z_METADATA") else {
            throw CoreDataImportError(
                .notCoreData, "\(path) is an SQLite database but not a Core Data store (it has no Z_PRIMARYKEY and Z_METADATA tables)",
                columnsFound: tables.sorted())
        }
        let uuid = try String.fetchOne(db, sql: "SELECT Z_UUID FROM Z_METADATA ORDER BY Z_VERSION DESC LIMIT 1") ?? ""
        // Entities by name; each is stored in its root entity's table.
        var names: [Int64: (name: String, parent: Int64)] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY") {
            guard let number = row[0] as Int64?, let name = row[1] as String? else { continue }
            names[number] = (name, (row[2] as Int64?) ?? 0)
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
            guard tables.contains(table) else { continue }
            let columns = Set(try db.columns(in: table).map { $0.name.uppercased() })
            entities[entry.name.lowercased()] = Entity(number: number, table: table, columns: columns)
        }
        let found = names.values.map(\.name).sorted()
        guard let chordset = entities["chordset"], let chord = entities["chord"] else {
            throw CoreDataImportError(
                .unknownModel, "\(path) is a Core Data store of other entities (\(found.joined(separator: ", "))): the import reads Imager's and Image Performer's Chordset and Chord",
                columnsFound: found)
        }
        let colorEntity = entities["rlcolor"]
        var store = CoreDataStore(model: colorEntity == nil ? .imager : .imagePerformer, uuid: uuid)
        try require(["ZID", "ZTITLE", "ZCREATIONDATE"], of: "Chordset", chordset)
        try require(["ZID", "ZPOSITION", "ZBPM", "ZCHORDSET"], of: "Chord", chord)

        func select(_ entity: Entity, _ columns: [String]) -> String {
            let list = columns.map { entity.columns.contains($0) ? $0 : "NULL" }.joined(separator: ", ")
            let filter = entity.columns.contains("Z_ENT") ? " WHERE Z_ENT = \(entity.number)" : ""
            return "SELECT Z_PK, \(list) FROM \(entity.table)\(filter) ORDER BY Z_PK"
        }
        let chordsets = try Row.fetchCursor(db, sql: select(chordset, ["ZID", "ZTITLE", "ZCREATIONDATE", "ZINDEX"]))
        while let row = try chordsets.next() {
            store.chordsets.append(
                ChordsetRow(pk: row[0], id: id(row[1]), title: text(row[2]), created: real(row[3]), index: integer(row[4])))
        }
        let chords = try Row.fetchCursor(db, sql: select(chord, ["ZID", "ZPOSITION", "ZBPM", "ZCHORDSET", "ZBGCOLOR"]))
        while let row = try chords.next() {
            let bgColor = integer(row[5])
            store.chords.append(ChordRow(
                pk: row[0], id: id(row[1]), position: integer(row[2]), bpm: real(row[3]), chordset: integer(row[4]),
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
                store.colors.append(ColorRow(pk: row[0], chord: integer(row[1]), components: components))
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
