import Foundation
import RephotoKit

/// Known truth for a pair, in the conventions of background.md.
public struct GroundTruth: Codable, Equatable, Sendable {
    /// X_current = R X_reference + t.
    public var rotation: Matrix3?
    /// Direction only; nil when undetermined (pure rotation).
    public var translation: SIMD3<Double>?
    /// Reference pixels -> current pixels.
    public var homography: Matrix3?
    /// The focal length of a reference of unknown camera, its pixels.
    public var referenceFocal: Double?

    public init(rotation: Matrix3? = nil, translation: SIMD3<Double>? = nil, homography: Matrix3? = nil, referenceFocal: Double? = nil) {
        self.rotation = rotation
        self.translation = translation
        self.homography = homography
        self.referenceFocal = referenceFocal
    }
}
