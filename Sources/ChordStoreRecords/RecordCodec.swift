import ChordStoreAPI
import Foundation
public import ChordStoreDomain
public import ChordStoreProto
import SwiftProtobuf

/// Encodes and decodes log records: a serialized ``Chordstore_V1_EventEnvelope`` whose
/// last 9 bytes are the `checksum` field (tag `0x79` + 8 little-endian bytes), a hash
/// chain: `checksum = XXH64(record minus its last 9 bytes, seed: previous checksum)`.
public enum RecordCodec {
    /// The tag byte of field 15 (`checksum`), wire type 1 (64-bit).
    package static let checksumTag: UInt8 = 0x79
    /// Bytes the checksum field adds at the end of every record.
    public static let trailerSize = 9

    /// Encodes `recorded` (its `checksum` is ignored) chained to `previousChecksum`;
    /// returns the record bytes and the new checksum.
    public static func encode(_ recorded: RecordedEvent, previousChecksum: UInt64) -> (bytes: [UInt8], checksum: UInt64) {
        var bytes = WireCodec.envelope(recorded)
        let checksum = bytes.withUnsafeBytes { XXHash64.hash($0, seed: previousChecksum) }
        bytes.reserveCapacity(bytes.count + trailerSize)
        bytes.append(checksumTag)
        withUnsafeBytes(of: checksum.littleEndian) { bytes.append(contentsOf: $0) }
        return (bytes, checksum)
    }

