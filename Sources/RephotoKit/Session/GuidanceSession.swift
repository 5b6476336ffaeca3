import Foundation

/// Guidance over a stream of frames, as the published systems do it (Bae et al. 2010, Shi et al. 2018): a robust
/// update (the single-pair pipeline) on a schedule or when tracking fails, pyramidal Lucas-Kanade tracking of its
/// correspondences in between, and the step to the reference's vantage point measured in a structure that a keyframe
/// with enough baseline fixed, so it stays determined as the person converges.
///
/// Robust updates run as `robustUpdates` says: inline, or off the answer path (deferred or concurrent), when a finished
/// one is joined on a later frame: its correspondences, found on its own frame, are carried to the newest frame by
/// tracking, and only then answer.
///
/// Invariants: a tracked frame is answered only from correspondences that passed the forward-backward check and fit
/// one model; a frame is never answered from a robust update older than the tracks it is joined with; otherwise the
/// last answer is held with its age (or the sensor guides alone), with the reason. Not safe for concurrent use: feed it
/// from one task at a time (a concurrent robust update touches none of its state).
public final class GuidanceSession {
    public let estimator: PoseEstimator
    /// The reference as given. With its camera unknown, every robust update estimates the camera on its own, and the
    /// session works on their combination (`SharedReferenceCamera`, as `rephoto evaluate` does), or on the first
    /// answer until there are `pose.referenceFocal.shareMinFrames` (`working`).
    public let reference: ReferenceFrame
    private var held: ReferenceFrame?
    private var working: ReferenceFrame { held ?? reference }
    /// The current frames' camera (at any resolution: adapted to each frame).
    public let camera: CameraIntrinsics?
    /// The phone's attitude when the reference was taken: with each frame's, the sensor path runs beside vision.
    public let referenceAttitude: Attitude?
    public let robustUpdates: RobustUpdates
    public private(set) var structure: SceneStructure?

    private var config: SessionConfig { estimator.config.session }
    private var frameCount = 0
    private var previous: FramePyramid?
    private var tracks = Tracks()
    private var seededTracks = 0
    private var dueNext: SessionStatus.Trigger?
    private var robustFrame: (index: Int, timestamp: Double?)?
    private var last: (frame: SessionFrame, index: Int, timestamp: Double?)?
    /// The source of the last frame answered (nil before any): the state `AnswerSource.next` goes on from.
    public private(set) var source: AnswerSource?
    private var lastTimestamp: Double?
    /// The robust update in flight (deferred or concurrent), at most one; whether one was ever started.
    private var pending: RobustUpdateJob?
    private var attempted = false
    /// An unknown reference camera: its robust updates' answers combined, and the camera the structure was fixed under.
    private var sessionCamera: SessionReferenceCamera
    private var structureCamera: EstimatedReferenceCamera?

    public init(estimator: PoseEstimator, reference: ReferenceFrame, camera: CameraIntrinsics?, referenceAttitude: Attitude? = nil,
                robustUpdates: RobustUpdates = .inline) {
        self.estimator = estimator
        self.reference = reference
        self.camera = camera
        self.referenceAttitude = referenceAttitude
        self.robustUpdates = robustUpdates
        sessionCamera = estimator.referenceCameraPolicy.session()
    }

    /// The reference's camera the session works on: an unknown one's estimate (combined over `frames` robust updates
    /// once that holds); nil while none is determined, or when the camera was given.
    public var referenceCamera: EstimatedReferenceCamera? { working.heldEstimate }

    /// Whether a robust update is in flight (deferred or concurrent).
    public var robustUpdateRunning: Bool { pending != nil }

    /// The answer for the next frame. Throws only what a single retake would (bad input, or nothing to answer with:
    /// vision failed on the first frames and no attitude was given).
    public func process(_ image: Image, attitude: Attitude? = nil, timestamp: Double? = nil) throws -> SessionFrame {
        let start = ContinuousClock.now
        let index = frameCount
        if let timestamp {
            guard timestamp.isFinite, abs(timestamp) <= 1e12 else {
                throw RephotoError.badInput("frame \(index): timestamp \(timestamp) is not a number of seconds within ±1e12")
            }
            if let previous = lastTimestamp, timestamp < previous {
                throw RephotoError.badInput("frame \(index): timestamp \(timestamp) s is before the previous frame's \(previous) s: a session's clock runs forwards")
            }
            lastTimestamp = timestamp
        }
        frameCount += 1
        let attitudes = referenceAttitude.flatMap { reference in attitude.map { AttitudePair(reference: reference, current: $0) } }
        let pyramid = try FramePyramid(image, config: config.tracking)
        defer { previous = pyramid }
        let now = Frame(image: image, index: index, timestamp: timestamp, attitudes: attitudes, pyramid: pyramid,
                        camera: try camera.map { try $0.adapted(to: image.fullSize) }, start: start)
        return robustUpdates.lag == 0 ? try processInline(now) : try processJoined(now)
    }

