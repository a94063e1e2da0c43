import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Testing
import TestSupport

/// Queries like Core Data fetch requests: filters, orders, cursors and counts.
@Suite("Queries")
struct QueryTests {
    /// Every page of `query`, following cursors.
    static func allPages(_ store: ChordStore, _ query: ChordsetQuery) throws -> [Chordset] {
        var query = query
        var result: [Chordset] = []
        for _ in 0..<10_000 {
            let page = try store.query(query)
            result += page.chordsets
            guard let cursor = page.nextCursor else { return result }
            query.cursor = cursor
        }
        Issue.record("paging did not end")
        return result
    }

    @Test("filters, orders and pages agree with filtering and sorting the whole list", arguments: EngineKind.allCases)
    func agreesWithFullSort(kind: EngineKind) async throws {
        try await onOwnThread {
            let store = try kind.makeStore()
            defer { store.close() }
            let titles = ["Éclair", "eclair", "ÉCLAIR au café", "Cafe", "café", "Zebra", "zèbre", "", "a", "Ab", "ab", "ＡＢ wide"]
            var g = SplitMix64(seed: 3)
            for i in 0..<120 {
                let title = titles[Int(g.next() % UInt64(titles.count))]
                let date = Instant(microsecondsSince1970: Int64(g.next() % 1_000) * 1_000_000)
                try await store.execute(.addChordset(AddChordset(title: title + (i % 7 == 0 ? " \(i)" : ""), creationDate: date)))
            }
            let all = try store.chordsets(order: .index)
            let filters: [(ChordsetQuery.TitleMatch, String)?] = [nil, (.equals, "eclair"), (.prefix, "ECL"), (.contains, "AFE"), (.prefix, "ab"), (.contains, "")]
            let ranges: [(Instant?, Instant?)] = [(nil, nil), (Instant(microsecondsSince1970: 200_000_000), Instant(microsecondsSince1970: 700_000_000))]
            for order in ChordsetOrder.allCases {
                for descending in [false, true] {
                    for filter in filters {
                        for range in ranges {
                            var query = ChordsetQuery(
                                title: filter, createdFrom: range.0, createdBefore: range.1, order: order,
                                descending: descending, limit: 7)
                            var expected = all.filter(query.matches)
                            expected = switch order {
                            case .index: expected.sorted { $0.index < $1.index }
                            case .creationDate: expected.sorted {
                                ($0.creationDate, $0.id.uuidString) < ($1.creationDate, $1.id.uuidString)
                            }
                            case .title: expected.sorted {
                                let (a, b) = (TitleKey.bytes($0.title), TitleKey.bytes($1.title))
                                if a != b { return a.lexicographicallyPrecedes(b) }
                                return ($0.creationDate, $0.id.uuidString) < ($1.creationDate, $1.id.uuidString)
                            }
                            }
                            if descending { expected.reverse() }
                            let paged = try Self.allPages(store, query)
                            #expect(paged.map(\.id) == expected.map(\.id), "\(order) desc \(descending) \(String(describing: filter)) \(range)")
                            query.limit = 1_000
                            #expect(try store.count(query).count == expected.count)
                        }
                    }
                }
            }
            // Folding: "eclair" equals "Éclair", "ECLAIR" and the width-insensitive forms.
            let eclairs = try store.query(ChordsetQuery(title: (.equals, "ÉcLaIr"), limit: 1_000)).chordsets
            #expect(Set(eclairs.map(\.title)).isSubset(of: ["Éclair", "eclair"]) && !eclairs.isEmpty)
            #expect(try store.query(ChordsetQuery(title: (.prefix, "ab"), limit: 1_000)).chordsets.contains { $0.title.hasPrefix("ＡＢ") })
        }
    }

