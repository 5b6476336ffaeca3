import Foundation
import RephotoKit
import RephotoData

/// Chessboard views with exact truth, for calibration's tests and benchmark: the board's inner corners
/// projected through a known camera from random poses (corners without photos), or rendered as photos.
public enum SyntheticChessboard {
    /// One view: the board's pose, X_camera = R X_board + t (board corner (c, r) at (c, r, 0) × square size).
    public struct Pose: Sendable {
        public var rotation: Matrix3
        public var translation: SIMD3<Double>
    }

    /// `count` poses from which the whole board projects inside `size` (2 px margin) through `camera`: the
    /// board 30...80 % of the frame wide, tilted 0...50° about a random axis in its plane, turned at random in
    /// its plane, anywhere in the frame. The same for a seed.
    public static func poses(count: Int, board: ChessboardCalibration.Board, camera: CameraIntrinsics, size: ImageSize,
                             seed: UInt64) -> [Pose] {
        var random = SeededRandom(seed: seed)
        let boardWidth = Double(board.width - 1) * board.squareSize, boardHeight = Double(board.height - 1) * board.squareSize
        let middle = SIMD3(boardWidth / 2, boardHeight / 2, 0)
        var poses: [Pose] = []
        var tries = 0
        while poses.count < count {
            tries += 1
            precondition(tries <= 1000 * count, "the board does not fit in the frame from the poses drawn")
            let depth = camera.fx * boardWidth / (random.uniform(0.3, 0.8) * Double(size.width))
            let axisAngle = random.uniform(0, 2 * .pi)
            let tilt = Matrix3.rotation(axis: SIMD3(cos(axisAngle), sin(axisAngle), 0), angle: random.uniform(0, 50) * .pi / 180)
            let rotation = tilt * Matrix3.rotation(axis: SIMD3(0, 0, 1), angle: random.uniform(-.pi, .pi))
            let u = random.uniform(0, Double(size.width)), v = random.uniform(0, Double(size.height))
            let centre = SIMD3((u - camera.cx) / camera.fx * depth, (v - camera.cy) / camera.fy * depth, depth)
            let pose = Pose(rotation: rotation, translation: centre - rotation * middle)
            guard let corners = project(board: board, pose: pose, camera: camera),
                  corners.allSatisfy({ $0.x >= 2 && $0.y >= 2 && $0.x <= Double(size.width) - 3 && $0.y <= Double(size.height) - 3 })
            else { continue }
            poses.append(pose)
        }
        return poses
    }

    /// The board's inner corners row by row as seen from `pose`, through the camera's lens (OpenCV's model:
    /// k1, k2, p1, p2, k3); nil when a corner lies behind the camera or the lens model folds back.
    public static func project(board: ChessboardCalibration.Board, pose: Pose, camera: CameraIntrinsics) -> [Point2]? {
        let d = camera.distortion + [Double](repeating: 0, count: max(0, 5 - camera.distortion.count))
        var out: [Point2] = []
        out.reserveCapacity(board.width * board.height)
        for r in 0..<board.height {
            for c in 0..<board.width {
                let p = pose.rotation * SIMD3(Double(c) * board.squareSize, Double(r) * board.squareSize, 0) + pose.translation
                guard p.z > 1e-6 else { return nil }
                let x = p.x / p.z, y = p.y / p.z, r2 = x * x + y * y
                // Past the radius where the radial factor stops growing, the model maps two radii to one point.
                let radial = 1 + d[0] * r2 + d[1] * r2 * r2 + d[4] * r2 * r2 * r2
                guard radial > 0, 1 + 3 * d[0] * r2 + 5 * d[1] * r2 * r2 + 7 * d[4] * r2 * r2 * r2 > 0 else { return nil }
                let xd = x * radial + 2 * d[2] * x * y + d[3] * (r2 + 2 * x * x)
                let yd = y * radial + d[2] * (r2 + 2 * y * y) + 2 * d[3] * x * y
                out.append(Point2(x: camera.fx * xd + camera.cx, y: camera.fy * yd + camera.cy))
            }
        }
        return out
    }

    /// `count` views' corners (x, y pairs row by row, as `ChessboardCalibration.Views.add(corners:imageSize:)`
    /// takes them), each coordinate with Gaussian noise of `noise` pixels (1 sigma).
    public static func corners(count: Int, board: ChessboardCalibration.Board, camera: CameraIntrinsics, size: ImageSize,
                               noise: Double, seed: UInt64) -> [[Float]] {
        var random = SeededRandom(seed: seed ^ 0x5EED)
        return poses(count: count, board: board, camera: camera, size: size, seed: seed).map { pose in
            project(board: board, pose: pose, camera: camera)!.flatMap { p in
                [Float(p.x + noise * random.gaussian()), Float(p.y + noise * random.gaussian())]
            }
        }
    }

    /// A photo of the board from `pose` through a pinhole camera (the renderer has no lens distortion): black
    /// and white squares of `squarePixels` texture pixels, with a white margin of one square, on grey.
    public static func photo(board: ChessboardCalibration.Board, pose: Pose, camera: CameraIntrinsics, size: ImageSize,
                             squarePixels: Int = 40) throws -> Image {
        let columns = board.width + 3, rows = board.height + 3  // board.width + 1 squares, and a square of margin each side
        let (w, h) = (columns * squarePixels, rows * squarePixels)
        var pixels = [UInt8](repeating: 255, count: w * h)
        for y in squarePixels..<(h - squarePixels) {
            for x in squarePixels..<(w - squarePixels) where ((x / squarePixels) + (y / squarePixels)) % 2 == 0 {
                pixels[y * w + x] = 0
            }
        }
        let texture = try Image(width: w, height: h, channels: 1, pixels: pixels)
        // Inner corner (0, 0), where the margin's next squares meet, is texture point (2 s - 0.5, 2 s - 0.5) (pixel centres).
        let metres = board.squareSize / Double(squarePixels), first = (2 * Double(squarePixels) - 0.5) * metres
        let r = pose.rotation
        let origin = r * SIMD3(-first, -first, 0) + pose.translation
        let plane = TexturedPlane(texture: texture, origin: origin, u: r * SIMD3(metres, 0, 0), v: r * SIMD3(0, metres, 0))
        return try SceneRenderer.render([plane], camera: camera, size: size, background: 128)
    }
}