    /// The record of `recorded` with its own stored checksum: the bytes the writer stored
    /// for it (the encoding is deterministic).
    public static func record(of recorded: RecordedEvent) -> [UInt8] {
        var bytes = WireCodec.envelope(recorded)
        bytes.reserveCapacity(bytes.count + trailerSize)
        bytes.append(checksumTag)
        withUnsafeBytes(of: recorded.checksum.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// The protobuf envelope of `recorded`, checksum included (for JSON output and the wire).
    public static func envelope(for recorded: RecordedEvent) -> Chordstore_V1_EventEnvelope { recorded.envelope }

    /// The two tag bytes of field 24 (`chain_seed`), wire type 1 (64-bit).
    package static let chainSeedTag: [UInt8] = [0xC1, 0x01]
    /// Bytes a chain seed adds after a record on the feed.
    public static let chainSeedSize = 10

    /// The record as the feed sends it with `with_chain_seeds`: followed by its chain seed
    /// (EventEnvelope field 24, never stored), the checksum of the log record before it.
    public static func withChainSeed(_ record: UnsafeRawBufferPointer, seed: UInt64) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(record.count + chainSeedSize)
        bytes.append(contentsOf: record)
        bytes.append(contentsOf: chainSeedTag)
        withUnsafeBytes(of: seed.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// Splits a feed message into the stored record and its chain seed (`nil`: the
    /// message is a record alone, as a server older than `with_chain_seeds` sends it). The
    /// seed is recognised only after a checksum trailer, so a record alone is never taken
    /// for one with a seed.
    public static func splitChainSeed(_ message: [UInt8]) -> (record: [UInt8], seed: UInt64?) {
        let count = message.count
        guard count > chainSeedSize + trailerSize,
              message[count - chainSeedSize] == chainSeedTag[0], message[count - chainSeedSize + 1] == chainSeedTag[1],
              message[count - chainSeedSize - trailerSize] == checksumTag
        else { return (message, nil) }
        let seed = message[(count - 8)...].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return (Array(message[..<(count - chainSeedSize)]), seed)
    }

    /// The checksum a record stores (its last 8 bytes), or `nil` if it has no trailer.
    public static func storedChecksum(_ record: UnsafeRawBufferPointer) -> UInt64? {
        guard record.count > trailerSize, record[record.count - trailerSize] == checksumTag else { return nil }
        return UInt64(littleEndian: record.loadUnaligned(fromByteOffset: record.count - 8, as: UInt64.self))
    }

    /// The record's position (sequence number, epoch, checksum), read from its first
    /// fields and its trailer without decoding the event.
    public static func position(_ record: UnsafeRawBufferPointer, sequence: UInt64) throws(ChordStoreError) -> LogPosition {
        guard let checksum = storedChecksum(record) else {
            throw ChordStoreError(.dataLoss, "event \(sequence) is damaged: it does not end with its checksum field")
        }
        do {
            return LogPosition(sequence: sequence, epoch: try WireCodec.readEpoch(record), checksum: checksum)
        } catch {
            throw ChordStoreError(.dataLoss, "event \(sequence) is damaged: \(error.message)", cause: error)
        }
    }

    /// The epoch and timestamp of the record stored as event `sequence`, read without
    /// decoding the event; `dataLoss` if the record says it is another event.
    package static func logFields(_ record: UnsafeRawBufferPointer, sequence: UInt64) throws(ChordStoreError) -> (epoch: UInt64, timestamp: Instant) {
        let place: (logSequence: UInt64, epoch: UInt64, timestamp: Instant)
        do {
            place = try WireCodec.readLogPlace(record)
        } catch {
            throw ChordStoreError(.dataLoss, "event \(sequence) is damaged: \(error.message)", cause: error)
        }
        guard place.logSequence == sequence else {
            throw ChordStoreError(.dataLoss, "the record stored as event \(sequence) says it is event \(place.logSequence)")
        }
        return (place.epoch, place.timestamp)
    }

    /// Checks the record's checksum against `previousChecksum`; returns the stored checksum.
    public static func verify(_ record: UnsafeRawBufferPointer, sequence: UInt64, previousChecksum: UInt64) throws(ChordStoreError) -> UInt64 {
        guard let stored = storedChecksum(record) else {
            throw ChordStoreError(.dataLoss, "event \(sequence) is damaged: it does not end with its checksum field")
        }
        let body = UnsafeRawBufferPointer(rebasing: record[..<(record.count - trailerSize)])
        let computed = XXHash64.hash(body, seed: previousChecksum)
        guard computed == stored else {
            throw ChordStoreError(
                .dataLoss,
                "event \(sequence) is damaged: checksum \(hex(stored)) stored, \(hex(computed)) computed")
        }
        return stored
    }

    /// Decodes a record (without checking its checksum; see ``verify(_:sequence:previousChecksum:)``).
    public static func decode(_ record: UnsafeRawBufferPointer, sequence: UInt64) throws(ChordStoreError) -> RecordedEvent {
        let recorded: RecordedEvent
        do {
            recorded = try WireCodec.readEnvelope(record)
        } catch {
            throw ChordStoreError(.dataLoss, "event \(sequence) is damaged: \(error.message)", cause: error)
        }
        guard recorded.logSequence == sequence else {
            throw ChordStoreError(.dataLoss, "the record stored as event \(sequence) says it is event \(recorded.logSequence)")
        }
        return recorded
    }

    /// Checks a record read through a store's index: its checksum chains to
    /// `previousChecksum` (the record before it in the whole log), and it says it is event
    /// `sequence` of store `store`, at `logSequence`.
    package static func checkStoreRecord(
        _ record: UnsafeRawBufferPointer, sequence: UInt64, store: UInt32, logSequence: UInt64, previousChecksum: UInt64
    ) throws(ChordStoreError) {
        _ = try verify(record, sequence: logSequence, previousChecksum: previousChecksum)
        let place: (sequence: UInt64, store: UInt32, logSequence: UInt64)
        do {
            place = try WireCodec.readPlace(record)
        } catch {
            throw ChordStoreError(.dataLoss, "event \(logSequence) is damaged: \(error.message)", cause: error)
        }
        guard place.sequence == sequence, place.store == store, place.logSequence == logSequence else {
            throw ChordStoreError(
                .dataLoss,
                "the store index names log event \(logSequence) as event \(sequence) of store id \(store); it is event \(place.sequence) of store id \(place.store) at \(place.logSequence)")
        }
    }

    /// Decodes a record that a checked read handed over (``RecordChain`` or a store
    /// snapshot's `forEachRecord`), which tied it to its place already.
    public static func decodeChecked(_ record: UnsafeRawBufferPointer) throws(ChordStoreError) -> RecordedEvent {
        do {
            return try WireCodec.readEnvelope(record)
        } catch {
            throw ChordStoreError(.dataLoss, "an event is damaged: \(error.message)", cause: error)
        }
    }

    /// Decodes a record read through a store's index: stored at `logSequence`, it must
    /// say it is event `sequence` of store `store`.
    package static func decode(_ record: UnsafeRawBufferPointer, sequence: UInt64, store: UInt32, logSequence: UInt64) throws(ChordStoreError) -> RecordedEvent {
        let recorded = try decode(record, sequence: logSequence)
        guard recorded.sequence == sequence, recorded.store == store, !recorded.event.isServerEvent else {
            throw ChordStoreError(
                .dataLoss, "the record at log position \(logSequence) is not event \(sequence) of store \(store): the store's index is damaged")
        }
        return recorded
    }

    /// Decodes what a replay folds of a record (the checksum chain, checked separately,
    /// already ties the record to its place in the log).
    package static func decodeReplayFields(_ record: UnsafeRawBufferPointer, sequence: UInt64) throws(ChordStoreError) -> ReplayFields {
        var fields = ReplayFields.empty
        try decodeReplayFields(record, sequence: sequence, into: &fields)
        return fields
    }

    /// ``decodeReplayFields(_:sequence:)`` into `fields`, each of its fields set (see
    /// ``WireCodec/readReplayFields(_:into:)``).
    package static func decodeReplayFields(_ record: UnsafeRawBufferPointer, sequence: UInt64, into fields: inout ReplayFields) throws(ChordStoreError) {
        do {
            try WireCodec.readReplayFields(record, into: &fields)
        } catch {
            throw ChordStoreError(.dataLoss, "event \(sequence) is damaged: \(error.message)", cause: error)
        }
    }

    /// Decodes a record into its protobuf envelope (for `--json` output and the wire).
    public static func envelope(_ record: UnsafeRawBufferPointer, sequence: UInt64) throws(ChordStoreError) -> Chordstore_V1_EventEnvelope {
        do {
            return try Chordstore_V1_EventEnvelope(serializedBytes: record.bytes)
        } catch {
            throw ChordStoreError(.dataLoss, "event \(sequence) is damaged: \(error)", cause: error)
        }
    }

    package static func hex(_ value: UInt64) -> String {
        "0x" + hexDigits(value)
    }

    /// `value` as 16 hexadecimal digits, without a prefix (a checksum or digest in a
    /// backup's manifest and messages).
    package static func hexDigits(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
