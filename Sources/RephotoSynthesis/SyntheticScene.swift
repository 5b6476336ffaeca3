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

    /// Facade and ground photographs of the street, cycled tile by tile (11, prime, so that neighbouring tiles differ).
    static let streetTextures = ["graf1.png", "leuvenA.jpg", "aero1.jpg", "box_in_scene.png", "ela_original.jpg", "stuff.jpg",
                                 "starry_night.jpg", "messi5.jpg", "baboon.jpg", "rubberwhale1.png", "home.jpg"]

    /// A straight street along +z of the reference camera's frame, for forward motion: a closing wall first
    /// (building.jpg; `replacedRegion` edits plane 0), then the ground and two facades of tiles that lengthen with
    /// distance (0.4 of it), so that texels stay near a pixel's size. The facades and the ground are as far from the
    /// cameras (centres `cameraCentres`, field of view of `camera` over `size`) as the frame's edges reach at
    /// depth `near`, and the closing wall is `far` ahead of the least advanced camera: every camera looking along +z
    /// sees depths near...far only, from `near` at the frame's edges to the closing wall (the street is the inside
    /// of a box: nothing hides anything). The facades are 2.4 `near` tall.
    public static func street(textureDirectory: String, near: Double, far: Double, cameraCentres: [SIMD3<Double>],
                              camera: CameraIntrinsics, size: ImageSize) throws -> [TexturedPlane] {
        let xs = cameraCentres.map(\.x), ys = cameraCentres.map(\.y), zs = cameraCentres.map(\.z)
        let (least, most) = (zs.min()!, zs.max()!)
        let start = least + near, end = least + far
        // Tremor (up to 1 m of sway) can carry a camera past what --scene-far leaves room for: an error, not a trap.
        guard near > 0, end > most + near else {
            throw RephotoError.badInput(String(format: "--scene-far %g: the street must reach --scene-near (%g m) past every camera, the furthest ahead at %.2f m from its start", far, near, most - least))
        }
        // Tangents of the half fields of view, to the frame's outer pixel edges.
        let tanX = max(camera.cx + 0.5, Double(size.width) - 0.5 - camera.cx) / camera.fx
        let tanY = max(camera.cy + 0.5, Double(size.height) - 0.5 - camera.cy) / camera.fy
        let left = xs.min()! - near * tanX, right = xs.max()! + near * tanX
        let ground = ys.max()! + near * tanY, height = 2.4 * near
        var cache: [String: Image] = [:]
        func texture(_ name: String) throws -> Image {
            if let image = cache[name] { return image }
            let image = try Image(contentsOfFile: "\(textureDirectory)/\(name)")
            cache[name] = image
            return image
        }
        // A texture stretched over the rectangle corner + s·across + r·down (s, r in 0...1): its first and last
        // texel centres land on the rectangle's edges, so neighbouring tiles meet without a gap.
        func tile(_ name: String, corner: SIMD3<Double>, across: SIMD3<Double>, down: SIMD3<Double>) throws -> TexturedPlane {
            let image = try texture(name)
            return TexturedPlane(texture: image, origin: corner, u: across / Double(image.width - 1), v: down / Double(image.height - 1))
        }
        // Tile edges along z: each tile 0.4 of its distance from the least advanced camera; no sliver at the end.
        var edges = [start]
        while edges[edges.count - 1] < end {
            let last = edges[edges.count - 1], next = last + 0.4 * (last - least)
            edges.append(end - next < 0.2 * (next - last) ? end : min(next, end))
        }
        var planes = [try tile("building.jpg", corner: SIMD3(left, ground - height, end), across: SIMD3(right - left, 0, 0),
                               down: SIMD3(0, height, 0))]
        var next = 0
        func cycled() -> String {
            defer { next += 1 }
            return streetTextures[next % streetTextures.count]
        }
        for (z0, z1) in zip(edges, edges.dropFirst()) {
            let length = z1 - z0
            // The ground, its texture's top edge away from the camera.
            planes.append(try tile(cycled(), corner: SIMD3(left, ground, z1), across: SIMD3(right - left, 0, 0),
                                   down: SIMD3(0, 0, -length)))
            // Facades in rows of about square texels, seen from the street (left: right is +z; right: right is -z).
            let rows = max(1, Int((height / (length * 0.75)).rounded()))
            let rowHeight = height / Double(rows)
            for row in 0..<rows {
                let top = ground - height + Double(row) * rowHeight
                planes.append(try tile(cycled(), corner: SIMD3(left, top, z0), across: SIMD3(0, 0, length), down: SIMD3(0, rowHeight, 0)))
                planes.append(try tile(cycled(), corner: SIMD3(right, top, z1), across: SIMD3(0, 0, -length), down: SIMD3(0, rowHeight, 0)))
            }
        }
        return planes
    }

    /// The "now" object standing in front of the scene (fruits.jpg, 0.8 m wide) centred at `centre`.
    public static func occluder(textureDirectory: String, centre: SIMD3<Double>) throws -> TexturedPlane {
        TexturedPlane(texture: try Image(contentsOfFile: "\(textureDirectory)/fruits.jpg"), centre: centre,
                      right: SIMD3(1, 0, 0), down: SIMD3(0, 1, 0), width: 0.8)
    }

    /// The pose of a camera with centre `centre` (reference frame) and rotation R: X_camera = R X_reference + t, t = −R C.
    public static func pose(rotation: Matrix3, centre: SIMD3<Double>) -> (rotation: Matrix3, translation: SIMD3<Double>) {
        (rotation, -(rotation * centre))
    }
}
