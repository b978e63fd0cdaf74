import ArgumentParser
import DarkDiskStore
import Foundation

struct FingerprintCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fingerprint",
        abstract: "Print the fingerprint of the outline as this store last pulled or pushed it.",
        discussion: """
            The fingerprint covers every node's record generation (deleted ones too) under a key derived \
            from the master key: two machines with the same key that saw the same records print the same \
            one, and the bucket's owner can neither compute nor fake it. A new machine's first pull has no \
            generation of its own to refuse an older record with; give it the fingerprint of a machine you \
            trust, printed after 'darkdisk sync' and 'darkdisk pull' there while no other machine writes: \
            'darkdisk init --remote URL --passphrase-file FILE --expect-fingerprint FP' (or 'darkdisk pull \
            --expect-fingerprint FP'), and that pull applies nothing unless the remote serves the same records.
            """)

    @OptionGroup var storeOptions: StoreOptions

    func run() throws {
        let manager = try storeOptions.open()
        let (fingerprint, nodes) = try manager.records.fingerprint()
        print("\(fingerprint) (\(nodes) node\(nodes == 1 ? "" : "s"))")
    }
}

/// `--expect-fingerprint FP` of `init --remote` and `pull`.
struct ExpectedFingerprintOption: ParsableArguments {
    @Option(help: ArgumentHelp("Pull nothing unless the remote serves records with this fingerprint (from 'darkdisk fingerprint' on a machine you trust).", valueName: "FP"))
    var expectFingerprint: String?

    func validate() throws {
        if let expectFingerprint, !RecordLedger.isFingerprint(expectFingerprint) {
            throw ValidationError("--expect-fingerprint takes what 'darkdisk fingerprint' prints: dd1- and 32 hex digits, not '\(expectFingerprint)'")
        }
    }
}
