import Foundation

/// A fetch request for chordsets, like Core Data's: a filter, an order and a page.
public struct ChordsetQuery: Sendable, Hashable {
    /// How a title filter matches (on folded titles, see ``ChordStoreDomain/TitleKey``).
    public enum TitleMatch: Sendable, Hashable {
        case equals, prefix, contains
    }

    /// The title filter: how and against what text; `nil` selects any title.
    public var title: (match: TitleMatch, text: String)? {
        get { titleFilter.map { ($0.match, $0.text) } }
        set { titleFilter = newValue.map { TitleFilter(match: $0.match, text: $0.text) } }
    }
    /// Chordsets created at or after this instant; `nil`: no lower bound.
    public var createdFrom: Instant?
    /// Chordsets created before this instant; `nil`: no upper bound.
    public var createdBefore: Instant?
    /// The order.
    public var order: ChordsetOrder
    /// Reverses the order.
    public var descending: Bool
    /// Most chordsets in the page.
    public var limit: Int
    /// Where the previous page ended (its ``QueryPage/nextCursor``); `nil`: the start.
    public var cursor: [UInt8]?

    struct TitleFilter: Sendable, Hashable {
        var match: TitleMatch
        var text: String
        /// `text` folded, computed once.
        var folded: [UInt8]

        init(match: TitleMatch, text: String) {
            self.match = match
            self.text = text
            self.folded = TitleKey.bytes(text)
        }
    }
    private var titleFilter: TitleFilter?

    /// Creates a query.
    public init(
        title: (match: TitleMatch, text: String)? = nil, createdFrom: Instant? = nil, createdBefore: Instant? = nil,
        order: ChordsetOrder = .creationDate, descending: Bool = false, limit: Int = 50, cursor: [UInt8]? = nil
    ) {
        self.titleFilter = title.map { TitleFilter(match: $0.match, text: $0.text) }
        self.createdFrom = createdFrom
        self.createdBefore = createdBefore
        self.order = order
        self.descending = descending
        self.limit = limit
        self.cursor = cursor
    }

    /// Whether `chordset` passes the filters (not the page).
    public func matches(_ chordset: Chordset) -> Bool {
        matches(folded: TitleKey.bytes(chordset.title), created: chordset.creationDate)
    }

    /// Whether a chordset with this folded title and creation date passes the filters.
    package func matches(folded title: some Collection<UInt8>, created: Instant) -> Bool {
        if let createdFrom, created < createdFrom { return false }
        if let createdBefore, created >= createdBefore { return false }
        guard let titleFilter else { return true }
        let text = titleFilter.folded
        switch titleFilter.match {
        case .equals: return title.elementsEqual(text)
        case .prefix: return title.starts(with: text)
        case .contains: return Self.contains(Array(title), text)
        }
    }

    /// Whether `text` occurs in `title`, byte for byte (both folded UTF-8).
    private static func contains(_ title: [UInt8], _ text: [UInt8]) -> Bool {
        guard !text.isEmpty else { return true }
        guard title.count >= text.count else { return false }
        for start in 0...(title.count - text.count) where title[start] == text[0] {
            if title[start..<(start + text.count)].elementsEqual(text) { return true }
        }
        return false
    }

    /// Whether any filter is set.
    package var isFiltered: Bool { titleFilter != nil || createdFrom != nil || createdBefore != nil }

    /// Folded prefix bytes every match starts with in title order (equals and prefix).
    package var titlePrefix: [UInt8]? {
        guard let titleFilter, titleFilter.match != .contains else { return nil }
        return titleFilter.folded
    }
}

/// One page of a query's result.
public struct QueryPage: Sendable, Hashable {
    /// The chordsets, in the query's order.
    public var chordsets: [Chordset]
    /// Pass as ``ChordsetQuery/cursor`` for the next page; `nil` when the end was reached.
    public var nextCursor: [UInt8]?
    /// The log position the page was read at.
    public var sequence: UInt64

    /// Creates a page.
    public init(chordsets: [Chordset], nextCursor: [UInt8]?, sequence: UInt64) {
        self.chordsets = chordsets
        self.nextCursor = nextCursor
        self.sequence = sequence
    }
}
