#include "CTokendTPM2.h"

#include <string.h>

#include "tss2.h"

// The largest secret the store seals (a 32-byte AES key); a sealed data object holds up to 128.
#define TOKEND_TPM2_MAX_SECRET 128

typedef struct {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    ESYS_TR primary;
    ESYS_TR session;
} tpm_t;

static void tpm_close(tpm_t *t) {
    if (t->esys) {
        if (t->session != ESYS_TR_NONE) tokend_tpm2_tss2.Esys_FlushContext(t->esys, t->session);
        if (t->primary != ESYS_TR_NONE) tokend_tpm2_tss2.Esys_FlushContext(t->esys, t->primary);
        tokend_tpm2_tss2.Esys_Finalize(&t->esys);
    }
    if (t->tcti) tokend_tpm2_tss2.Tss2_TctiLdr_Finalize(&t->tcti);
}

// Opens the TPM through the TCTI loader and starts it if it was not started: what every call
// needs before its first command.
static int tpm_connect(const char *tcti, tpm_t *t, const char **where) {
    t->tcti = NULL; t->esys = NULL; t->primary = ESYS_TR_NONE; t->session = ESYS_TR_NONE;
    TSS2_RC rc = tokend_tpm2_tss2.Tss2_TctiLdr_Initialize(tcti, &t->tcti);
    if (rc != TSS2_RC_SUCCESS) { *where = "Tss2_TctiLdr_Initialize"; t->tcti = NULL; return (int)rc; }
    rc = tokend_tpm2_tss2.Esys_Initialize(&t->esys, t->tcti, NULL);
    if (rc != TSS2_RC_SUCCESS) { *where = "Esys_Initialize"; t->esys = NULL; tpm_close(t); return (int)rc; }
    // A real TPM is started by the firmware; a simulator may not be. Already started is fine.
    rc = tokend_tpm2_tss2.Esys_Startup(t->esys, TPM2_SU_CLEAR);
    if (rc != TSS2_RC_SUCCESS && (rc & 0xFFF) != TPM2_RC_INITIALIZE) { *where = "Esys_Startup"; tpm_close(t); return (int)rc; }
    return 0;
}

// Opens the TPM, makes the owner hierarchy's storage primary (the same key every time: the TPM
// derives it from its seed and this template, as `tpm2_createprimary -C o -G ecc` does) and an
// encrypted HMAC session salted by it, so the sealed secret never crosses the bus in clear.
static int tpm_open(const char *tcti, tpm_t *t, const char **where) {
    int connected = tpm_connect(tcti, t, where);
    if (connected) return connected;
    TSS2_RC rc;

    TPM2B_SENSITIVE_CREATE sensitive = {0};
    TPM2B_PUBLIC template = {0};
    template.publicArea.type = TPM2_ALG_ECC;
    template.publicArea.nameAlg = TPM2_ALG_SHA256;
    template.publicArea.objectAttributes = TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT
        | TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_NODA;
    template.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
    template.publicArea.parameters.eccDetail.symmetric.keyBits.aes = 128;
    template.publicArea.parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
    template.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
    template.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    template.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
    TPM2B_DATA outside = {0};
    TPML_PCR_SELECTION pcrs = {0};
    rc = tokend_tpm2_tss2.Esys_CreatePrimary(t->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                            &sensitive, &template, &outside, &pcrs, &t->primary, NULL, NULL, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) { *where = "Esys_CreatePrimary"; t->primary = ESYS_TR_NONE; tpm_close(t); return (int)rc; }

    TPMT_SYM_DEF symmetric = {.algorithm = TPM2_ALG_AES, .keyBits = {.aes = 128}, .mode = {.aes = TPM2_ALG_CFB}};
    rc = tokend_tpm2_tss2.Esys_StartAuthSession(t->esys, t->primary, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                               NULL, TPM2_SE_HMAC, &symmetric, TPM2_ALG_SHA256, &t->session);
    if (rc != TSS2_RC_SUCCESS) { *where = "Esys_StartAuthSession"; t->session = ESYS_TR_NONE; tpm_close(t); return (int)rc; }
    rc = tokend_tpm2_tss2.Esys_TRSess_SetAttributes(t->esys, t->session,
                                   TPMA_SESSION_DECRYPT | TPMA_SESSION_ENCRYPT | TPMA_SESSION_CONTINUESESSION, 0xFF);
    if (rc != TSS2_RC_SUCCESS) { *where = "Esys_TRSess_SetAttributes"; tpm_close(t); return (int)rc; }
    return 0;
}

