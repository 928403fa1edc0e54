// An LD_PRELOAD companion for libfaketime in tests (see CTokendFaketimeFix.c). It has no API:
// SwiftPM needs a header directory for a C target, and this is it.
#pragma once
