import Foundation

/// Guidance over a stream of frames, as the published systems do it (Bae et al. 2010, Shi et al. 2018): a robust
/// update (the single-pair pipeline) on a schedule or when tracking fails, pyramidal Lucas-Kanade tracking of its
/// correspondences in between, and the step to the reference's vantage point measured in a structure that a keyframe
/// with enough baseline fixed, so it stays determined as the person converges.
///
/// Invariants: a tracked frame is answered only from correspondences that passed the forward-backward check and fit
/// one model; otherwise the frame gets a robust update, and when that fails too the last answer is held with its age
/// (or the sensor guides alone), with the reason. Not safe for concurrent use: feed it from one task at a time.
public final class GuidanceSession {
    public let estimator: PoseEstimator
    /// The reference as given; with its camera unknown, the first robust update that determines the camera
    /// (`pose.referenceFocal`) fixes it for the rest of the session (`working`), so the structure and the tracked
    /// frames' poses rest on one camera.
    public let reference: ReferenceFrame
    private var held: ReferenceFrame?
    private var working: ReferenceFrame { held ?? reference }
    /// The current frames' camera (at any resolution: adapted to each frame).
    public let camera: CameraIntrinsics?
    /// The phone's attitude when the reference was taken: with each frame's, the sensor path runs beside vision.
    public let referenceAttitude: Attitude?
    public private(set) var structure: SceneStructure?

    private var config: SessionConfig { estimator.config.session }
    private var frameCount = 0
    private var previous: FramePyramid?
    private var tracks = Tracks()
    private var seededTracks = 0
    private var dueNext: SessionStatus.Trigger?
    private var robustFrame: (index: Int, timestamp: Double?)?
    private var last: (frame: SessionFrame, index: Int, timestamp: Double?)?
    private var lastTimestamp: Double?

    public init(estimator: PoseEstimator, reference: ReferenceFrame, camera: CameraIntrinsics?, referenceAttitude: Attitude? = nil) {
        self.estimator = estimator
        self.reference = reference
        self.camera = camera
        self.referenceAttitude = referenceAttitude
    }

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
        let currentCamera = try camera.map { try $0.adapted(to: image.fullSize) }
        let pyramid = try FramePyramid(image, config: config.tracking)
        defer { previous = pyramid }

        var trigger: SessionStatus.Trigger?
        if let previous, previous.size != image.fullSize {
            trigger = .resized
        } else if previous == nil || tracks.count == 0 {
            trigger = .start
        } else if let robustFrame, index - robustFrame.index >= config.robustEvery {
            trigger = .schedule
        } else if let due = dueNext {
            trigger = due
        }
        dueNext = nil

        // Tracking, unless the frame is due a robust update anyway; a scheduled one tracks only when that update
        // fails, to answer from tracking instead. nil: too few tracks survived, or they fit no one model.
        let untracked = tracks
        func trackedAnswer() throws -> (answer: (result: PoseResult, step: Step?)?, tooFew: Bool) {
            guard let previous else { return (nil, false) }
            tracks = untracked
            tracks.keep(try previous.track(tracks.current, to: pyramid, config: config.tracking))
            if tracks.count < max(config.minTracks, Int((config.minTrackedFraction * Double(seededTracks)).rounded(.up))) { return (nil, true) }
            do {
                return (try answerFromTracks(image.fullSize, currentCamera: currentCamera, attitudes: attitudes), false)
            } catch let error as RephotoError where error.kind == .estimationFailed {
                return (nil, false)
            }
        }
        var tracked: (result: PoseResult, step: Step?)?
        if previous != nil, trigger == nil {
            let (answer, tooFew) = try trackedAnswer()
            tracked = answer
            if answer == nil { trigger = tooFew ? .support : .drift }
        }

