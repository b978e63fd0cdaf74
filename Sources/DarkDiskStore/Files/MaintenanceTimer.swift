import Dispatch

/// A repeating timer on a queue, cancelled when released. Dispatch sources are thread-safe but not marked
/// `Sendable`, hence the unchecked conformance; the source is only touched through its own API.
final class MaintenanceTimer: @unchecked Sendable {
    private let source: DispatchSourceTimer

    init(queue: DispatchQueue, interval: Double, handler: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: queue)
        let period = DispatchTimeInterval.milliseconds(Int(interval * 1000))
        source.schedule(deadline: .now() + period, repeating: period, leeway: .milliseconds(200))
        source.setEventHandler(handler: handler)
        source.resume()
    }

    func cancel() {
        source.cancel()
    }

    deinit {
        source.cancel()
    }
}
