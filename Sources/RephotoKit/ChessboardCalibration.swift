import CShims
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
        try withExtendedLifetime(images) {
            try handles.withUnsafeBufferPointer { buffer in
                try shimCall {
                    rp_calibrate_chessboard(buffer.baseAddress, Int32(images.count), Int32(boardWidth), Int32(boardHeight), squareSize,
                                            Int32(minimumViews), &found, &errors, &result, $0)
                }
            }
        }
        let c = result.calibration
        let k = withUnsafeBytes(of: c.K) { Array($0.bindMemory(to: Double.self)) }
        let d = withUnsafeBytes(of: c.distortion) { Array($0.bindMemory(to: Double.self).prefix(Int(c.distortion_count))) }
        let intrinsics = CameraIntrinsics(fx: k[0], fy: k[4], cx: k[2], cy: k[5], distortion: d,
                                          imageSize: ImageSize(width: Int(c.width), height: Int(c.height)))
        return ChessboardCalibration(intrinsics: intrinsics, rms: result.rms, meanError: result.mean_error,
                                     viewErrors: zip(found, errors).map { $0 != 0 ? $1 : nil },
                                     boardWidth: boardWidth, boardHeight: boardHeight, squareSize: squareSize)
    }

    /// Writes the OpenCV FileStorage file the rest of the project reads (YAML, XML or JSON by extension),
    /// with the per-view errors (views without the board are left out) and their mean.
    public func write(to path: String) throws {
        var file = rp_calibration_file()
        withUnsafeMutableBytes(of: &file.K) { raw in
            for (i, v) in intrinsics.matrix.elements.enumerated() { raw.bindMemory(to: Double.self)[i] = v }
        }
        withUnsafeMutableBytes(of: &file.distortion) { raw in
            for (i, v) in intrinsics.distortion.prefix(14).enumerated() { raw.bindMemory(to: Double.self)[i] = v }
        }
        file.distortion_count = Int32(min(intrinsics.distortion.count, 14))
        file.width = Int32(intrinsics.imageSize?.width ?? 0)
        file.height = Int32(intrinsics.imageSize?.height ?? 0)
        let views = viewErrors.compactMap { $0 }
        try shimCall {
            rp_calibration_write(path, &file, meanError, views, Int32(views.count), Int32(boardWidth), Int32(boardHeight), squareSize, $0)
        }
    }
}
