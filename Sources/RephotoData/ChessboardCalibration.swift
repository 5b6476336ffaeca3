import RephotoKit
import RephotoShimTools
import Foundation

/// Camera calibration from chessboard views (OpenCV's findChessboardCorners, cornerSubPix, calibrateCamera).
/// The board is found one view at a time (`Views.add`), so a caller holds one photo's pixels at a time: 16
/// photos of 48 MP held 2.7 GB when they were all decoded before the search. The camera is fitted to at most
/// `maxFittedViews` of the views (a spread subset: rp_chessboard_calibrate), so time and memory stay bounded.
public struct ChessboardCalibration: Sendable {
    public var intrinsics: CameraIntrinsics
    /// calibrateCamera's overall RMS reprojection error over the fitted views, pixels.
    public var rms: Double
    /// Mean of every view's RMS reprojection error (fitted or not), pixels.
    public var meanError: Double
    /// Per input image: its RMS reprojection error, nil where the board was not found.
    public var viewErrors: [Double?]
    /// The input images whose views the camera was fitted to (indices, ascending): all views with the board up to
    /// `maxFittedViews`; the others' errors are at the pose each gives alone against the fitted camera.
    public var fittedViews: [Int]
    /// The input images left out of the choice of the fitted views, their error over 3x the median (indices,
    /// ascending): corners found wrong, most likely. Only when there was a choice (more than `maxFittedViews`).
    public var outlyingViews: [Int]
    public var boardWidth: Int
    public var boardHeight: Int
    public var squareSize: Double

    /// `width` × `height` inner corners, squares of `squareSize` metres; calibration refuses fewer than
    /// `minimumViews` (3...`maxFittedViews`) views with the board. Checked when made, before any photo is searched.
    public struct Board: Sendable {
        public let width: Int, height: Int, squareSize: Double, minimumViews: Int

        public init(width: Int, height: Int, squareSize: Double, minimumViews: Int = 5) throws {
            let (w, h, views) = (try cInt(width, "board width"), try cInt(height, "board height"), try cInt(minimumViews, "minimum views"))
            try shimCall { rp_chessboard_check(w, h, squareSize, views, $0) }
            (self.width, self.height, self.squareSize, self.minimumViews) = (width, height, squareSize, minimumViews)
        }
    }

    /// The views seen so far: each photo's corners (or that the board is not in it), not its pixels.
    public struct Views: Sendable {
        public let board: Board
        public private(set) var imageSize: ImageSize?
        private var exifOrientation: Int?
        /// Per photo added: its corners as x,y pairs, nil where the board was not found.
        public private(set) var corners: [[Float]?] = []
        /// Views with the board by the cell of side `sameViewPixels` their first corner lies in: a twin's first corner
        /// lies in one of the 3x3 cells around, so the duplicate check does not grow with the views seen.
        private var byFirstCorner: [SIMD2<Int>: [Int]] = [:]

        public init(board: Board) { self.board = board }

        /// Searches `image` for the board. Every view must have the first one's size and EXIF orientation.
        public mutating func add(_ image: Image) throws {
            // Turned 180° a photo keeps its size, but the lens centre moves to the other side of the frame:
            // mixed, the principal point came out averaged (cx 309.8 where the camera has 342.4), silently.
            if let first = exifOrientation, first != image.exifOrientation {
                throw RephotoError.badInput("view \(corners.count + 1) has EXIF orientation \(image.exifOrientation) but the first has \(first): the lens centre lies elsewhere in each frame; calibrate from photos of one orientation")
            }
            if let size = imageSize, size != image.size {
                throw RephotoError.badInput("view \(corners.count + 1) is \(image.width)x\(image.height) (as displayed, after its EXIF orientation) but the first is \(size.width)x\(size.height): all views need one size", cause: .viewSizesDiffer)
            }
            var found: Int32 = 0
            var xy = [Float](repeating: 0, count: 2 * board.width * board.height)
            let (w, h) = (try cInt(board.width, "board width"), try cInt(board.height, "board height"))
            try withExtendedLifetime(image) {
                try shimCall { rp_chessboard_corners(image.handle, w, h, &xy, xy.count, &found, $0) }
            }
            try append(found != 0 ? xy : nil, size: image.size)
            exifOrientation = exifOrientation ?? image.exifOrientation
        }

        /// Adds a view whose corners were found elsewhere (x, y pairs row by row, as `corners` holds them; nil
        /// where the board was not found) in an image of `imageSize`.
        public mutating func add(corners xy: [Float]?, imageSize size: ImageSize) throws {
            if let first = imageSize, first != size {
                throw RephotoError.badInput("view \(corners.count + 1) is \(size.width)x\(size.height) but the first is \(first.width)x\(first.height): all views need one size", cause: .viewSizesDiffer)
            }
            if let xy {
                guard xy.count == 2 * board.width * board.height else {
                    throw RephotoError.badInput("view \(corners.count + 1) has \(xy.count) corner coordinates; a \(board.width)x\(board.height) board has \(2 * board.width * board.height)")
                }
                guard xy.allSatisfy(\.isFinite) else { throw RephotoError.badInput("view \(corners.count + 1) has a corner that is not a number") }
            }
            try append(xy, size: size)
        }