    /// What one frame's processing works from.
    private struct Frame {
        var image: Image
        var index: Int
        var timestamp: Double?
        var attitudes: AttitudePair?
        var pyramid: FramePyramid
        /// The current camera adapted to this frame.
        var camera: CameraIntrinsics?
        var start: ContinuousClock.Instant
        var size: ImageSize { image.fullSize }
    }

    /// What one frame's steps found (`evidence`, from which `AnswerSource.next` chooses the answer's source), and what
    /// each answer would be made of.
    private struct Attempt {
        var evidence: AnswerSource.Evidence
        /// The trigger the frame reports: the robust update that ran on it or was started on it.
        var trigger: SessionStatus.Trigger?
        /// What became of the frame's steps, in words: the reason the frame reports.
        var notes: [String] = []
        /// An accepted robust update's answer on this frame, and its time.
        var robust: (result: PoseResult, step: Step?, milliseconds: Double)?
        /// Tracking's answer (or a joined update's, carried to this frame), and the joined update's time.
        var tracked: (result: PoseResult, step: Step?)?
        var joinedMilliseconds: Double?
        /// Why vision did not answer: thrown when nothing else answers either.
        var failure: RephotoError?

        init(_ now: Frame) { evidence = AnswerSource.Evidence(sensor: now.attitudes != nil) }
    }

    /// The robust update on the frame that needs it, before the frame is answered.
    private func processInline(_ now: Frame) throws -> SessionFrame {
        var attempt = Attempt(now)
        attempt.trigger = dueTrigger(now)
        // Tracking, unless the frame is due a robust update anyway (a scheduled one tracks only when that update fails).
        let untracked = tracks
        if previous != nil, attempt.trigger == nil {
            try track(now, &attempt)
            attempt.trigger = attempt.evidence.tracking.trigger
        }
        if attempt.evidence.tracking != .answered { try robustNow(now, &attempt, untracked: untracked) }
        return try conclude(attempt, now)
    }

    /// Tracks the current correspondences into this frame: its answer, or why there is none.
    private func track(_ now: Frame, _ attempt: inout Attempt) throws {
        let (answer, tooFew) = try trackedAnswer(now)
        attempt.tracked = answer
        attempt.evidence.tracking = answer != nil ? .answered : tooFew ? .tooFew : .drift
    }

    /// A robust update on this frame; when it fails, a scheduled one tracks instead (from `untracked`).
    private func robustNow(_ now: Frame, _ attempt: inout Attempt, untracked: Tracks) throws {
        let started = ContinuousClock.now
        do {
            let update = try robustWork(now)()
            let robustMs = milliseconds(since: started)
            let adopted = try adopt(update, frame: now.index, camera: now.camera)
            tracks = adopted.seeds
            seededTracks = tracks.count
            robustFrame = (now.index, now.timestamp)
            attempt.robust = (update.result, adopted.step, robustMs)
            attempt.evidence.robust = .accepted
        } catch let error as RephotoError where error.kind == .estimationFailed {
            attempt.evidence.robust = .failed(error.refusal?.cause)
            if attempt.trigger == .schedule {
                tracks = untracked
                try track(now, &attempt)
                if attempt.evidence.tracking == .answered {
                    dueNext = .schedule
                    attempt.notes.append("the scheduled robust update failed (\(error.message)): answered from tracking")
                    return
                }
            }
            tracks = Tracks()
            attempt.notes.append("vision failed on this frame (\(error.message))")
            attempt.failure = error
        }
    }

