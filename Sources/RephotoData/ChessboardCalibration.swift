import RephotoKit
import RephotoShimTools
import Foundation

/// Camera calibration from chessboard views (OpenCV's findChessboardCorners, cornerSubPix, calibrateCamera).
public struct ChessboardCalibration: Sendable {
    public var intrinsics: CameraIntrinsics
    /// calibrateCamera's overall RMS reprojection error, pixels.
    public var rms: Double
    /// Mean of the per-view RMS reprojection errors, pixels.
    public var meanError: Double
    /// Per input image: its RMS reprojection error, nil where the board was not found.
    public var viewErrors: [Double?]
    public var boardWidth: Int
    public var boardHeight: Int
    public var squareSize: Double

    /// `boardWidth` × `boardHeight` inner corners, `squareSize` in metres; refuses fewer than `minimumViews`
    /// views with the board.
    public static func calibrate(_ images: [Image], boardWidth: Int, boardHeight: Int, squareSize: Double,
                                 minimumViews: Int = 5) throws -> ChessboardCalibration {
        guard !images.isEmpty else { throw RephotoError.badInput("no images to calibrate from") }
        var found = [UInt8](repeating: 0, count: images.count)
        var errors = [Double](repeating: 0, count: images.count)
        var result = rp_chessboard_result()
        let handles: [OpaquePointer?] = images.map { $0.handle }
        let (n, w, h, views) = (try cInt(images.count, "image count"), try cInt(boardWidth, "board width"),
                                try cInt(boardHeight, "board height"), try cInt(minimumViews, "minimum views"))
        try withExtendedLifetime(images) {
            try handles.withUnsafeBufferPointer { buffer in
                try shimCall {
                    rp_calibrate_chessboard(buffer.baseAddress, n, w, h, squareSize, views, &found, found.count, &errors, errors.count, &result, $0)
                }
            }
        }
        let intrinsics = CameraIntrinsics(result.calibration)
        return ChessboardCalibration(intrinsics: intrinsics, rms: result.rms, meanError: result.mean_error,
                                     viewErrors: zip(found, errors).map { $0 != 0 ? $1 : nil },
                                     boardWidth: boardWidth, boardHeight: boardHeight, squareSize: squareSize)
    }

    /// Writes the OpenCV FileStorage file the rest of the project reads (YAML, XML or JSON by extension),
    /// with the per-view errors (views without the board are left out) and their mean.
    public func write(to path: String) throws {
        var camera = try intrinsics.shimCamera()
        let views = viewErrors.compactMap { $0 }
        try views.withUnsafeBufferPointer { errors in
            var report = rp_calibration_report(mean_error: meanError, view_errors: errors.baseAddress, view_count: try cInt(views.count, "views"),
                                               board_width: try cInt(boardWidth, "board width"), board_height: try cInt(boardHeight, "board height"),
                                               square_size: squareSize)
            try shimCall { rp_calibration_write(path, &camera, &report, $0) }
        }
    }
}