        private mutating func append(_ xy: [Float]?, size: ImageSize) throws {
            // A photo of the board where another shows it adds no view, and counted twice it skews the fit
            // (probe: five JPEG qualities of one photo calibrated fx 817 where the camera has 536, at 0.16 px).
            let cell = xy.map { Self.cell($0[0], $0[1]) }
            if let xy, let cell {
                let near = (-1...1).flatMap { dx in (-1...1).flatMap { dy in byFirstCorner[cell &+ SIMD2(dx, dy)] ?? [] } }
                if let twin = near.filter({ zip(corners[$0]!, xy).allSatisfy { abs($0 - $1) < Self.sameViewPixels } }).min() {
                    throw RephotoError.badInput(String(format: "the board lies where view %d shows it (every corner within %g px): one view, counted twice",
                                                       twin + 1, Double(Self.sameViewPixels)))
                }
            }
            imageSize = imageSize ?? size
            if let cell { byFirstCorner[cell, default: []].append(corners.count) }
            corners.append(xy)
        }

        private static func cell(_ x: Float, _ y: Float) -> SIMD2<Int> {
            // Clamped: a corner far off the frame still has a cell (Int(_:) traps past its range).
            func index(_ v: Float) -> Int { v.isFinite ? Int(min(max((v / sameViewPixels).rounded(.down), -1e9), 1e9)) : 0 }
            return SIMD2(index(x), index(y))
        }

        /// Two views whose corners all lie this close are one view (a re-encoded or retouched copy); a board
        /// moved or a camera turned by hand shifts its corners by far more.
        public static let sameViewPixels: Float = 1

        /// The largest 1-sigma uncertainty of the focal lengths and the principal point, relative to the focal
        /// length, that a calibration may have.
        public static let maxIntrinsicsSigma = 0.03

        public func calibrate() throws -> ChessboardCalibration {
            guard let size = imageSize else { throw RephotoError.badInput("no images to calibrate from") }
            let seen = corners.compactMap { $0 }
            guard seen.count >= board.minimumViews else {
                let message = "the \(board.width)x\(board.height) board was found in \(seen.count) of \(corners.count) images; calibration needs at least \(board.minimumViews) views"
                // Too few photos is the caller's to fix (2); enough photos where the board was not found is a
                // failed detection (3), as too few features is elsewhere: the board may be another size.
                guard corners.count >= board.minimumViews else { throw RephotoError.badInput(message) }
                throw RephotoError.estimationFailed(message + (seen.isEmpty ? " (--board counts inner corners: a 10x7-square board is 9x6)" : ""))
            }
            let flat = Array(seen.joined())
            var errors = [Double](repeating: 0, count: seen.count)
            var fitted = [Int32](repeating: 0, count: seen.count)
            var result = rp_chessboard_result()
            let (n, w, h, views) = (try cInt(seen.count, "views"), try cInt(board.width, "board width"), try cInt(board.height, "board height"),
                                    try cInt(board.minimumViews, "minimum views"))
            let (width, height) = (try cInt(size.width, "width"), try cInt(size.height, "height"))
            try shimCall {
                rp_chessboard_calibrate(flat, n, w, h, board.squareSize, views, width, height, &errors, errors.count, &fitted, fitted.count, &result, $0)
            }
            // Views that do not constrain the focal length still fit well: five copies of one view a few pixels
            // apart gave fx 638 against 536, at 0.15 px, with exit 0. OpenCV's left01-14 give
            // 0.25 % (all 13) to 1.2 % (the first 3); shifted or zoomed copies of one view 9-12 %.
            let k = result.calibration.K
            let sigma = result.intrinsics_sigma
            let worst = [sigma.0 / k.0, sigma.1 / k.4, sigma.2 / k.0, sigma.3 / k.4].map { $0.isFinite ? $0 : .infinity }.max() ?? .infinity
            if !(worst <= Self.maxIntrinsicsSigma) {
                throw RephotoError.estimationFailed(String(format: "the views do not determine the camera: fx %.1f ± %.1f, cx %.1f ± %.1f, cy %.1f ± %.1f px (1 sigma; over %g %% of the focal length): photograph the board tilted 20° or more in different directions, across the frame",
                                                           k.0, sigma.0, k.2, sigma.2, k.5, sigma.3, Self.maxIntrinsicsSigma * 100), cause: .calibrationUndetermined)
            }
            let withBoard = corners.indices.filter { corners[$0] != nil }  // seen's indices among the images
            var next = errors.makeIterator()
            return ChessboardCalibration(intrinsics: CameraIntrinsics(result.calibration), rms: result.rms, meanError: result.mean_error,
                                         viewErrors: corners.map { $0 == nil ? nil : next.next() },
                                         fittedViews: zip(withBoard, fitted).filter { $0.1 == 1 }.map(\.0),
                                         outlyingViews: zip(withBoard, fitted).filter { $0.1 == -1 }.map(\.0),
                                         boardWidth: board.width, boardHeight: board.height, squareSize: board.squareSize)
        }
    }

    /// The most views the camera is fitted to; past that many, a spread subset (rp_chessboard_calibrate).
    public static let maxFittedViews = Int(RP_CHESSBOARD_FITTED_VIEWS)

    /// All views at once (they are in memory already).
    public static func calibrate(_ images: [Image], boardWidth: Int, boardHeight: Int, squareSize: Double,
                                 minimumViews: Int = 5) throws -> ChessboardCalibration {
        var views = Views(board: try Board(width: boardWidth, height: boardHeight, squareSize: squareSize, minimumViews: minimumViews))
        for image in images { try views.add(image) }
        return try views.calibrate()
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
            var bytes: UnsafeMutablePointer<UInt8>?
            var length = 0
            let format = (path as NSString).pathExtension.lowercased()
            try shimCall { rp_calibration_encode(format, &camera, &report, &bytes, &length, $0) }
            defer { rp_buffer_free(bytes) }
            // Atomic: a full disk or a kill mid-write leaves the earlier calibration whole, and the error is seen.
            do {
                try Data(bytes: bytes!, count: length).write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                throw RephotoError.badInput("\(path): cannot write the calibration (\(fileErrorReason(error)))")
            }
        }
    }
}