    /// Robust updates off the answer path: a finished one is joined, every frame is answered from tracking (or held),
    /// and a due one is started on this frame unless one is in flight.
    private func processJoined(_ frame: Frame) throws -> SessionFrame {
        var now = frame
        var attempt = Attempt(now)
        let resized = previous.map { $0.size != now.size } ?? false
        if resized {
            tracks = Tracks()
            if let job = pending {
                pending = nil
                attempt.notes.append("the frame size changed: the robust update of frame \(job.frame) was dropped")
            }
        }
        // 1. A finished robust update, carried by tracking from its frame to this one; never one older than the update
        // the tracks rest on.
        if let job = pending, let robustFrame, job.frame <= robustFrame.index {
            pending = nil
        }
        if let job = pending, let outcome = job.outcome, now.index >= job.frame + (robustUpdates.lag ?? 0) {
            pending = nil
            switch outcome {
            case .done(let update, let ms):
                attempt.joinedMilliseconds = ms
                attempt.evidence.joined = .done(frame: job.frame)
                let joined = try join(update, job: job, now)
                if let answer = joined.answer {
                    attempt.tracked = answer
                    attempt.evidence.tracking = .answered
                }
                if let note = joined.note {
                    attempt.notes.append(note)
                    dueNext = .drift
                }
            case .failed(let error, let ms):
                attempt.joinedMilliseconds = ms
                attempt.evidence.joined = .failed(frame: job.frame, kind: error.kind)
                attempt.notes.append("the robust update of frame \(job.frame) failed (\(error.message))")
                dueNext = dueNext ?? job.trigger
            }
        }
        // 2. Otherwise tracked from the previous frame.
        var due: SessionStatus.Trigger?
        if attempt.evidence.tracking != .answered {
            due = dueTrigger(now)
            if previous != nil, !resized, tracks.count > 0 {
                try track(now, &attempt)
                if attempt.evidence.tracking != .answered {
                    due = attempt.evidence.tracking.trigger
                    tracks = Tracks()
                }
            }
        } else {
            dueNext = nil
        }
        // 3. A robust update when one is due and none is in flight: inline when `AnswerSource.robustInline` says so,
        // else started here.
        if let due, pending == nil {
            if attempt.evidence.tracking != .answered,
               AnswerSource.robustInline(after: source, due: due, sensor: now.attitudes != nil, attempted: attempted) {
                attempted = true
                attempt.trigger = due
                try robustNow(now, &attempt, untracked: tracks)
                return try conclude(attempt, now)
            }
            attempted = true
            let job = RobustUpdateJob(frame: now.index, timestamp: now.timestamp, trigger: due, pyramid: now.pyramid, work: robustWork(now))
            switch robustUpdates {
            case .concurrent(let launcher):
                if launcher.launch(job) {
                    pending = job
                    attempt.trigger = due
                } else {
                    dueNext = due
                    attempt.notes.append("no pipeline was free for a robust update: it is tried again on the next frame")
                }
            default:
                // Computed here, as it would be elsewhere: its time is not this frame's.
                let started = ContinuousClock.now
                job.run()
                now.start += ContinuousClock.now - started
                pending = job
                attempt.trigger = due
            }
        }
        if attempt.evidence.tracking != .answered {
            let running = pending.map { ["a robust update of frame \($0.frame) is running"] } ?? []
            attempt.notes += (due.map { [Self.lost($0)] } ?? []) + running
            attempt.failure = RephotoError.estimationFailed(attempt.notes.joined(separator: "; "))
        }
        return try conclude(attempt, now)
    }

