import ChordStoreDomain
import ChordStoreRecords
import Foundation

extension LiveStateFile {
    /// Builds a saved set frame by frame, and refuses (`dataLoss`) frames out of place and
    /// a set that could not have been folded: two stores of one id or name, two chordsets
    /// of one id in a store, a store whose head is not its number of events, store
    /// `default` missing, counts that differ from the end frame's.
    struct Decoder {
        /// The most estimated bytes of the state's copies that stores are kept in memory
        /// for; the stores past it are evicted as they are read (`nil`: no bound).
        let budget: Int?
        /// The estimated bytes of the stores read so far (both copies).
        private var bytes = 0
        private(set) var ended = false
        private var head: LogHead?
        private var lastID: UInt32 = 0
        private var fold: UInt64 = 0
        private var stores: [UInt32: StoreSet.Store] = [:]
        private var names: Set<String> = []
        private var tokens: [String: TokenRecord] = [:]
        private var (chordsets, events) = (0, 0)
        // The store being read.
        private var record: StoreRecord?
        private var state = InMemoryState(indexingChords: true)
        private var undo: [String: [UInt64]] = [:]
        private var redo: [String: [UInt64]] = [:]
        private var sessionHistory: [String: [UInt64]] = [:]
        /// The store's revisions and chordsets' histories, read into the tables the fold
        /// keeps (sized once, at the first of them, for the chordsets read before).
        private var changes = InMemoryChanges()
        private var changesSized = false
        /// The session named last by a revision (most name one of a few sessions): its
        /// bytes and the string made of them, made again only when they differ.
        private var lastSession: (bytes: [UInt8], name: String) = ([], "")
        private var deleted: [UInt64: [Chordset]] = [:]
        private var logSequences: [UInt64] = []
        private var commands: [String: UInt64] = [:]
        /// Whether a frame of the store's state or changes was read.
        private var holdsState = false
        private var evicted: StoreCounts?

        /// A decoder that keeps stores in memory within `budget` (`nil`: all of them).
        init(budget: Int? = nil) {
            self.budget = budget
        }

        /// Takes the next frame, of `kind`, whose bytes are `body`, with what the reading
        /// thread decoded of it (``LiveStateFile/content(_:_:)``). A frame that does not
        /// decode is refused there, before this one's checks of where it stands.
        mutating func take(_ kind: Kind, _ body: UnsafeRawBufferPointer, content: Content) throws(ChordStoreError) {
            var cursor = ProtoReader(body)
            if kind != .head { guard head != nil else { throw Self.damaged("does not start with its head") } }
            if (Kind.chordset.rawValue...Kind.chordsetHistory.rawValue).contains(kind.rawValue) {
                guard evicted == nil else { throw Self.damaged("has a frame of an evicted store's state") }
                holdsState = true
            }
            switch kind {
            case .head:
                guard head == nil else { throw Self.damaged("has two heads") }
                let (sequence, checksum, micros, epoch) = (try cursor.varint(), try cursor.varint(), try cursor.varint(), try cursor.varint())
                head = LogHead(sequence: sequence, checksum: checksum, timestamp: Instant(microsecondsSince1970: Int64(bitPattern: micros)), epoch: epoch)
                lastID = UInt32(clamping: try cursor.varint())
                fold = try cursor.varint()
            case .store:
                try finishStore()
                let id = UInt32(bigEndian: try cursor.bytes(4).loadUnaligned(as: UInt32.self))
                let record = try StoreRecord(id: id, bytes: cursor.rest())
                guard stores[id] == nil, names.insert(record.name).inserted else { throw Self.damaged("has store \(id) (\(record.name)) twice") }
                guard id <= lastID else { throw Self.damaged("has store \(id), past the largest id given (\(lastID))") }
                self.record = record
            case .chordset:
                try requireStore()
                guard case .chordset(var chordset) = content else { throw Self.unprepared(kind) }
                guard state.chordset(chordset.id) == nil else { throw Self.damaged("has chordset \(chordset.id) twice in a store") }
                chordset.index = state.chordsetCount()
                state.insertChordset(chordset)
                chordsets += 1
            case .controls:
                try requireStore()
                state.setControlsChord(try WireCodec.readChord(body))
            case .deleted:
                try requireStore()
                guard case .deleted(let sequence, let chordset) = content else { throw Self.unprepared(kind) }
                deleted[sequence, default: []].append(chordset)
            case .undo, .redo, .sessionHistory:
                try requireStore()
                let session = try cursor.string()
                let sequences = try LiveStateFile.sequences(&cursor)
                switch kind {
                case .undo: undo[session, default: []].append(contentsOf: sequences)
                case .redo: redo[session, default: []].append(contentsOf: sequences)
                default: sessionHistory[session, default: []].append(contentsOf: sequences)
                }
            case .revision:
                try requireStore()
                let key: RevisionKey
                switch try cursor.byte() {
                case 0: key = .chordset(try WireCodec.readID(try cursor.bytes(16)))
                case 1: key = .controls
                case 2: key = .collection
                case 3: key = .bulk
                case let other: throw Self.damaged("has a revision of key kind \(other)")
                }
                let (last, lastByOther) = (try cursor.varint(), try cursor.varint())
                sizeChanges()
                changes.setRevision(key, Revision(last: last, lastSession: try session(&cursor), lastByOther: lastByOther))
            case .chordsetHistory:
                try requireStore()
                guard case .history(let id, let sequences) = content else { throw Self.unprepared(kind) }
                sizeChanges()
                changes.noteHistory(chordset: id, contentsOf: sequences)
            case .logSequences:
                try requireStore()
                guard case .logSequences(let sequences) = content else { throw Self.unprepared(kind) }
                if logSequences.isEmpty { logSequences = sequences } else { logSequences.append(contentsOf: sequences) }
            case .command:
                try requireStore()
                let id = try cursor.string()
                commands[id] = try cursor.varint()
            case .evicted:
                try requireStore()
                guard !holdsState, evicted == nil else { throw Self.damaged("has store \(record?.name ?? "") evicted, with its state") }
                evicted = StoreCounts(chordsets: Int(clamping: try cursor.varint()), chords: Int(clamping: try cursor.varint()))
            case .token:
                try finishStore()
                let id = try cursor.string()
                tokens[id] = try TokenRecord(id: id, bytes: cursor.rest())
            case .end:
                try finishStore()
                let counts = [try cursor.varint(), try cursor.varint(), try cursor.varint(), try cursor.varint()]
                let held = [stores.count, tokens.count, chordsets, events].map(UInt64.init)
                guard counts == held else {
                    throw Self.damaged("holds \(held) stores, tokens, chordsets and events; its end says \(counts)")
                }
                ended = true
            }
        }

