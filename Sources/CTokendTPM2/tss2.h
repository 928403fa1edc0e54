#ifndef TOKEND_TSS2_H
#define TOKEND_TSS2_H

// tpm2-tss, loaded when the `tpm2` store is first used rather than linked (issue 47): a daemon on
// another store then never maps libtss2-* and the libcrypto they pull in (~0.5 MB of its idle
// RSS). The headers still give every function's type; only the addresses come from dlsym.
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

// The libraries, by soname (what the package Recommends): LIBRARY(name, soname).
#define TOKEND_TSS2_LIBRARIES(LIBRARY) \
    LIBRARY(ESYS, "libtss2-esys.so.0") \
    LIBRARY(TCTILDR, "libtss2-tctildr.so.0") \
    LIBRARY(MU, "libtss2-mu.so.0") \
    LIBRARY(RC, "libtss2-rc.so.0")

// Every function the store calls, and the library that holds it: FUNCTION(library, function).
#define TOKEND_TSS2_FUNCTIONS(FUNCTION) \
    FUNCTION(ESYS, Esys_Initialize) \
    FUNCTION(ESYS, Esys_Finalize) \
    FUNCTION(ESYS, Esys_Startup) \
    FUNCTION(ESYS, Esys_CreatePrimary) \
    FUNCTION(ESYS, Esys_StartAuthSession) \
    FUNCTION(ESYS, Esys_TRSess_SetAttributes) \
    FUNCTION(ESYS, Esys_Create) \
    FUNCTION(ESYS, Esys_Load) \
    FUNCTION(ESYS, Esys_Unseal) \
    FUNCTION(ESYS, Esys_GetRandom) \
    FUNCTION(ESYS, Esys_FlushContext) \
    FUNCTION(ESYS, Esys_Free) \
    FUNCTION(TCTILDR, Tss2_TctiLdr_Initialize) \
    FUNCTION(TCTILDR, Tss2_TctiLdr_Finalize) \
    FUNCTION(MU, Tss2_MU_TPM2B_PUBLIC_Marshal) \
    FUNCTION(MU, Tss2_MU_TPM2B_PRIVATE_Marshal) \
    FUNCTION(MU, Tss2_MU_TPM2B_PUBLIC_Unmarshal) \
    FUNCTION(MU, Tss2_MU_TPM2B_PRIVATE_Unmarshal) \
    FUNCTION(RC, Tss2_RC_Decode)

enum {
#define TOKEND_TSS2_INDEX(name, soname) TOKEND_TSS2_##name,
    TOKEND_TSS2_LIBRARIES(TOKEND_TSS2_INDEX)
#undef TOKEND_TSS2_INDEX
    TOKEND_TSS2_LIBRARY_COUNT
};

// The resolved functions: `tokend_tpm2_tss2.Esys_Load(…)` is tpm2-tss's Esys_Load.
struct tokend_tss2 {
#define TOKEND_TSS2_POINTER(library, function) __typeof__(function) *function;
    TOKEND_TSS2_FUNCTIONS(TOKEND_TSS2_POINTER)
#undef TOKEND_TSS2_POINTER
};
extern struct tokend_tss2 tokend_tpm2_tss2;

// Loads the libraries into `tokend_tpm2_tss2` on the first call of the process (once, whichever thread comes
// first); 0, or TOKEND_TPM2_RC_LIBRARY with `*where` saying what could not be loaded, then and at
// every later call.
int tokend_tpm2_tss2_ready(const char **where);

#endif
