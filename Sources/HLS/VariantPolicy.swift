import Glibc

/// What ``VariantPolicy/decision(bufferedAhead:)`` answers at a segment boundary.
public enum VariantDecision: Sendable, Equatable {
    /// Fetch the next segment from the current variant.
    case stay
    /// Fetch the next segment from this variant instead.
    case switchTo(Variant)
}

/// Adaptive switching among an HLS presentation's variants, as one value the byte source feeds
/// and asks: it reports each segment's download (``segmentFetched(bytes:took:)``), asks at every
/// segment boundary where the next segment comes from (``decision(bufferedAhead:)``) and reports
/// the switch it made (``switched(to:)``). There is no clock or network inside: times come in as
/// `Duration`s, so a test drives it segment by segment.
///
/// Variants are compared by ``Variant/switchingBandwidth`` (`AVERAGE-BANDWIDTH` when given, else
/// `BANDWIDTH`): what the link has to carry over many segments, while the buffer absorbs a peak.
/// The `ceiling` is compared with `BANDWIDTH`, as ``MasterPlaylist/chooseVariant(from:throughput:ceiling:)``
/// does: a metered network's limit is never passed, not even by a peak.
///
/// At a segment boundary, in this order:
/// 1. a current variant above the ceiling is left at once, for the best that fits below it;
/// 2. down at once when the link no longer carries the current variant: its bandwidth exceeds
///    ``keepShare`` of the ``estimate``, or, with less than ``lowBuffer`` ahead, ``fitShare`` of it;
/// 3. up only after ``holdSegments`` segments on the current variant and with at least
///    ``upBuffer`` ahead, to the highest whose bandwidth is within ``fitShare`` of the
///    estimate; the first measurement before any switch may lift the start at once;
/// 4. else stay.
///
/// The gap between ``fitShare`` (to go up) and ``keepShare`` (to stay) is the hysteresis: a steady
/// link whose estimate wobbles by a few percent never flips between two variants, and the hold
/// spaces out the rises that a recovering link allows.
public struct VariantPolicy: Sendable {
    /// The fast moving average's half-life, in seconds of download time: the last 2 s of downloads
    /// make half of it, so a drop shows within one slow segment (Shaka Player's value).
    public static let fastHalfLife: Duration = .seconds(2)
    /// The slow moving average's half-life: a rise must last about 5 s of downloads before the
    /// estimate (the smaller of the two averages) follows it (Shaka Player's value).
    public static let slowHalfLife: Duration = .seconds(5)
    /// A download smaller than this is not timed alone: it fits in TCP's first flight (ten segments
    /// of 1,460 bytes, RFC 6928), so its time is mostly round trips and server latency, which vary
    /// from one request to the next (Shaka Player ignores such requests). Such downloads are
    /// pooled, bytes and times added up, until they make one sample this large: segments are
    /// fetched one after another, so the latency they carry is a real cost of a variant whose
    /// segments are this small, and ignoring them would leave the estimate empty for ever on a
    /// variant of 32 kbit/s in 2 s segments (8,000 bytes).
    public static let minimumSampleBytes: Int64 = 16_000
    /// A download faster than this is not timed alone either: the scheduler's and timer's jitter
    /// (a few ms) would be a large part of it. It is pooled like a small one; ignoring it would
    /// leave a fast link unmeasured, since a whole audio segment arrives in a few ms there, and
    /// playback would stay on the lowest variant.
    public static let minimumSampleTime: Duration = .milliseconds(20)
    /// A variant fits the link when its bandwidth is at most this share of the estimate: the margin
    /// absorbs swings in throughput and segments above the average, as in
    /// ``MasterPlaylist/chooseVariant(from:throughput:ceiling:)``. Going up needs 1/0.8 = 1.25 times
    /// the variant's bandwidth.
    public static let fitShare = 0.8
    /// The current variant is kept while its bandwidth is at most this share of the estimate:
    /// below 1/0.9 ≈ 1.11 times its bandwidth the link spends its headroom on TCP and HTTP overhead
    /// and on the averages' lag, and the buffer starts to drain.
    public static let keepShare = 0.9
    /// With less audio than this ahead the current variant needs the full ``fitShare`` margin to
    /// stay: one slow segment of the 6 s that Apple's authoring guidelines recommend would stall.
    public static let lowBuffer: Duration = .seconds(6)
    /// Going up needs at least this much audio ahead, so that a variant the link carries less well
    /// than measured has time to be left before the buffer runs dry (ExoPlayer's 10 s).
    public static let healthyBuffer: Duration = .seconds(10)
    /// Going up needs this much audio ahead here: ``healthyBuffer``, or less for a live stream,
    /// whose reader can never be further ahead than its distance from the live edge.
    public let upBuffer: Duration
    /// Going up needs this many segments fetched on the current variant since the last switch:
    /// with 6 s segments, at most one rise in 18 s, and never right after a fall.
    public static let holdSegments = 3

