import Basics
import ByteSourceAPI
import FoundationEssentials
import HLS
import Synchronization

/// Adaptive variants: which of a master playlist's variants the segments come from, measured
/// by each segment's download (``VariantPolicy`` decides) and switched at a segment boundary.
extension HLSByteSource {
    /// A master playlist's variants, and which one the segments come from.
    struct Adaptation {
        var master: MasterPlaylist
        var policy: VariantPolicy
        /// A switch's media playlist is being fetched.
        var switching = false
        /// When the reader began, and the time of the segments it read through since: what it
        /// holds ahead is about the difference (a pause counts as played, so the estimate errs
        /// low, toward staying on a lower variant).
        var readSince: ContinuousClock.Instant?
        var timeRead: Duration = .zero

        /// The variant playing, as the engine reports it.
        var described: StreamVariant {
            let current = policy.current
            let number = (policy.allowed.firstIndex(of: current) ?? policy.allowed.count) + 1
            return StreamVariant(
                bitrate: current.bandwidth, number: number, count: max(number, policy.allowed.count))
        }

        /// Audio read and not yet played, as far as the source can tell.
        var bufferedAhead: Duration {
            guard let readSince else { return .zero }
            return max(.zero, timeRead - (ContinuousClock.now - readSince))
        }
    }

    /// Calls `handler` with the variant playing (at once, when one is chosen) and each switch.
    public func whenVariantChosen(_ handler: @escaping @Sendable (StreamVariant) -> Void) {
        let now = state.withLock { state -> StreamVariant? in
            state.variantHandler = handler
            return state.adaptation?.described
        }
        if let now { handler(now) }
    }

    /// The bit rate (`BANDWIDTH`) of the variant the segments come from; nil for a media playlist.
    public var variantBandwidth: BitsPerSecond? { state.withLock { $0.adaptation?.policy.current.bandwidth } }

    /// `variant`'s media playlist (its audio rendition's, when its audio comes from a group).
    func mediaPlaylist(of variant: Variant, in master: MasterPlaylist) async throws(MediaSourceError) -> (
        MediaPlaylist, URL
    ) {
        let chosen = master.audioRendition(for: variant)?.uri ?? variant.uri
        guard case .media(let media) = try await playlist(at: chosen) else {
            throw .unavailable("the HLS variant \(chosen.lastPathComponent) is not a media playlist")
        }
        return (media, chosen)
    }

    /// After a segment's download: asks the policy where the next segments come from, and
    /// switches there once that variant's playlist is here.
    func considerSwitching() {
        let wanted = state.withLock { state -> (Variant, MasterPlaylist)? in
            guard var adaptation = state.adaptation, !adaptation.switching, !state.closed else { return nil }
            guard case .switchTo(let variant) = adaptation.policy.decision(bufferedAhead: adaptation.bufferedAhead)
            else { return nil }
            adaptation.switching = true
            state.adaptation = adaptation
            return (variant, adaptation.master)
        }
        guard let (variant, master) = wanted else { return }
        Task {
            do throws(MediaSourceError) {
                let (media, mediaURL) = try await mediaPlaylist(of: variant, in: master)
                switchVariant(to: variant, media: media, at: mediaURL)
            } catch {
                Self.log.info("\(url.lastPathComponent): staying on the variant played: \(error)")
                state.withLock { $0.adaptation?.switching = false }
            }
        }
    }

    /// Plays `variant` (its playlist `media` at `mediaURL`) from the first part the reader has
    /// not reached: its segment starting where the current variant's next one would. A live
    /// presentation reloads the new playlist from its next reload on.
    private func switchVariant(to variant: Variant, media: MediaPlaylist, at mediaURL: URL) {
        let switched = state.withLock { state -> (StreamVariant, (@Sendable (StreamVariant) -> Void)?)? in
            guard var adaptation = state.adaptation else { return nil }
            adaptation.switching = false
            defer { state.adaptation = adaptation }
            if let live = state.live {
                state.live?.url = mediaURL
                // The last segment known, as the new variant lists it: a reload compares URIs
                // at the same sequence number, and another variant's would read as a restart
                // of the stream (every listed segment again, from seconds back).
                if let last = live.lastSegment,
                    let same = media.segments.first(where: { $0.mediaSequenceNumber == last.mediaSequenceNumber })
                {
                    state.live?.lastSegment = same
                }
            } else {
                guard case .success(let parts) = SegmentStream.parts(of: media) else { return nil }
                let from = state.current + 1
                guard from < state.parts.count else { return nil }
                let time = state.parts[..<from].reduce(state.partsStart) { $0 + $1.duration }
                // The new variant's segment that starts there: aligned segments (RFC 8216 §6.2.4
                // asks for it) start at the same times.
                guard let point = SegmentStream.restartPoint(in: parts, at: time + .milliseconds(1)),
                    abs((point.start - time) / .milliseconds(1)) < 250
                else { return nil }
                state.parts =
                    Array(state.parts[..<from]) + (point.initialization.map { [parts[$0]] } ?? [])
                    + parts[point.segment...]
                state.layout = parts
            }
            adaptation.policy.switched(to: variant)
            return (adaptation.described, state.variantHandler)
        }
        guard let (described, handler) = switched else { return }
        Self.log.info("\(url.lastPathComponent): switched to the variant of \(variant.bandwidth) bit/s")
        handler?(described)
    }

    /// A segment's download ended: the policy learns the link from it.
    func transferred(_ sample: TransferSample) {
        state.withLock { $0.adaptation?.policy.segmentFetched(bytes: sample.bytes, took: sample.took) }
        considerSwitching()
    }
}
