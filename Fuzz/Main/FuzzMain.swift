// The libFuzzer entry point. Built only by Scripts/fuzz (PEERSCOPE_FUZZ=1, -sanitize=fuzzer,address,
// -parse-as-library). The target is chosen with PEERSCOPE_FUZZ_TARGET.
//
// SwiftPM links an executable target's entry point as `<module>_main` (`--defsym main=...`), so
// libFuzzer's own `main` is not used: ours hands the command line to libFuzzer's driver.

import Foundation
import PeerscopeFuzzHarness

let fuzzTarget: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["PEERSCOPE_FUZZ_TARGET"] ?? ""
    guard let t = FuzzTarget(rawValue: name) else {
        FileHandle.standardError.write(Data("PEERSCOPE_FUZZ_TARGET must be one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))\n".utf8))
        exit(2)
    }
    return t
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FuzzHarness.run(fuzzTarget, bytes)
    return 0
}

typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<Int32>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: FuzzCallback) -> Int32

@_cdecl("PeerscopeFuzz_main")
public func peerscopeFuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    _ = fuzzTarget
    var c = argc
    var v = argv
    return LLVMFuzzerRunDriver(&c, &v, fuzzOneInput)
}
