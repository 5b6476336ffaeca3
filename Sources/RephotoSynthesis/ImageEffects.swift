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
}