    /// The frame's answer, from the source `AnswerSource.next` chooses for what its steps found.
    private func conclude(_ attempt: Attempt, _ now: Frame) throws -> SessionFrame {
        let next = AnswerSource.next(after: source, attempt.evidence)
        let reason = attempt.notes.isEmpty ? nil : attempt.notes.joined(separator: "; ")
        let failure = attempt.failure ?? RephotoError(.internal, "frame \(now.index): no answer and no failure recorded")
        var frame: SessionFrame
        switch next {
        case .robust?:
            guard let robust = attempt.robust else { preconditionFailure("an accepted robust update has its answer") }
            frame = SessionFrame(session: status(now, source: .robust, trigger: attempt.trigger), result: robust.result)
            frame.session.step = robust.step
            frame.session.robustMilliseconds = robust.milliseconds
            frame.session.reason = reason
            answered(&frame, now)
        case .tracked?:
            guard let answer = attempt.tracked else { preconditionFailure("tracking that answered has its answer") }
            frame = tracked(answer, now, trigger: attempt.trigger, reason: reason, robustMilliseconds: attempt.joinedMilliseconds)
        case .held?:
            guard let last else { preconditionFailure("a holdable source was answered before") }
            frame = held(last, now, trigger: attempt.trigger, why: attempt.notes.joined(separator: "; "))
        case .sensor?:
            guard let attitudes = now.attitudes else { preconditionFailure("the sensor answers with an attitude") }
            let sensor = try estimator.sensorOnly(reference: working, current: now.image, camera: camera, attitudes: attitudes, failure: failure)
            frame = SessionFrame(session: status(now, source: .sensor, trigger: attempt.trigger), sensorOnly: sensor)
            frame.session.reason = "\(attempt.notes.joined(separator: "; ")): guidance from the sensor path only"
            frame.session.milliseconds = milliseconds(since: now.start)
        case nil:
            throw failure
        }
        frame.evidence = attempt.evidence
        source = next
        return frame
    }

    /// Why this frame is due a robust update before tracking is tried (its size changed, nothing is tracked, the
    /// schedule, or what an earlier frame asked for); nil when none is. Clears `dueNext`.
    private func dueTrigger(_ now: Frame) -> SessionStatus.Trigger? {
        defer { dueNext = nil }
        if let previous, previous.size != now.size { return .resized }
        if previous == nil || tracks.count == 0 { return .start }
        if let robustFrame, now.index - robustFrame.index >= config.robustEvery { return .schedule }
        return dueNext
    }

    /// Why tracking gave no answer, in words.
    private static func lost(_ trigger: SessionStatus.Trigger) -> String {
        switch trigger {
        case .support: "tracking kept too few correspondences"
        case .drift: "the tracked correspondences fit no one model"
        case .start: "nothing is tracked yet"
        case .resized: "the frame size changed"
        case .schedule, .movedOn, .camera: "tracking gave no answer"
        }
    }

    /// A finished robust update joins the session (`adopt`), and its correspondences, carried from its frame to this
    /// one by tracking, answer this frame. A note (and no answer) when they cannot be carried or fit no one model: the
    /// previous tracks are kept then, and the structure and camera keep what the update gave them.
    private func join(_ update: RobustUpdate, job: RobustUpdateJob, _ now: Frame) throws -> (answer: (result: PoseResult, step: Step?)?, note: String?) {
        let adopted = try adopt(update, frame: job.frame, camera: now.camera)
        let seeds = adopted.seeds
        var carried = seeds
        if job.pyramid !== now.pyramid { carried.keep(try job.pyramid.track(seeds.current, to: now.pyramid, config: config.tracking)) }
        let needed = max(config.minTracks, Int((config.minTrackedFraction * Double(seeds.count)).rounded(.up)))
        guard carried.count >= needed else {
            return (nil, "only \(carried.count) of the \(seeds.count) correspondences of frame \(job.frame)'s robust update were tracked to this frame (need \(needed))")
        }
        let kept = tracks
        tracks = carried
        do {
            let answer = try answerFromTracks(now)
            seededTracks = seeds.count
            robustFrame = (job.frame, job.timestamp)
            return (answer, nil)
        } catch let error as RephotoError where error.kind == .estimationFailed {
            tracks = kept
            return (nil, "frame \(job.frame)'s robust update, carried to this frame, fits no one model (\(error.message))")
        }
    }

    /// The robust update's work on this frame, runnable on any thread: it reads nothing of the session's state. With the
    /// reference's camera unknown, the pose is solved on the session's camera once there is one (so that it may fix the
    /// structure), and the matches' own camera is estimated beside it, an answer that joins the session's camera.
    private func robustWork(_ now: Frame) -> @Sendable () throws -> RobustUpdate {
        let estimator = estimator, reference = reference, working = working, camera = camera
        let image = now.image, attitudes = now.attitudes, currentCamera = now.camera
        return {
            let result = try estimator.estimate(reference: working, current: image, camera: camera, attitudes: attitudes)
            guard reference.cameraUnknown, result.pose != nil else { return RobustUpdate(result: result, cameraAnswer: nil) }
            guard working.heldEstimate != nil, let currentCamera, let inliers = result.counts.inliersEssential else {
                return RobustUpdate(result: result, cameraAnswer: estimator.referenceCameraPolicy.answer(result))
            }
            let own = try estimator.referenceCameraPolicy.frame(result.correspondences, reference: reference, currentCamera: currentCamera, currentSize: image.fullSize)
            let answer = own.determined == nil ? nil : own.estimate.map { SharedReferenceCamera.Answer(camera: $0, inliers: inliers) }
            return RobustUpdate(result: result, cameraAnswer: answer)
        }
    }

