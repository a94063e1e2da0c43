import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `chordstore` command: works directly on a data directory.
@main
struct ChordStoreCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chordstore",
        abstract: "An event-sourced store of chordsets and chords.",
        discussion: prose("""
            Every change is an immutable event in an LMDB log; lists and lookups read
            projections of that log; undo and redo append compensating events. The verbs
            talk to a server (--server, default 127.0.0.1:7420; start one with 'serve'),
            or with --data open a data directory directly, which only one process may
            open at a time. A server or directory holds isolated stores: --store NAME (or
            $CHORDSTORE_STORE) picks one, 'default' when none is named; 'chordstore store'
            creates, lists and deletes them.

            Ids may be given as UUIDs (6F1C…-…) or as the base64 form that --json prints.
            Exit status: 0 on success, 1 when the store refused or failed, 64 for usage errors.
            """),
        subcommands: [
            ServeCommand.self, AddCommand.self, ListCommand.self, ShowCommand.self, RenameCommand.self,
            DeleteCommand.self, SetColorCommand.self, SetBPMCommand.self, SetControlsCommand.self,
            MoveCommand.self, DeleteAllCommand.self, UndoCommand.self, RedoCommand.self, SessionCommand.self,
            HistoryCommand.self, WatchCommand.self, ProfileCommand.self, LogCommand.self,
            StoreCommand.self, TokenCommand.self, ReplicaCommand.self, StatusCommand.self, PromoteCommand.self, ClusterCommand.self, VerifyCommand.self, RebuildCommand.self,
            BackupCommand.self, RestoreCommand.self, ExportCommand.self, ImportCommand.self, BenchCommand.self,
        ]
    )

    /// Accepts the global options before the verb too (`chordstore --data DIR list`), as
    /// the README writes them, by moving them after it.
    static func main() async {
        // Everything the command writes (data directories, backups, exports, replicas,
        // tokens) is its user's alone unless a mode is asked for (docs/SECURITY.md).
        umask(0o077)
        await main(hoistingGlobalOptions(Array(CommandLine.arguments.dropFirst())))
    }

    static func hoistingGlobalOptions(_ arguments: [String]) -> [String] {
        let valued: Set<String> = [
            "--data", "--session", "--server", "--store", "--token", "--token-file", "--tls-ca", "--tls-cert", "--tls-key",
            "--cluster-secret-file",
        ]
        let flags: Set<String> = ["--json", "--tls"]
        var (leading, rest) = leadingOptions(arguments[...], valued: valued, flags: flags)
        // `replica --dir DIR --store NAME add …`: the options between `replica` and its verb
        // go after the verb too.
        if rest.first == "replica" {
            let (options, verb) = leadingOptions(rest.dropFirst(), valued: valued.union(["--dir"]), flags: flags)
            leading += options
            rest = ["replica"] + verb
        }
        var result = Array(rest)
        result.insert(contentsOf: leading, at: result.firstIndex(of: "--") ?? result.endIndex)
        return result
    }

    /// The options at the start of `arguments` (with their values), and what follows them.
    private static func leadingOptions(
        _ arguments: ArraySlice<String>, valued: Set<String>, flags: Set<String>
    ) -> ([String], ArraySlice<String>) {
        var leading: [String] = []
        var rest = arguments
        while let first = rest.first {
            let name = String(first.split(separator: "=", maxSplits: 1)[0])
            if valued.contains(name) && !first.contains("=") && rest.count >= 2 {
                leading.append(contentsOf: rest.prefix(2))
                rest = rest.dropFirst(2)
            } else if valued.contains(name) || flags.contains(first) {
                leading.append(first)
                rest = rest.dropFirst()
            } else {
                break
            }
        }
        return (leading, rest)
    }
}
