import Glibc
import HLS
import Testing

/// A variant of `kilobits` kbit/s (`BANDWIDTH`), and `AVERAGE-BANDWIDTH` of `average` kbit/s when given.
private func variant(_ kilobits: Int, average: Int? = nil) -> Variant {
    Variant(
        uri: url("https://media.example.com/radio/\(kilobits)k.m3u8"), bandwidth: kilobits * 1000,
        averageBandwidth: average.map { $0 * 1000 }, codecs: ["mp4a.40.2"])
}

private let v32 = variant(32)
private let v64 = variant(64)
private let v128 = variant(128)
private let v256 = variant(256)
private let ladder = [v128, v32, v256, v64]

/// Playback of `policy`'s segments over a link: each segment is `segmentSeconds` of audio at the
/// current variant's bandwidth, downloaded at the throughput given; the buffer gains the segment
/// and loses the download's time, and stops growing at `maximumBuffer`, where a player waits.
private struct Playback {
    var policy: VariantPolicy
    var buffered: Duration = .zero
    var segmentSeconds = 6
    var maximumBuffer: Duration = .seconds(30)
    /// Every decision taken, in order.
    var decisions: [VariantDecision] = []

    /// Downloads one segment at `throughput` bit/s.
    mutating func fetch(at throughput: Int) {
        let bytes = Int64(policy.current.switchingBandwidth) * Int64(segmentSeconds) / 8
        let took = Duration.seconds(Double(bytes) * 8 / Double(throughput))
        policy.segmentFetched(bytes: bytes, took: took)
        buffered = min(max(.zero, buffered - took) + .seconds(segmentSeconds), maximumBuffer)
    }

    /// Asks for the decision with the buffer as it is, and makes the switch it says.
    @discardableResult
    mutating func decide() -> VariantDecision {
        let decision = policy.decision(bufferedAhead: buffered)
        if case .switchTo(let next) = decision { policy.switched(to: next) }
        decisions.append(decision)
        return decision
    }

    /// `count` segments at `throughput`, a decision after each.
    mutating func play(_ count: Int, at throughput: Int) {
        for _ in 0..<count {
            fetch(at: throughput)
            decide()
        }
    }

    /// The switches made, in order.
    var switches: [Variant] {
        decisions.compactMap { decision in
            if case .switchTo(let next) = decision { return next }
            return nil
        }
    }
}

@Suite("Variant policy")
struct VariantPolicyTests {
    /// A live stream of 2-s segments, read from 6 s behind its edge, never holds 10 s ahead:
    /// after a dip it comes back up with 80 % of its reach ahead; a policy that asks for 10 s
    /// stays low for ever.
    @Test func aLiveStreamComesBackUpWithinTheReachOfItsEdge() {
        func recovered(reach: Duration?) -> Variant {
            var playback = Playback(policy: VariantPolicy(candidates: ladder, current: v128, reach: reach))
            playback.segmentSeconds = 2
            playback.maximumBuffer = .seconds(6)
            playback.play(6, at: 400_000)
            playback.play(4, at: 100_000)  // the dip: down
            playback.play(30, at: 400_000)  // the link back, for a minute
            return playback.policy.current
        }
        #expect(recovered(reach: .seconds(6)) == v256)
        #expect(recovered(reach: nil).bandwidth < v128.bandwidth, "10 s ahead is out of a live reader's reach")
        let milliseconds = { (reach: Duration) in
            (VariantPolicy(candidates: ladder, current: v32, reach: reach).upBuffer / .milliseconds(1)).rounded()
        }
        #expect(milliseconds(.seconds(6)) == 4800)
        #expect(milliseconds(.seconds(30)) == 10_000)
    }

    @Test func aSteadyLinkNeverSwitches() {
        // 200 kbit/s affords 128k (≤ 160k) and keeps it (≤ 180k); 256k would need 320k.
        var onFitting = Playback(policy: VariantPolicy(candidates: ladder, current: v128))
        onFitting.play(60, at: 200_000)
        #expect(onFitting.switches.isEmpty)

        // From the lowest: one switch, at the first measurement, then none.
        var fromLowest = Playback(policy: VariantPolicy(candidates: ladder, current: v32))
        fromLowest.play(60, at: 200_000)
        #expect(fromLowest.decisions.first == .switchTo(v128))
        #expect(fromLowest.switches == [v128])
    }

