import Testing

@testable import GStreamerEngine

@Suite("When a gapless next track is heard")
struct HandOverTimingTests {
    @Test func theNewTrackIsHeardWhenThePreviousOnesRemainingSamplesHavePlayed() {
        #expect(
            HandOverTiming.audibleDelay(previousLength: .seconds(4), positionAtSwitch: .milliseconds(3870), rate: 1)
                == .milliseconds(130))
        #expect(
            HandOverTiming.audibleDelay(previousLength: .seconds(4), positionAtSwitch: .milliseconds(3800), rate: 2)
                == .milliseconds(100))
    }

    @Test func unknownOrImplausibleFiguresMeanAtOnce() {
        #expect(HandOverTiming.audibleDelay(previousLength: nil, positionAtSwitch: .seconds(3), rate: 1) == .zero)
        #expect(HandOverTiming.audibleDelay(previousLength: .seconds(4), positionAtSwitch: nil, rate: 1) == .zero)
        #expect(
            HandOverTiming.audibleDelay(previousLength: .seconds(4), positionAtSwitch: .seconds(5), rate: 1) == .zero)
        #expect(
            HandOverTiming.audibleDelay(previousLength: .seconds(60), positionAtSwitch: .seconds(10), rate: 1) == .zero,
            "a sink holds no 50 s")
    }
}
