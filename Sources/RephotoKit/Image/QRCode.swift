import Foundation
import RephotoShim

/// QR codes made by OpenCV's QRCodeEncoder (objdetect, byte mode, correction level M): the guide's links
/// (`GET /v1/references/{id}/qr`). A grey image, dark modules black, inside a light quiet zone.
public enum QRCode {
    public static func image(_ text: String, modulePixels: Int = 8, quietModules: Int = 4) throws -> Image {
        var out: OpaquePointer?
        try shimCall { rp_qr_encode(text, Int32(clamping: modulePixels), Int32(clamping: quietModules), &out, $0) }
        return Image(handle: out!)
    }

    public static func png(_ text: String, modulePixels: Int = 8, quietModules: Int = 4) throws -> Data {
        try image(text, modulePixels: modulePixels, quietModules: quietModules).encoded(as: .png)
    }
}
