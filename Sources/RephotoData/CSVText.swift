import RephotoKit
import CSV
import Foundation

/// CSV text from rows of fields (RFC 4180 quoting by CSV.swift), with "\n" line ends and a final newline.
package enum CSVText {
    package static func make(_ rows: [[String]]) throws -> String {
        let stream = OutputStream(toMemory: ())
        let writer = try CSVWriter(stream: stream)
        for row in rows { try writer.write(row: row) }
        writer.stream.close()
        let data = stream.property(forKey: .dataWrittenToMemoryStreamKey) as? Data ?? Data()
        return String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n") + "\n"
    }
}