    /// The variants playback may switch to, by ``Variant/switchingBandwidth`` from the lowest, the
    /// first listed first among equal ones; never empty unless the candidates were.
    public let allowed: [Variant]
    /// The limit no chosen variant's `BANDWIDTH` passes, when given.
    public let ceiling: BitsPerSecond?
    /// The variant the segments are fetched from now.
    public private(set) var current: Variant
    /// Segments fetched since the last switch (or the start), measured or not.
    public private(set) var segmentsOnCurrent = 0
    /// How many switches were made.
    public private(set) var switchCount = 0

    private var fast = MovingAverage(halfLife: Self.fastHalfLife)
    private var slow = MovingAverage(halfLife: Self.slowHalfLife)
    private var samples = 0
    private var pooledBits = 0.0
    private var pooledTime = Duration.zero

    /// Creates a policy choosing among `candidates` (e.g. ``MasterPlaylist/audioOnlyVariants``),
    /// never above `ceiling` (a metered network's limit) unless every candidate is, and then the
    /// lowest; playback starts on `current`, usually the lowest, as
    /// ``MasterPlaylist/chooseVariant(from:throughput:ceiling:)`` gives it without a measurement.
    /// `reach`: the most audio the reader can hold ahead (a live stream's distance from its
    /// edge), when that is less than ``healthyBuffer``: going up then needs 80 % of it.
    public init(candidates: [Variant], ceiling: BitsPerSecond? = nil, current: Variant, reach: Duration? = nil) {
        upBuffer = reach.map { min(Self.healthyBuffer, $0 * 0.8) } ?? Self.healthyBuffer
        let ordered = candidates.enumerated().sorted { lhs, rhs in
            (lhs.element.switchingBandwidth, lhs.offset) < (rhs.element.switchingBandwidth, rhs.offset)
        }.map(\.element)
        if let ceiling {
            let under = ordered.filter { $0.bandwidth <= ceiling }
            // Above the ceiling everywhere: the smallest peak passes it least.
            let least = MasterPlaylist.chooseVariant(from: candidates, throughput: nil, ceiling: nil)
            allowed = under.isEmpty ? least.map { [$0] } ?? [] : under
        } else {
            allowed = ordered
        }
        self.ceiling = ceiling
        self.current = current
    }

    /// The link's throughput: the smaller of the fast and slow moving averages of the measured
    /// downloads, each weighted by its download time, so that the estimate falls as fast as the
    /// fast one and rises as slowly as the slow one. Nil before the first measured sample.
    public var estimate: BitsPerSecond? {
        guard let value = estimateValue else { return nil }
        return value >= 9.0e18 ? .max : BitsPerSecond(value.rounded())
    }

    private var estimateValue: Double? {
        guard let fastValue = fast.value, let slowValue = slow.value else { return nil }
        return min(fastValue, slowValue)
    }

