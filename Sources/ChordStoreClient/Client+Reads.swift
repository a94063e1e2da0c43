import ChordStoreAPI
public import ChordStoreDomain
import ChordStoreProto
import SwiftProtobuf
public import Foundation

/// Reads of the client's store, in the domain's terms. A read may wait for the store's
/// event `minSequence` first (read your writes across members: pass the sequence of an
/// event you saw); `NOT_FOUND` of what the read names is `nil`.
extension Client {
    /// `ListChordsets`: the store's chordsets in `order` (at most `limit`, the server's
    /// cap of 5,000 when `nil`).
    public func chordsets(order: ChordsetOrder = .creationDate, limit: Int? = nil, minSequence: UInt64 = 0, timeout: Duration? = nil) async throws(ClientError) -> [Chordset] {
        let list = try await call(.listChordsets, Chordstore_V1_ListChordsetsRequest.with {
            $0.order = order.proto
            $0.limit = UInt32(clamping: limit ?? 0)
        }, timeout: timeout, minSequence: minSequence, as: Chordstore_V1_ChordsetList.self)
        return try Self.decoded { () throws in try list.chordsets.map { try Chordset(proto: $0) } }
    }

    /// `QueryChordsets`: one page of a filtered, sorted query; pass its
    /// ``ChordStoreDomain/QueryPage/nextCursor`` as the query's cursor for the next.
    public func chordsets(_ query: ChordsetQuery, minSequence: UInt64 = 0, timeout: Duration? = nil) async throws(ClientError) -> QueryPage {
        let page = try await call(.queryChordsets, query.proto, timeout: timeout, minSequence: minSequence, as: Chordstore_V1_QueryPage.self)
        return try Self.decoded { () throws in
            QueryPage(
                chordsets: try page.chordsets.map { try Chordset(proto: $0) },
                nextCursor: page.nextCursor.isEmpty ? nil : Array(page.nextCursor), sequence: page.sequence)
        }
    }

    /// `CountChordsets`: how many chordsets match the query's filters.
    public func count(_ query: ChordsetQuery, minSequence: UInt64 = 0, timeout: Duration? = nil) async throws(ClientError) -> Int {
        Int(try await call(.countChordsets, query.proto, timeout: timeout, minSequence: minSequence, as: Chordstore_V1_CountReply.self).count)
    }

    /// `GetChordset`: the chordset with its eight chords, `nil` if no chordset has the id.
    public func chordset(_ id: UUID, minSequence: UInt64 = 0, timeout: Duration? = nil) async throws(ClientError) -> Chordset? {
        guard let message = try await Self.unlessNotFound({ () async throws(ClientError) in
            try await call(.getChordset, Chordstore_V1_GetChordsetRequest.with { $0.chordsetID = id.protoBytes },
                           timeout: timeout, minSequence: minSequence, as: Chordstore_V1_Chordset.self)
        }) else { return nil }
        return try Self.decoded { () throws in try Chordset(proto: message) }
    }

    /// `GetChord`: the chord and the chordset it belongs to (`nil` for the controls
    /// chord), `nil` if no chord has the id.
    public func chord(_ id: UUID, minSequence: UInt64 = 0, timeout: Duration? = nil) async throws(ClientError) -> (chord: Chord, chordsetID: UUID?)? {
        guard let view = try await Self.unlessNotFound({ () async throws(ClientError) in
            try await call(.getChord, Chordstore_V1_GetChordRequest.with { $0.chordID = id.protoBytes }, timeout: timeout,
                           minSequence: minSequence, as: Chordstore_V1_ChordView.self)
        }) else { return nil }
        return try Self.decoded { () throws in
            (try Chord(proto: view.chord), view.chordsetID.isEmpty ? nil : try UUID(protoBytes: view.chordsetID))
        }
    }

    /// `GetControlsChord`: the store's controls chord, `nil` while it is not set.
    public func controlsChord(minSequence: UInt64 = 0, timeout: Duration? = nil) async throws(ClientError) -> Chord? {
        guard let chord = try await Self.unlessNotFound({ () async throws(ClientError) in
            try await call(.getControlsChord, Chordstore_V1_GetControlsChordRequest(), timeout: timeout, minSequence: minSequence, as: Chordstore_V1_Chord.self)
        }) else { return nil }
        return try Self.decoded { () throws in try Chord(proto: chord) }
    }

    /// `GetProfile`: the store's counts and last event.
    public func profile(minSequence: UInt64 = 0, timeout: Duration? = nil) async throws(ClientError) -> Profile {
        Profile(proto: try await call(.getProfile, Chordstore_V1_GetProfileRequest(), timeout: timeout, minSequence: minSequence, as: Chordstore_V1_Profile.self))
    }

