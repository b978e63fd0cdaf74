import Dispatch

/// One party waiting for a fetch in flight: a `postFetch` to call on a queue, or an `async` caller's
/// continuation (resumed where the work ends, with no queue hop).
struct FetchWaiter: Sendable {
    let queue: DispatchQueue?
    let deliver: @Sendable (Result<ProcessedImage?, ImageError>) -> Void

    func callAsFunction(_ result: Result<ProcessedImage?, ImageError>) {
        if let queue {
            let deliver = self.deliver
            queue.async { deliver(result) }
        } else {
            deliver(result)
        }
    }
}