    /// Records one segment's download over the network: `bytes` received in `took`. A download
    /// under ``minimumSampleBytes`` or ``minimumSampleTime`` is pooled with the next such ones
    /// until together they are neither; one of no bytes or no time is not measured. Each counts
    /// as a segment on the current variant. Report media segments only: a playlist or a key says
    /// little of the link, and a segment read from the cache nothing at all.
    public mutating func segmentFetched(bytes: Int64, took: Duration) {
        segmentsOnCurrent += 1
        guard bytes > 0, took > .zero else { return }
        let bits = Double(bytes) * 8
        if bytes >= Self.minimumSampleBytes, took >= Self.minimumSampleTime {
            record(bits: bits, seconds: took.seconds)
            return
        }
        pooledBits += bits
        pooledTime += took
        guard pooledBits >= Double(Self.minimumSampleBytes) * 8, pooledTime >= Self.minimumSampleTime else { return }
        record(bits: pooledBits, seconds: pooledTime.seconds)
        pooledBits = 0
        pooledTime = .zero
    }

    private mutating func record(bits: Double, seconds: Double) {
        fast.add(bits / seconds, weight: seconds)
        slow.add(bits / seconds, weight: seconds)
        samples += 1
    }

    /// Where the next segment comes from, with `bufferedAhead` of audio fetched and not yet played.
    /// See the type's rules.
    public func decision(bufferedAhead: Duration) -> VariantDecision {
        guard let lowest = allowed.first else { return .stay }
        let measured = estimateValue
        let target = measured.map(fitting) ?? lowest
        if !isPermitted(current) { return .switchTo(target) }
        guard let measured else { return .stay }
        let rate = Double(current.switchingBandwidth)
        let share = bufferedAhead < Self.lowBuffer ? Self.fitShare : Self.keepShare
        if rate > measured * share, target.switchingBandwidth < current.switchingBandwidth {
            return .switchTo(target)
        }
        // The first measurement may lift the start at once: the lowest was only a guess.
        let starting = switchCount == 0 && samples == 1
        let settled = segmentsOnCurrent >= Self.holdSegments && bufferedAhead >= upBuffer
        if starting || settled, target.switchingBandwidth > current.switchingBandwidth {
            return .switchTo(target)
        }
        return .stay
    }

    /// Records that segments now come from `variant`; the hold starts again.
    public mutating func switched(to variant: Variant) {
        guard variant != current else { return }
        current = variant
        segmentsOnCurrent = 0
        switchCount += 1
    }

    /// The highest allowed variant within ``fitShare`` of `estimate`, the first listed among equal
    /// ones; the lowest when none fits.
    private func fitting(_ estimate: Double) -> Variant {
        let budget = estimate * Self.fitShare
        guard let best = allowed.last(where: { Double($0.switchingBandwidth) <= budget }) else {
            return allowed[0]
        }
        return allowed.first { $0.switchingBandwidth == best.switchingBandwidth } ?? best
    }

    /// Whether `variant` keeps within the ceiling (or is the one variant allowed above it).
    private func isPermitted(_ variant: Variant) -> Bool {
        guard let ceiling else { return true }
        return variant.bandwidth <= ceiling || allowed.contains(variant)
    }
}

extension Variant {
    /// The bit rate variant switching compares: `AVERAGE-BANDWIDTH` when given, else `BANDWIDTH`.
    public var switchingBandwidth: BitsPerSecond { averageBandwidth ?? bandwidth }
}

/// An exponentially weighted moving average of values given with weights (seconds of download),
/// corrected for its start at zero.
private struct MovingAverage: Sendable {
    /// The weight after which a value counts half.
    let halfLife: Double
    private var weighted = 0.0
    private var totalWeight = 0.0

    init(halfLife: Duration) { self.halfLife = halfLife.seconds }

    mutating func add(_ value: Double, weight: Double) {
        let kept = pow(0.5, weight / halfLife)
        weighted = value * (1 - kept) + weighted * kept
        totalWeight += weight
    }

    /// Nil before the first value. Starting from zero pulls the early average down by the share
    /// zero still holds; dividing by the share the values hold removes it, so the first value is
    /// the average exactly.
    var value: Double? {
        guard totalWeight > 0 else { return nil }
        return weighted / (1 - pow(0.5, totalWeight / halfLife))
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