    /// A frame answered from tracks (or a joined update): its status, the moved-on check, the common fields.
    private func tracked(_ answer: (result: PoseResult, step: Step?), _ now: Frame, trigger: SessionStatus.Trigger?, reason: String?,
                         robustMilliseconds: Double?) -> SessionFrame {
        var frame = SessionFrame(session: status(now, source: .tracked, trigger: trigger), result: answer.result)
        frame.session.step = answer.step
        frame.session.robustMilliseconds = robustMilliseconds
        frame.session.reason = reason
        // The view has moved on from the robust update's: the next frame gets one.
        if tracks.medianShift(width: Double(now.size.width)) > config.maxTrackShiftPercent { dueNext = .movedOn }
        answered(&frame, now)
        return frame
    }

    /// The last answer, repeated on a frame vision did not answer, with its age and why.
    private func held(_ last: (frame: SessionFrame, index: Int, timestamp: Double?), _ now: Frame, trigger: SessionStatus.Trigger?,
                      why: String) -> SessionFrame {
        var frame = last.frame
        frame.session.source = .held
        frame.session.frame = now.index
        frame.session.timestamp = now.timestamp
        frame.session.trigger = trigger
        frame.session.reason = "\(why): the answer of frame \(last.index) repeated"
        frame.session.ageFrames = now.index - last.index + last.frame.session.ageFrames
        frame.session.ageSeconds = now.timestamp.flatMap { t in last.timestamp.map { t - $0 + (last.frame.session.ageSeconds ?? 0) } }
        frame.session.robustMilliseconds = nil
        frame.session.milliseconds = milliseconds(since: now.start)
        frame.session.tracks = 0
        return frame
    }

    private func status(_ now: Frame, source: SessionStatus.Source, trigger: SessionStatus.Trigger?) -> SessionStatus {
        SessionStatus(frame: now.index, timestamp: now.timestamp, source: source, trigger: trigger, ageFrames: 0, ageSeconds: nil,
                      tracks: tracks.count, seededTracks: seededTracks, structurePoints: structure?.points.count ?? 0,
                      keyframe: structure?.keyframe, step: nil, converged: false, actions: [], reason: nil, milliseconds: 0)
    }

    /// The fields every answered frame fills last: its age, tracks, structure, converged and hints, time.
    private func answered(_ frame: inout SessionFrame, _ now: Frame) {
        if frame.session.source != .robust, let robustFrame {
            frame.session.ageFrames = now.index - robustFrame.index
            frame.session.ageSeconds = now.timestamp.flatMap { t in robustFrame.timestamp.map { t - $0 } }
        } else if frame.session.source == .robust, now.timestamp != nil {
            frame.session.ageSeconds = 0
        }
        frame.session.tracks = tracks.count
        frame.session.seededTracks = seededTracks
        frame.session.structurePoints = structure?.points.count ?? 0
        frame.session.keyframe = structure?.keyframe
        finish(&frame)
        frame.session.milliseconds = milliseconds(since: now.start)
        last = (frame, now.index, now.timestamp)
    }

    /// Tracks the current correspondences from the previous frame into this one and answers from them; nil when too
    /// few survived (`tooFew`) or they fit no one model.
    private func trackedAnswer(_ now: Frame) throws -> (answer: (result: PoseResult, step: Step?)?, tooFew: Bool) {
        guard let previous else { return (nil, false) }
        tracks.keep(try previous.track(tracks.current, to: now.pyramid, config: config.tracking))
        if tracks.count < max(config.minTracks, Int((config.minTrackedFraction * Double(seededTracks)).rounded(.up))) { return (nil, true) }
        do {
            return (try answerFromTracks(now), false)
        } catch let error as RephotoError where error.kind == .estimationFailed {
            return (nil, false)
        }
    }

