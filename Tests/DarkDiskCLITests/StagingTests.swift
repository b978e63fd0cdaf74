import DarkDiskTestTraits
import Foundation
import Testing

/// `timeout 10 darkdisk import /dev/zero --node z` (cache mode) left a 2.8 GB staging file
/// that SIGTERM did not remove, and `check` said "healthy, 0 orphans".
@Suite(.processSlots) struct StagingTests {
    func stagingFiles(_ store: CLIStore) -> [String] {
        ["/data/tmp", "/cache/tmp"].flatMap { folder in
            ((try? FileManager.default.contentsOfDirectory(atPath: store.storePath + folder)) ?? []).map { folder + "/" + $0 }
        }
    }

    @Test func aCacheImportStopsAtItsPoolsMax() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["init"]).status == 0)
        await #expect(try store.darkdisk(["config", "set", "pool.data.max_size", "2M"]).status == 0)
        let started = Date()
        let run = try await Shell.run("/usr/bin/timeout", ["-s", "KILL", "60", Shell.darkdisk, "import", "/dev/zero", "--node", "z", "--store", store.storePath])
        expectOneLineFailure(run, mentioning: "/dev/zero holds more than the data pool's max size (2097152 bytes)")
        #expect(run.stderr.contains("raise pool.data.max_size"), "\(run.stderr)")
        #expect(Date().timeIntervalSince(started) < 30, "it stopped at the limit, not at the end of /dev/zero")
        #expect(stagingFiles(store).isEmpty, "\(stagingFiles(store))")
        await #expect(try store.darkdisk(["export", "--node", "z"]).status != 0, "nothing kept")
    }

    @Test func anInterruptedImportRemovesItsStagingFileAndCheckCountsWhatAKillLeaves() async throws {
        let store = try CLIStore()
        await #expect(try store.darkdisk(["init"]).status == 0)
        // A slow source (1 MiB, then nothing for a while): the import waits with its staging file open.
        func interrupted(_ signal: String) throws -> Run {
            try Shell.sh("{ head -c 1048576 /dev/zero; sleep 4; } | timeout -s \(signal) 3 \(Shell.quote(Shell.darkdisk)) import - --node z"
                         + " --persistent --store \(Shell.quote(store.storePath))")
        }
        for signal in ["TERM", "INT", "HUP"] {
            let run = try interrupted(signal)
            #expect(run.status == 124, "SIG\(signal) ended the import: \(run.status) \(run.stderr)")
            #expect(stagingFiles(store).isEmpty, "SIG\(signal) left \(stagingFiles(store))")
        }
        let check = try await store.darkdisk(["check"])
        #expect(check.status == 0 && check.output.contains("0 staging files"), "\(check.output)")
        // SIGKILL cannot be caught: what it leaves, check counts (and the next start removes once stale).
        let killed = try interrupted("KILL")
        #expect(killed.status == 137)
        #expect(stagingFiles(store).count == 1)
        let after = try await store.darkdisk(["check", "--json"])
        let json = try JSONSerialization.jsonObject(with: after.stdout) as? [String: Any]
        #expect(json?["stagingFiles"] as? Int == 1 && ((json?["stagingBytes"] as? NSNumber)?.intValue ?? 0) > 0, "\(after.output)")
        await #expect(try store.darkdisk(["check"]).output.contains("1 staging files left by interrupted imports"))
    }
}
