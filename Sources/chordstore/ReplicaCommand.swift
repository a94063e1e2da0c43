import ArgumentParser
import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreReplica
import ChordStoreReplicaFormat1
import Foundation

/// `chordstore replica --dir DIR --store NAME VERB`: an offline-first copy of one store
/// in a local directory, as an app on a device keeps it (docs/DEVICES.md).
struct ReplicaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replica",
        abstract: "Work on a device replica: a local copy of one store that works offline and syncs with the server.",
        discussion: prose("""
            A replica directory holds a copy of one store and the writes made on it that
            the server has not confirmed yet. add, rename, delete, undo and redo change the
            local copy at once, with the server down too, and queue the write; list and
            show read the local copy; sync sends the queued writes in order and copies the
            store's new events (--server, --token as for every verb; a store-scoped token
            is enough); status prints what is pending without contacting the server;
            verify checks every copied event and that their fold is the saved view (a
            damaged copy is dropped and copied again at the next sync); import-core-data
            queues an Imager or Image Performer Core Data store's chordsets.

            The first use of a directory creates the replica: name the store with --store
            (or $CHORDSTORE_STORE). Later uses may omit it.

              chordstore replica --dir phone --store songs add "Offline"
              chordstore replica --dir phone sync
            """),
        subcommands: [Add.self, List.self, Show.self, Rename.self, Delete.self, Undo.self, Redo.self, Sync.self, Status.self, Verify.self, ImportCoreData.self])

    /// The options every replica verb takes.
    struct Options: ParsableArguments {
        @Option(name: .long, help: ArgumentHelp("The replica's directory (created on first use).", valueName: "DIR"))
        var dir: String

        /// Opens the replica, creating it for the store named by --store if it is new.
        func open(_ global: GlobalOptions) throws -> Replica {
            let named = global.store ?? ProcessInfo.processInfo.environment["CHORDSTORE_STORE"].flatMap { $0.isEmpty ? nil : $0 }
            do {
                // A directory of format 1 (LMDB) is moved to format 2 on the way.
                let replica = try Replica.open(at: URL(fileURLWithPath: dir), store: named, options: .movingFormat1)
                // What opening found damaged on the device (the copy dropped, queued writes
                // taken aside), or why the copy is copied again.
                for found in replica.damageFound { FileHandle.standardError.write(Data("replica: damage found: \(found.message)\n".utf8)) }
                if let reason = replica.resyncReason, !replica.damageFound.contains(where: { $0.kind == .copyDropped }) {
                    FileHandle.standardError.write(Data("replica: \(reason)\n".utf8))
                }
                return replica
            } catch {
                throw Failure(ChordStoreError(error.statusCode, error.message))
            }
        }
    }

    /// Runs `body` on the open replica, closing it afterwards; a refusal prints as
    /// `CODE: message` with exit status 1.
    static func with<T>(_ options: Options, _ global: GlobalOptions, _ body: (Replica) async throws -> T) async throws -> T {
        let replica = try options.open(global)
        defer { replica.close() }
        do {
            return try await body(replica)
        } catch let error as ChordStoreError {
            throw Failure(error)
        } catch let error as ReplicaError {
            throw Failure(ChordStoreError(error.statusCode, error.message))
        }
    }

    static func pendingLine(_ replica: Replica) -> String {
        "\(Output.count(replica.pendingWrites.count, "pending write")), at store sequence \(replica.lastSequence)"
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a chordset to the replica (works offline).")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var replica: Options
        @Argument(help: "The title.") var title: String = ""

        func run() async throws {
            try await ReplicaCommand.with(replica, global) { replica in
                let chordset = try replica.addChordset(AddChordset(title: title))
                try Output.chordset(chordset, json: global.json)
                if !global.json { Output.print(ReplicaCommand.pendingLine(replica)) }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the replica's chordsets (the local copy with the pending writes applied).")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var replica: Options
        @Option(name: [.customLong("sort"), .customLong("order")], help: "Order: created (oldest first), index (the user order) or title.")
        var order: OrderArgument = .created
        @Option(parsing: .unconditional, help: "Show at most this many (default 5,000).") var limit: Int = 5_000
        @Option(name: .customLong("title-prefix"), help: ArgumentHelp("Only titles starting with TEXT.", valueName: "TEXT"))
        var titlePrefix: String?
        @Flag(name: .customLong("desc"), help: "Reverse the order.") var descending = false

        func validate() throws {
            if limit < 1 { throw ValidationError("--limit must be 1 or more") }
        }

        func run() async throws {
            try await ReplicaCommand.with(replica, global) { replica in
                let query = ChordsetQuery(
                    title: titlePrefix.map { (.prefix, $0) }, order: order.order, descending: descending, limit: limit)
                try Output.chordsetList(try replica.chordsets(query).chordsets, json: global.json)
                if !global.json { Output.print(ReplicaCommand.pendingLine(replica)) }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one chordset of the replica with its chords.")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var replica: Options
        @Argument(help: "The chordset's id.") var id: String

        func run() async throws {
            let id = try parseID(id)
            try await ReplicaCommand.with(replica, global) { replica in
                guard let chordset = replica.chordset(id) else { throw ChordStoreError(.notFound, "no chordset has id \(id)", reason: .chordsetNotFound) }
                try Output.chordset(chordset, json: global.json)
            }
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rename a chordset in the replica (works offline).")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var replica: Options
        @Argument(help: "The chordset's id.") var id: String
        @Argument(help: "The new title.") var title: String

        func run() async throws {
            let id = try parseID(id)
            try await ReplicaCommand.with(replica, global) { replica in
                try replica.renameChordset(id, to: title)
                Output.print("renamed \(id) to \"\(title)\"; \(ReplicaCommand.pendingLine(replica))")
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a chordset from the replica (works offline).")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var replica: Options
        @Argument(help: "The chordset's id.") var id: String

        func run() async throws {
            let id = try parseID(id)
            try await ReplicaCommand.with(replica, global) { replica in
                try replica.deleteChordset(id)
                Output.print("deleted \(id); \(ReplicaCommand.pendingLine(replica))")
            }
        }
    }

    struct Undo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Undo the replica's most recent change (works offline).")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var replica: Options

        func run() async throws {
            try await ReplicaCommand.with(replica, global) { replica in
                try replica.undo()
                Output.print("undone; \(ReplicaCommand.pendingLine(replica))")
            }
        }
    }

    struct Redo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Redo the replica's most recently undone change (works offline).")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var replica: Options

        func run() async throws {
            try await ReplicaCommand.with(replica, global) { replica in
                try replica.redo()
                Output.print("redone; \(ReplicaCommand.pendingLine(replica))")
            }
        }
    }

    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send the pending writes to the server in order, then copy the store's new events.",
            discussion: prose("""
                Writes the server refuses (a chordset another device deleted, a rule) are
                taken back from the replica and printed. Exit status 1 if the server cannot
                be reached (the writes stay queued) or refuses the token.
                """))
        @OptionGroup var global: GlobalOptions
        @OptionGroup var replica: Options

        func run() async throws {
            try await ReplicaCommand.with(replica, global) { replica in
                let client = try global.client(store: replica.storeName)
                defer { Task { await client.close() } }
                let report = try await replica.sync(with: client)
                for rejected in report.rejected {
                    Output.print("rejected \(rejected.write.command.kindName) (\(rejected.write.commandID)): \(rejected.code): \(rejected.message)")
                }
                Output.print(
                    "sent \(Output.count(report.pushed, "write")), \(report.rejected.count) rejected; copied \(Output.count(report.pulled, "event")); "
                        + "\(Output.count(report.pending, "pending write")), at store sequence \(report.lastSequence)")
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the replica's store, pending writes, last copied sequence and recent refusals (no server contact).")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var replica: Options

        func run() async throws {
            try await ReplicaCommand.with(replica, global) { replica in
                let pending = replica.pendingWrites
                Output.print("store: \(replica.storeName)")
                Output.print("session: \(replica.session)")
                Output.print("pending: \(pending.count)")
                Output.print("last sequence: \(replica.lastSequence)")
                for write in pending {
                    let state = write.confirmedSequence == 0 ? "not sent" : "recorded at \(write.confirmedSequence), not copied yet"
                    Output.print("  \(write.command.kindName) \(write.commandID) (\(state))")
                }
                let rejected = try replica.rejectedWrites(limit: 10)
                if !rejected.isEmpty {
                    Output.print("rejected (last \(rejected.count)):")
                    for rejection in rejected {
                        Output.print("  \(rejection.write.command.kindName) \(rejection.write.commandID): \(rejection.code): \(rejection.message)")
                    }
                }
            }
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check every copied event and that their fold is the view the replica opens from (no server contact).",
            discussion: prose("""
                Opening a replica reads its saved view and only the events copied after it;
                verify reads them all, checking each event's checksum and the log's chain,
                and compares their fold with the view. Exit status 0: all is well. Exit
                status 1 with DATA_LOSS: the copy was damaged (it is dropped and the next
                sync copies the store again; the queued writes are kept) or the view
                differed (its saved view is removed, so that the next open folds).
                """))
        @OptionGroup var global: GlobalOptions
        @OptionGroup var replica: Options

        func run() async throws {
            try await ReplicaCommand.with(replica, global) { replica in
                // Opening may have found the copy damaged already (and dropped it).
                if let dropped = replica.damageFound.first(where: { $0.kind == .copyDropped }) { throw ChordStoreError(.dataLoss, dropped.message) }
                if let found = try replica.verifyCopy() { throw ChordStoreError(.dataLoss, found) }
                Output.print("verified \(Output.count(Int(replica.lastSequence), "copied event")): the view is their fold")
            }
        }
    }
}