    /// Converged and the actions (and so the hints), from the step and the navigation.
    private func finish(_ frame: inout SessionFrame) {
        guard let result = frame.result else { return }
        let step = frame.session.step
        let rotation = result.pose?.rotationDegrees
        frame.session.converged = step?.arrived == true && rotation.map { $0 <= config.convergedDegrees } == true
        let steps = step?.actions ?? []
        let turns = step?.determined == true
            ? result.navigation.makeActions(tolerancePercent: estimator.config.navigation.alignedTolerancePercent, moves: false)
            : result.navigation.actions
        frame.session.actions = result.navigation.aligned && frame.session.converged ? [] : steps + (result.navigation.aligned ? [] : turns)
    }

    /// A robust update's result, found on session frame `k`, joins the session: an unknown camera's answer joins the
    /// session's camera; its correspondences fix the structure (when none is fixed and its camera agrees with the
    /// session's) or grow it at frame k's placement. Returns the tracks it seeds, at their frame-k positions, and the
    /// step at frame k.
    private func adopt(_ update: RobustUpdate, frame k: Int, camera currentCamera: CameraIntrinsics?) throws -> (seeds: Tracks, step: Step?) {
        let result = update.result
        let agrees = joinCamera(update)
        let pairs = result.correspondences
        let verified = pairs.reference.indices.filter { result.homographyInliers[$0] || result.essentialInliers?[$0] == true }
        let order = pairs.matches.count == pairs.count ? pairs.reordered(verified).bestFirst(by: .ratio).map { verified[$0] } : verified
        let chosen = Array(order.prefix(config.maxTracks))
        let seeds = Tracks(keypoints: chosen.map { pairs.matches.isEmpty ? -1 : pairs.matches[$0].referenceIndex },
                           reference: chosen.map { pairs.reference[$0] }, current: chosen.map { pairs.current[$0] },
                           planar: chosen.map { result.homographyInliers[$0] })

        guard let referenceCamera = working.camera, let currentCamera, !pairs.matches.isEmpty else { return (seeds, nil) }
        var step: Step?
        if structure == nil, agrees, let pose = result.pose, let translation = pose.translation, let inliers = result.essentialInliers {
            let kept = pairs.reference.indices.filter { inliers[$0] }
            let points = try SceneStructure.triangulate(reference: kept.map { pairs.reference[$0] }, current: kept.map { pairs.current[$0] },
                                                        referenceCamera: referenceCamera, currentCamera: currentCamera,
                                                        rotation: pose.rotation, translation: translation,
                                                        minParallaxDegrees: config.minTriangulationDegrees,
                                                        maxReprojectionPixels: config.placementThreshold)
            var fixed: [Int: SIMD3<Double>] = [:]
            for (k, i) in kept.enumerated() { if let X = points[k] { fixed[pairs.matches[i].referenceIndex] = X } }
            structure = SceneStructure.fixed(fixed, keyframe: k, minimum: config.minStructurePoints)
            structureCamera = working.heldEstimate
        }
        // The frame's own answer stands whether or not it can be placed: without a placement it has no step.
        let placement: CameraPlacement?
        do {
            placement = try place(pairs, camera: currentCamera, seed: UInt64(k))
        } catch let error as RephotoError where error.kind == .estimationFailed {
            placement = nil
        }
        if let placement, let structure {
            step = Step(placement: placement, structure: structure, config: config)
            try grow(pairs, placement: placement, referenceCamera: referenceCamera, currentCamera: currentCamera)
        }
        return (seeds, step)
    }

    /// An unknown reference camera: the update's own answer joins the session's camera (`SessionReferenceCamera`), which
    /// the session then works on. A structure fixed under a camera the session's has since moved from by more than their
    /// joint 1 sigma is dropped, to be fixed again. Returns whether the update's pose was solved on a camera that agrees
    /// with the session's: only such a pose may fix a structure.
    private func joinCamera(_ update: RobustUpdate) -> Bool {
        guard reference.cameraUnknown else { return true }
        if let answer = update.cameraAnswer { sessionCamera.join(answer) }
        guard let camera = sessionCamera.current else { return false }
        held = reference.holding(camera)
        if structure != nil, let fixedUnder = structureCamera, !sessionCamera.agrees(with: fixedUnder) {
            structure = nil
            structureCamera = nil
            dueNext = dueNext ?? .camera
        }
        return update.result.referenceCamera.map { sessionCamera.agrees(with: $0) } ?? false
    }