    @Test("every order's pages follow each kind of change, the sorted orders kept by the state in memory included", arguments: EngineKind.allCases)
    func ordersFollowChanges(kind: EngineKind) async throws {
        try await onOwnThread {
            let store = try kind.makeStore()
            defer { store.close() }
            var g = SplitMix64(seed: 11)
            for i in 0..<40 {
                let date = Instant(microsecondsSince1970: Int64(g.next() % 50) * 1_000_000)
                try await store.execute(.addChordset(AddChordset(title: "t\(g.next() % 30) \(i)", creationDate: date)))
            }
            /// Every order, both ways, paged (which sorts and keeps each order's index),
            /// against a sort of the whole list.
            func expectOrdersAgree(after change: String) throws {
                let all = try store.chordsets(order: .index)
                for order in ChordsetOrder.allCases {
                    for descending in [false, true] {
                        var expected = switch order {
                        case .index: all.sorted { $0.index < $1.index }
                        case .creationDate: all.sorted { ($0.creationDate, $0.id.uuidString) < ($1.creationDate, $1.id.uuidString) }
                        case .title: all.sorted {
                            let (a, b) = (TitleKey.bytes($0.title), TitleKey.bytes($1.title))
                            if a != b { return a.lexicographicallyPrecedes(b) }
                            return ($0.creationDate, $0.id.uuidString) < ($1.creationDate, $1.id.uuidString)
                        }
                        }
                        if descending { expected.reverse() }
                        let paged = try Self.allPages(store, ChordsetQuery(order: order, descending: descending, limit: 9))
                        #expect(paged.map(\.id) == expected.map(\.id), "after \(change): \(order), descending \(descending)")
                        #expect(paged.map(\.title) == expected.map(\.title), "after \(change): \(order), descending \(descending)")
                    }
                }
            }
            try expectOrdersAgree(after: "the adds")
            let ids = try store.chordsets(order: .index).map(\.id)
            var tempo = 60.0
            /// A change of no header that every state allows: the controls chord's tempo.
            func tempoChange() -> Command {
                tempo += 1
                return .setControlsChord(SetControlsChord(bpm: tempo, color: ChordColor(hue: 0, purity: 0, brightness: 0)))
            }
            /// `command`, after a change of no header (so that, where the state in memory is
            /// kept twice and each copy takes every change in turn, each change falls once
            /// on a copy whose orders were read since its last change of a header).
            func change(_ name: String, _ command: Command) async throws {
                // The tempo changes come from a session of their own: the undos undo the header changes.
                try await store.execute(tempoChange(), context: CommandContext(session: "tempo"))
                try expectOrdersAgree(after: "a tempo change before \(name)")
                try await store.execute(command)
                try expectOrdersAgree(after: name)
            }
            for parity in 0..<2 {
                try await change("an add", .addChordset(AddChordset(title: "a new one", creationDate: Instant(microsecondsSince1970: 20_500_000 + Int64(parity)))))
                try await change("a rename", .renameChordset(id: ids[5 + parity], title: "AAA first by title \(parity)"))
                try await change("a move", .moveChordset(id: ids[30 + parity], toIndex: 0))
                try await change("a delete", .deleteChordset(id: ids[12 + parity]))
                try await change("the delete's undo", .undo)
                try await change("a delete-all", .deleteAll)
                try await change("the delete-all's undo", .undo)
                // The next round's header changes fall on the other copy.
                try await store.execute(tempoChange(), context: CommandContext(session: "tempo"))
            }
            try await change("a delete-all", .deleteAll)
            #expect(try store.chordsets(order: .index).isEmpty)
        }
    }

    @Test("titles longer than an LMDB key, empty titles and empty filters", arguments: EngineKind.allCases)
    func longAndEmptyTitles(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let long = String(repeating: "🎹", count: 199)  // 796 UTF-8 bytes
        let longer = long + "x"
        for title in [long, longer, "", "", "a"] { try await store.execute(.addChordset(AddChordset(title: title))) }
        #expect(try store.chordsets(order: .title).map(\.title) == ["", "", "a", long, longer])
        #expect(try store.query(ChordsetQuery(title: (.equals, longer), order: .title, limit: 10)).chordsets.map(\.title) == [longer])
        #expect(try store.query(ChordsetQuery(title: (.contains, "🎹x"), order: .title, limit: 10)).chordsets.count == 1)
        #expect(try store.count(ChordsetQuery(title: (.prefix, long))).count == 2)
        #expect(try store.query(ChordsetQuery(title: (.equals, ""), order: .title, limit: 10)).chordsets.count == 2)
        #expect(try store.query(ChordsetQuery(title: (.prefix, ""), order: .title, limit: 10)).chordsets.count == 5)
        #expect(try store.verify().isSound)
    }

    @Test("paging through 100,000 chordsets with a cursor returns each exactly once while writes happen between pages")
    func pagingUnderWrites() async throws {
        try await onOwnThread {
            let store = try EngineKind.lmdb.makeStore { $0.unsafeNoSync = true }
            defer { store.close() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for batch in 0..<100 {
                    group.addTask {
                        for i in 0..<1_000 { try await store.execute(.addChordset(AddChordset(title: "c\(batch)-\(i)"))) }
                    }
                    if batch % 8 == 7 { try await group.next() }
                }
                try await group.waitForAll()
            }
            let original = Set(try store.chordsets(order: .creationDate).map(\.id))
            #expect(original.count == 100_000)
            var g = SplitMix64(seed: 8)
            var query = ChordsetQuery(order: .creationDate, limit: 977)
            var seen: [UUID: Int] = [:]
            var pages = 0
            while true {
                let page = try store.query(query)
                pages += 1
                for chordset in page.chordsets { seen[chordset.id, default: 0] += 1 }
                guard let cursor = page.nextCursor else { break }
                query.cursor = cursor
                // Writes between pages: new chordsets, renames and tempo changes of old ones.
                let ids = Array(original.prefix(2_000))
                for _ in 0..<20 {
                    let id = ids[Int(g.next() % UInt64(ids.count))]
                    try await store.execute(.renameChordset(id: id, title: "renamed \(g.next())"))
                    try await store.execute(.addChordset(AddChordset(title: "new")))
                }
            }
            #expect(pages > 100)
            #expect(original.allSatisfy { seen[$0] == 1 }, "missing or repeated: \(original.filter { seen[$0] != 1 }.count)")
            #expect(seen.values.allSatisfy { $0 == 1 })

            // A selective filter over more entries than one page may read: the pages that hit
            // the read limit come back short, with a cursor, and the match is still found.
            var rare = ChordsetQuery(title: (.contains, "zz-nowhere"), order: .title, limit: 50)
            _ = try await store.execute(.addChordset(AddChordset(title: "zz-nowhere")))
            var found: [String] = []
            var rarePages = 0
            while true {
                let page = try store.query(rare)
                rarePages += 1
                found += page.chordsets.map(\.title)
                guard let cursor = page.nextCursor, rarePages < 100 else { break }
                rare.cursor = cursor
            }
            #expect(found == ["zz-nowhere"])
            #expect(rarePages >= 2)
            #expect(try store.count(rare).count == 1)
        }
    }
}
