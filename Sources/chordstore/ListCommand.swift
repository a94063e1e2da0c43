import ArgumentParser
import ChordStoreAPI
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import Foundation
import SwiftProtobuf

/// The `--order` values.
enum OrderArgument: String, ExpressibleByArgument, CaseIterable {
    case created, index, title

    var order: ChordsetOrder {
        switch self {
        case .created: .creationDate
        case .index: .index
        case .title: .title
        }
    }
}

/// `chordstore list`: lists chordsets, oldest first by default.
struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List chordsets (by creation date unless --sort says otherwise), optionally filtered.",
        discussion: prose("""
            Title filters compare case- and diacritic-insensitively ("eclair" finds
            "Éclair"). With a filter, --desc, --cursor or --count the list is a query:
            one page of --limit (default 50) and, when there is more, the --cursor that
            continues it (printed last, or as nextCursor with --json).

            Without them, every chordset is listed (or the first --limit): the list is
            read in pages of 1,000, each as of its own moment, so a change made while a
            long list prints may show in its later pages (and a failure part way, exit 1,
            leaves what was printed: with --json, an unfinished object). With --as-of, at most 5,000
            (the most a read of the past returns; a note on standard error says when
            there may be more).
            """))

    @OptionGroup var global: GlobalOptions

    @Option(name: [.customLong("sort"), .customLong("order")], help: "Order: created (oldest first), index (the user order) or title.")
    var order: OrderArgument = .created

    @Option(parsing: .unconditional, help: "Show at most this many (a query's page: at most 5,000, default 50; a plain list: all by default).")
    var limit: Int?

    @Option(name: .customLong("title-equals"), help: ArgumentHelp("Only titles equal to TEXT.", valueName: "TEXT"))
    var titleEquals: String?
    @Option(name: .customLong("title-prefix"), help: ArgumentHelp("Only titles starting with TEXT.", valueName: "TEXT"))
    var titlePrefix: String?
    @Option(name: .customLong("title-contains"), help: ArgumentHelp("Only titles containing TEXT.", valueName: "TEXT"))
    var titleContains: String?
    @Option(name: .customLong("created-from"), help: ArgumentHelp("Only chordsets created at or after TIME (ISO 8601).", valueName: "TIME"))
    var createdFrom: String?
    @Option(name: .customLong("created-before"), help: ArgumentHelp("Only chordsets created before TIME (ISO 8601).", valueName: "TIME"))
    var createdBefore: String?
    @Flag(name: .customLong("desc"), help: "Reverse the order.")
    var descending = false
    @Option(help: "Continue after the page that printed this cursor.")
    var cursor: String?
    @Flag(help: "Print how many chordsets match instead of listing them.")
    var count = false

    @OptionGroup var asOf: AsOfOption

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        if [titleEquals, titlePrefix, titleContains].compactMap({ $0 }).count > 1 {
            throw ValidationError("give at most one of --title-equals, --title-prefix and --title-contains")
        }
        if try query() != nil, asOf.asOf != nil {
            throw ValidationError("--as-of cannot be combined with filters, --desc, --cursor or --count")
        }
    }

    /// The query the options describe, or `nil` for a plain list.
    func query() throws -> ChordsetQuery? {
        let title: (ChordsetQuery.TitleMatch, String)? =
            titleEquals.map { (.equals, $0) } ?? titlePrefix.map { (.prefix, $0) } ?? titleContains.map { (.contains, $0) }
        guard title != nil || createdFrom != nil || createdBefore != nil || descending || cursor != nil || count else { return nil }
        func instant(_ text: String?, _ option: String) throws -> Instant? {
            guard let text else { return nil }
            guard let instant = parseInstant(text) else {
                throw ValidationError("\(option) takes an ISO 8601 time, not '\(text)'")
            }
            return instant
        }
        var cursorBytes: [UInt8]?
        if let cursor {
            guard let data = Data(base64Encoded: cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")) else {
                throw ValidationError("--cursor takes the cursor a previous page printed")
            }
            cursorBytes = Array(data)
        }
        return ChordsetQuery(
            title: title, createdFrom: try instant(createdFrom, "--created-from"),
            createdBefore: try instant(createdBefore, "--created-before"), order: order.order, descending: descending,
            limit: limit.map { $0 == 0 ? 5_000 : min($0, 5_000) } ?? 50, cursor: cursorBytes)
    }

    func run() async throws {
        if let query = try query() {
            if count {
                let counted = try await withAccess(global, readOnly: true) { try await $0.count(query) }
                return global.json ? Output.print("{\"count\":\"\(counted)\"}") : Output.print("\(counted)")
            }
            let page = try await withAccess(global, readOnly: true) { try await $0.query(query) }
            let next = page.nextCursor.map { Data($0).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") }
            if global.json {
                return try Output.json(Chordstore_V1_QueryPage.with {
                    $0.chordsets = page.chordsets.map(\.proto)
                    $0.nextCursor = page.nextCursor.map { Data($0) } ?? Data()
                    $0.sequence = page.sequence
                })
            }
            try Output.chordsetList(page.chordsets, json: false)
            if let next { Output.print("more: --cursor \(next)") }
            return
        }
        if let point = try asOf.point() {
            let answer = try await withAccess(global, readOnly: true) { try await $0.readAsOf(point, .list(order.order, limit: limit)) }
            guard case .list(let chordsets, let sequence) = answer else { return }
            if !global.json { Output.print("as of event \(sequence):") }
            try Output.chordsetList(chordsets, json: global.json)
            if chordsets.count == Self.pastListLimit, limit.map({ $0 == 0 || $0 > Self.pastListLimit }) ?? true {
                Output.note("listed the first \(Self.pastListLimit) chordsets as of event \(sequence), the most a read of the past returns; there may be more")
            }
            return
        }
        try await withAccess(global, readOnly: true) { store in try await listAll(store) }
    }

    /// The most chordsets a read of the past (`--as-of`) returns: the server's list limit.
    static let pastListLimit = 5_000
    /// Chordsets asked for in each page of a plain list: 1,000 of the largest (titles of
    /// 200 long grapheme clusters) stay under the 4 MiB frame.
    static let pageSize = 1_000

    /// A plain list: every chordset (or the first `--limit`) in pages, each printed as it
    /// arrives (one JSON `ChordsetList` object with --json).
    private func listAll(_ store: any StoreAccess) async throws {
        let wanted = limit.flatMap { $0 == 0 ? nil : $0 }
        var query = ChordsetQuery(order: order.order, limit: Self.pageSize)
        var listed = 0
        while wanted.map({ listed < $0 }) ?? true {
            query.limit = min(Self.pageSize, wanted.map { $0 - listed } ?? Self.pageSize)
            let page = try await store.query(query)
            for chordset in page.chordsets {
                if global.json {
                    Output.write((listed == 0 ? "{\"chordsets\":[" : ",") + (try chordset.proto.jsonString()))
                } else {
                    if listed == 0 { Output.print(Output.chordsetListHeader) }
                    Output.print(Output.chordsetLine(chordset))
                }
                listed += 1
            }
            guard let next = page.nextCursor, !page.chordsets.isEmpty else { break }
            query.cursor = next
        }
        if global.json { Output.print(listed == 0 ? "{}" : "]}") } else if listed == 0 { Output.print("no chordsets") }
    }
}
