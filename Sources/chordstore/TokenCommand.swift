import ChordStoreAPI
import ArgumentParser
import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf

/// `chordstore token create|list|revoke`: the bearer tokens of a server (admin only).
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Create, list and revoke the server's bearer tokens (needs an admin token).",
        discussion: prose("""
            Every call to a server shows a token (docs/SECURITY.md). An admin token works
            on every store and manages stores and tokens; a read-write or read-only token
            works on its one store. The server keeps only a hash of each: `token create`
            prints the secret once. A revoked token fails from its next call on, on open
            connections too. Tokens live in the log, so they work on every cluster member.
            """),
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a token and print its secret (shown only now).",
            discussion: "With --out FILE the secret goes to FILE (created with mode 0600; an existing file is refused) instead of standard output. With --json it prints the CreatedToken message. Use the file with --token-file.")
        @OptionGroup var global: GlobalOptions
        @Option(help: "admin, read-write or read-only (these two work on the one store --store names).") var role: String
        @Option(help: ArgumentHelp("Write the secret to this new file (mode 0600) instead of standard output.", valueName: "FILE"))
        var out: String?

        /// The store of a scoped token: `--store`, or `$CHORDSTORE_STORE`.
        private var forStore: String? {
            global.store ?? ProcessInfo.processInfo.environment["CHORDSTORE_STORE"].flatMap { $0.isEmpty ? nil : $0 }
        }

        func validate() throws {
            guard global.data == nil else { throw ValidationError("tokens are a server's: give --server, not --data") }
            guard let role = TokenRole(rawValue: role) else { throw ValidationError("--role is admin, read-write or read-only, not '\(role)'") }
            if role.isScoped, forStore == nil { throw ValidationError("a \(role.rawValue) token works on one store: give --store NAME") }
            if !role.isScoped, global.store != nil { throw ValidationError("an admin token works on every store: drop --store") }
        }

        func run() async throws {
            let request = Chordstore_V1_CreateTokenRequest.with {
                $0.role = TokenRole(rawValue: role)?.proto ?? .unspecified
                $0.store = TokenRole(rawValue: role)?.isScoped == true ? forStore ?? "" : ""
            }
            if let out, FileManager.default.fileExists(atPath: out) {
                throw ValidationError("\(out) exists: --out makes a new file")
            }
            let created: Chordstore_V1_CreatedToken = try await tokenCall(global, .createToken, request)
            if let out {
                let fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                let bytes = Array((created.secret + "\n").utf8)
                guard fd >= 0, bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
                    if fd >= 0 { close(fd) }
                    // The token exists; its secret must not be lost: print it after all.
                    Output.print(created.secret)
                    throw ValidationError("cannot write \(out) (\(String(cString: strerror(errno)))); the secret of token \(created.token.tokenID) is above")
                }
                close(fd)
                FileHandle.standardError.write(Data("created token \(created.token.tokenID) (\(role)\(forStore.map { " for store \($0)" } ?? "")); its secret is in \(out) (mode 0600)\n".utf8))
            } else if global.json {
                try Output.json(created)
            } else {
                Output.print(created.secret)
                FileHandle.standardError.write(Data("created token \(created.token.tokenID) (\(role)\(forStore.map { " for store \($0)" } ?? "")); its secret is above and is not shown again\n".utf8))
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the tokens: ids, roles, stores, creation and last use (never secrets).")
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            guard global.data == nil else { throw ValidationError("tokens are a server's: give --server, not --data") }
        }

        func run() async throws {
            var all: [Chordstore_V1_TokenInfo] = []
            var pageToken = ""
            repeat {
                let page: Chordstore_V1_TokenList = try await tokenCall(global, .listTokens, Chordstore_V1_ListTokensRequest.with {
                    $0.pageSize = 1_000
                    $0.pageToken = pageToken
                })
                all += page.tokens
                pageToken = page.nextPageToken
            } while !pageToken.isEmpty
            if global.json {
                try Output.json(Chordstore_V1_TokenList.with { $0.tokens = all })
                return
            }
            for token in all {
                let role = TokenRole(proto: token.role)?.rawValue ?? "?"
                let used = token.hasLastUsed ? "last used \(Instant(proto: token.lastUsed))" : "not used since the server started"
                Output.print("\(token.tokenID)  \(role)\(token.store.isEmpty ? "" : " \(token.store)")  created \(Instant(proto: token.created))  \(used)")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a token: its next call fails, on open connections too.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The token's id (as `token list` shows it).") var id: String

        func validate() throws {
            guard global.data == nil else { throw ValidationError("tokens are a server's: give --server, not --data") }
        }

        func run() async throws {
            let reply: Chordstore_V1_RevokeTokenReply = try await tokenCall(global, .revokeToken, Chordstore_V1_RevokeTokenRequest.with { $0.tokenID = id })
            if global.json {
                try Output.json(reply)
            } else {
                Output.print("revoked token \(id) (log event \(reply.logSequence))")
            }
        }
    }
}

/// One call of the token methods to `--server`, made once: a repeated create would make a
/// second token.
private func tokenCall<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
    _ global: GlobalOptions, _ method: ChordStoreAPI.Method, _ request: Request
) async throws -> Response {
    try await serverCall(global, method, request, retry: .once)
}