    @Test func aWobblingLinkDoesNotFlipBetweenTwoVariants() {
        // 150 to 170 kbit/s keeps 128k (≤ 135k at the lowest) and never reaches 160k for long.
        var playback = Playback(policy: VariantPolicy(candidates: ladder, current: v128))
        playback.buffered = .seconds(30)
        for round in 0..<40 { playback.play(1, at: round.isMultiple(of: 2) ? 150_000 : 170_000) }
        #expect(playback.switches.isEmpty)
    }

    @Test func withoutAMeasurementPlaybackStaysWhereItStarted() {
        let policy = VariantPolicy(candidates: ladder, current: v32)
        #expect(policy.estimate == nil)
        #expect(policy.decision(bufferedAhead: .seconds(30)) == .stay)
        #expect(policy.decision(bufferedAhead: .zero) == .stay)
    }

    @Test func aDropSwitchesDownAtOnceWhateverTheBufferAndTheHold() {
        var playback = Playback(policy: VariantPolicy(candidates: ladder, current: v256))
        playback.play(10, at: 1_000_000)
        #expect(playback.switches.isEmpty)
        playback.policy.switched(to: v128)
        playback.policy.switched(to: v256)  // a switch just now: the hold does not delay a fall
        #expect(playback.policy.segmentsOnCurrent == 0)
        playback.fetch(at: 100_000)
        #expect(playback.policy.decision(bufferedAhead: .seconds(30)) == .switchTo(v64))
        #expect(playback.policy.decision(bufferedAhead: .zero) == .switchTo(v64))
    }

    @Test func aLowBufferAsksForTheFullMarginToStay() throws {
        // 150 kbit/s keeps 128k (≤ 135k) but no longer fits it (> 120k).
        var playback = Playback(policy: VariantPolicy(candidates: ladder, current: v128))
        for _ in 0..<20 { playback.fetch(at: 150_000) }
        #expect(try #require(playback.policy.estimate) == 150_000)
        #expect(playback.policy.decision(bufferedAhead: .seconds(6)) == .stay)
        #expect(playback.policy.decision(bufferedAhead: .milliseconds(5999)) == .switchTo(v64))
        #expect(playback.policy.decision(bufferedAhead: .zero) == .switchTo(v64))
    }

    @Test func aRecoveredLinkLiftsOnlyAfterTheHoldAndWithABuffer() throws {
        var playback = Playback(policy: VariantPolicy(candidates: ladder, current: v256))
        playback.play(10, at: 400_000)
        #expect(playback.switches.isEmpty)
        playback.play(1, at: 200_000)
        #expect(playback.switches == [v128])

        playback.fetch(at: 1_000_000)
        #expect(try #require(playback.policy.estimate) >= 320_000, "256k fits the estimate already")
        #expect(playback.policy.decision(bufferedAhead: .seconds(30)) == .stay, "one segment after the fall")
        playback.fetch(at: 1_000_000)
        #expect(playback.policy.decision(bufferedAhead: .seconds(30)) == .stay, "two segments after the fall")
        playback.fetch(at: 1_000_000)
        #expect(playback.policy.segmentsOnCurrent == VariantPolicy.holdSegments)
        #expect(playback.policy.decision(bufferedAhead: .milliseconds(9999)) == .stay, "the buffer is short")
        #expect(playback.policy.decision(bufferedAhead: .seconds(10)) == .switchTo(v256))
    }

    @Test func theCeilingCapsAFastLink() {
        var capped = Playback(policy: VariantPolicy(candidates: ladder, ceiling: 128_000, current: v32))
        capped.play(40, at: 10_000_000)
        #expect(capped.switches == [v128])

        var lower = Playback(policy: VariantPolicy(candidates: ladder, ceiling: 100_000, current: v32))
        lower.play(40, at: 10_000_000)
        #expect(lower.switches == [v64])
    }

