#include "CTokendTPM2.h"
#include "tss2.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static const char *const sonames[TOKEND_TSS2_LIBRARY_COUNT] = {
#define TOKEND_TSS2_SONAME(name, soname) soname,
    TOKEND_TSS2_LIBRARIES(TOKEND_TSS2_SONAME)
#undef TOKEND_TSS2_SONAME
};

const char *tokend_tpm2_soname(size_t index) { return index < TOKEND_TSS2_LIBRARY_COUNT ? sonames[index] : NULL; }

static void close_all(void *handles[], size_t count) {
    for (size_t i = 0; i < count; i++) if (handles[i]) dlclose(handles[i]);
}

// Opens `names` (one per library, in TOKEND_TSS2_LIBRARIES' order) and fills `table` from them;
// on failure closes what it opened and writes what failed to `error` (dlerror's text names the
// file, or the library and the function it lacks: an older tpm2-tss).
static int resolve(const char *const names[], struct tokend_tss2 *table, void *handles[], char *error, size_t capacity) {
    for (size_t i = 0; i < TOKEND_TSS2_LIBRARY_COUNT; i++) {
        // RTLD_NOW: a library that lacks something fails here, not at a call later; RTLD_LOCAL:
        // its symbols are for these pointers only.
        handles[i] = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!handles[i]) {
            const char *said = dlerror();
            snprintf(error, capacity, "%s", said ? said : names[i]);
            close_all(handles, i);
            return TOKEND_TPM2_RC_LIBRARY;
        }
    }
#define TOKEND_TSS2_RESOLVE(library, function) \
    if (!(*(void **)&table->function = dlsym(handles[TOKEND_TSS2_##library], #function))) { \
        snprintf(error, capacity, "%s has no %s", names[TOKEND_TSS2_##library], #function); \
        close_all(handles, TOKEND_TSS2_LIBRARY_COUNT); \
        return TOKEND_TPM2_RC_LIBRARY; \
    }
    TOKEND_TSS2_FUNCTIONS(TOKEND_TSS2_RESOLVE)
#undef TOKEND_TSS2_RESOLVE
    return 0;
}

struct tokend_tss2 tokend_tpm2_tss2;
static pthread_once_t tss2_once = PTHREAD_ONCE_INIT;
static int tss2_status;
// What failed, kept for every later call: dlerror's text is a path and a reason, well under this.
static char tss2_error[512];

static void tss2_load(void) {
    // The handles stay open for the process's life: the pointers in `tokend_tpm2_tss2` point into them.
    void *handles[TOKEND_TSS2_LIBRARY_COUNT] = {0};
    tss2_status = resolve(sonames, &tokend_tpm2_tss2, handles, tss2_error, sizeof tss2_error);
}

int tokend_tpm2_tss2_ready(const char **where) {
    pthread_once(&tss2_once, tss2_load);
    if (tss2_status) *where = tss2_error;
    return tss2_status;
}

int tokend_tpm2_try_libraries(const char *const *names, char *error, size_t capacity) {
    struct tokend_tss2 table;
    void *handles[TOKEND_TSS2_LIBRARY_COUNT] = {0};
    int status = resolve(names, &table, handles, error, capacity);
    if (status == 0) close_all(handles, TOKEND_TSS2_LIBRARY_COUNT);
    return status;
}
