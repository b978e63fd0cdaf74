import DarkDiskFuzzTargets
import Foundation

#if FUZZING
// Built by Scripts/fuzz with `--sanitize=fuzzer -DFUZZING`: libFuzzer's own `main` drives this entry point;
// the target comes from DARKDISK_FUZZ_TARGET.
private let selected: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["DARKDISK_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        fatalError("set DARKDISK_FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selected.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
#else
/// Without libFuzzer: replays inputs (files, or folders of them) through a target, or writes the seed
/// corpus. `Scripts/fuzz` fuzzes; the tests replay the committed corpus and regressions in-process.
@main struct FuzzReplay {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let usage = "usage: darkdisk-fuzz TARGET FILE|DIR...  |  darkdisk-fuzz --seed DIR   (targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")))"
        if arguments.first == "--seed", arguments.count == 2 {
            do {
                let count = try FuzzSeeds.write(into: arguments[1])
                print("wrote \(count) seed inputs under \(arguments[1])")
            } catch {
                fail("darkdisk-fuzz: cannot write the seeds: \(error)")
            }
            return
        }
        guard arguments.count >= 2, let target = FuzzTarget(rawValue: arguments[0]) else { fail(usage) }
        var count = 0
        for path in arguments.dropFirst() {
            for file in FuzzSeeds.files(at: path) {
                guard let data = FileManager.default.contents(atPath: file) else { fail("darkdisk-fuzz: cannot read \(file)") }
                target.run(Array(data))
                count += 1
            }
        }
        print("\(target.rawValue): \(count) inputs replayed, no failure")
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(2)
    }
}
#endif
