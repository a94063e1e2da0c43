import ChordStoreAPI
public import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import Foundation
import SwiftProtobuf

/// A write made on the device that the store's change feed has not shown back yet: the
/// command, fully specified (ids, creation date and colours filled in when it was made,
/// so the server records what the device showed), under the command id it is sent with.
public struct PendingWrite: Sendable, Hashable {
    /// Its place in the device's queue (writes are sent in this order).
    public let key: UInt64
    /// The command id it is sent with: a resend after a lost answer is applied once.
    public let commandID: String
    /// The command.
    public let command: Command
    /// When it was made on the device.
    public let made: Instant
    /// The store sequence the server recorded it at, once it answered (0: not yet). The
    /// write leaves the queue when the feed brings that event.
    public var confirmedSequence: UInt64

    /// Creates a pending write.
    public init(key: UInt64, commandID: String, command: Command, made: Instant, confirmedSequence: UInt64 = 0) {
        self.key = key
        self.commandID = commandID
        self.command = command
        self.made = made
        self.confirmedSequence = confirmedSequence
    }
}

/// A pending write the server refused (a validation rule, a conflict such as an edit of
/// a chordset another device deleted, or a permission): it was taken back from the
/// device's view, and is kept here for the app to show.
public struct RejectedWrite: Sendable, Hashable {
    /// The write.
    public let write: PendingWrite
    /// Why: the server's status code.
    public let code: ChordStoreError.Code
    /// Why: the server's message.
    public let message: String
    /// When the refusal came.
    public let rejected: Instant

    /// Creates a rejection.
    public init(write: PendingWrite, code: ChordStoreError.Code, message: String, rejected: Instant) {
        self.write = write
        self.code = code
        self.message = message
        self.rejected = rejected
    }
}

/// The on-disk form of pending and rejected writes (`chordstore.v1.PendingWrite`,
/// `RejectedWrite`, proto/chordstore/v1/replica.proto).
enum PendingWriteCodec {
    static func encode(_ write: PendingWrite, session: String) -> [UInt8] {
        (try? message(write, session: session).serializedBytes()) ?? []
    }

    static func message(_ write: PendingWrite, session: String) -> Chordstore_V1_PendingWrite {
        let context = Chordstore_V1_CommandContext.with {
            $0.session = session
            $0.commandID = write.commandID
        }
        var message = Chordstore_V1_PendingWrite()
        switch CommandMessages.request(for: write.command, context: context) {
        case let request as Chordstore_V1_AddChordsetRequest: message.addChordset = request
        case let request as Chordstore_V1_RenameChordsetRequest: message.renameChordset = request
        case let request as Chordstore_V1_DeleteChordsetRequest: message.deleteChordset = request
        case let request as Chordstore_V1_SetChordColorRequest: message.setChordColor = request
        case let request as Chordstore_V1_SetChordBpmRequest: message.setChordBpm = request
        case let request as Chordstore_V1_SetControlsChordRequest: message.setControlsChord = request
        case let request as Chordstore_V1_MoveChordsetRequest: message.moveChordset = request
        case let request as Chordstore_V1_DeleteAllRequest: message.deleteAll = request
        case let request as Chordstore_V1_UndoRequest: message.undo = request
        case let request as Chordstore_V1_RedoRequest: message.redo = request
        default: break
        }
        message.madeMicros = write.made.microsecondsSince1970
        message.confirmedSequence = write.confirmedSequence
        return message
    }

    static func decode(_ bytes: some Collection<UInt8>, key: UInt64) throws(ReplicaError) -> PendingWrite {
        do {
            return try write(Chordstore_V1_PendingWrite(serializedBytes: Array(bytes)), key: key)
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw ReplicaError(.damaged, "pending write \(key) cannot be read: \(error)")
        }
    }

    static func write(_ message: Chordstore_V1_PendingWrite, key: UInt64) throws(ReplicaError) -> PendingWrite {
        let request: any SwiftProtobuf.Message
        let context: Chordstore_V1_CommandContext
        switch message.request {
        case .addChordset(let r): (request, context) = (r, r.context)
        case .renameChordset(let r): (request, context) = (r, r.context)
        case .deleteChordset(let r): (request, context) = (r, r.context)
        case .setChordColor(let r): (request, context) = (r, r.context)
        case .setChordBpm(let r): (request, context) = (r, r.context)
        case .setControlsChord(let r): (request, context) = (r, r.context)
        case .moveChordset(let r): (request, context) = (r, r.context)
        case .deleteAll(let r): (request, context) = (r, r.context)
        case .undo(let r): (request, context) = (r, r.context)
        case .redo(let r): (request, context) = (r, r.context)
        case nil: throw ReplicaError(.damaged, "pending write \(key) holds no command")
        }
        do {
            return PendingWrite(
                key: key, commandID: context.commandID, command: try CommandMessages.command(from: request),
                made: Instant(microsecondsSince1970: message.madeMicros), confirmedSequence: message.confirmedSequence)
        } catch {
            throw ReplicaError(.damaged, "pending write \(key) cannot be read: \(error.message)")
        }
    }

    static func encode(_ rejected: RejectedWrite, session: String) -> [UInt8] {
        let message = Chordstore_V1_RejectedWrite.with {
            $0.write = Self.message(rejected.write, session: session)
            $0.code = rejected.code.rawValue
            $0.message = rejected.message
            $0.rejectedMicros = rejected.rejected.microsecondsSince1970
        }
        return (try? message.serializedBytes()) ?? []
    }

    static func decodeRejected(_ bytes: some Collection<UInt8>, key: UInt64) throws(ReplicaError) -> RejectedWrite {
        let message: Chordstore_V1_RejectedWrite
        do {
            message = try Chordstore_V1_RejectedWrite(serializedBytes: Array(bytes))
        } catch {
            throw ReplicaError(.damaged, "rejected write \(key) cannot be read: \(error)")
        }
        return RejectedWrite(
            write: try write(message.write, key: key), code: StatusCode(rawValue: message.code) ?? .unknown,
            message: message.message, rejected: Instant(microsecondsSince1970: message.rejectedMicros))
    }
}
