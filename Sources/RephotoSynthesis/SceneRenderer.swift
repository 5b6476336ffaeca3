import RephotoKit
import RephotoData
import RephotoShimTools

/// A textured rectangle in the reference camera's frame (metres, OpenCV axes): texture pixel (a, b)
/// lies at origin + a·u + b·v.
public struct TexturedPlane: Sendable {
    public var texture: Image
    public var origin: SIMD3<Double>
    public var u: SIMD3<Double>
    public var v: SIMD3<Double>

    public init(texture: Image, origin: SIMD3<Double>, u: SIMD3<Double>, v: SIMD3<Double>) {
        self.texture = texture
        self.origin = origin
        self.u = u
        self.v = v
    }

    /// A plane whose texture spans `width` metres, centred at `centre`, with its x axis along `right`
    /// and y axis along `down` (both unit).
    public init(texture: Image, centre: SIMD3<Double>, right: SIMD3<Double>, down: SIMD3<Double>, width: Double) {
        let metresPerPixel = width / Double(texture.width)
        let u = right * metresPerPixel, v = down * metresPerPixel
        let origin = centre - u * Double(texture.width) / 2 - v * Double(texture.height) / 2
        self.init(texture: texture, origin: origin, u: u, v: v)
    }
}

/// Renders planes exactly (per-pixel ray-plane intersection, bilinear texture lookup) as seen by a camera
/// with pose X_camera = R X_reference + t, so parallax between views is exact ground truth.
public enum SceneRenderer {
    /// With `supersampling` s > 1, each pixel is the mean of s x s rays spread evenly over it (rendered at s times the
    /// size, then averaged by OpenCV's area resize), as a sensor integrates over its pixel: textures seen from far
    /// or at a grazing angle then blur instead of aliasing. The projection of a point is unchanged.
    public static func render(_ planes: [TexturedPlane], camera: CameraIntrinsics, rotation: Matrix3 = .identity,
                              translation: SIMD3<Double> = .zero, size: ImageSize, background: UInt8 = 0,
                              supersampling: Int) throws -> Image {
        guard supersampling > 1 else {
            return try render(planes, camera: camera, rotation: rotation, translation: translation, size: size, background: background)
        }
        // Fine pixel i covers coarse pixel i / s; coarse pixel x's centre is fine coordinate s x + (s - 1) / 2.
        let s = Double(supersampling), offset = (s - 1) / 2
        let fine = CameraIntrinsics(fx: camera.fx * s, fy: camera.fy * s, cx: camera.cx * s + offset, cy: camera.cy * s + offset)
        return try render(planes, camera: fine, rotation: rotation, translation: translation,
                          size: ImageSize(width: size.width * supersampling, height: size.height * supersampling), background: background)
            .resized(width: size.width, height: size.height)
    }

    public static func render(_ planes: [TexturedPlane], camera: CameraIntrinsics, rotation: Matrix3 = .identity,
                              translation: SIMD3<Double> = .zero, size: ImageSize, background: UInt8 = 0) throws -> Image {
        let raw = planes.map { plane in
            rp_plane(texture: plane.texture.handle,
                     origin: (plane.origin.x, plane.origin.y, plane.origin.z),
                     u: (plane.u.x, plane.u.y, plane.u.z), v: (plane.v.x, plane.v.y, plane.v.z))
        }
        var out: OpaquePointer?
        let (count, width, height) = (try cInt(raw.count, "plane count"), try cInt(size.width, "width"), try cInt(size.height, "height"))
        let grey = Int32(background)
        let k = camera.matrix.elements, r = rotation.elements, t = [translation.x, translation.y, translation.z]
        try withExtendedLifetime(planes) {
            try shimCall {
                rp_render_planes(raw, count, k, r, t, width, height, grey, &out, $0)
            }
        }
        return Image(handle: out!)
    }
}
