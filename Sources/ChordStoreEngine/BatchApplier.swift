import ChordStoreRecords
import ChordStoreDomain

/// A store's log, with the index of the command ids already applied (so that a retried
/// command, same id, is answered with its original event and writes nothing). Each
/// backend keeps both in the same transaction as the projections; the records themselves
/// go to the whole log (``StoreSpace/appendRecord(_:_:)``).
protocol LogAppending: ChangeLogReading {
    /// The event recorded for `commandID` in this store, if a command with that id was applied.
    func event(forCommand commandID: String) throws -> RecordedEvent?
    /// Notes the store's event `sequence`, at `logSequence` in the whole log, and its
    /// command id (if not empty).
    mutating func append(_ sequence: UInt64, logSequence: UInt64, _ record: [UInt8], commandID: String) throws
}

/// A store command: creates or deletes a store (see ``ChordStoreDomain/StoreName``).
enum StoreCommand: Sendable, Hashable {
    case create(String)
    case delete(String)
}

/// One command waiting for the writer.
struct SubmittedCommand: Sendable {
    enum Work: Sendable {
        /// A change of one store's chordsets (the store is the context's).
        case command(Command)
        /// A change of the set of stores.
        case store(StoreCommand)
        /// A change of the set of tokens.
        case token(TokenCommand)
    }

    var work: Work
    var context: CommandContext

    init(command: Command, context: CommandContext) {
        work = .command(command)
        self.context = context
    }

    init(store command: StoreCommand, context: CommandContext) {
        work = .store(command)
        self.context = context
    }

    init(token command: TokenCommand, context: CommandContext) {
        work = .token(command)
        self.context = context
    }
}

/// The commit logic both backends share: for each command in order, decide its event
/// against its store's state as changed by the commands before it, append the record to
/// the whole log, fold it (``StoreFold``).
struct BatchApplier: Sendable {
    var decider: Decider
    var epoch: UInt64
    /// Most live stores, `default` included.
    var maxStores: Int
    /// Most live tokens.
    var maxTokens: Int

    /// Applies `batch` to `space`. Per-command failures are returned; a thrown error is a
    /// storage failure and means the whole batch must be discarded.
    func apply(
        _ batch: [SubmittedCommand], to space: inout some StoreSpace, now: Instant, generator: inout IncreasingIDs
    ) throws -> [Result<CommittedEvent, ChordStoreError>] {
        let timestamp = max(now, space.logHead.timestamp)
        var results: [Result<CommittedEvent, ChordStoreError>] = []
        results.reserveCapacity(batch.count)
        for submitted in batch {
            let decided: Result<(event: Event, mark: ChangeMark?, store: StoreRecord?), ChordStoreError>
            switch submitted.work {
            case .command(let command):
                switch try decide(command, submitted.context, in: &space, timestamp: timestamp, generator: &generator) {
                case .repeated(let answer):
                    results.append(answer.map { CommittedEvent(recorded: $0) })
                    continue
                case .decided(let outcome):
                    decided = outcome.map { ($0.decision.event, $0.decision.mark, $0.store) }
                }
            case .store(let command):
                decided = try decide(command, in: space).map { ($0, nil, nil) }
            case .token(let command):
                decided = try decide(command, in: space).map { ($0, nil, nil) }
            }
            switch decided {
            case .failure(let error):
                results.append(.failure(error))
            case .success(let (event, mark, store)):
                let logSequence = try space.logHead.nextSequence()
                var recorded = RecordedEvent(
                    sequence: store.map { $0.head + 1 } ?? logSequence, epoch: epoch, timestamp: timestamp,
                    session: submitted.context.session, commandID: store == nil ? "" : submitted.context.commandID,
                    event: event, checksum: 0, mark: mark, store: store?.id ?? 0, logSequence: logSequence,
                    tokenID: submitted.context.tokenID)
                let (bytes, checksum) = RecordCodec.encode(recorded, previousChecksum: space.logHead.checksum)
                recorded.checksum = checksum
                try space.appendRecord(logSequence, bytes)
                try StoreFold.apply(ReplayFields(recorded), record: bytes, to: &space)
                space.logHead = LogHead(sequence: logSequence, checksum: checksum, timestamp: timestamp, epoch: epoch)
                results.append(.success(CommittedEvent(recorded: recorded, record: bytes)))
            }
        }
        return results
    }

    private enum Outcome {
        /// A command id applied before: the answer, nothing written.
        case repeated(Result<RecordedEvent, ChordStoreError>)
        case decided(Result<(decision: Decision, store: StoreRecord), ChordStoreError>)
    }

