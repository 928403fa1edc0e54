#ifndef CLIBSECRET_SHIM_H
#define CLIBSECRET_SHIM_H
#include <libsecret/secret.h>
#endif
