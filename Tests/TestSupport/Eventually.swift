import Foundation

/// Polls `condition` every 20 ms until it holds or `seconds` pass, and returns whether it held: the suites'
/// one way to wait for something that happens on its own (an eviction after a release, another process's
/// change, a mount's daemon). It returns as soon as the condition holds, so give it the time a loaded
/// 2-core machine may need, not the time it usually takes; under a sanitizer it waits ten times as long
/// (`TestTiming.patience`). Async: a waiting test holds none of the cooperative pool's few threads.
public func eventually(within seconds: Double, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(TestTiming.patience(seconds))
    while Date() < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try condition()
}