    /// Decides `command` against its store (the context's).
    private func decide(
        _ command: Command, _ context: CommandContext, in space: inout some StoreSpace, timestamp: Instant,
        generator: inout IncreasingIDs
    ) throws -> Outcome {
        let name = StoreName.resolved(context.store)
        do {
            try StoreName.check(name)
        } catch {
            return .decided(.failure(error))
        }
        guard let store = try space.store(named: name) else {
            return .decided(.failure(ChordStoreError(.notFound, "there is no store named \(name)", reason: .storeNotFound)))
        }
        let decider = self.decider
        return try space.withStore(store) { state, changes, log throws -> Outcome in
            let commandID = context.commandID
            // A storage failure here throws: it fails the batch, not just this command.
            if !commandID.isEmpty, commandID.utf8.count <= decider.validation.limits.maxMetadataBytes,
               let original = try log.event(forCommand: commandID) {
                return .repeated(Self.repeated(command, original: original))
            }
            do {
                try decider.validation.checkMetadata(context.session, name: "session")
                try decider.validation.checkMetadata(commandID, name: "command id")
                let decision = try decider.decide(
                    command, session: context.session, expectedRevision: context.expectedRevision, state: state,
                    changes: changes, log: log, timestamp: timestamp, using: &generator)
                return .decided(.success((decision, store)))
            } catch let error as ChordStoreError where error.code == .internal || error.code == .dataLoss {
                // Reading the state failed: a storage problem, not a refusal. Fail the
                // whole batch (its transaction is aborted) rather than commit around it.
                throw error
            } catch {
                return .decided(.failure(ChordStoreError.wrapping(error)))
            }
        }
    }

    /// Decides a store command against the registry.
    private func decide(_ command: StoreCommand, in space: some StoreSpace) throws -> Result<Event, ChordStoreError> {
        switch command {
        case .create(let name):
            do {
                try StoreName.check(name)
            } catch {
                return .failure(error)
            }
            if try space.store(named: name) != nil {
                return .failure(ChordStoreError(.alreadyExists, "store \(name) exists"))
            }
            let count = try space.storeCount()
            guard count < maxStores else {
                return .failure(ChordStoreError(
                    .resourceExhausted, "the server holds \(count) stores, its limit (--max-stores \(maxStores)); delete one first"))
            }
            let last = try space.lastStoreID()
            guard last < StoreRecord.maxID else {
                return .failure(ChordStoreError(.resourceExhausted, "every store id has been given; no store can be created"))
            }
            return .success(.store(.created(id: last + 1, name: name)))
        case .delete(let name):
            do {
                try StoreName.check(name)
            } catch {
                return .failure(error)
            }
            guard name != StoreName.default else {
                return .failure(ChordStoreError(.failedPrecondition, "store default always exists; it cannot be deleted"))
            }
            guard let store = try space.store(named: name) else {
                return .failure(ChordStoreError(.notFound, "there is no store named \(name)", reason: .storeNotFound))
            }
            return .success(.store(.deleted(id: store.id, name: name)))
        }
    }

    /// Decides a token command against the live tokens and stores.
    private func decide(_ command: TokenCommand, in space: some StoreSpace) throws -> Result<Event, ChordStoreError> {
        switch command {
        case .create(var grant):
            do throws(ChordStoreError) {
                try TokenGrant.checkID(grant.id)
                guard grant.id != TokenGrant.localAdminID else {
                    throw ChordStoreError(.invalidArgument, "token id \(grant.id) is each node's own admin token's")
                }
                guard grant.secretHash.count == 32 else { throw ChordStoreError(.invalidArgument, "a token's secret hash is SHA-256, 32 bytes") }
                if grant.role.isScoped {
                    try StoreName.check(grant.storeName)
                } else if !grant.storeName.isEmpty {
                    throw ChordStoreError(.invalidArgument, "an admin token works on every store: give no store")
                }
            } catch {
                return .failure(error)
            }
            if grant.role.isScoped {
                guard let store = try space.store(named: grant.storeName) else {
                    return .failure(ChordStoreError(.notFound, "there is no store named \(grant.storeName)", reason: .storeNotFound))
                }
                grant.storeID = store.id
            } else {
                grant.storeID = 0
            }
            if try space.token(id: grant.id) != nil {
                return .failure(ChordStoreError(.alreadyExists, "token \(grant.id) exists"))
            }
            let count = try space.tokenCount()
            guard count < maxTokens else {
                return .failure(ChordStoreError(
                    .resourceExhausted, "the server holds \(count) tokens, its limit (--max-tokens \(maxTokens)); revoke one first"))
            }
            return .success(.token(.created(grant)))
        case .revoke(let id):
            guard try space.token(id: id) != nil else {
                return .failure(ChordStoreError(.notFound, "there is no token \(id.prefix(40))", reason: .tokenNotFound))
            }
            return .success(.token(.revoked(id: id)))
        }
    }

    /// The answer to a command whose id was already applied: its original event, or a
    /// refusal if the id was used for another kind of command.
    private static func repeated(_ command: Command, original: RecordedEvent) -> Result<RecordedEvent, ChordStoreError> {
        let sameKind = switch (command, original.mark) {
        case (.undo, .undoes?), (.redo, .redoes?): true
        case (.undo, _), (.redo, _), (_, .some): false
        case (_, nil): command.eventKindName == original.event.kindName
        }
        guard sameKind else {
            return .failure(ChordStoreError(
                .failedPrecondition,
                "command id \(original.commandID) was already used by event \(original.sequence) (\(original.event.kindName)), not a \(command.kindName)"))
        }
        return .success(original)
    }
}
