import Basics

extension HTTPByteSource {
    /// How much to fetch ahead of the play head: large resources (long podcasts, audiobooks)
    /// keep a window instead of downloading to the end, and on a metered network every
    /// resource does, sized in audio so it costs the same minutes whatever the bitrate.
    /// Pure: the source asks it again whenever the network or the stream's byte rate changes.
    public struct ReadAheadPolicy: Sendable, Equatable {
        /// Resources larger than this keep a window instead of downloading whole.
        public var threshold: Int64
        /// How far ahead of the play head to fetch in a large resource.
        public var window: Int64
        /// How much audio ahead of the play head to fetch on a metered network; nil: no limit
        /// beyond the large-file one (a prefetch the user asked for).
        public var meteredWindow: Duration?

        /// The byte rate assumed for the metered window until the stream's own is known
        /// (320 kbps, the most an MP3 has, so that a guess never starves playback).
        public static let assumedByteRate: Double = 40_000

        /// Creates a policy.
        public init(threshold: Int64, window: Int64, meteredWindow: Duration? = nil) {
            self.threshold = threshold
            self.window = window
            self.meteredWindow = meteredWindow
        }

        /// The planner's (threshold, window): unmetered, the large-file window; metered, every
        /// resource from 0 bytes on keeps `meteredWindow` of audio at `byteRate` (or the
        /// assumed rate), never more than the large-file window.
        public func limits(metered: Bool, byteRate: Double?) -> (threshold: Int64, window: Int64) {
            guard metered, let meteredWindow else { return (threshold, window) }
            let audio = meteredWindow.inSeconds
            let rate = byteRate.flatMap { $0 > 0 ? $0 : nil } ?? Self.assumedByteRate
            let bytes = Int64(min(Double(Int64.max / 2), (audio * rate).rounded(.up)))
            return (threshold: 0, window: max(1, min(window, bytes)))
        }
    }
}