        var status = SessionStatus(frame: index, timestamp: timestamp, source: .tracked, trigger: trigger, ageFrames: 0, ageSeconds: nil,
                                   tracks: tracks.count, seededTracks: seededTracks, structurePoints: structure?.points.count ?? 0,
                                   keyframe: structure?.keyframe, step: nil, converged: false, actions: [], reason: nil, milliseconds: 0)
        var frame: SessionFrame
        if let trigger {
            status.source = .robust
            do {
                let robust = try robustUpdate(image, index: index, timestamp: timestamp, currentCamera: currentCamera, attitudes: attitudes)
                frame = SessionFrame(session: status, result: robust.result)
                frame.session.step = robust.step
            } catch let error as RephotoError where error.kind == .estimationFailed {
                if trigger == .schedule { tracked = try trackedAnswer().answer }
                if let tracked, trigger == .schedule {
                    frame = SessionFrame(session: status, result: tracked.result)
                    frame.session.source = .tracked
                    frame.session.step = tracked.step
                    frame.session.reason = "the scheduled robust update failed (\(error.message)): answered from tracking"
                    dueNext = .schedule
                } else if let last {
                    tracks = Tracks()
                    frame = last.frame
                    frame.session.source = .held
                    frame.session.frame = index
                    frame.session.timestamp = timestamp
                    frame.session.trigger = trigger
                    frame.session.reason = "vision failed on this frame (\(error.message)): the answer of frame \(last.index) repeated"
                    frame.session.ageFrames = index - last.index + last.frame.session.ageFrames
                    frame.session.ageSeconds = timestamp.flatMap { t in last.timestamp.map { t - $0 + (last.frame.session.ageSeconds ?? 0) } }
                    frame.session.milliseconds = milliseconds(since: start)
                    frame.session.tracks = 0
                    return frame
                } else if let attitudes {
                    tracks = Tracks()
                    let sensor = try estimator.sensorOnly(reference: working, current: image, camera: camera, attitudes: attitudes, failure: error)
                    frame = SessionFrame(session: status, sensorOnly: sensor)
                    frame.session.source = .sensor
                    frame.session.reason = "vision failed on this frame (\(error.message)): guidance from the sensor path only"
                    frame.session.milliseconds = milliseconds(since: start)
                    return frame
                } else {
                    tracks = Tracks()
                    throw error
                }
            }
        } else {
            frame = SessionFrame(session: status, result: tracked!.result)
            frame.session.step = tracked!.step
            // The view has moved on from the robust update's: the next frame gets one.
            if tracks.medianShift(width: Double(image.fullSize.width)) > config.maxTrackShiftPercent { dueNext = .movedOn }
        }
        if frame.session.source != .robust, let robustFrame {
            frame.session.ageFrames = index - robustFrame.index
            frame.session.ageSeconds = timestamp.flatMap { t in robustFrame.timestamp.map { t - $0 } }
        } else if frame.session.source == .robust, timestamp != nil {
            frame.session.ageSeconds = 0
        }
        frame.session.tracks = tracks.count
        frame.session.seededTracks = seededTracks
        frame.session.structurePoints = structure?.points.count ?? 0
        frame.session.keyframe = structure?.keyframe
        finish(&frame)
        frame.session.milliseconds = milliseconds(since: start)
        last = (frame, index, timestamp)
        return frame
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

    /// The full pipeline on this frame; its correspondences seed tracking, its pose may fix the structure, and a
    /// fixed structure places the frame (the step) and grows by its correspondences.
    private func robustUpdate(_ image: Image, index: Int, timestamp: Double?, currentCamera: CameraIntrinsics?,
                              attitudes: AttitudePair?) throws -> (result: PoseResult, step: Step?) {
        let result = try estimator.estimate(reference: working, current: image, camera: camera, attitudes: attitudes)
        if held == nil, reference.cameraUnknown, result.pose != nil, let estimate = result.referenceCamera { held = reference.holding(estimate) }
        let pairs = result.correspondences
        let verified = pairs.reference.indices.filter { result.homographyInliers[$0] || result.essentialInliers?[$0] == true }
        let order = pairs.matches.count == pairs.count ? pairs.reordered(verified).bestFirst(by: .ratio).map { verified[$0] } : verified
        let seeds = Array(order.prefix(config.maxTracks))
        tracks = Tracks(keypoints: seeds.map { pairs.matches.isEmpty ? -1 : pairs.matches[$0].referenceIndex },
                        reference: seeds.map { pairs.reference[$0] }, current: seeds.map { pairs.current[$0] },
                        planar: seeds.map { result.homographyInliers[$0] })
        seededTracks = tracks.count
        robustFrame = (index, timestamp)

        guard let referenceCamera = working.camera, let currentCamera, !pairs.matches.isEmpty else { return (result, nil) }
        var step: Step?
        if structure == nil, let pose = result.pose, let translation = pose.translation, let inliers = result.essentialInliers {
            let kept = pairs.reference.indices.filter { inliers[$0] }
            let points = try SceneStructure.triangulate(reference: kept.map { pairs.reference[$0] }, current: kept.map { pairs.current[$0] },
                                                        referenceCamera: referenceCamera, currentCamera: currentCamera,
                                                        rotation: pose.rotation, translation: translation,
                                                        minParallaxDegrees: config.minTriangulationDegrees,
                                                        maxReprojectionPixels: config.placementThreshold)
            var fixed: [Int: SIMD3<Double>] = [:]
            for (k, i) in kept.enumerated() { if let X = points[k] { fixed[pairs.matches[i].referenceIndex] = X } }
            structure = SceneStructure.fixed(fixed, keyframe: index, minimum: config.minStructurePoints)
        }
        // The frame's own answer stands whether or not it can be placed: without a placement it has no step.
        let placement: CameraPlacement?
        do {
            placement = try place(pairs, camera: currentCamera, seed: UInt64(index))
        } catch let error as RephotoError where error.kind == .estimationFailed {
            placement = nil
        }
        if let placement, let structure {
            step = Step(placement: placement, structure: structure, config: config)
            try grow(pairs, placement: placement, referenceCamera: referenceCamera, currentCamera: currentCamera)
        }
        return (result, step)
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
    private func answerFromTracks(_ size: ImageSize, currentCamera: CameraIntrinsics?,
                                  attitudes: AttitudePair?) throws -> (result: PoseResult, step: Step?) {
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
