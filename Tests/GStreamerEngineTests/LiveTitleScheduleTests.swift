import ByteSourceAPI
import Foundation
import Testing

@testable import GStreamerEngine

@Suite("When a live stream's title is heard")
struct LiveTitleScheduleTests {
    private func title(_ text: String) -> StreamTitle { StreamTitle(text: text, artist: nil, title: text) }

    /// 16 000 bytes a second, a frame every 418 bytes: a 128 kbit/s MP3.
    private func parseFrames(_ schedule: inout LiveTitleSchedule, through offset: Int64) {
        var frame: Int64 = 0
        while frame <= offset {
            schedule.frameParsed(at: frame, time: .nanoseconds(frame * 1_000_000_000 / 16_000))
            frame += 418
        }
    }

    @Test func aTitleIsDueWhenTheFirstFrameAtItsOffsetIsHeardAndNeverBefore() {
        var schedule = LiveTitleSchedule()
        schedule.titleArrived(title("Song A"), at: 32_000)  // 2 s into the stream
        parseFrames(&schedule, through: 80_000)
        // The first frame at or past byte 32 000 starts at byte 32 186: 2.011625 s.
        #expect(schedule.due(heard: .milliseconds(2011)).isEmpty)
        #expect(schedule.due(heard: .microseconds(2_011_625)) == [.title(title("Song A"))])
        #expect(!schedule.hasWaiting)
    }

    /// A segment's air date and the song its tag names, at the same byte: both due together, in
    /// the order they came; the next segment's date when its own first frame is heard.
    @Test func airDatesAreDueWithTheAudioTheyDateLikeTitles() {
        var schedule = LiveTitleSchedule()
        let aired = Date(timeIntervalSince1970: 1_800_000_000)
        schedule.arrived(.programDate(aired), at: 0)
        schedule.titleArrived(title("Song A"), at: 0)
        schedule.arrived(.programDate(aired + 2), at: 32_000)
        parseFrames(&schedule, through: 80_000)
        #expect(schedule.due(heard: .seconds(1)) == [.programDate(aired), .title(title("Song A"))])
        #expect(schedule.due(heard: .seconds(2)).isEmpty)
        #expect(schedule.due(heard: .seconds(2.1)) == [.programDate(aired + 2)])
    }

    @Test func aTitleWaitsUntilItsBytesAreParsed() {
        var schedule = LiveTitleSchedule()
        parseFrames(&schedule, through: 10_000)
        schedule.titleArrived(title("Song A"), at: 16_000)
        #expect(schedule.due(heard: .seconds(60)).isEmpty, "no frame at its offset yet: its time is unknown")
        #expect(schedule.hasWaiting)
        schedule.frameParsed(at: 16_302, time: .microseconds(1_018_875))
        #expect(schedule.due(heard: .seconds(1)).isEmpty)
        #expect(schedule.due(heard: .seconds(2)) == [.title(title("Song A"))])
    }

    @Test func titlesComeInOrderAndSeveralMayBeDueAtOnce() {
        var schedule = LiveTitleSchedule()
        schedule.titleArrived(title("A"), at: 0)
        schedule.titleArrived(title("B"), at: 16_000)
        schedule.titleArrived(title("C"), at: 48_000)
        parseFrames(&schedule, through: 64_000)
        #expect(schedule.due(heard: .zero) == [.title(title("A"))])
        #expect(schedule.due(heard: .seconds(1)).isEmpty, "B starts with the frame at byte 16 302, 1.019 s")
        #expect(schedule.due(heard: .seconds(3.5)) == [.title(title("B")), .title(title("C"))])
    }

    @Test func aTitleForBytesAlreadyParsedIsDueWithTheLastFrame() {
        var schedule = LiveTitleSchedule()
        parseFrames(&schedule, through: 40_000)
        schedule.titleArrived(title("Late"), at: 1_000)
        #expect(schedule.due(heard: .seconds(2)).isEmpty, "the last frame parsed is at 2.48 s")
        #expect(schedule.due(heard: .seconds(3)) == [.title(title("Late"))])
    }

    @Test func aStationAnnouncingFasterThanAnyoneListensKeepsOnlyTheNewest() {
        var schedule = LiveTitleSchedule()
        for index in 0..<(LiveTitleSchedule.limit + 10) { schedule.titleArrived(title("\(index)"), at: Int64(index)) }
        #expect(schedule.waiting.count == LiveTitleSchedule.limit)
        #expect(schedule.waiting.first?.announcement == .title(title("10")))
    }
}
