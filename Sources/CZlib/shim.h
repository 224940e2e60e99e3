#ifndef SIDECAR_CZLIB_SHIM_H
#define SIDECAR_CZLIB_SHIM_H
#include <zlib.h>
#endif
