#ifndef CTOKENDTPM2_H
#define CTOKENDTPM2_H

#include <stddef.h>
#include <stdint.h>

// The few tpm2-tss (ESYS) calls the `tpm2` store makes, in C: the ESYS structures are large
// unions that Swift imports poorly. Each call opens the TPM through the TCTI loader (`tcti` NULL:
// the loader's default), does its work and closes it again, so a TPM that restarts between calls
// is simply opened anew. Each returns 0, or the failing TSS2_RC with `*where` naming the call.
// tpm2-tss itself is loaded (dlopen) at the first call, not linked: a daemon on another store
// never maps it. When it cannot be, every call returns TOKEND_TPM2_RC_LIBRARY with `*where`
// saying which library or function is missing.

// Seals `secret` (at most 128 bytes) as a data object under the owner hierarchy's primary
// storage key, which the TPM derives from its own seed: `blob` receives the object's public and
// private parts (marshalled TPM2B_PUBLIC then TPM2B_PRIVATE), readable only by this TPM.
int tokend_tpm2_seal(const char *tcti, const uint8_t *secret, size_t secret_length,
                     uint8_t *blob, size_t blob_capacity, size_t *blob_length, const char **where);

// Unseals what `tokend_tpm2_seal` sealed, into `secret` (capacity at least 128 bytes).
int tokend_tpm2_unseal(const char *tcti, const uint8_t *blob, size_t blob_length,
                       uint8_t *secret, size_t secret_capacity, size_t *secret_length, const char **where);

// Asks the TPM for `count` (at most 64) random bytes: the cheapest command that proves the TPM
// answers at `tcti` (no key is made or loaded), for a store that has nothing sealed yet.
int tokend_tpm2_get_random(const char *tcti, uint8_t *bytes, size_t count, const char **where);

// The TSS2_RC decoded to text by tss2-rc (a static string).
const char *tokend_tpm2_describe(int rc);

// The calls' result when tpm2-tss cannot be loaded: layer 0xFF, which tpm2-tss leaves unused
// (its own are 0-12 in 3.2, a few more in 4.x), so no TSS2_RC is ever this.
#define TOKEND_TPM2_RC_LIBRARY 0x00FF0001
int tokend_tpm2_is_missing_library(int rc);

// The sonames the store loads, by index (NULL past the last): what a system must have for it.
const char *tokend_tpm2_soname(size_t index);

// Loads the libraries named by `sonames` (one per tokend_tpm2_soname, in its order) and looks up
// every function the store calls, as the store's first call does, then unloads them: 0, or
// TOKEND_TPM2_RC_LIBRARY with `error` (NUL-terminated, cut to `capacity`) saying what failed.
int tokend_tpm2_try_libraries(const char *const *sonames, char *error, size_t capacity);

// TSS2_RC values the store tells apart: the TCTI could not be opened or the TPM not reached
// (a store that is down), and the sealed object does not belong to this TPM (integrity).
int tokend_tpm2_is_unreachable(int rc);
int tokend_tpm2_is_foreign(int rc);
// The TPM is busy for now (out of object or session slots, asked to retry): with no resource
// manager between (swtpm, /dev/tpm0), another client's objects fill its few slots for a moment.
int tokend_tpm2_is_busy(int rc);

#endif