int tokend_tpm2_seal(const char *tcti, const uint8_t *secret, size_t secret_length,
                     uint8_t *blob, size_t blob_capacity, size_t *blob_length, const char **where) {
    if (secret_length > TOKEND_TPM2_MAX_SECRET) { *where = "size"; return (int)TSS2_ESYS_RC_BAD_VALUE; }
    if (tokend_tpm2_tss2_ready(where)) return TOKEND_TPM2_RC_LIBRARY;
    tpm_t t;
    int rc = tpm_open(tcti, &t, where);
    if (rc) return rc;
    TPM2B_SENSITIVE_CREATE sensitive = {0};
    sensitive.sensitive.data.size = (UINT16)secret_length;
    memcpy(sensitive.sensitive.data.buffer, secret, secret_length);
    TPM2B_PUBLIC template = {0};
    template.publicArea.type = TPM2_ALG_KEYEDHASH;
    template.publicArea.nameAlg = TPM2_ALG_SHA256;
    template.publicArea.objectAttributes = TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_NODA;
    template.publicArea.parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL;
    TPM2B_DATA outside = {0};
    TPML_PCR_SELECTION pcrs = {0};
    TPM2B_PRIVATE *private_part = NULL;
    TPM2B_PUBLIC *public_part = NULL;
    TSS2_RC r = tokend_tpm2_tss2.Esys_Create(t.esys, t.primary, t.session, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive, &template, &outside, &pcrs,
                            &private_part, &public_part, NULL, NULL, NULL);
    memset(&sensitive, 0, sizeof sensitive);
    if (r != TSS2_RC_SUCCESS) { *where = "Esys_Create"; tpm_close(&t); return (int)r; }
    size_t offset = 0;
    r = tokend_tpm2_tss2.Tss2_MU_TPM2B_PUBLIC_Marshal(public_part, blob, blob_capacity, &offset);
    if (r == TSS2_RC_SUCCESS) r = tokend_tpm2_tss2.Tss2_MU_TPM2B_PRIVATE_Marshal(private_part, blob, blob_capacity, &offset);
    if (r != TSS2_RC_SUCCESS) *where = "Tss2_MU_Marshal";
    *blob_length = offset;
    tokend_tpm2_tss2.Esys_Free(private_part);
    tokend_tpm2_tss2.Esys_Free(public_part);
    tpm_close(&t);
    return (int)r;
}

int tokend_tpm2_unseal(const char *tcti, const uint8_t *blob, size_t blob_length,
                       uint8_t *secret, size_t secret_capacity, size_t *secret_length, const char **where) {
    if (tokend_tpm2_tss2_ready(where)) return TOKEND_TPM2_RC_LIBRARY;
    TPM2B_PUBLIC public_part = {0};
    TPM2B_PRIVATE private_part = {0};
    size_t offset = 0;
    TSS2_RC r = tokend_tpm2_tss2.Tss2_MU_TPM2B_PUBLIC_Unmarshal(blob, blob_length, &offset, &public_part);
    if (r == TSS2_RC_SUCCESS) r = tokend_tpm2_tss2.Tss2_MU_TPM2B_PRIVATE_Unmarshal(blob, blob_length, &offset, &private_part);
    if (r != TSS2_RC_SUCCESS) { *where = "Tss2_MU_Unmarshal"; return (int)r; }
    tpm_t t;
    int rc = tpm_open(tcti, &t, where);
    if (rc) return rc;
    ESYS_TR object = ESYS_TR_NONE;
    r = tokend_tpm2_tss2.Esys_Load(t.esys, t.primary, t.session, ESYS_TR_NONE, ESYS_TR_NONE, &private_part, &public_part, &object);
    if (r != TSS2_RC_SUCCESS) { *where = "Esys_Load"; tpm_close(&t); return (int)r; }
    // The primary's work is done: one object slot less while the unseal runs (a TPM without a
    // resource manager has three).
    tokend_tpm2_tss2.Esys_FlushContext(t.esys, t.primary);
    t.primary = ESYS_TR_NONE;
    TPM2B_SENSITIVE_DATA *data = NULL;
    r = tokend_tpm2_tss2.Esys_Unseal(t.esys, object, t.session, ESYS_TR_NONE, ESYS_TR_NONE, &data);
    tokend_tpm2_tss2.Esys_FlushContext(t.esys, object);
    if (r != TSS2_RC_SUCCESS) { *where = "Esys_Unseal"; tpm_close(&t); return (int)r; }
    if (data->size > secret_capacity) {
        *where = "size";
        r = TSS2_ESYS_RC_BAD_VALUE;
    } else {
        memcpy(secret, data->buffer, data->size);
        *secret_length = data->size;
    }
    memset(data->buffer, 0, sizeof data->buffer);
    tokend_tpm2_tss2.Esys_Free(data);
    tpm_close(&t);
    return (int)r;
}