    /// `Health`: what the server says of itself (no credential needed).
    public func health(timeout: Duration? = nil) async throws(ClientError) -> ServerHealth {
        let reply = try await call(.health, Chordstore_V1_HealthRequest(), timeout: timeout, as: Chordstore_V1_HealthReply.self)
        return ServerHealth(
            server: reply.server, protocolVersion: reply.protocolVersion, node: reply.node, lastSequence: reply.lastSequence,
            leader: reply.leader.isEmpty ? nil : reply.leader, epoch: reply.epoch)
    }

    /// `GetSession`: what undo and redo would do next for `session` (`nil`: the
    /// connection's session).
    public func session(_ session: String? = nil) async throws(ClientError) -> SessionState {
        SessionState(proto: try await call(.getSession, Chordstore_V1_GetSessionRequest.with { $0.session = session ?? "" },
                                           as: Chordstore_V1_SessionState.self))
    }

    /// `GetHistory` of a chordset: every event that touched it, undos included, after
    /// event `after`, at most `limit` (the server's page size when `nil`), oldest first.
    public func history(ofChordset id: UUID, after: UInt64 = 0, limit: Int? = nil) async throws(ClientError) -> [RecordedEvent] {
        try await history(Chordstore_V1_GetHistoryRequest.with { $0.chordsetID = id.protoBytes }, after: after, limit: limit)
    }

    /// `GetHistory` of a session: its own events, after event `after`.
    public func history(ofSession session: String, after: UInt64 = 0, limit: Int? = nil) async throws(ClientError) -> [RecordedEvent] {
        try await history(Chordstore_V1_GetHistoryRequest.with { $0.session = session }, after: after, limit: limit)
    }

    /// Pages of `request` after `after` until `limit` events (one page when `nil`).
    private func history(_ request: Chordstore_V1_GetHistoryRequest, after: UInt64, limit: Int?) async throws(ClientError) -> [RecordedEvent] {
        var events: [RecordedEvent] = []
        var request = request
        request.afterSequence = after
        while true {
            request.limit = UInt32(clamping: limit.map { $0 - events.count } ?? 0)
            let page = try await call(.getHistory, request, as: Chordstore_V1_HistoryPage.self)
            try Self.decoded { () throws in
                for envelope in page.events { events.append(try RecordedEvent(envelope: envelope)) }
            }
            guard let limit, events.count < limit, page.nextAfter != 0 else { return events }
            request.afterSequence = page.nextAfter
        }
    }

    /// `ReadAsOf`: the store's chordsets as they were at `point`, and the event that point
    /// is after.
    public func chordsets(asOf point: AsOf, order: ChordsetOrder = .creationDate, limit: Int? = nil) async throws(ClientError) -> (chordsets: [Chordset], sequence: UInt64) {
        let reply = try await readAsOf(point) { $0.list = .with {
            $0.order = order.proto
            $0.limit = UInt32(clamping: limit ?? 0)
        } }
        return try Self.decoded { () throws in (try reply.list.chordsets.map { try Chordset(proto: $0) }, reply.sequence) }
    }

    /// `ReadAsOf`: one chordset as it was at `point` (`nil`: it did not exist then).
    public func chordset(_ id: UUID, asOf point: AsOf) async throws(ClientError) -> (chordset: Chordset?, sequence: UInt64) {
        let reply = try await Self.unlessNotFound { () async throws(ClientError) in
            try await readAsOf(point) { $0.chordset = .with { $0.chordsetID = id.protoBytes } }
        }
        guard let reply else { return (nil, 0) }
        return try Self.decoded { () throws in (try Chordset(proto: reply.chordset), reply.sequence) }
    }

    /// `ReadAsOf`: the store's profile as it was at `point`.
    public func profile(asOf point: AsOf) async throws(ClientError) -> Profile {
        Profile(proto: try await readAsOf(point) { $0.profile = Chordstore_V1_GetProfileRequest() }.profile)
    }

    private func readAsOf(_ point: AsOf, _ query: (inout Chordstore_V1_ReadAsOfRequest) -> Void) async throws(ClientError) -> Chordstore_V1_AsOfReply {
        var request = Chordstore_V1_ReadAsOfRequest()
        switch point {
        case .sequence(let sequence): request.asOf.sequence = sequence
        case .time(let instant): request.asOf.timeMicros = instant.microsecondsSince1970
        }
        query(&request)
        return try await call(.readAsOf, request, as: Chordstore_V1_AsOfReply.self)
    }

    /// `body`'s result, or `nil` when the server answered that the chordset or chord it
    /// names does not exist (not, say, that the store does not).
    static func unlessNotFound<T>(_ body: () async throws(ClientError) -> T) async throws(ClientError) -> T? {
        do {
            return try await body()
        } catch where error.isServerReply && (error.reason == .chordsetNotFound || error.reason == .chordNotFound) {
            return nil
        }
    }
}
