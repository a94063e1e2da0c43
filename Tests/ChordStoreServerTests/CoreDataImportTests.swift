import ChordStoreClient
import ChordStoreDomain
import ChordStoreReplica
import Foundation
import GRDB
import Testing

/// Issue 40: an Imager or Image Performer Core Data store (the fixtures of
/// tools/core-data-fixture, Core Data's layout) imported into a replica, synced, and
/// compared with its rows field by field.
@Suite("Core Data import")
struct CoreDataImportTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/core-data")

    static func scratch(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("core-data-\(UUID().uuidString)-\(name)")
    }

    /// A copy of a fixture (with no -wal or -shm: the script's connection checkpointed).
    static func copy(_ fixture: String) throws -> URL {
        let target = scratch(fixture)
        try FileManager.default.copyItem(at: fixtures.appendingPathComponent(fixture), to: target)
        return target
    }

    static func client(_ server: TestServer, store: String) -> Client {
        Client(host: "127.0.0.1", port: server.port, retry: .once, store: store)
    }

    /// A row of ZCHORDSET or ZCHORD as the test reads it itself.
    struct Rows {
        var chordsets: [Int64: (id: UUID?, title: String?, created: Double?)] = [:]
        var chords: [Int64: (id: UUID?, chordset: Int64?, position: Int64?, bpm: Double?, color: DatabaseValue)] = [:]
        /// `RLColor` rows by the chord they name (ZCHORD).
        var colorOfChord: [Int64: ChordColor] = [:]
    }

    static func rows(_ file: URL) throws -> Rows {
        var configuration = Configuration()
        configuration.readonly = true
        let database = try DatabaseQueue(path: file.path, configuration: configuration)
        defer { try? database.close() }
        func uuid(_ value: DatabaseValue) -> UUID? {
            guard let data = Data.fromDatabaseValue(value), data.count == 16 else { return nil }
            return data.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        }
        return try database.read { db in
            var rows = Rows()
            for row in try Row.fetchAll(db, sql: "SELECT Z_PK, ZID, ZTITLE, ZCREATIONDATE FROM ZCHORDSET") {
                rows.chordsets[row["Z_PK"]] = (uuid(row["ZID"]), row["ZTITLE"], row["ZCREATIONDATE"])
            }
            for row in try Row.fetchAll(db, sql: "SELECT Z_PK, ZID, ZCHORDSET, ZPOSITION, ZBPM, ZBGCOLOR FROM ZCHORD") {
                rows.chords[row["Z_PK"]] = (uuid(row["ZID"]), row["ZCHORDSET"], row["ZPOSITION"], row["ZBPM"], row["ZBGCOLOR"])
            }
            if try db.tableExists("ZRLCOLOR") {
                let sql = "SELECT ZCHORD, ZHUE, ZPURITY, ZBRIGHTNESS, ZALPHA FROM ZRLCOLOR WHERE ZCHORD IS NOT NULL AND ZHUE IS NOT NULL AND ZPURITY IS NOT NULL AND ZBRIGHTNESS IS NOT NULL AND ZALPHA IS NOT NULL AND ZHUE BETWEEN 0 AND 1 AND ZPURITY BETWEEN 0 AND 1 AND ZBRIGHTNESS BETWEEN 0 AND 1 AND ZALPHA BETWEEN 0 AND 1"
                for row in try Row.fetchAll(db, sql: sql) {
                    rows.colorOfChord[row["ZCHORD"]] = ChordColor(hue: row["ZHUE"], purity: row["ZPURITY"], brightness: row["ZBRIGHTNESS"], alpha: row["ZALPHA"])
                }
            }
            return rows
        }
    }

    /// Core Data's seconds since 2001 as the store keeps them (microseconds).
    static func instant(_ seconds: Double) -> Instant {
        Instant(microsecondsSince1970: 978_307_200_000_000 + Int64((seconds * 1_000_000).rounded()))
    }

    static func noted(_ report: CoreDataImportReport, _ entity: String, _ pk: Int64) -> Set<CoreDataImportRule> {
        Set(report.notes.filter { $0.entity == entity && $0.primaryKey == pk }.map(\.rule))
    }

    /// Checks every chordset of `chordsets` against the rows: a row no rule touched is
    /// there field for field (id, title, creation date, each chord's id, position, bpm
    /// and colour).
    static func compare(_ chordsets: [Chordset], with rows: Rows, report: CoreDataImportReport, color: (Int64, DatabaseValue) -> ChordColor?) {
        let byID = Dictionary(chordsets.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var compared = 0
        for (pk, row) in rows.chordsets where noted(report, "Chordset", pk).isDisjoint(with: [.idFilled, .refused]) {
            guard let id = row.id, let stored = byID[id] else {
                Issue.record("chordset Z_PK \(pk) (\(String(describing: row.id))) is not in the store")
                continue
            }
            let rules = noted(report, "Chordset", pk)
            if rules.isDisjoint(with: [.titleFilled, .titleCleaned, .titleTruncated]) {
                #expect(stored.title.unicodeScalars.elementsEqual(row.title!.unicodeScalars), "chordset Z_PK \(pk): the title, scalar for scalar")
            }
            if !rules.contains(.dateFilled) { #expect(stored.creationDate == instant(row.created!), "chordset Z_PK \(pk): the creation date") }
            for (chordPK, chord) in rows.chords where chord.chordset == pk {
                let chordRules = noted(report, "Chord", chordPK)
                guard chordRules.isEmpty, let position = chord.position, let id = chord.id else { continue }
                let stored = stored.chords[Int(position)]
                #expect(stored.id == id, "chord Z_PK \(chordPK): the id at position \(position)")
                #expect(stored.bpm == chord.bpm, "chord Z_PK \(chordPK): the bpm")
                if let expected = color(chordPK, chord.color) { #expect(stored.color == expected, "chord Z_PK \(chordPK): the colour") }
                compared += 1
            }
        }
        #expect(compared > 60, "most chords are compared field by field (\(compared))")
    }

    @Test("Image Performer's store: every row accounted for, the rules applied by row, synced to the server field for field; a second import adds nothing; a second device's import names the ids the store holds")
    func imagePerformer() async throws {
        let file = try Self.copy("performer.sqlite")
        let rows = try Self.rows(file)
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        _ = try await Self.client(server, store: "").createStore("songs")
        let client = Self.client(server, store: "songs")

        let phone = try await Replica.open(at: Self.scratch("phone"), store: "songs")
        defer { phone.close() }
        let dry = try await phone.importCoreDataStore(at: file, options: { var o = CoreDataImportOptions(); o.dryRun = true; return o }())
        #expect(dry.dryRun && dry.writesQueued == 0 && phone.pendingWrites.isEmpty, "a dry run writes nothing")
        #expect(try phone.chordsets().chordsets.isEmpty && phone.controlsChord() == nil)

        let report = try await phone.importCoreDataStore(at: file)
        var expectedReport = dry
        expectedReport.dryRun = false
        expectedReport.writesQueued = report.writesQueued
        #expect(report == expectedReport, "the dry run reported what the import did")
        #expect(report.model == .imagePerformer)
        #expect(report.accountsForEveryRow, "\(report.rowsRead) = \(report.rowsImported) + \(report.rowsSkipped)")
        #expect(report.rowsRead == ["Chordset": 12, "Chord": 98, "RLColor": 98])
        #expect(report.rowsSkipped == ["Chord": 2, "RLColor": 3])
        #expect(report.chordsetsAdded == 12 && report.controlsChordSet && report.writesQueued == 13 && report.chordsFilled == 1)
        // Each awkward row, by its rule.
        #expect(Self.noted(report, "Chordset", 2) == [.titleFilled])
        #expect(Self.noted(report, "Chordset", 5) == [.chordFilled])
        #expect(Self.noted(report, "Chordset", 8) == [.idFilled, .dateFilled])
        #expect(Self.noted(report, "Chordset", 9) == [.idFilled], "the repeated id")
        #expect(Self.noted(report, "Chordset", 11) == [.titleCleaned] && Self.noted(report, "Chordset", 12) == [.titleTruncated])
        #expect(Self.noted(report, "Chord", 48) == [.chordSkipped] && Self.noted(report, "Chord", 98) == [.chordOrphaned])
        #expect(Self.noted(report, "Chord", 55) == [.chordPlaced] && Self.noted(report, "Chord", 56) == [.chordPlaced])
        #expect(Self.noted(report, "Chord", 73) == [.bpmFilled] && Self.noted(report, "Chord", 74) == [.bpmFilled])
        #expect(Self.noted(report, "Chord", 75) == [.idFilled] && Self.noted(report, "Chord", 76) == [.colorFilled])
        #expect(Self.noted(report, "RLColor", 76) == [.colorFixed] && Self.noted(report, "RLColor", 98) == [.colorUnused])
        #expect(Self.noted(report, "Chordset", 1).isEmpty && Self.noted(report, "Chordset", 3).isEmpty && Self.noted(report, "Chordset", 4).isEmpty)

        // Nothing twice: the same store again adds nothing, on the device and offline.
        let again = try await phone.importCoreDataStore(at: file)
        #expect(again.writesQueued == 0 && again.chordsetsAdded == 0 && !again.controlsChordSet)
        #expect(again.alreadyImported.count == 12 && again.accountsForEveryRow)
        #expect(phone.pendingWrites.count == 13)

        let pushed = try await phone.sync(with: client)
        #expect(pushed.pushed == 13 && pushed.rejected.isEmpty, "\(pushed.rejected)")
        let stored = try server.store.chordsets(order: .index, store: "songs")
        #expect(stored.count == 12)
        // The user order is Image Performer's index: Z_PK 3 (index 0), 2, 4, 1, then 5...
        #expect(stored.prefix(4).map(\.title) == ["Cafe\u{301} \u{1F3B9}\u{1F3FD} na\u{131}\u{308}ve", "", "Before 2001", "Bravo"])
        Self.compare(stored, with: rows, report: report) { chordPK, _ in rows.colorOfChord[chordPK] }
        // The rows the rules changed, as the rules say.
        let seven = try #require(stored.first { $0.title == "Seven" })
        #expect(seven.chords[3].bpm == 120 && seven.chords[3].color == ChordColor(hue: 0, purity: 0, brightness: 0, alpha: 1))
        let unplaced = try #require(stored.first { $0.title == "Unplaced" })
        #expect(unplaced.chords[5].id == rows.chords[55]!.id && unplaced.chords[5].bpm == 77)
        #expect(unplaced.chords[7].id == rows.chords[56]!.id && unplaced.chords[7].bpm == 78)
        let odd = try #require(stored.first { $0.title == "Odd chords" })
        #expect(odd.chords[0].bpm == 120 && odd.chords[1].bpm == 120)
        #expect(odd.chords[3].color == ChordColor(hue: 0, purity: 0, brightness: 0, alpha: 1))
        #expect(odd.chords[4].color == ChordColor(hue: 1, purity: 0.5, brightness: 0, alpha: 1), "hue clamped, NULLs filled")
        #expect(odd.chords[5].color == ChordColor(hue: 0.25, purity: 0, brightness: 0.75, alpha: 0.5))
        #expect(stored.first { $0.title == "Two lines" } != nil && stored.contains { $0.title == "Long " + String(repeating: "x", count: 195) })
        let nine = try #require(stored.first { $0.title == "Nine" })
        #expect(!nine.chords.contains { $0.bpm == 99 }, "the ninth chord was skipped")
        #expect(stored.first { $0.title == "No id, no date" }?.creationDate == Instant(microsecondsSince1970: 978_307_200_000_000))
        #expect(stored.first { $0.title == "Before 2001" }?.creationDate == Instant(microsecondsSince1970: 946_598_400_000_000))
        let controls = try #require(try server.store.controlsChord(store: "songs"))
        #expect(controls.id == rows.chords[97]!.id && controls.bpm == 96 && controls.color == ChordColor(hue: 0.6, purity: 0.4, brightness: 0.8, alpha: 1))

        // A second device sees them, and its own import of the same store adds nothing,
        // naming the ids the store holds.
        let tablet = try await Replica.open(at: Self.scratch("tablet"), store: "songs")
        defer { tablet.close() }
        _ = try await tablet.sync(with: client)
        #expect(Set(try tablet.chordsets().chordsets.map(\.id)) == Set(stored.map(\.id)))
        let tabletReport = try await tablet.importCoreDataStore(at: file)
        #expect(tabletReport.writesQueued == 0 && Set(tabletReport.alreadyInStore) == Set(stored.map(\.id)))
        #expect(Self.noted(tabletReport, "Chord", 97) == [.controlsKept])
        #expect(tabletReport.accountsForEveryRow)

        // A store that holds some of the ids: the others are added, the held ones named.
        let changed = try Self.copy("performer.sqlite")
        let writer = try DatabaseQueue(path: changed.path)
        try await writer.write { db in try db.execute(sql: "UPDATE ZCHORDSET SET ZID = randomblob(16) WHERE Z_PK > 6") }
        try writer.close()
        let some = try await tablet.importCoreDataStore(at: changed)
        let held = Set(rows.chordsets.filter { $0.key <= 6 }.compactMap(\.value.id))
        #expect(Set(some.alreadyInStore) == held, "\(some.alreadyInStore.count) held of \(held.count)")
        #expect(some.chordsetsAdded == 6 && some.accountsForEveryRow, "\(some.chordsetsAdded) added")
        #expect(some.notes.filter { $0.rule == .alreadyInStore }.map(\.primaryKey).sorted() == [1, 2, 3, 4, 5, 6])
    }

    /// Imager's colour index on the 360-step wheel, as docs/DEVICES.md states it.
    static func wheel(_ index: Int) -> ChordColor {
        ChordColor(hue: Double(((index % 360) + 360) % 360) / 360, purity: 1, brightness: 1, alpha: 1)
    }

    @Test("Imager's store: colours from the index on the documented wheel, orphan chords skipped (Imager has no controls chord), synced field for field")
    func imager() async throws {
        let file = try Self.copy("imager.sqlite")
        let rows = try Self.rows(file)
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        let client = Self.client(server, store: "default")
        let phone = try await Replica.open(at: Self.scratch("phone"), store: "default")
        defer { phone.close() }
        let report = try await phone.importCoreDataStore(at: file)
        #expect(report.model == .imager && report.accountsForEveryRow)
        #expect(report.rowsRead == ["Chordset": 12, "Chord": 98] && report.rowsSkipped == ["Chord": 3])
        #expect(Self.noted(report, "Chord", 97) == [.chordOrphaned] && Self.noted(report, "Chord", 98) == [.chordOrphaned])
        #expect(report.chordsetsAdded == 12 && !report.controlsChordSet && report.writesQueued == 12)
        _ = try await phone.sync(with: client)
        let stored = try server.store.chordsets(order: .index)
        let controls = try server.store.controlsChord()
        #expect(stored.count == 12 && controls == nil)
        #expect(stored.map(\.creationDate) == stored.map(\.creationDate).sorted(), "without an index, the user order is the creation date's")
        Self.compare(stored, with: rows, report: report) { _, bgColor in Int.fromDatabaseValue(bgColor).map(Self.wheel) }
        let odd = try #require(stored.first { $0.title == "Odd chords" })
        #expect(odd.chords[3].color == ChordColor(hue: 0, purity: 0, brightness: 0, alpha: 1), "a NULL index: the fill colour")
        #expect(odd.chords[4].color == Self.wheel(353) && odd.chords[5].color == Self.wheel(280), "-7 and 1000 on the wheel")
        #expect(try await phone.importCoreDataStore(at: file).writesQueued == 0)
    }

    @Test("the store is read while the app holds it open: rows only in its -wal are imported")
    func readsTheWriteAheadLog() async throws {
        let file = try Self.copy("imager.sqlite")
        let app = try DatabaseQueue(path: file.path)
        defer { try? app.close() }
        try await app.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            try db.execute(sql: "INSERT INTO ZCHORDSET (Z_PK, Z_ENT, Z_OPT, ZCREATIONDATE, ZTITLE, ZID) VALUES (13, 2, 1, 700000000, 'In the WAL', NULL)")
        }
        #expect(FileManager.default.fileExists(atPath: file.path + "-wal"))
        let phone = try await Replica.open(at: Self.scratch("phone"), store: "default")
        defer { phone.close() }
        let report = try await phone.importCoreDataStore(at: file)
        #expect(report.rowsRead["Chordset"] == 13)
        #expect(try phone.chordsets().chordsets.contains { $0.title == "In the WAL" })
        #expect(Self.noted(report, "Chordset", 13) == [.idFilled, .chordFilled])
    }

    @Test("a sub-entity's rows are the entity's, a title is read past a NUL, a colour two chords share is counted once")
    func oddLayouts() async throws {
        let file = try Self.copy("performer.sqlite")
        let database = try DatabaseQueue(path: file.path)
        try await database.write { db in
            try db.execute(sql: """
                INSERT INTO Z_PRIMARYKEY VALUES (4, 'SpecialChord', 1, 1);
                INSERT INTO ZCHORD (Z_PK, Z_ENT, Z_OPT, ZPOSITION, ZBGCOLOR, ZCHORDSET, ZBPM, ZID) VALUES (99, 4, 1, 3, NULL, 5, 101.0, NULL);
                UPDATE ZCHORDSET SET ZTITLE = CAST(X'410042' AS TEXT) WHERE Z_PK = 1;
                UPDATE ZCHORD SET ZBGCOLOR = (SELECT ZBGCOLOR FROM ZCHORD WHERE Z_PK = 1) WHERE Z_PK = 2;
                """)
        }
        try database.close()
        let phone = try await Replica.open(at: Self.scratch("phone"), store: "default")
        defer { phone.close() }
        let report = try await phone.importCoreDataStore(at: file)
        #expect(report.rowsRead["Chord"] == 99 && report.accountsForEveryRow, "\(report.rowsRead) \(report.rowsImported) \(report.rowsSkipped)")
        #expect(Self.noted(report, "Chordset", 5).isEmpty, "the sub-entity's chord fills position 3")
        let chordsets = try phone.chordsets().chordsets
        #expect(chordsets.first { $0.title == "Seven" }?.chords[3].bpm == 101)
        #expect(chordsets.contains { $0.title == "A B" } && Self.noted(report, "Chordset", 1) == [.titleCleaned])
    }

    @Test("RLColor columns named otherwise are refused with the columns found, and taken when named; other files are refused by kind; nothing is queued")
    func refusals() async throws {
        let file = try Self.copy("performer.sqlite")
        let renamed = try DatabaseQueue(path: file.path)
        try await renamed.write { db in try db.execute(sql: "ALTER TABLE ZRLCOLOR RENAME COLUMN ZPURITY TO ZSAT") }
        try renamed.close()
        let phone = try await Replica.open(at: Self.scratch("phone"), store: "default")
        defer { phone.close() }
        let refused = await #expect(throws: CoreDataImportError.self) { try await phone.importCoreDataStore(at: file) }
        #expect(refused?.code == .colorColumns && refused?.columnsFound == ["ZALPHA", "ZBRIGHTNESS", "ZHUE", "ZSAT"])
        var options = CoreDataImportOptions()
        options.colorColumns = ["sat": .purity]
        #expect(try await phone.importCoreDataStore(at: file, options: options).chordsetsAdded == 12)

        let notSQLite = Self.scratch("text")
        try Data("not a database".utf8).write(to: notSQLite)
        let plain = Self.scratch("plain")
        let database = try DatabaseQueue(path: plain.path)
        try await database.write { db in try db.execute(sql: "CREATE TABLE songs (title TEXT)") }
        try database.close()
        let other = try Self.copy("imager.sqlite")
        let otherModel = try DatabaseQueue(path: other.path)
        try await otherModel.write { db in try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_NAME = 'Song' WHERE Z_NAME = 'Chordset'") }
        try otherModel.close()
        let cases: [(URL, CoreDataImportError.Code)] = [
            (Self.scratch("missing"), .notFound), (notSQLite, .unreadable), (plain, .notCoreData), (other, .unknownModel),
        ]
        let before = phone.pendingWrites.count
        for (url, code) in cases {
            let error = await #expect(throws: CoreDataImportError.self) { try await phone.importCoreDataStore(at: url) }
            #expect(error?.code == code, "\(url.lastPathComponent): \(String(describing: error))")
        }
        #expect(phone.pendingWrites.count == before)
    }

    @Test("writes made on the device while an import decides its own are all kept: the import decides again when the view moved")
    func importBesideWrites() async throws {
        let file = try Self.copy("performer.sqlite")
        let phone = try await Replica.open(at: Self.scratch("phone"), store: "default")
        defer { phone.close() }
        async let imported = phone.importCoreDataStore(at: file)
        for index in 0..<200 { try phone.addChordset(AddChordset(title: "beside \(index)")) }
        let report = try await imported
        #expect(report.writesQueued == 13)
        let shown = try phone.count()
        #expect(phone.pendingWrites.count == 213 && shown == 212)
        let keys = phone.pendingWrites.map(\.key)
        #expect(keys == keys.sorted() && Set(keys).count == keys.count, "each write has its own place in the queue")
        phone.close()
        let reopened = try await Replica.open(at: phone.directory)
        defer { reopened.close() }
        let shownAfter = try reopened.count()
        #expect(reopened.pendingWrites.map(\.key) == keys && shownAfter == 212)
    }
}
