import Foundation
import RephotoData

/// A thread-safe counter.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
    /// Returns the current value and increments it.
    func take() -> Int { lock.withLock { defer { count += 1 }; return count } }
}

/// Fixed slots filled from several threads.
final class Results<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [T?]
    init(count: Int) { slots = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ value: T) { lock.withLock { slots[i] = value } }
    func get(_ i: Int) -> T? { lock.withLock { slots[i] } }
    var values: [T?] { lock.withLock { slots } }
}
