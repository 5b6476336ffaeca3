import RephotoShim

/// The final step of a rephotograph, which apps otherwise leave to the user's fingers: the retake warped
/// into the reference's frame by the estimated homography, alone, blended over the reference, or as a split
/// "then and now" (reference left, retake right).
public enum Alignment {
    public enum Mode: String, Codable, CaseIterable, Sendable {
        case warped, blend, split
    }

    /// `reference` and `retake` are the colour images the result was estimated on (full resolution);
    /// `homography` maps reference pixels to retake pixels. The output has the reference's size.
    public static func compose(reference: Image, retake: Image, homography: Matrix3, mode: Mode, opacity: Double = 0.5) throws -> Image {
        guard let inverse = homography.inverse else { throw RephotoError.estimationFailed("the homography is singular: nothing to align") }
        guard opacity >= 0, opacity <= 1 else { throw RephotoError.badInput("opacity \(opacity) is not in 0...1") }
        var warped = try retake.warped(by: inverse, width: reference.width, height: reference.height)
        if warped.channels != reference.channels { warped = try warped.grayscale() }
        switch mode {
        case .warped:
            return warped
        case .blend, .split:
            var out: OpaquePointer?
            let code = mode == .blend ? Int32(RP_COMPOSE_BLEND.rawValue) : Int32(RP_COMPOSE_SPLIT.rawValue)
            try shimCall { rp_image_compose(reference.handle, warped.handle, code, opacity, &out, $0) }
            return Image(handle: out!)
        }
    }
}
