import Basics
import Testing

@Suite("Times in messages, rounded for people")
struct HumanTimeTests {
    @Test(arguments: [
        (0.383994267854884, "0.38 s"), (0, "0 s"), (1, "1 s"), (2.5, "2.5 s"), (9.996, "10 s"), (12.44, "12.4 s"),
        (59.96, "60 s"), (65.3, "1:05.3"), (120, "2:00"), (3723.4, "1:02:03"), (-1.25, "-1.25 s"), (.nan, "? s"),
    ])
    func secondsAreRounded(seconds: Double, text: String) {
        #expect(HumanTime.seconds(seconds) == text)
    }

    @Test func durationsRoundTheSameWay() {
        #expect(Duration.milliseconds(383).forPeople == "0.38 s")
        #expect(Duration.seconds(5).forPeople == "5 s")
        #expect((Duration.seconds(65) + .milliseconds(300)).forPeople == "1:05.3")
    }
}