int tokend_tpm2_get_random(const char *tcti, uint8_t *bytes, size_t count, const char **where) {
    if (count > sizeof(((TPM2B_DIGEST *)0)->buffer)) { *where = "size"; return (int)TSS2_ESYS_RC_BAD_VALUE; }
    if (tokend_tpm2_tss2_ready(where)) return TOKEND_TPM2_RC_LIBRARY;
    tpm_t t;
    int rc = tpm_connect(tcti, &t, where);
    if (rc) return rc;
    TPM2B_DIGEST *random = NULL;
    TSS2_RC r = tokend_tpm2_tss2.Esys_GetRandom(t.esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, (UINT16)count, &random);
    if (r != TSS2_RC_SUCCESS) {
        *where = "Esys_GetRandom";
    } else {
        memcpy(bytes, random->buffer, random->size < count ? random->size : count);
        tokend_tpm2_tss2.Esys_Free(random);
    }
    tpm_close(&t);
    return (int)r;
}

const char *tokend_tpm2_describe(int rc) {
    const char *failed;
    if (rc == TOKEND_TPM2_RC_LIBRARY || tokend_tpm2_tss2_ready(&failed)) return "tpm2-tss could not be loaded";
    return tokend_tpm2_tss2.Tss2_RC_Decode((TSS2_RC)rc);
}

int tokend_tpm2_is_missing_library(int rc) { return rc == TOKEND_TPM2_RC_LIBRARY; }

int tokend_tpm2_is_unreachable(int rc) {
    TSS2_RC layer = (TSS2_RC)rc & TSS2_RC_LAYER_MASK;
    TSS2_RC base = (TSS2_RC)rc & 0xFFFF;
    // The TCTI's own failures (no such TCTI, nothing listening), and ESYS's I/O ones: no TPM answered.
    return layer == TSS2_TCTI_RC_LAYER || layer == TSS2_RESMGR_RC_LAYER || layer == TSS2_RESMGR_TPM_RC_LAYER
        || base == TSS2_BASE_RC_IO_ERROR || base == TSS2_BASE_RC_NO_CONNECTION || base == TSS2_BASE_RC_TRY_AGAIN;
}

int tokend_tpm2_is_foreign(int rc) {
    if (((TSS2_RC)rc & TSS2_RC_LAYER_MASK) != TSS2_TPM_RC_LAYER) return 0;
    TSS2_RC tpm = (TSS2_RC)rc & 0xFFF;
    if (!(tpm & TPM2_RC_FMT1)) return 0;
    // Format-1 codes carry the handle, session or parameter number above bit 5: the error is bits 0-5.
    TSS2_RC error = tpm & 0x3F;
    return error == (TPM2_RC_INTEGRITY & 0x3F) || error == (TPM2_RC_BINDING & 0x3F);
}

int tokend_tpm2_is_busy(int rc) {
    if (((TSS2_RC)rc & TSS2_RC_LAYER_MASK) != TSS2_TPM_RC_LAYER) return 0;
    TSS2_RC tpm = (TSS2_RC)rc & 0xFFF;
    return tpm == TPM2_RC_OBJECT_MEMORY || tpm == TPM2_RC_SESSION_MEMORY || tpm == TPM2_RC_MEMORY
        || tpm == TPM2_RC_RETRY || tpm == TPM2_RC_YIELDED || tpm == TPM2_RC_CANCELED || tpm == TPM2_RC_TESTING;
}
