import Testing

@testable import GStreamerEngine

@Suite("Clock time conversions")
struct ClockTimeTests {
    /// MPRIS Seek and SetPosition carry Int64 microseconds, and a track of unknown length (a
    /// stream) accepts any of them: the conversion for GStreamer must not trap.
    @Test func aPositionBeyondNanosecondsSaturates() {
        #expect(nanoseconds(.milliseconds(1500)) == 1_500_000_000)
        #expect(nanoseconds(.microseconds(Int64.max)) == Int64.max)
        #expect(nanoseconds(.seconds(Int64.max)) == Int64.max)
        #expect(nanoseconds(.seconds(-5)) == 0)
        #expect(nanoseconds(.seconds(Int64.min)) == 0)
    }
}
