import RephotoKit
import RephotoShimTools

/// Photometric changes and compositing for synthetic "then and now" frames.
extension Image {
    /// Photometric change: pixel × contrast + brightness, then Gaussian blur (sigma px), then Gaussian
    /// noise (sigma grey levels, deterministic for `seed`).
    public func adjusted(contrast: Double = 1, brightness: Double = 0, blur: Double = 0, noise: Double = 0, seed: UInt64 = 0) throws -> Image {
        var out: OpaquePointer?
        try shimCall { rp_image_adjust(handle, contrast, brightness, blur, noise, seed, &out, $0) }
        return Image(handle: out!)
    }

    /// A copy with `patch` pasted at (x, y), clipped to the image.
    public func pasting(_ patch: Image, x: Int, y: Int) throws -> Image {
        var out: OpaquePointer?
        let (px, py) = (try cInt(x, "x"), try cInt(y, "y"))
        try shimCall { rp_image_paste(handle, patch.handle, px, py, &out, $0) }
        return Image(handle: out!)
    }

    /// An old print as scanned: vignetted (gain 1 - vignette r², r from the centre over the half-side), inside a border
    /// of grey level `borderColour` with `margins` pixels (top, right, bottom, left), turned by `tiltDegrees`
    /// (clockwise) about its centre on a scanner of the border's colour.
    public func printScan(vignette: Double, borderColour: Int, margins: [Int], tiltDegrees: Double = 0) throws -> Image {
        precondition(margins.count == 4)
        var out: OpaquePointer?
        let m = try margins.map { try cInt($0, "margin") }, colour = try cInt(borderColour, "border colour")
        try shimCall { rp_image_print_scan(handle, vignette, colour, m, tiltDegrees, &out, $0) }
        return Image(handle: out!)
    }
}
