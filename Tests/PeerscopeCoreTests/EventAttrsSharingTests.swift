@testable import PeerscopeCore
import XCTest

/// The engine's table of attribute buffers: made on first use, and able to let go of what it holds
/// (the engine does so each time it writes its window to the spill file).
final class EventAttrsSharingTests: XCTestCase {
    func testATableHoldsNothingUntilUsedAndForgetsItsBuffersOnRequest() {
        var table = EventAttrsSharing(slotCount: 1 << 16)
        XCTAssertEqual(table.heldBuffers, 0)
        var a = EventAttrs(["service": "_x._tcp.local", "qu": "false"])
        var b = EventAttrs(["service": "_x._tcp.local", "qu": "false"])
        table.share(&a)
        table.share(&b)
        XCTAssertEqual(table.heldBuffers, 1)
        XCTAssertEqual(table.shared, 1)
        XCTAssertTrue(EventAttrsSharing.sameBuffer(a, b))

        table.forgetBuffers()
        XCTAssertEqual(table.heldBuffers, 0)
        // What was shared stays as it was; an equal set offered later is remembered afresh.
        XCTAssertEqual(a, b)
        var c = EventAttrs(["service": "_x._tcp.local", "qu": "false"])
        table.share(&c)
        XCTAssertFalse(EventAttrsSharing.sameBuffer(a, c))
        XCTAssertEqual(a, c)
        XCTAssertEqual(table.heldBuffers, 1)
        XCTAssertEqual(table.shared, 1)
        var d = EventAttrs(["service": "_x._tcp.local", "qu": "false"])
        table.share(&d)
        XCTAssertTrue(EventAttrsSharing.sameBuffer(c, d))
    }
}
