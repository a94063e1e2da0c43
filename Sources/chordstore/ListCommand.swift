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
            """))

    @OptionGroup var global: GlobalOptions

    @Option(name: [.customLong("sort"), .customLong("order")], help: "Order: created (oldest first), index (the user order) or title.")
    var order: OrderArgument = .created

    @Option(help: "Show at most this many.")
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
                let counted = try await withAccess(global) { try await $0.count(query) }
                return global.json ? Output.print("{\"count\":\"\(counted)\"}") : Output.print("\(counted)")
            }
            let page = try await withAccess(global) { try await $0.query(query) }
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
            let answer = try await withAccess(global) { try await $0.readAsOf(point, .list(order.order, limit: limit)) }
            guard case .list(let chordsets, let sequence) = answer else { return }
            if !global.json { Output.print("as of event \(sequence):") }
            return try Output.chordsetList(chordsets, json: global.json)
        }
        let chordsets = try await withAccess(global) { try await $0.chordsets(order: order.order, limit: limit) }
        try Output.chordsetList(chordsets, json: global.json)
    }
}
