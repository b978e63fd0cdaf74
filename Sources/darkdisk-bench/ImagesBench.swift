// Image measurements for `Scripts/bench images`: the cost of a memory-cache hit through the ImageManager's
// fetch, thumbnails per second made from large JPEGs by our libvips processor (the script times
// `vipsthumbnail` on the same files and passes its figures in for the ratios), and our peak memory.
import DarkDiskStore
import DarkDiskImages
import Foundation

enum ImagesBench {
    /// `darkdisk-bench images WORK-DIR SIZE PEER-RATE PEER-RSS-MIB JPEG...`
    static func run(_ arguments: [String]) {
        guard arguments.count >= 5, let size = try? ImageSize(parsing: arguments[1]), let peerRate = Double(arguments[2]),
              let peerRSS = Double(arguments[3]) else {
            FileHandle.standardError.write(Data("usage: darkdisk-bench images WORK-DIR WxH PEER-PER-S PEER-RSS-MIB JPEG...\n".utf8))
            exit(2)
        }
        do {
            try memoryHit(store: arguments[0] + "/images-store")
            try thumbnails(Array(arguments[4...]), size: size, peerRate: peerRate, peerRSS: peerRSS)
        } catch {
            FileHandle.standardError.write(Data("darkdisk-bench: \(error)\n".utf8))
            exit(1)
        }
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// ns per `fetchNodeThumbnail` answered from memory (preFetch with the image, nothing else), median of 5 rounds.
    private static func memoryHit(store: String) throws {
        let manager = try DiskManager.create(at: StoreLocation(directory: store))
        let images = ImageManager(diskManager: manager, callbackQueue: .global())
        let node = try NodeID("bench")
        let source = try ProcessedImage(data: Data(contentsOf: URL(fileURLWithPath: CommandLine.arguments.last!)))
        _ = try manager.importNodeFile(DiskImport(cleartextData: source.resized(toFit: ImageSize(width: 512, height: 512)).data), nodeID: node, kind: .thumbnail)
        let processor = ImageProcessor.resize(toFit: try ImageSize(width: 64, height: 64))
        let done = DispatchSemaphore(value: 0)
        images.fetchNodeThumbnail(node, processor: processor, preFetch: { _, _ in }, postFetch: { _, _ in done.signal() })
        done.wait()
        let iterations = 1_000_000
        var rounds: [Double] = []
        var hits = 0
        for _ in 0..<5 {
            let start = now()
            for _ in 0..<iterations {
                images.fetchNodeThumbnail(node, processor: processor, preFetch: { image, willFetch in
                    if !willFetch && image != nil { hits += 1 }
                }, postFetch: { _, _ in })
            }
            rounds.append(Double(now() - start) / Double(iterations))
        }
        guard hits == 5 * iterations else { throw ImageError(.processing, "only \(hits) of \(5 * iterations) fetches hit the memory cache") }
        print("images.memory_hit_cost \(String(format: "%.0f", rounds.sorted()[2])) ns/op")
    }

    /// Thumbnails per second: each file read and scaled to fit `size` (JPEG quality 75, metadata stripped,
    /// as `vipsthumbnail -o x.jpg[Q=75,strip]` does), one after the other; best of 3 rounds. Then our peak RSS.
    private static func thumbnails(_ files: [String], size: ImageSize, peerRate: Double, peerRSS: Double) throws {
        let processor = ImageProcessor.resize(toFit: size, as: .jpeg(quality: 75))
        var best = Double.infinity
        for _ in 0..<3 {
            let start = now()
            for file in files {
                let image = try processor.process(ProcessedImage(data: Data(contentsOf: URL(fileURLWithPath: file))))
                guard max(image.width, image.height) == max(size.width, size.height) else {
                    throw ImageError(.processing, "\(file): made \(image.width)x\(image.height), expected to fit \(size)")
                }
            }
            best = min(best, Double(now() - start) / 1e9)
        }
        let rate = Double(files.count) / best
        print("images.thumbnails_per_s \(String(format: "%.1f", rate)) thumbnails/s ratio \(String(format: "%.2f", rate / peerRate)) vs vipsthumbnail")
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let rss = Double(usage.ru_maxrss) / 1024
        print("images.peak_rss \(String(format: "%.0f", rss)) MiB ratio \(String(format: "%.2f", rss / peerRSS)) vs vipsthumbnail")
    }
}
