import Basics
import Dispatch
import Glibc
import Synchronization
import Testing

@Suite("Work on a queue, awaited")
struct DispatchQueuePerformTests {
    struct Refusal: Error, Equatable {}

    final class Flag: Sendable {
        private let value = Atomic(false)
        func set() { value.store(true, ordering: .sequentiallyConsistent) }
        var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
    }

    private static let queueKey = DispatchSpecificKey<String>()

    @Test func theBodyRunsOnTheQueueAndItsValueComesBack() async {
        let queue = DispatchQueue(label: "spool.test.perform")
        queue.setSpecific(key: Self.queueKey, value: "the queue")
        let seen = await queue.perform { DispatchQueue.getSpecific(key: Self.queueKey) }
        #expect(seen == "the queue")
    }

    @Test func theBodysErrorIsThrownWithItsType() async {
        let queue = DispatchQueue(label: "spool.test.perform")
        do throws(Refusal) {
            _ = try await queue.perform { () throws(Refusal) -> Int in throw Refusal() }
            Issue.record("no error")
        } catch {
            #expect(error == Refusal())
        }
    }

    @Test func theBodyRunsAfterTheWorkQueuedBeforeIt() async {
        let queue = DispatchQueue(label: "spool.test.perform")
        let earlierWorkDone = Flag()
        queue.async {
            usleep(20_000)
            earlierWorkDone.set()
        }
        #expect(await queue.perform { earlierWorkDone.isSet })
    }
}
