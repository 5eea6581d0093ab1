import Basics

/// A download's speed over its last few seconds: long enough to smooth the bursts in which
/// bytes arrive, short enough that time left follows a change of speed.
struct TransferRate {
    /// How far back the samples reach, in seconds.
    let window: Double
    private var samples: [(seconds: Double, bytes: Int64)] = []

    /// An empty measure over `window` seconds.
    init(window: Double = 3) { self.window = window }

    /// Records that `bytes` were here `seconds` after some fixed start.
    mutating func add(bytes: Int64, at seconds: Double) {
        samples.append((seconds, bytes))
        // Samples older than the window go, but two always stay, so a stall still has a span.
        while samples.count > 2, samples[0].seconds < seconds - window { samples.removeFirst() }
    }

    /// Bytes per second across the samples, or nil before there is a span to measure.
    var bytesPerSecond: Double? {
        guard let first = samples.first, let last = samples.last, last.seconds > first.seconds else { return nil }
        return max(0, Double(last.bytes - first.bytes) / (last.seconds - first.seconds))
    }
}

/// One prefetch's line: the bar, the percentage and the name, then what is here, the speed and
/// the time left while it runs (`[=====-----]  42% a.mp3  2.4 MiB of 5.7 MiB, 1.2 MiB/s, 0:03 left`).
func prefetchLine(name: String, cached: Int64, length: Int64?, bytesPerSecond: Double?, width: Int = 30) -> String {
    let known = length.flatMap { $0 > 0 ? $0 : nil }
    let fraction = known.map { min(1, Double(cached) / Double($0)) } ?? 0
    let percent = known == nil ? "   ?" : cFormat("%3.0f%%", (fraction * 100).rounded(.down))
    let head = "\(progressBar(played: fraction, cached: [], width: width)) \(percent) \(name)"
    if let known, cached >= known { return "\(head)  \(formatBytes(known))" }
    var details = [known.map { "\(formatBytes(cached)) of \(formatBytes($0))" } ?? formatBytes(cached)]
    if let rate = bytesPerSecond, rate > 0 {
        details.append("\(formatBytes(Int64(rate)))/s")
        if let known { details.append("\(formatTime((Double(known - cached) / rate).rounded(.up))) left") }
    }
    return "\(head)  \(details.joined(separator: ", "))"
}