    /// Adds this frame's correspondences not yet in the structure, triangulated at the frame's placement.
    private func grow(_ pairs: Correspondences, placement: CameraPlacement, referenceCamera: CameraIntrinsics,
                      currentCamera: CameraIntrinsics) throws {
        guard var grown = structure else { return }
        let fresh = pairs.reference.indices.filter { grown.points[pairs.matches[$0].referenceIndex] == nil }
        guard !fresh.isEmpty else { return }
        let points = try SceneStructure.triangulate(reference: fresh.map { pairs.reference[$0] }, current: fresh.map { pairs.current[$0] },
                                                    referenceCamera: referenceCamera, currentCamera: currentCamera,
                                                    rotation: placement.rotation, translation: placement.translation,
                                                    minParallaxDegrees: config.minTriangulationDegrees,
                                                    maxReprojectionPixels: config.placementThreshold)
        for (k, i) in fresh.enumerated() { if let X = points[k] { grown.points[pairs.matches[i].referenceIndex] = X } }
        structure = grown
    }

    /// The frame placed among the structure by those correspondences whose reference keypoint is in it; nil without a
    /// structure or with too few of them. Throws `.estimationFailed` when they do not fit one camera (drift).
    private func place(_ pairs: Correspondences, camera: CameraIntrinsics, seed: UInt64) throws -> CameraPlacement? {
        guard let structure, pairs.matches.count == pairs.count else { return nil }
        let known = pairs.reference.indices.filter { structure.points[pairs.matches[$0].referenceIndex] != nil }
        guard known.count >= 6 else { return nil }
        let placement = try CameraPlacement.place(points: known.map { structure.points[pairs.matches[$0].referenceIndex]! },
                                                  pixels: known.map { pairs.current[$0] }, camera: camera,
                                                  thresholdPixels: config.placementThreshold, seed: seed)
        guard Double(placement.inlierCount) >= config.minTrackedFraction * Double(known.count), placement.inlierCount >= 6 else {
            throw RephotoError.estimationFailed("only \(placement.inlierCount) of \(known.count) structure points fit one camera")
        }
        return placement
    }

    /// A tracked frame's answer: the homography of the tracked correspondences for the navigation, and the pose from
    /// the structure (or, before there is one, from the essential matrix of the tracked correspondences).
    private func answerFromTracks(_ now: Frame) throws -> (result: PoseResult, step: Step?) {
        let size = now.size, currentCamera = now.camera, attitudes = now.attitudes
        let config = estimator.config
        var timings = StageTimings(detectReference: 0)
        var start = ContinuousClock.now
        let pairs = tracks.correspondences
        // On the robust update's homography inliers when enough survive: off the plane it chose, a homography of
        // every track would settle elsewhere in a deep scene, and the navigation would jump between the two.
        let planar = tracks.planar.indices.filter { tracks.planar[$0] }
        let basis = planar.count >= config.minimumInliers ? planar : Array(pairs.reference.indices)
        let fitted = try HomographyEstimate.estimate(pairs.reordered(basis), config: config.homography)
        var flags = [Bool](repeating: false, count: pairs.count)
        for (k, i) in basis.enumerated() { flags[i] = fitted.inliers[k] }
        let homography = HomographyEstimate(matrix: fitted.matrix, inliers: flags, inlierCount: fitted.inlierCount)
        timings.homography = milliseconds(since: start)
        let needed = config.minimumInliers
        let homographyFailure = homography.inlierCount >= needed ? nil
            : "too few homography inliers among the tracked correspondences: \(homography.inlierCount) of \(pairs.count) (need \(needed))"
        let reference = working
        let sensor = try attitudes.map { try estimator.sensorPath($0, reference: reference, currentSize: size, currentCamera: currentCamera) }
        var counts = PoseResult.Counts(keypointsReference: reference.features.count, keypointsCurrent: 0, matches: pairs.count,
                                       inliersHomography: homography.inlierCount, inliersEssential: nil)
        var pose: RelativePose?, poseFailure: PoseEstimator.PoseFailure?, poseRefusal: PoseRefusal?, step: Step?
        start = ContinuousClock.now
        if let referenceCamera = reference.camera, let currentCamera {
            if let placement = try place(pairs, camera: currentCamera, seed: UInt64(frameCount)), let structure {
                let found = Step(placement: placement, structure: structure, config: self.config)
                step = found
                pose = RelativePose(placement: placement, pairs: pairs, structure: structure, step: found, config: config.pose)
            } else {
                do {
                    pose = try RelativePose.estimate(pairs, referenceCamera: referenceCamera, currentCamera: currentCamera, homography: homography,
                                                     config: config.pose, sensorRotation: sensor?.rotation, sensorVertical: sensor?.referenceVertical)
                } catch let error as RephotoError where error.kind == .estimationFailed {
                    poseFailure = .failed(error.message)
                    poseRefusal = error.refusal
                }
            }
            counts.inliersEssential = pose?.essentialInliers
            timings.essential = milliseconds(since: start)
        } else if reference.cameraUnknown, currentCamera != nil {
            poseFailure = .failed("the reference's camera is not determined yet: a robust update estimates it from its matches")
        } else {
            poseFailure = .noIntrinsics
        }
        let parts = PoseEstimator.Parts(pairs: pairs, homography: homography, homographyFailure: homographyFailure, pose: pose,
                                        poseFailure: poseFailure, poseRefusal: poseRefusal, sensor: sensor, counts: counts,
                                        warnings: pose?.warnings ?? [], alignmentWarnings: [])
        var result = try estimator.assemble(parts, reference: reference, currentSize: size, currentCamera: currentCamera, attitudes: attitudes,
                                            keypoints: "tracked correspondences: \(pairs.count)", timings: timings,
                                            lensZoom: PoseEstimator.lensZoom(nil, reference: reference))
        result.referenceCamera = reference.heldEstimate
        result.referenceBorder = reference.border
        return (result, step)
    }
}

