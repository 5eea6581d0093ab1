import Basics
import ByteSourceAPI
import FoundationEssentials
import HLS
import Synchronization

/// A live presentation's reloads (RFC 8216 §6.3.4): new segments join the parts as they are
/// listed, until the playlist ends or fails for too long.
extension HLSByteSource {
    /// Reloads a live playlist when the schedule says, adding its new segments, until the
    /// source closes or the playlist ends; failing reloads are retried with backoff, and after
    /// ``liveRetryDuration`` of failures reads past the last segment fail.
    func reloadLive(after first: MediaPlaylist, began: ContinuousClock.Instant) async {
        var schedule = LiveReloadSchedule()
        var decision = schedule.loaded(first, began: began)
        var failingSince: ContinuousClock.Instant?
        while let at = decision.reloadAt {
            try? await Task.sleep(until: at, clock: .continuous)
            guard let feedURL = state.withLock({ $0.closed ? nil : $0.live?.url }) else { return }
            let started = ContinuousClock.now
            do throws(MediaSourceError) {
                guard case .media(let reloaded) = try await playlist(at: feedURL, use: .origin) else {
                    throw .unavailable("the live HLS playlist became a master playlist")
                }
                failingSince = nil
                try append(reloaded)
                decision = schedule.loaded(reloaded, began: started)
            } catch {
                let since = failingSince ?? started
                failingSince = since
                if ContinuousClock.now - since >= Self.liveRetryDuration {
                    Self.log.warning("\(url.lastPathComponent): the live playlist failed for a minute: \(error)")
                    endLive(failure: error)
                    return
                }
                Self.log.info("\(url.lastPathComponent): reloading the live playlist failed: \(error)")
                decision = schedule.failed(ended: .now)
            }
        }
        endLive(failure: nil)
    }

    /// Adds what a reload lists after the last known segment, and wakes a read waiting for it.
    private func append(_ reloaded: MediaPlaylist) throws(MediaSourceError) {
        let wake = try state.withLock { state throws(MediaSourceError) -> (@Sendable () -> Void)? in
            guard var live = state.live else { return nil }
            let update = LiveSegmentUpdate(known: live.lastSegment.map { [$0] } ?? [], reloaded: reloaded)
            if update.missedSegmentCount > 0 {
                Self.log.warning(
                    "\(url.lastPathComponent): \(update.missedSegmentCount) live segments slid away unread")
            }
            switch SegmentStream.parts(of: update.newSegments, after: update.isRestart ? nil : live.lastMap) {
            case .success(let laidOut):
                state.parts += Self.dated(laidOut.parts, by: reloaded)
                live.lastMap = laidOut.lastMap
            case .failure(let refusal):
                throw .unavailable(refusal.description)
            }
            live.lastSegment = reloaded.segments.last ?? live.lastSegment
            live.firstListed = reloaded.segments.first?.mediaSequenceNumber ?? live.firstListed
            live.ended = !reloaded.isLive
            state.live = live
            guard !update.newSegments.isEmpty else { return nil }
            defer { state.wake = nil }
            return state.wake
        }
        openAhead()
        wake?()
    }

    private func endLive(failure: MediaSourceError?) {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            state.live?.ended = true
            state.live?.failure = failure
            defer { state.wake = nil }
            return state.wake
        }
        wake?()
    }
}
