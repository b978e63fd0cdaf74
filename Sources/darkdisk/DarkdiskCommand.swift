import ArgumentParser
import DarkDiskStore
import DarkDiskCloud
import DarkDiskCrypto
import DarkDiskSystem
import Foundation

/// The `darkdisk` command line.
struct DarkdiskCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "darkdisk",
        abstract: "An encrypted file store that mounts as a directory.",
        discussion: """
            Every command takes --store DIR (or DARKDISK_STORE) to use a store kept entirely under DIR; \
            without it the default store lives in the XDG folders ($XDG_DATA_HOME, $XDG_CACHE_HOME, \
            $XDG_CONFIG_HOME under darkdisk/default).
            """,
        version: "darkdisk \(DarkdiskVersion.current)",
        subcommands: [InitCommand.self, ImportCommand.self, ExportCommand.self, MountCommand.self,
                      UnmountCommand.self, PushCommand.self, PullCommand.self, FetchCommand.self,
                      PersistCommand.self, PinCommand.self, UnpinCommand.self, EvictCommand.self, DeleteCommand.self, StatusCommand.self, ConfigCommand.self,
                      CheckCommand.self, GcCommand.self, SyncCommand.self, ThumbnailCommand.self, AvatarCommand.self, RemoteCommand.self, PassphraseCommand.self,
                      FingerprintCommand.self, LocateCommand.self])

    /// Parses, runs, and turns every failure into one line on stderr and a non-zero exit.
    /// Synchronous commands (mount above all) run on the main thread, whose signal mask libfuse's threads
    /// inherit; async ones run as a task while the main thread waits.
    static func runAndExit() -> Never {
        StandardStreams.prepare()
        do {
            try refuseHelpOfAnUnknownCommand()
            try refuseAnUnknownCommand()
            var command = try parseAsRoot()
            // The mount daemon's signals are libfuse's; any other command removes its staging files first.
            if !(command is MountCommand) { InterruptCleanup.install() }
            if let asyncCommand = command as? AsyncParsableCommand {
                try AsyncBridge.run { var command = asyncCommand; try await command.run() }
            } else {
                try command.run()
            }
            OpenedStores.finishUpkeep()
            try StandardStreams.flushOutput()
            Foundation.exit(0)
        } catch let error as any DarkDiskFailure {
            OpenedStores.finishUpkeep()
            fail(CLIAdvice.message(for: error))
        } catch let code as ExitCode {
            // A command that already said what failed (e.g. `check` listing its problems).
            OpenedStores.finishUpkeep()
            Foundation.exit(code.rawValue)
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }
            let message = self.message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            fail(message + " (see 'darkdisk help')")
        }
    }

    /// `darkdisk help bogus` printed the overview and exited 0; a command that does not exist is an error.
    static func refuseHelpOfAnUnknownCommand() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.first == "help", arguments.count > 1 else { return }
        var commands: [any ParsableCommand.Type] = configuration.subcommands
        for name in arguments.dropFirst() where !name.hasPrefix("-") {
            guard let command = commands.first(where: { $0._commandName == name }) else {
                throw CLIError("no command '\(name)' (see 'darkdisk help')")
            }
            commands = command.configuration.subcommands
        }
    }

    /// `darkdisk foo` said "Unexpected argument 'foo'": a first word that names no command says so.
    static func refuseAnUnknownCommand() throws {
        guard let first = CommandLine.arguments.dropFirst().first, !first.hasPrefix("-"), first != "help",
              !configuration.subcommands.contains(where: { $0._commandName == first }) else { return }
        throw CLIError("no such command '\(first)' (see 'darkdisk help' for the commands)")
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("darkdisk: \(message)\n".utf8))
        Foundation.exit(1)
    }
}
