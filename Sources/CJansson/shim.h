#ifndef SIDECAR_CJANSSON_SHIM_H
#define SIDECAR_CJANSSON_SHIM_H
#include <jansson.h>
#endif