    @Test func aCurrentVariantAboveTheCeilingIsLeftAtOnce() {
        let unmeasured = VariantPolicy(candidates: ladder, ceiling: 128_000, current: v256)
        #expect(unmeasured.decision(bufferedAhead: .seconds(30)) == .switchTo(v32), "no estimate: the lowest")

        var measured = VariantPolicy(candidates: ladder, ceiling: 128_000, current: v256)
        measured.segmentFetched(bytes: 1_000_000, took: .seconds(1))
        #expect(measured.decision(bufferedAhead: .zero) == .switchTo(v128))
    }

    @Test func aCeilingBelowEveryVariantLeavesTheLowest() {
        var fromAbove = VariantPolicy(candidates: ladder, ceiling: 16_000, current: v128)
        #expect(fromAbove.allowed == [v32])
        #expect(fromAbove.decision(bufferedAhead: .seconds(30)) == .switchTo(v32))
        fromAbove.switched(to: v32)
        var playback = Playback(policy: fromAbove)
        playback.play(30, at: 10_000_000)
        #expect(playback.switches.isEmpty)
    }

    @Test func theCeilingIsComparedWithThePeakBandwidth() {
        // Its average is under the ceiling, its peak is not.
        let peaky = variant(160, average: 120)
        var playback = Playback(policy: VariantPolicy(candidates: [v64, peaky], ceiling: 128_000, current: v64))
        playback.play(30, at: 10_000_000)
        #expect(playback.switches.isEmpty)
    }

    @Test func switchingComparesTheAverageBandwidthWhenGiven() {
        // 200 kbit/s fits an average of 150k (≤ 160k) though the peak is 300k.
        let averaged = variant(300, average: 150)
        var up = Playback(policy: VariantPolicy(candidates: [v64, averaged], current: v64))
        up.play(20, at: 200_000)
        #expect(up.switches == [averaged])

        // 160 kbit/s no longer keeps an average of 150k (> 144k).
        var down = Playback(policy: VariantPolicy(candidates: [v64, averaged], current: averaged))
        down.play(1, at: 160_000)
        #expect(down.switches == [v64])
    }

    @Test func equalBandwidthsGoToTheFirstListed() {
        let first = Variant(uri: url("https://media.example.com/a.m3u8"), bandwidth: 128_000)
        let second = Variant(uri: url("https://media.example.com/b.m3u8"), bandwidth: 128_000)
        var playback = Playback(policy: VariantPolicy(candidates: [v32, first, second], current: v32))
        playback.play(10, at: 1_000_000)
        #expect(playback.switches == [first])
    }

    @Test func oneVariantAlwaysStays() {
        var playback = Playback(policy: VariantPolicy(candidates: [v128], current: v128))
        for throughput in [10_000, 10_000_000, 50_000, 1_000_000, 20_000, 5_000_000] {
            playback.play(5, at: throughput)
        }
        #expect(playback.decisions.count == 30)
        #expect(playback.switches.isEmpty)
        #expect(playback.policy.decision(bufferedAhead: .zero) == .stay)
    }

    @Test func noCandidatesMeansNoSwitch() {
        var policy = VariantPolicy(candidates: [], current: v64)
        policy.segmentFetched(bytes: 1_000_000, took: .seconds(1))
        #expect(policy.decision(bufferedAhead: .seconds(30)) == .stay)
    }

