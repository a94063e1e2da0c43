import ArgumentParser
import ChordStoreAPI
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import Foundation
import SwiftProtobuf

/// `chordstore store create|delete|list|info`: the isolated stores of a server or data
/// directory.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Create, delete, list and describe stores (isolated collections of chordsets).",
        discussion: prose("""
            A server (or data directory) holds any number of stores, each with its own
            chordsets, controls chord, undo history and change feed, all on one log. Store
            'default' always exists; the other verbs work on it unless --store NAME (or
            $CHORDSTORE_STORE) names another. Names are 1–64 characters of a-z, 0-9, '.',
            '_' and '-'.

            Deleting a store removes its chordsets from every view and frees its name; its
            events stay in the log (for replication and audit) and are never shown again: a
            store created later under the same name starts empty.
            """),
        subcommands: [Create.self, Delete.self, List.self, Info.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a store.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The new store's name.") var name: String

        func run() async throws {
            let info = try await withAccess(global) { try await $0.createStore(name) }
            try Output.store(info, json: global.json, verb: "created")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a store and its chordsets (the log keeps its events).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The store to delete.") var name: String
        @Flag(help: "Confirm.") var yes = false

        func validate() throws {
            if !yes { throw ValidationError("store delete deletes store \(name) and every chordset in it: add --yes to confirm") }
        }

        func run() async throws {
            let position = try await withAccess(global) { try await $0.deleteStore(name) }
            if global.json {
                try Output.json(Chordstore_V1_DeleteStoreReply.with { $0.logSequence = position })
            } else {
                Output.print("deleted store \(name) (log event \(position))")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the stores: default first, then by name.")
        @OptionGroup var global: GlobalOptions
        @Option(parsing: .unconditional, help: "Show at most this many (a page; --after continues).") var limit = 1_000
        @Option(help: "Start after this store (the last name of a previous page).") var after: String?

        func validate() throws {
            guard (1...100_000).contains(limit) else { throw ValidationError("--limit takes 1...100000") }
        }

        func run() async throws {
            let page = try await withAccess(global, readOnly: true) { try await $0.stores(after: after, limit: limit) }
            if global.json {
                var list = Chordstore_V1_StoreList()
                list.stores = page.stores.map(\.proto)
                list.nextPageToken = page.next ?? ""
                try Output.json(list)
                return
            }
            for info in page.stores { Output.print(Output.storeLine(info)) }
            if let next = page.next { Output.print("more: --after \(next)") }
        }
    }

    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Describe a store: counts, last event, creation time.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The store (default: the --store one).") var name: String?

        func run() async throws {
            // The call names the store asked about: a token of that store alone may ask.
            let store = name ?? global.storeName
            let info = try await withAccess(global, store: store, readOnly: true) { try await $0.storeInfo(store) }
            try Output.store(info, json: global.json)
        }
    }
}
