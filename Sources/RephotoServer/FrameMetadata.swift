import Foundation
import RephotoKit

/// The optional `metadata` part (JSON) of a guidance-session frame: the phone's attitude when it was taken and its
/// timestamp. Schema: openapi.yaml (`FrameMetadata`).
struct FrameMetadata: Decodable, Sendable {
    var attitude: RequestMetadata.Photo.AttitudeValue?
    /// Seconds on any clock the session's frames share.
    var timestamp: Double?

    static let keys: Set = ["attitude", "timestamp"]

    static func parse(_ data: Data?) throws -> FrameMetadata {
        guard let data, !data.isEmpty else { return FrameMetadata() }
        guard data.count <= 16 << 10 else { throw ServiceError.badInput("metadata is \(data.count) bytes, more than 16 KiB") }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw ServiceError.badInput("metadata is not JSON (\(ConfigFile.describe(error)))")
        }
        guard let fields = object as? [String: Any] else { throw ServiceError.badInput("metadata must be a JSON object") }
        if let unknown = fields.keys.sorted().first(where: { !keys.contains($0) }) {
            throw ServiceError.badInput("metadata: unknown key '\(unknown.prefix(80))' (a frame's metadata has attitude, timestamp)")
        }
        do {
            try ConfigFile.refuseRepeatedKeys(data, what: "metadata")
            let metadata = try JSONDecoder().decode(FrameMetadata.self, from: data)
            if let t = metadata.timestamp, !t.isFinite { throw ServiceError.badInput("metadata.timestamp \(t) is not a finite number") }
            return metadata
        } catch let error as ServiceError {
            throw error
        } catch let error as RephotoError {
            throw ServiceError.badInput(error.message)
        } catch {
            throw ServiceError.badInput("metadata: \(ConfigFile.describe(error, json: data))")
        }
    }

    /// The frame's attitude, checked as a retake's is.
    func phoneAttitude() throws -> Attitude? {
        try RequestMetadata.attitude(RequestMetadata.Photo(calibration: nil, intrinsics: nil, attitude: attitude), role: "frame")
    }
}
