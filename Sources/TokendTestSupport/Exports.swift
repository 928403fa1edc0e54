// Tests that need the whole test world also get the manual clock without a second import.
@_exported import TokendTestClock
