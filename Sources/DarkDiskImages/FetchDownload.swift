import DarkDiskCloud
import Dispatch
import DarkDiskSync

/// The download a fetch in flight waits for. Every `postFetch` caller that needed it holds its own ticket
/// of the one transfer (the DownloadManager coalesces identical requests), and the fetch takes the result
/// of the first ticket that has one. A cancelled ticket is ignored while another is still waiting, so one
/// caller giving up neither stops the transfer nor fails the others; when every ticket was cancelled, the
/// transfer stops and the fetch ends with the cancellation.
final class FetchDownload: Sendable {
    private struct State {
        var live = 0
        var finished = false
    }

    private let state = Locked(State())
    private let completion: @Sendable (Result<LoadedImage, ImageError>) -> Void

    /// `completion` runs once, on the pool given to `add`.
    init(completion: @escaping @Sendable (Result<LoadedImage, ImageError>) -> Void) {
        self.completion = completion
    }

    /// Waits on `ticket` too; `convert` (on `pool`) turns its result into the loaded image. Does nothing
    /// once the fetch has its result.
    func add<Value: Sendable>(_ ticket: DownloadTicket<Value>, on pool: BlockingPool,
                              convert: @escaping @Sendable (Result<Value, any Error>) -> Result<LoadedImage, ImageError>) {
        let added = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.live += 1
            return true
        }
        guard added else { return }
        ticket.onCompletion(on: pool) { result in
            let deliver = self.state.withLock { state -> Bool in
                guard !state.finished else { return false }
                state.live -= 1
                if case .failure(let error) = result, error is CancellationError, state.live > 0 { return false }
                state.finished = true
                return true
            }
            if deliver { self.completion(convert(result)) }
        }
    }
}
