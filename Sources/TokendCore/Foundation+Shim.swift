// The core uses only FoundationEssentials (Date, JSON coding, Data): tokenctl links it and must
// start fast, and full Foundation drags in ICU.
#if canImport(FoundationEssentials)
@_exported import FoundationEssentials
#else
@_exported import Foundation
#endif
