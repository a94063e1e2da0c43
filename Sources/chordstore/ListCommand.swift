import ArgumentParser
import ChordStoreEngine

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
        commandName: "list", abstract: "List chordsets (by creation date unless --order says otherwise).")

    @OptionGroup var global: GlobalOptions

    @Option(help: "Order: created (oldest first), index (the user order) or title.")
    var order: OrderArgument = .created

    @Option(help: "Show at most this many.")
    var limit: Int?

    @OptionGroup var asOf: AsOfOption

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
    }

    func run() async throws {
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