        /// The set the frames made, once the end frame was read.
        func loaded() throws(ChordStoreError) -> Loaded {
            guard ended, let head else { throw Self.damaged("has no end") }
            guard stores[0]?.record.name == StoreName.default else { throw Self.damaged("has no store \(StoreName.default)") }
            return Loaded(set: StoreSet(saved: stores, lastID: lastID, tokens: tokens, logHead: head), fold: fold)
        }

        /// Makes room in the changes' tables for a revision and a history of each chordset
        /// read (those deleted included), once per store: a saved store's frames put its
        /// chordsets before its changes.
        private mutating func sizeChanges() {
            guard !changesSized else { return }
            changesSized = true
            changes.reserveCapacity(chordsets: state.chordsetCount() + deleted.values.reduce(0) { $0 + $1.count })
        }

        /// A revision's session (varint length, UTF-8 bytes), the string made only when its
        /// bytes differ from the last one's.
        private mutating func session(_ cursor: inout ProtoReader) throws(ChordStoreError) -> String {
            var copy = cursor
            let bytes = try copy.lengthDelimited()
            if bytes.elementsEqual(lastSession.bytes) {
                cursor = copy
                return lastSession.name
            }
            let name = try cursor.string()
            lastSession = (Array(bytes), name)
            return name
        }

        private func requireStore() throws(ChordStoreError) {
            guard record != nil else { throw Self.damaged("has a store's frame before any store") }
        }

        /// Ends the store being read, if any.
        private mutating func finishStore() throws(ChordStoreError) {
            guard let record else { return }
            guard record.head == UInt64(logSequences.count), record.headLogSequence == (logSequences.last ?? 0) else {
                throw Self.damaged("has store \(record.name) at event \(record.head) with \(logSequences.count) events")
            }
            for (sequence, chordsets) in deleted { state.adoptDeletedChordsets(chordsets, at: sequence) }
            changes.setSessions(undo: undo, redo: redo, sessionHistory: sessionHistory)
            var store = StoreSet.Store(
                record: record, state: state, changes: changes, log: InMemoryLog(logSequences: logSequences, commands: commands), evicted: evicted)
            if let budget, store.evicted == nil, bytes + store.estimatedBytes * ResidencyPlan.copies > budget { store.evict() }
            bytes += store.estimatedBytes * ResidencyPlan.copies
            stores[record.id] = store
            events += logSequences.count
            self.record = nil
            state = InMemoryState(indexingChords: true)
            (undo, redo, sessionHistory, deleted, logSequences, commands) = ([:], [:], [:], [:], [], [:])
            (changes, changesSized, holdsState, evicted) = (InMemoryChanges(), false, false, nil)
        }

        /// A frame of `kind` given without what ``LiveStateFile/content(_:_:)`` makes of
        /// it: a caller's mistake, answered as a file that cannot be used (it is set aside
        /// and the log replayed), not a crash.
        private static func unprepared(_ kind: Kind) -> ChordStoreError {
            ChordStoreError(.dataLoss, "the live state file's frame of kind \(kind.rawValue) came without its decoded content")
        }

        private static func damaged(_ what: String) -> ChordStoreError {
            ChordStoreError(.dataLoss, "the live state file \(what)")
        }
    }
}
