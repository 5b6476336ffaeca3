import RephotoShim

/// The essential-matrix estimator's stages as C calls on one set of correspondences (rp_pose_input): the search,
/// the plane's other solution, the sensor-guided search, the evidence of the pose decided and the reproductions. `PoseDecision.search` decides
/// which to run and which answer is the pose; this only carries the arguments across.
struct PoseStages {
    /// The correspondences undistorted once and the parameters checked (rp_pose_problem), for every stage.
    let problem: OpaquePointer
    let runnersUp: Int
    let count: Int

    /// Runs `body` on the stages of these correspondences, sorted by `order` (PROSAC's), with their frames if any.
    static func with<T>(_ pairs: Correspondences, order: [Int], referenceCamera: CameraIntrinsics, currentCamera: CameraIntrinsics,
                        params: rp_robust_params, _ body: (PoseStages) throws -> T) throws -> T {
        let n = try cInt(pairs.count, "correspondence count")
        var refCam = try referenceCamera.shimCamera(), curCam = try currentCamera.shimCamera()
        var params = params
        let runnersUp = Int(params.loop.runners_up)
        let sortedA = Correspondences.flat(pairs.reference, order: order)
        let sortedB = Correspondences.flat(pairs.current, order: order)
        // Without frames (or with frames that were edited out of step with the points, which `frames` being a
        // public var allows) the shim gets null pointers: it reads n frames from each array.
        let frames = pairs.frames.flatMap { $0.reference.count == pairs.count && $0.current.count == pairs.count ? $0 : nil }
        let frameA = frames.map { Correspondences.flat($0.reference, order: order) } ?? []
        let frameB = frames.map { Correspondences.flat($0.current, order: order) } ?? []
        return try sortedA.withUnsafeBufferPointer { a in
            try sortedB.withUnsafeBufferPointer { b in
                try frameA.withUnsafeBufferPointer { fa in
                    try frameB.withUnsafeBufferPointer { fb in
                        try withUnsafePointer(to: &refCam) { rc in
                            try withUnsafePointer(to: &curCam) { cc in
                                try withUnsafePointer(to: &params) { p in
                                    var input = rp_pose_input(reference_xy: a.baseAddress, current_xy: b.baseAddress, n: n,
                                                              reference_camera: rc, current_camera: cc,
                                                              reference_frames: frames != nil ? fa.baseAddress : nil,
                                                              current_frames: frames != nil ? fb.baseAddress : nil)
                                    var problem: OpaquePointer?
                                    try shimCall { status in rp_pose_problem_create(&input, p, &problem, status) }
                                    guard let problem else { throw RephotoError(.internal, "rp_pose_problem_create returned no problem") }
                                    defer { rp_pose_problem_free(problem) }
                                    return try body(PoseStages(problem: problem, runnersUp: runnersUp, count: pairs.count))
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The search's refined candidates in its order (its own pose first), each with its evidence record (`excess`
    /// against the first); `prior` the rotation they are measured against. `PoseDecision.cheapest` picks the pose.
    func search(prior: Matrix3?) throws -> (result: rp_pose_search_result, candidates: [rp_pose_candidate]) {
        var result = rp_pose_search_result()
        var candidates = [rp_pose_candidate](repeating: rp_pose_candidate(), count: runnersUp + 1)
        let priorElements = prior?.elements
        try shimCall { status in
            if let priorElements {
                rp_pose_search(problem, priorElements, &result, &candidates, candidates.count, status)
            } else {
                rp_pose_search(problem, nil, &result, &candidates, candidates.count, status)
            }
        }
        return (result, Array(candidates.prefix(Int(result.candidates))))
    }

    /// The plane's other solution of `pose` (its record against the pose) and its refutation; nil when there is none.
    func twin(of pose: rp_pose_candidate, models: Int) throws -> (candidate: rp_pose_candidate, refutation: Int)? {
        var pose = pose
        var found: Int32 = 0, refutation: Int32 = 0
        var candidate = rp_pose_candidate()
        try withUnsafeBytes(of: &pose.R) { r in
            try withUnsafeBytes(of: &pose.t) { t in
                try shimCall { status in
                    rp_pose_twin(problem, r.bindMemory(to: Double.self).baseAddress, t.bindMemory(to: Double.self).baseAddress,
                                 pose.cost, models, &found, &candidate, &refutation, status)
                }
            }
        }
        return found != 0 ? (candidate, Int(refutation)) : nil
    }

    /// The guided search's answer, its separation measured from `pose`; nil when it found none.
    func guided(_ guided: rp_guided_search_params, from pose: rp_pose_candidate) throws -> rp_pose_candidate? {
        var guided = guided, pose = pose
        var found: Int32 = 0
        var candidate = rp_pose_candidate()
        try withUnsafeBytes(of: &pose.R) { r in
            try withUnsafeBytes(of: &pose.t) { t in
                try shimCall { status in
                    rp_pose_guided_search(problem, &guided, r.bindMemory(to: Double.self).baseAddress,
                                          t.bindMemory(to: Double.self).baseAddress, &found, &candidate, status)
                }
            }
        }
        return found != 0 ? candidate : nil
    }

    /// The evidence of `pose` preferred to `rivals` (in order), with one inlier flag per correspondence (sorted).
    func evidence(of pose: rp_pose_candidate, rivals: [rp_pose_candidate], guided: Bool, models: Int, guidedSamples: Int,
                  iterations: Int) throws -> (pose: rp_relative_pose, mask: [UInt8]) {
        var pose = pose
        var out = rp_relative_pose()
        var mask = [UInt8](repeating: 0, count: count)
        let rivalCount = try cInt(rivals.count, "rivals"), samples = try cInt(guidedSamples, "sensorGuidedSamples")
        let solved = try cInt(iterations, "iterations")
        try withUnsafeBytes(of: &pose.R) { r in
            try withUnsafeBytes(of: &pose.t) { t in
                try shimCall { status in
                    rp_pose_evidence(problem, r.bindMemory(to: Double.self).baseAddress, t.bindMemory(to: Double.self).baseAddress,
                                     pose.cost, rivals, rivalCount, guided ? 1 : 0, models, samples, solved, &out, &mask, mask.count,
                                     nil, 0, status)
                }
            }
        }
        return (out, mask)
    }

    /// The pure rotation of the `selected` correspondences (one flag each, in the stages' order) and how many of them
    /// it transfers within the threshold: the rotation support `PoseDecision.rotationExplains` reads.
    func rotation(of selected: [UInt8]) throws -> (rotation: Matrix3, support: Int) {
        var r = [Double](repeating: 0, count: 9)
        var support: Int32 = 0
        try shimCall { status in rp_pose_rotation(problem, selected, &r, &support, status) }
        return (Matrix3(r), Int(support))
    }

    /// Loops of other seeds that must reach the pose `out`: how many ran and within what rotation they landed.
    func reproduce(_ reproduction: rp_reproduction_params, of out: rp_relative_pose) throws -> (runs: Int32, degrees: Double) {
        var reproduction = reproduction, out = out
        var runs: Int32 = 0, degrees = 0.0
        try withUnsafeBytes(of: &out.R) { r in
            try withUnsafeBytes(of: &out.t) { t in
                try shimCall { status in
                    rp_pose_reproduce(problem, &reproduction, r.bindMemory(to: Double.self).baseAddress,
                                      t.bindMemory(to: Double.self).baseAddress, &runs, &degrees, status)
                }
            }
        }
        return (runs, degrees)
    }
}
