// `rephoto-bench calibrate-views N` and `rephoto-bench chessboard-photos`: the calibration's cost against the
// number of views (scripts/bench-calibrate), on corners made by projection and on rendered photos.
import Foundation
import RephotoData
import RephotoKit
import RephotoSynthesis

enum CalibrationBench {
    static let size = ImageSize(width: 640, height: 480)
    /// A 640x480 camera like OpenCV's left01..14 one, with barrel distortion.
    static let camera = CameraIntrinsics(fx: 540, fy: 545, cx: 322, cy: 238, distortion: [-0.25, 0.1, 0.001, -0.0005, 0], imageSize: size)

    static func run(_ arguments: [String]) throws {
        var rest = arguments[...]
        guard let mode = rest.popFirst() else { throw RephotoError.badInput("usage: rephoto-bench calibrate-views N | chessboard-photos --count N --out DIR") }
        var seed: UInt64 = 1, count: Int?, out: String?
        while let flag = rest.popFirst() {
            switch flag {
            case "--seed":
                guard let n = rest.popFirst().flatMap(UInt64.init) else { throw RephotoError.badInput("--seed needs a number") }
                seed = n
            case "--count": count = rest.popFirst().flatMap(Int.init)
            case "--out": out = rest.popFirst()
            default:
                guard count == nil, let n = Int(flag) else { throw RephotoError.badInput("unknown argument \(flag)") }
                count = n
            }
        }
        guard let count, count > 0 else { throw RephotoError.badInput("\(mode) needs a positive count") }
        let board = try ChessboardCalibration.Board(width: 9, height: 6, squareSize: 0.025)
        switch mode {
        case "calibrate-views":
            // One line of key=value: the duplicate check's and the fit's seconds, the camera found.
            let corners = SyntheticChessboard.corners(count: count, board: board, camera: camera, size: size, noise: 0.2, seed: seed)
            var start = ContinuousClock.now
            var views = ChessboardCalibration.Views(board: board)
            for xy in corners { try views.add(corners: xy, imageSize: size) }
            let add = seconds(since: start)
            start = ContinuousClock.now
            let result = try views.calibrate()
            let fit = seconds(since: start)
            let k = result.intrinsics
            print(String(format: "views=%d fitted=%d add_s=%.3f calibrate_s=%.3f fx=%.2f fy=%.2f cx=%.2f cy=%.2f mean_error=%.3f",
                         count, result.fittedViews.count, add, fit, k.fx, k.fy, k.cx, k.cy, result.meanError))
        case "chessboard-photos":
            // 640x480 JPEGs of the board from random poses (a pinhole camera: the renderer has no lens distortion).
            guard let out else { throw RephotoError.badInput("chessboard-photos needs --out DIR") }
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            let pinhole = CameraIntrinsics(fx: camera.fx, fy: camera.fy, cx: camera.cx, cy: camera.cy)
            for (i, pose) in SyntheticChessboard.poses(count: count, board: board, camera: pinhole, size: size, seed: seed).enumerated() {
                let photo = try SyntheticChessboard.photo(board: board, pose: pose, camera: pinhole, size: size)
                try photo.encoded(as: .jpeg(quality: 92)).write(to: URL(fileURLWithPath: String(format: "%@/board%04d.jpg", out, i + 1)))
            }
        default:
            throw RephotoError.badInput("unknown mode \(mode)")
        }
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
