/// The name of a store: an isolated collection of chordsets in one server (see
/// docs/PROTOCOL.md, "Stores"). 1–64 characters of `a-z`, `0-9`, `.`, `_` and `-`.
public enum StoreName {
    /// The store every request that names none goes to. It always exists and cannot be
    /// deleted.
    public static let `default` = "default"
    /// The longest name, in characters (ASCII, so also bytes).
    public static let maxLength = 64
    /// The rule, as error messages state it.
    public static let rule = "a store name is 1–64 characters of a-z, 0-9, '.', '_' and '-'"

    /// Throws `invalidArgument` (saying the rule) unless `name` follows it.
    public static func check(_ name: String) throws(ChordStoreError) {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= maxLength, bytes.allSatisfy(isAllowed) else {
            let shown = bytes.count <= 80 ? "'\(name)'" : "'\(String(decoding: bytes.prefix(80), as: UTF8.self))…'"
            throw ChordStoreError(.invalidArgument, "\(shown) is not a store name: \(rule)")
        }
    }

    /// The name a request's store field stands for: empty means ``default``.
    public static func resolved(_ name: String) -> String { name.isEmpty ? Self.default : name }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"): true
        default: false
        }
    }
}

/// A change to the set of stores. It is recorded in the log like every other change but
/// belongs to no store: the engine folds it into its registry of stores, never into a
/// store's state.
public enum StoreEvent: Sendable, Hashable {
    /// A store was created with the id `id` (1, 2, 3, … in creation order; 0 is `default`).
    case created(id: UInt32, name: String)
    /// A store was deleted: its views went, its name became free, its events stay in the log.
    case deleted(id: UInt32, name: String)

    /// The store's id.
    public var id: UInt32 {
        switch self {
        case .created(let id, _), .deleted(let id, _): id
        }
    }

    /// The store's name.
    public var name: String {
        switch self {
        case .created(_, let name), .deleted(_, let name): name
        }
    }
}