/// Correspondences carried by tracking: the reference keypoint (its index and pixels) and where it is now.
struct Tracks {
    var keypoints: [Int] = []
    var reference: [Point2] = []
    var current: [Point2] = []
    /// Where each was when the robust update seeded it.
    var origin: [Point2] = []
    /// Whether the robust update's homography kept it.
    var planar: [Bool] = []

    init() {}

    init(keypoints: [Int], reference: [Point2], current: [Point2], planar: [Bool]) {
        (self.keypoints, self.reference, self.current, origin, self.planar) = (keypoints, reference, current, current, planar)
    }

    var count: Int { current.count }

    /// Keeps the tracked ones at their new positions.
    mutating func keep(_ moved: [Point2?]) {
        let kept = moved.indices.filter { moved[$0] != nil }
        keypoints = kept.map { keypoints[$0] }
        reference = kept.map { reference[$0] }
        origin = kept.map { origin[$0] }
        planar = kept.map { planar[$0] }
        current = kept.map { moved[$0]! }
    }

    var correspondences: Correspondences {
        Correspondences(matches: keypoints.enumerated().map { Match(referenceIndex: $0.element, currentIndex: $0.offset, distance: 0) },
                        reference: reference, current: current)
    }

    /// Median distance moved since seeding, percent of `width`.
    func medianShift(width: Double) -> Double {
        guard count > 0 else { return 0 }
        let shifts = zip(current, origin).map { $0.distance(to: $1) }.sorted()
        return shifts[shifts.count / 2] / width * 100
    }
}

extension RelativePose {
    /// A tracked frame's pose from its placement among the structure: the translation's direction is that of the
    /// step's t, reported when its 1-sigma is under `pose.maxTranslationSigma`.
    init(placement: CameraPlacement, pairs: Correspondences, structure: SceneStructure, step: Step, config: PoseConfig) {
        let t = placement.translation, length = (t * t).sum().squareRoot()
        let determined = length > 0 && step.directionSigmaDegrees <= config.maxTranslationSigma
        var flags = [Bool](repeating: false, count: pairs.count)
        let known = pairs.reference.indices.filter { structure.points[pairs.matches[$0].referenceIndex] != nil }
        for (k, i) in known.enumerated() where k < placement.inliers.count { flags[i] = placement.inliers[k] }
        self.init(rotation: placement.rotation, pureRotation: nil, translation: determined ? t / length : nil,
                  translationUndetermined: determined ? nil : .uncertain, rotationOnly: false, rotationSource: .placement,
                  essentialInliers: placement.inlierCount, inFront: placement.inlierCount, sampsonRmsPixels: placement.rmsPixels,
                  inliers: flags, evidence: nil, warnings: [])
    }
}
