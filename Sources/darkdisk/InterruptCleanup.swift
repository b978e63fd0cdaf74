import DarkDiskStore
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// SIGINT, SIGTERM and SIGHUP end a command as before (exit 128 + the signal), but first remove the
/// staging files its imports are writing: killed by `timeout` or Ctrl-C, an import used to leave its
/// half-written (encrypted) staging file behind, gigabytes of it for `import /dev/zero`.
enum InterruptCleanup {
    private nonisolated(unsafe) static var sources: [DispatchSourceSignal] = []

    static func install() {
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            // Only where the default action was in place (a shell's `&` leaves SIGINT ignored: keep that).
            var current = sigaction()
            guard sigaction(signal, nil, &current) == 0, current.__sigaction_handler.sa_handler == nil else { continue }
            Glibc.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler {
                StagingFiles.removeAll()
                Glibc.signal(signal, SIG_DFL)
                kill(getpid(), signal)
            }
            source.resume()
            sources.append(source)
        }
    }
}
