import Foundation

/// What a frame pair still yields when the images give too little signal (dark, blurred, occluded) but the
/// phone's attitudes were sent: the sensor path's guidance, with `vision: null` and the reason, so the app
/// still knows where to point. JSON contract: docs/json-output.md.
public struct SensorOnlyResult: Encodable, Sendable {
    public var referenceSize: ImageSize
    public var currentSize: ImageSize
    /// Why vision failed: the estimation error, with its counts in the message.
    public var visionFailure: ErrorEnvelope.Body
    public var sensor: SensorPath
    public var warnings: [String]

    enum CodingKeys: String, CodingKey { case vision, visionFailure, reference, current, sensor, warnings }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeNil(forKey: .vision)
        try c.encode(visionFailure, forKey: .visionFailure)
        try c.encode(referenceSize, forKey: .reference)
        try c.encode(currentSize, forKey: .current)
        try c.encode(sensor, forKey: .sensor)
        try c.encode(warnings, forKey: .warnings)
    }
}

extension PoseEstimator {
    /// The sensor path alone, after `estimate` failed with `failure` on the same inputs.
    public func sensorOnly(reference: ReferenceFrame, current image: Image, camera: CameraIntrinsics?, attitudes: AttitudePair,
                           failure: RephotoError) throws -> SensorOnlyResult {
        let currentCamera = try camera.map { try $0.adapted(to: image.fullSize) }
        let sensor = try sensorPath(attitudes, reference: reference, currentSize: image.fullSize, currentCamera: currentCamera)
        return SensorOnlyResult(referenceSize: reference.size, currentSize: image.fullSize, visionFailure: ErrorEnvelope(failure).error,
                                sensor: sensor, warnings: ["vision failed (\(failure.message)): guidance from the sensor path only"])
    }
}

/// A retake's answer: vision's, or, when the images gave too little signal and the phone's attitudes came, the
/// sensor path's with the reason (`failure`, which still decides the exit code: 3).
public enum RetakeAnswer: Sendable {
    case vision(PoseResult)
    case sensorOnly(SensorOnlyResult, failure: RephotoError)
}

extension PoseEstimator {
    /// `estimate`, falling back on the sensor path alone when vision cannot estimate and `attitudes` were given; any
    /// other failure is thrown.
    public func answer(reference: ReferenceFrame, current image: Image, currentFeatures: Features? = nil, camera: CameraIntrinsics?,
                       attitudes: AttitudePair?, marks: MarkedPoints? = nil) throws -> RetakeAnswer {
        do {
            return .vision(try estimate(reference: reference, current: image, currentFeatures: currentFeatures, camera: camera,
                                        attitudes: attitudes, marks: marks))
        } catch let failure as RephotoError where failure.kind == .estimationFailed {
            guard let attitudes else { throw failure }
            return .sensorOnly(try sensorOnly(reference: reference, current: image, camera: camera, attitudes: attitudes, failure: failure),
                               failure: failure)
        }
    }
}