    @Test func smallDownloadsArePooledUntilTheyCanBeTimed() {
        var policy = VariantPolicy(candidates: ladder, current: v32)
        policy.segmentFetched(bytes: 1_000_000, took: .zero)
        policy.segmentFetched(bytes: 1_000_000, took: .seconds(-1))
        policy.segmentFetched(bytes: 0, took: .seconds(1))
        #expect(policy.estimate == nil, "no time or no bytes: nothing to measure")
        policy.segmentFetched(bytes: VariantPolicy.minimumSampleBytes - 1, took: .seconds(1))
        #expect(policy.estimate == nil, "15,999 bytes are not timed alone")
        #expect(policy.segmentsOnCurrent == 4, "they still count as segments on the variant")
        #expect(policy.decision(bufferedAhead: .seconds(30)) == .stay)
        policy.segmentFetched(bytes: 1, took: .seconds(1))
        #expect(policy.estimate == 64_000, "16,000 bytes in 2 s")

        // A small download alone does not move an estimate; a large one is timed alone.
        var measured = VariantPolicy(candidates: ladder, current: v32)
        measured.segmentFetched(bytes: 125_000, took: .seconds(1))
        measured.segmentFetched(bytes: 1000, took: .seconds(1))
        #expect(measured.estimate == 1_000_000)
        measured.segmentFetched(bytes: 125_000, took: .seconds(1))
        #expect(measured.estimate == 1_000_000, "the pooled 1,000 bytes stay out of it")
    }

    @Test func fastDownloadsArePooledUntilTheyCanBeTimed() {
        var policy = VariantPolicy(candidates: ladder, current: v32)
        policy.segmentFetched(bytes: 100_000, took: .milliseconds(5))
        policy.segmentFetched(bytes: 100_000, took: .milliseconds(10))
        #expect(policy.estimate == nil, "15 ms is not timed alone")
        policy.segmentFetched(bytes: 50_000, took: .milliseconds(5))
        // 250 000 bytes in 20 ms.
        #expect(policy.estimate == 100_000_000)
        #expect(policy.decision(bufferedAhead: .zero) == .switchTo(v256))
    }

    @Test func theEstimateFallsFastAndRisesSlowly() throws {
        var policy = VariantPolicy(candidates: ladder, current: v32)
        policy.segmentFetched(bytes: 125_000, took: .seconds(1))
        #expect(policy.estimate == 1_000_000, "the first sample is the estimate, not pulled towards zero")
        for _ in 0..<9 { policy.segmentFetched(bytes: 125_000, took: .seconds(1)) }
        #expect(policy.estimate == 1_000_000)

        // 2 s at 4 Mbit/s: the fast average is past 2.4 Mbit/s, the slow one not yet at 2.
        var rising = policy
        rising.segmentFetched(bytes: 1_000_000, took: .seconds(2))
        let risen = try #require(rising.estimate)
        #expect(risen > 1_500_000 && risen < 2_000_000, "\(risen)")

        // 4 s at 250 kbit/s: the fast average is near 430 kbit/s, the slow one above 600.
        var falling = policy
        falling.segmentFetched(bytes: 125_000, took: .seconds(4))
        let fallen = try #require(falling.estimate)
        #expect(fallen > 400_000 && fallen < 470_000, "\(fallen)")
    }

    // MARK: Properties over random links

    /// A random ladder of 1 to 6 variants from 24 to 1,500 kbit/s, some with an average bandwidth.
    private static func randomLadder(using generator: inout SeededGenerator) -> [Variant] {
        (0..<Int.random(in: 1...6, using: &generator)).map { index in
            let peak = logUniform(24_000, 1_500_000, using: &generator)
            let average =
                Bool.random(using: &generator) ? Int(Double(peak) * .random(in: 0.6...1, using: &generator)) : nil
            return Variant(
                uri: url("https://media.example.com/v\(index).m3u8"), bandwidth: peak, averageBandwidth: average)
        }
    }

    /// A number between `low` and `high` whose logarithm is uniform: as many slow links as fast ones.
    private static func logUniform(_ low: Int, _ high: Int, using generator: inout SeededGenerator) -> Int {
        Int(Double(low) * pow(Double(high) / Double(low), .random(in: 0...1, using: &generator)))
    }

    /// Whether `variant` keeps to `ceiling`: under it, or the least peak when every one is above it.
    private static func keeps(_ variant: Variant, to ceiling: Int?, among variants: [Variant]) -> Bool {
        guard let ceiling else { return true }
        if variants.contains(where: { $0.bandwidth <= ceiling }) { return variant.bandwidth <= ceiling }
        return variant == MasterPlaylist.chooseVariant(from: variants, throughput: nil, ceiling: nil)
    }

