/// A CSV file read by column name must name each column once: with two, one value would be picked silently
/// (a doubled gt_qw gave a 7.85° rotation error).
package func checkUniqueColumns(_ header: [String], path: String) throws {
    var seen = Set<String>()
    if let twice = header.first(where: { !seen.insert($0).inserted }) {
        throw RephotoError.badInput("\(path) line 1: column '\(twice)' appears twice")
    }
}
