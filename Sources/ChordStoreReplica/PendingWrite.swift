import ChordStoreAPI
public import ChordStoreDomain
import ChordStoreRecords
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
    /// An undo or redo: the command id of the device's change it reverts, as decided when
    /// it was made (`nil`: not an undo or redo, or queued by an older version). Should
    /// that stop being the change it would revert (the change was refused), the undo is
    /// refused on the device and never sent.
    public let revertsCommandID: String?
    /// The device session it was made under, and is sent under (`nil`: the replica's). A
    /// directory copied from another installation starts a session of its own but keeps
    /// the original's queue: those writes go under the original's session, so that the
    /// server decides each (an undo above all) as the original device would have, and
    /// answers one the original sent already with its first event.
    public let session: String?

    /// Creates a pending write.
    public init(
        key: UInt64, commandID: String, command: Command, made: Instant, confirmedSequence: UInt64 = 0, revertsCommandID: String? = nil,
        session: String? = nil
    ) {
        self.session = session
        self.key = key
        self.commandID = commandID
        self.command = command
        self.made = made
        self.confirmedSequence = confirmedSequence
        self.revertsCommandID = revertsCommandID
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
    /// Why, for the app to branch on: the server's reason (``ErrorReason``; a rejection
    /// recorded before reasons reads as its code's name).
    public let reason: ErrorReason
    /// Why: the server's message, for people.
    public let message: String
    /// When the refusal came.
    public let rejected: Instant

    /// Creates a rejection; `reason` defaults to the code's name.
    public init(write: PendingWrite, code: ChordStoreError.Code, reason: ErrorReason? = nil, message: String, rejected: Instant) {
        self.write = write
        self.code = code
        self.reason = reason ?? ErrorReason(code)
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
        let request = CommandMessages.request(for: write.command, context: context(write, session: session))
        return Chordstore_V1_PendingWrite.with {
            $0.method = MethodSpec.command(for: request)?.method.rawValue ?? ""
            $0.request = (try? request.serializedData()) ?? Data()
            $0.madeMicros = write.made.microsecondsSince1970
            $0.confirmedSequence = write.confirmedSequence
            $0.revertsCommandID = write.revertsCommandID ?? ""
        }
    }

    /// The context `write` is stored and sent with: its own session (a write a copied
    /// directory inherited), else the replica's `session`.
    static func context(_ write: PendingWrite, session: String) -> Chordstore_V1_CommandContext {
        Chordstore_V1_CommandContext.with {
            $0.session = write.session ?? session
            $0.commandID = write.commandID
        }
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
        let request: any CommandRequest
        do {
            request = try Self.request(of: message, key: key)
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw ReplicaError(.damaged, "pending write \(key) cannot be read: \(error)")
        }
        do {
            return PendingWrite(
                key: key, commandID: request.commandContext.commandID, command: try CommandMessages.command(from: request),
                made: Instant(microsecondsSince1970: message.madeMicros), confirmedSequence: message.confirmedSequence,
                revertsCommandID: message.revertsCommandID.isEmpty ? nil : message.revertsCommandID,
                session: request.commandContext.session.isEmpty ? nil : request.commandContext.session)
        } catch {
            throw ReplicaError(.damaged, "pending write \(key) cannot be read: \(error.message)")
        }
    }

    /// The command request of a pending write: its method's request type read from
    /// `request`, or, as replicas wrote it before, the legacy oneof.
    private static func request(of message: Chordstore_V1_PendingWrite, key: UInt64) throws -> any CommandRequest {
        if !message.method.isEmpty {
            guard let spec = Method(rawValue: message.method)?.spec, spec.kind == .command,
                  let request = try spec.request.init(serializedBytes: message.request) as? any CommandRequest
            else { throw ReplicaError(.damaged, "pending write \(key) holds '\(message.method.prefix(100))', not a command this version knows") }
            return request
        }
        switch message.legacyRequest {
        case .addChordset(let r): return r
        case .renameChordset(let r): return r
        case .deleteChordset(let r): return r
        case .setChordColor(let r): return r
        case .setChordBpm(let r): return r
        case .setControlsChord(let r): return r
        case .moveChordset(let r): return r
        case .deleteAll(let r): return r
        case .undo(let r): return r
        case .redo(let r): return r
        case nil: throw ReplicaError(.damaged, "pending write \(key) holds no command")
        }
    }

    static func encode(_ rejected: RejectedWrite, session: String) -> [UInt8] {
        let message = Chordstore_V1_RejectedWrite.with {
            $0.write = Self.message(rejected.write, session: session)
            $0.code = rejected.code.rawValue
            $0.message = rejected.message
            $0.reason = rejected.reason.rawValue
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
            reason: message.reason.isEmpty ? nil : ErrorReason(rawValue: message.reason),
            message: message.message, rejected: Instant(microsecondsSince1970: message.rejectedMicros))
    }
}
