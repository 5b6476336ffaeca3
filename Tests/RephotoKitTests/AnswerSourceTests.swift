import RephotoTestSupport
import Foundation
import Testing
import RephotoKit
import RephotoData

/// The session's answer sources (`AnswerSource`): each edge of the transition table from constructed evidence, the
/// rule for an inline robust update off the answer path, and a real session driven through the states.
@Suite struct AnswerSourceTests {
    typealias Evidence = AnswerSource.Evidence

    /// Every way a frame's steps can end without vision answering it: each failure cause (or none ran) crossed with
    /// each way tracking did not answer.
    static func unanswered(sensor: Bool) -> [Evidence] {
        let robust: [Evidence.Robust] = [.notRun, .failed(nil), .failed(.chance), .failed(.ambiguousRival), .failed(.tooFewInliers)]
        let tracking: [Evidence.Tracking] = [.notTried, .tooFew, .drift]
        return robust.flatMap { r in tracking.map { Evidence(robust: r, tracking: $0, sensor: sensor) } }
    }

    static let answeredBefore: [AnswerSource] = [.robust, .tracked, .held]
    /// Nothing of vision's to hold: before any frame was answered, or after the sensor alone answered.
    static let nothingToHold: [AnswerSource?] = [nil, .sensor]
    static let everyState: [AnswerSource?] = [nil] + AnswerSource.allCases

    // Edges into `robust`: from every state, an accepted robust update answers, with or without an attitude.
    @Test(arguments: everyState) func anAcceptedRobustUpdateAnswers(from previous: AnswerSource?) {
        for sensor in [false, true] {
            #expect(AnswerSource.next(after: previous, Evidence(robust: .accepted, sensor: sensor)) == .robust)
        }
    }

    // Edges into `tracked`: from every state, tracking that answered does (a failed robust update before it or not).
    @Test(arguments: everyState) func trackingThatAnsweredAnswers(from previous: AnswerSource?) {
        for robust: Evidence.Robust in [.notRun, .failed(nil), .failed(.chance)] {
            for sensor in [false, true] {
                #expect(AnswerSource.next(after: previous, Evidence(robust: robust, tracking: .answered, sensor: sensor)) == .tracked)
            }
        }
    }

    // Edges into `held`: after vision answered (robust, tracked, or an answer already held), a frame vision does not
    // answer repeats it, whatever the cause, and even with an attitude to guide by.
    @Test(arguments: answeredBefore) func visionsLastAnswerIsHeld(from previous: AnswerSource) {
        for evidence in Self.unanswered(sensor: false) + Self.unanswered(sensor: true) {
            #expect(AnswerSource.next(after: previous, evidence) == .held, "\(evidence)")
        }
    }

    // Edges into `sensor`: with nothing of vision's to hold, the attitude guides alone.
    @Test(arguments: nothingToHold) func theSensorGuidesWhenNothingIsHeld(from previous: AnswerSource?) {
        for evidence in Self.unanswered(sensor: true) {
            #expect(AnswerSource.next(after: previous, evidence) == .sensor, "\(evidence)")
        }
    }

    // Edges into no answer: nothing to hold and no attitude, the frame fails.
    @Test(arguments: nothingToHold) func withoutAnythingToHoldOrASensorTheFrameFails(from previous: AnswerSource?) {
        for evidence in Self.unanswered(sensor: false) {
            #expect(AnswerSource.next(after: previous, evidence) == nil, "\(evidence)")
        }
    }

    /// Only vision's answers are held: the sensor's is asked again.
    @Test func onlyVisionsAnswersAreHoldable() {
        #expect(AnswerSource.allCases.filter(\.holdable) == [.robust, .tracked, .held])
    }

    /// Tracking that did not answer names the robust update's trigger: too few kept is support, no one model drift.
    @Test func trackingsFailureNamesTheTrigger() {
        #expect(Evidence.Tracking.tooFew.trigger == .support)
        #expect(Evidence.Tracking.drift.trigger == .drift)
        #expect(Evidence.Tracking.answered.trigger == nil && Evidence.Tracking.notTried.trigger == nil)
    }

    /// Off the answer path, a due robust update runs inline on a frame of a new size; while vision has answered
    /// nothing, without an attitude, or the first time with one; otherwise it is started off the path.
    @Test func aDueUpdateRunsInlineOnlyWhileNothingElseCouldAnswer() {
        let triggers: [SessionStatus.Trigger] = [.start, .schedule, .support, .drift, .movedOn, .camera]
        for previous in Self.everyState {
            for sensor in [false, true] {
                for attempted in [false, true] {
                    #expect(AnswerSource.robustInline(after: previous, due: .resized, sensor: sensor, attempted: attempted))
                    let inline = previous?.holdable != true && (!sensor || !attempted)
                    for due in triggers {
                        #expect(AnswerSource.robustInline(after: previous, due: due, sensor: sensor, attempted: attempted) == inline,
                                "\(String(describing: previous)) sensor \(sensor) attempted \(attempted) \(due)")
                    }
                }
            }
        }
        // The cases spelled out.
        #expect(AnswerSource.robustInline(after: nil, due: .start, sensor: true, attempted: false))
        #expect(!AnswerSource.robustInline(after: .sensor, due: .start, sensor: true, attempted: true))
        #expect(AnswerSource.robustInline(after: .sensor, due: .start, sensor: false, attempted: true))
        #expect(!AnswerSource.robustInline(after: .tracked, due: .support, sensor: false, attempted: true))
    }

    /// A real session on the rendered walk, fed unrelated frames (the baboon) where vision must fail: the sensor guides
    /// before vision answered; then robust, tracked, the last answer held on a lost frame, and back to robust and
    /// tracked. The source each frame reports is the one the session keeps as its state.
    @Test func aSessionGoesThroughTheStates() throws {
        let sequence = try GuidanceSessionTests.walk()
        let (plain, estimator) = try GuidanceSessionTests.session(sequence, robustEvery: 100)
        let level = try Attitude(quaternion: Quaternion(w: 1, x: 0, y: 0, z: 0))
        let session = GuidanceSession(estimator: estimator, reference: plain.reference, camera: plain.camera, referenceAttitude: level)
        let noise = try Image(contentsOfFile: Fixtures.sample("baboon.jpg"), grayscale: true).resized(width: 640, height: 480)
        let frames = try sequence.currentFrames.prefix(5).map { try estimator.load(contentsOfFile: sequence.path(of: $0.file)) }
        let feed = [noise, noise, frames[0], frames[1], frames[2], noise, frames[3], frames[4]]
        var sources: [AnswerSource] = [], triggers: [SessionStatus.Trigger?] = []
        #expect(session.source == nil)
        for image in feed {
            let answer = try session.process(image, attitude: level)
            sources.append(answer.session.source)
            triggers.append(answer.session.trigger)
            #expect(session.source == answer.session.source)
            #expect((answer.session.source == .sensor) == (answer.sensorOnly != nil && answer.result == nil))
        }
        #expect(sources == [.sensor, .sensor, .robust, .tracked, .tracked, .held, .robust, .tracked], "\(sources)")
        #expect(triggers == [.start, .start, .start, nil, nil, .support, .start, nil], "\(triggers)")

        // Without an attitude and nothing to hold, the lost frame fails, and the state stays where it was.
        let (bare, _) = try GuidanceSessionTests.session(sequence, robustEvery: 100)
        #expect { try bare.process(noise) } throws: { ($0 as? RephotoError)?.kind == .estimationFailed }
        #expect(bare.source == nil)
        #expect(try bare.process(frames[0]).session.source == .robust && bare.source == .robust)
    }
}
