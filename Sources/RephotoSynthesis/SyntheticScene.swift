import RephotoKit
import RephotoData
/// Scenes with exact geometry for tests and benchmarks, textured with real photographs from OpenCV's
/// samples (scripts/fetch-sample-data): their views are rendered by `SceneRenderer`.
public enum SyntheticScene {
    /// Three non-coplanar planes in the reference camera's frame (metres): a 14 m back wall 10 m away
    /// (graf1.png), a slanted 5 m side wall (building.jpg) and a 2.4 m box face 5.5 m away (baboon.jpg).
    public static func threePlanes(textureDirectory: String) throws -> [TexturedPlane] {
        func texture(_ name: String) throws -> Image { try Image(contentsOfFile: "\(textureDirectory)/\(name)") }
        return [
            TexturedPlane(texture: try texture("graf1.png"), centre: SIMD3(0, 0, 10), right: SIMD3(1, 0, 0), down: SIMD3(0, 1, 0), width: 14),
            TexturedPlane(texture: try texture("building.jpg"), centre: SIMD3(-3.2, 0, 7), right: SIMD3(0.6, 0, 0.8), down: SIMD3(0, 1, 0), width: 5),
            TexturedPlane(texture: try texture("baboon.jpg"), centre: SIMD3(1.6, 0.6, 5.5), right: SIMD3(0.94, 0, -0.342), down: SIMD3(0, 1, 0), width: 2.4),
        ]
    }

    /// The pose of a camera with centre `centre` (reference frame) and rotation R: X_camera = R X_reference + t, t = −R C.
    public static func pose(rotation: Matrix3, centre: SIMD3<Double>) -> (rotation: Matrix3, translation: SIMD3<Double>) {
        (rotation, -(rotation * centre))
    }
}
