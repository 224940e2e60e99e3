#ifndef SIDECAR_CQRENCODE_SHIM_H
#define SIDECAR_CQRENCODE_SHIM_H
#include <qrencode.h>
#include <zlib.h>
#endif