    @Test(arguments: 0..<200)
    func onAnyLinkTheCeilingHoldsAndRisesKeepTheHold(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        let variants = Self.randomLadder(using: &generator)
        let ceiling = Bool.random(using: &generator) ? nil : Self.logUniform(16_000, 2_000_000, using: &generator)
        let start = variants.randomElement(using: &generator) ?? v32
        var playback = Playback(policy: VariantPolicy(candidates: variants, ceiling: ceiling, current: start))
        var segmentsSinceSwitch = 0
        for step in 0..<300 {
            // Stretches of one throughput, as a link holds its rate for a while.
            let throughput = Self.logUniform(20_000, 5_000_000, using: &generator)
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                playback.fetch(at: throughput)
                segmentsSinceSwitch += 1
                let before = playback.policy.current
                let switchesBefore = playback.policy.switchCount
                let decision = playback.decide()
                guard case .switchTo(let next) = decision else { continue }
                #expect(Self.keeps(next, to: ceiling, among: variants), "seed \(seed) step \(step): \(next)")
                if next.switchingBandwidth > before.switchingBandwidth, switchesBefore > 0 {
                    #expect(
                        segmentsSinceSwitch >= VariantPolicy.holdSegments,
                        "seed \(seed) step \(step): up after \(segmentsSinceSwitch) segments")
                }
                segmentsSinceSwitch = 0
            }
            #expect(Self.keeps(playback.policy.current, to: ceiling, among: variants), "seed \(seed)")
        }
    }

    @Test(arguments: 0..<200)
    func onAConstantLinkPlaybackSettlesOnTheHighestThatFits(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let variants = Self.randomLadder(using: &generator)
        let ceiling = Bool.random(using: &generator) ? nil : Self.logUniform(16_000, 2_000_000, using: &generator)
        let policy = VariantPolicy(candidates: variants, ceiling: ceiling, current: v32)
        let allowed = policy.allowed
        // A throughput not within 3 % of a boundary, where the estimate's last bits would decide.
        var throughput = 0
        repeat {
            throughput = Self.logUniform(20_000, 5_000_000, using: &generator)
        } while allowed.contains { variant in
            [VariantPolicy.fitShare, VariantPolicy.keepShare].contains { share in
                abs(Double(variant.switchingBandwidth) / (Double(throughput) * share) - 1) < 0.03
            }
        }
        let budget = Double(throughput) * VariantPolicy.fitShare
        let best = allowed.last { Double($0.switchingBandwidth) <= budget } ?? allowed[0]
        let expected = try #require(allowed.first { $0.switchingBandwidth == best.switchingBandwidth })

        // From the lowest: up to the highest that fits, and no further switch.
        let lowest = MasterPlaylist.chooseVariant(from: variants, throughput: nil, ceiling: ceiling) ?? allowed[0]
        var fresh = Playback(policy: VariantPolicy(candidates: variants, ceiling: ceiling, current: lowest))
        fresh.play(600, at: throughput)
        #expect(fresh.policy.current == expected, "seed \(seed) at \(throughput) bit/s")
        #expect(fresh.decisions.suffix(100).allSatisfy { $0 == .stay }, "seed \(seed)")

        // After a random past: settled on a variant the link keeps, at least the one that fits.
        var used = Playback(policy: VariantPolicy(candidates: variants, ceiling: ceiling, current: lowest))
        for _ in 0..<Int.random(in: 1...40, using: &generator) {
            used.play(
                Int.random(in: 1...5, using: &generator), at: Self.logUniform(20_000, 5_000_000, using: &generator))
        }
        used.play(600, at: throughput)
        let settled = used.policy.current
        #expect(used.decisions.suffix(100).allSatisfy { $0 == .stay }, "seed \(seed)")
        #expect(settled.switchingBandwidth >= expected.switchingBandwidth, "seed \(seed): \(settled)")
        #expect(
            settled == expected || Double(settled.switchingBandwidth) <= Double(throughput) * VariantPolicy.keepShare,
            "seed \(seed): \(settled) at \(throughput) bit/s")
    }
}

/// A deterministic generator (SplitMix64), so a failing seed replays.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
