import ChordStoreDomain
@testable import ChordStoreReplica
import Foundation
import Testing

/// The import's plan over random rows (shared and dangling links, repeated and
/// unreadable ids, positions out of range, NULLs, a store holding some of the ids, a
/// device that imported some before): every row is accounted for, and every write is
/// one the store's rules take.
@Suite("Core Data import plans")
struct CoreDataImportPlanTests {
    struct Rows {
        var random: SplitMix64

        mutating func below(_ n: Int) -> Int { Int(random.next() % UInt64(max(n, 1))) }
        mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
        mutating func pick<T>(_ values: [T]) -> T { values[below(values.count)] }

        mutating func file(model: CoreDataModel, pool: [UUID]) -> CoreDataFile {
            var file = CoreDataFile(model: model, uuid: "STORE-\(random.next() % 3)")
            let chordsets = below(10)
            for pk in 1...max(chordsets, 1) where chordsets > 0 {
                file.chordsets.append(CoreDataFile.ChordsetRow(
                    pk: Int64(pk), id: id(pool), title: chance(15) ? nil : pick(["A", "B\n", String(repeating: "x", count: 300), "e\u{301}"]),
                    created: chance(15) ? nil : pick([0, -1e9, 6.4e8, 1e15, .nan]), index: chance(20) ? nil : Int64(below(4))))
            }
            let colors = model == .imagePerformer ? below(40) : 0
            let chords = below(90)
            for pk in 0..<chords {
                file.chords.append(CoreDataFile.ChordRow(
                    pk: Int64(pk + 1), id: id(pool), position: chance(10) ? nil : Int64(below(11)) - 1,
                    bpm: chance(10) ? nil : pick([0, 60, 120.5, 5_000, .nan]),
                    chordset: chance(10) ? nil : Int64(below(chordsets + 2)),
                    colorIndex: model == .imager && !chance(10) ? Int64(below(70_000)) - 35_000 : nil,
                    color: model == .imagePerformer && chance(50) ? Int64(below(colors + 2)) : nil))
            }
            for pk in 0..<colors {
                file.colors.append(CoreDataFile.ColorRow(
                    pk: Int64(pk + 1), chord: chance(20) ? nil : Int64(below(chords + 2)),
                    components: (0..<4).map { _ in chance(10) ? nil : pick([0, 0.5, 1, -0.5, 2, .nan]) }))
            }
            return file
        }

        mutating func id(_ pool: [UUID]) -> CoreDataFile.CoreDataID {
            switch below(10) {
            case 0: .null
            case 1: .unreadable("a blob of 15 bytes")
            case 2, 3: .uuid(pick(pool))
            default: .uuid(UUID())
            }
        }
    }

    @Test("random rows: every row imported or skipped, once; every add has eight chords at distinct positions, ids unused and valid values; a refusal keeps the count", arguments: 0..<300)
    func randomRows(seed: UInt64) throws {
        var rows = Rows(random: SplitMix64(seed: seed))
        let pool = (0..<6).map { _ in UUID() }
        let model: CoreDataModel = seed % 2 == 0 ? .imager : .imagePerformer
        let file = rows.file(model: model, pool: pool)
        var state = InMemoryState()
        var own: Set<String> = []
        for id in pool {
            switch rows.below(5) {
            case 0: state.insertChordset(Chordset(id: id, title: "held", creationDate: .now, index: state.chordsetCount(), chords: chords(nil)))
            case 1: own.insert(CoreDataImportPlan.commandID(chordset: id))
            case 2: state.insertChordset(Chordset(id: UUID(), title: "holds a chord id", creationDate: .now, index: state.chordsetCount(), chords: chords(id)))
            default: break
            }
        }
        var plan = try CoreDataImportPlan.make(file, options: CoreDataImportOptions(), limits: Limits(), state: state, ownCommandIDs: own)
        let accounted = plan.report.accountsForEveryRow
        #expect(accounted, "seed \(seed): read \(plan.report.rowsRead), imported \(plan.report.rowsImported), skipped \(plan.report.rowsSkipped)")
        var ids: Set<UUID> = []
        let validation = Validation()
        for write in plan.writes {
            guard case .addChordset(let add) = write.command else { continue }
            let id = try #require(add.id)
            #expect(state.chordset(id) == nil && state.chordLocation(id) == nil && ids.insert(id).inserted, "seed \(seed): chordset id \(id)")
            #expect(add.chords.map(\.position).sorted() == Array(0..<8), "seed \(seed)")
            for chord in add.chords {
                let chordID = try #require(chord.id)
                #expect(state.chordLocation(chordID) == nil && state.chordset(chordID) == nil && ids.insert(chordID).inserted, "seed \(seed): chord id")
                #expect(throws: Never.self) { try validation.checkBPM(chord.bpm!) }
                #expect(throws: Never.self) { try validation.checkColor(chord.color!) }
            }
            #expect(throws: Never.self) { try validation.checkTitle(add.title) }
            #expect(throws: Never.self) { try validation.checkCreationDate(add.creationDate!) }
        }
        if let write = plan.writes.first {
            plan.refused(write, ChordStoreError(.invalidArgument, "refused in the test"))
            let accounted = plan.report.accountsForEveryRow
        #expect(accounted, "seed \(seed): after a refusal")
        }
    }

    /// Eight chords, the first with `first` as its id when given.
    func chords(_ first: UUID?) -> [Chord] {
        (0..<8).map { Chord(id: $0 == 0 ? first ?? UUID() : UUID(), position: $0, bpm: 120, color: ChordColor(hue: 0, purity: 0, brightness: 0)) }
    }
}
