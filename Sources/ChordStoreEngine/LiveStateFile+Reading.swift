import ChordStoreDomain
import ChordStoreRecords
import Foundation

extension LiveStateFile {
    /// What the reading thread decodes of a frame ahead of the decoder (the bulk of a
    /// file: its chordsets and the long lists of sequences), computed by
    /// ``content(_:_:)``: one case per kind it decodes.
    enum Content: Sendable {
        /// Nothing: the decoder reads the frame's body (the other kinds).
        case body
        /// A ``Kind/chordset`` frame's chordset.
        case chordset(Chordset)
        /// A ``Kind/deleted`` frame's delete-all and chordset.
        case deleted(sequence: UInt64, Chordset)
        /// A ``Kind/chordsetHistory`` frame's chordset and sequences.
        case history(id: UUID, sequences: [UInt64])
        /// A ``Kind/logSequences`` frame's log positions.
        case logSequences([UInt64])
    }

    /// A frame as the reading thread prepared it: its kind, where its body is in its block,
    /// and what it decoded of it.
    struct PreparedFrame: Sendable {
        var kind: Kind
        var body: Range<Int>
        var content: Content
    }

    /// One block the reading thread read, checked and split: its frames up to the first it
    /// could not prepare, and why it could not (`failure`).
    struct ReadBlock: Sendable {
        var bytes: [UInt8]
        var frames: [PreparedFrame]
        var failure: ChordStoreError?
    }

    /// What the reading thread sends, in the file's order.
    enum ReadMessage: Sendable {
        case block(ReadBlock)
        /// A block that could not be read or was damaged (its hash, its length).
        case failure(ChordStoreError)
        /// The file's end, after its last block.
        case end
    }

    /// The reading thread (`cs-live-read`): reads the blocks after the magic, checks
    /// each against its chained hash, splits it into frames and decodes the chordsets and
    /// lists of sequences in them (``content(_:_:)``), while the calling thread builds the state from the blocks before. A load
    /// spent about a third of its time on this part (`perf` of a start on a million events).
    /// Stops at the file's end, at its first failure, or when the receiver cancels.
    static func produce(_ reader: consuming BlockReader, path: String, into channel: Channel<ReadMessage>) {
        while true {
            let bytes: [UInt8]
            do {
                guard let block = try reader.nextBlock() else {
                    _ = channel.send(.end)
                    return
                }
                bytes = block
            } catch {
                _ = channel.send(.failure(error))
                return
            }
            let block = bytes.withUnsafeBytes { prepare($0, path: path) }
            let failed = block.failure != nil
            guard channel.send(.block(ReadBlock(bytes: bytes, frames: block.frames, failure: block.failure))), !failed else { return }
        }
    }

    /// The frames of one block, up to the first that cannot be read.
    private static func prepare(_ bytes: UnsafeRawBufferPointer, path: String) -> (frames: [PreparedFrame], failure: ChordStoreError?) {
        var frames: [PreparedFrame] = []
        var cursor = ProtoReader(bytes)
        do throws(ChordStoreError) {
            while !cursor.isAtEnd {
                let kindByte = try cursor.byte()
                let length = try cursor.lengthDelimited().count
                guard let kind = Kind(rawValue: kindByte) else {
                    throw ChordStoreError(.dataLoss, "\(path) has a frame of kind \(kindByte), which no version writes")
                }
                let body = (cursor.position - length)..<cursor.position
                frames.append(PreparedFrame(kind: kind, body: body, content: try content(kind, UnsafeRawBufferPointer(rebasing: bytes[body]))))
            }
            return (frames, nil)
        } catch {
            return (frames, error)
        }
    }

    /// What the decoder takes decoded of a frame of `kind` whose bytes are `body`.
    static func content(_ kind: Kind, _ body: UnsafeRawBufferPointer) throws(ChordStoreError) -> Content {
        var cursor = ProtoReader(body)
        switch kind {
        case .chordset:
            return .chordset(try WireCodec.readChordset(body))
        case .deleted:
            let sequence = try cursor.varint()
            return .deleted(sequence: sequence, try WireCodec.readChordset(cursor.rest()))
        case .chordsetHistory:
            let id = try WireCodec.readID(try cursor.bytes(16))
            return .history(id: id, sequences: try sequences(&cursor))
        case .logSequences:
            return .logSequences(try sequences(&cursor))
        default:
            return .body
        }
    }

    /// The varints up to the end of `cursor`.
    static func sequences(_ cursor: inout ProtoReader) throws(ChordStoreError) -> [UInt64] {
        var sequences: [UInt64] = []
        while !cursor.isAtEnd { sequences.append(try cursor.varint()) }
        return sequences
    }
}
